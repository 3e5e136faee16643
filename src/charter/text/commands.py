"""Text contracts under `charter fixtures verify|capture` (the command lives in charter.provenance.commands)."""

from __future__ import annotations


def text_results(chosen, cs, *, capture: bool):
    """Run the text contracts among `chosen`; return (their results, the other contracts)."""
    from charter.text import verify as text_verify

    texts = [lc for lc in chosen if lc.kind == "text"]
    rest = [lc for lc in chosen if lc.kind != "text"]
    run = text_verify.capture if capture else text_verify.verify
    return [run(lc, cs) for lc in texts], rest
