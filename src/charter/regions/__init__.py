"""Regions: a model as a graph of executable regions (docs/regions.md).

contract.py     the `kind: regions` Pydantic models
plan.py         resolution against the model, the artifact inventory and the kernel contracts
gate.py         the F1 gate: what the reference interpreter refuses before any node runs
interpreter.py  the F1 reference interpreter (numpy, the kernel contracts' oracles)
weights.py      the labelled dequantization of an admitted artifact (the precision profile)
parity.py       the interpreter's logits and residual stream against the llama.cpp capture
capture.py      the llama.cpp capture adapter (opt-in `capture` extra)
battery.py      the region mutation battery (`charter mutate --contract <regions contract>`)
commands.py     `charter admit --contract <regions contract>`
"""

import re

_KIND = re.compile(r"^kind:\s*regions\s*(#.*)?$", re.M)


def is_regions_contract(path: str) -> bool:
    """Whether the file at `path` declares `kind: regions` (here, not in commands.py: `charter
    admit` asks this of every contract it is given, and imports no more than it needs)."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536).decode("utf-8", errors="replace")  # `kind` is a top-level key near the top
    except OSError:
        return False
    return _KIND.search(head) is not None
