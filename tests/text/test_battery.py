"""The text battery: every leaf of a text contract mutated, all rejected where they belong (N/N)."""

from __future__ import annotations

import pytest

from charter.text import battery


def _check(outcomes):
    failed = [(o.mutant.label, o.verdict, o.diagnostic) for o in outcomes if o.verdict in ("survived", "misplaced")]
    assert failed == []
    assert all(o.mutant.equivalent for o in outcomes if o.verdict == "equivalent")


def test_minilm_battery(minilm):
    lc, cs = minilm
    outcomes = battery.run(lc, cs)
    _check(outcomes)
    killed = sum(o.verdict == "killed" for o in outcomes)
    assert killed >= 500
    groups = {battery.group(o.mutant) for o in outcomes if o.verdict == "killed"}
    assert {"encode cases", "decode cases", "tokenizer.added", "tokenizer.config", "tokenizer.vocab", "counts",
            "source"} <= groups


@pytest.mark.slow
def test_smollm2_battery(smollm2):
    lc, cs = smollm2
    outcomes = battery.run(lc, cs)
    _check(outcomes)
    assert sum(o.verdict == "killed" for o in outcomes) >= 1200


def test_operators_cover_every_case_field(smollm2):
    lc, _ = smollm2
    mutants = battery.mutants(lc)
    fields = {m.path[2] for m in mutants if m.path[:1] in (("encode",), ("decode",)) and len(m.path) > 2}
    assert {"text", "special", "add_special", "ids", "skip_special", "class", "name", "findings", "bytes",
            "boundary", "error", "rule"} <= fields
    chat_fields = {m.path[3] for m in mutants if m.path[:2] == ("chat", "cases") and len(m.path) > 3}
    assert {"messages", "rendered", "segments", "ids", "flattened_controls", "error", "add_generation_prompt",
            "class", "rule", "tools"} <= chat_fields
    assert any(m.op == "segment kind" for m in mutants)


def test_cli_runs_the_text_battery_and_refuses_what_does_not_apply(tmp_path, capsys):
    from charter.cli import main
    from tests.text.conftest import MINILM

    import json

    import jsonschema

    from tests.conftest import ROOT

    assert main(["mutate", "--contract", str(MINILM), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "mutations rejected" in err  # the human lines go to stderr, stdout is the one object
    envelope = json.loads(out)
    jsonschema.validate(envelope, json.loads((ROOT / "schemas" / "output.schema.json").read_text("utf-8")))
    report = envelope["result"]
    assert envelope["command"] == "mutate" and envelope["exit"] == 0 and report["outcomes"] and {o["verdict"] for o in report["outcomes"]} <= {"killed", "equivalent"}
    assert main(["mutate", "--contract", str(MINILM), "--engine", "both"]) == 2
    assert "do not apply" in capsys.readouterr().err
