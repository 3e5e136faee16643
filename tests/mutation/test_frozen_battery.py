"""The battery of a contract written by `charter freeze` from the real SmolLM2 file."""

from __future__ import annotations

import json

import pytest

from charter.cli import main
from charter.mutation import report
from charter.mutation.run import all_mutants, load_battery, run
from charter.contract.contractset import load_set

# Whole batteries (500 and 200+ mutants, the tensor-less ones on both engines with a checker library
# compiled for each): make test-slow.
pytestmark = pytest.mark.slow


def test_frozen_contract_battery_passes(tmp_path, smollm2_path):
    assert main(["freeze", str(smollm2_path), "--id", "smollm2-frozen", "-o", str(tmp_path)]) == 0
    cs = load_set([tmp_path / "artifacts" / "smollm2-frozen.yaml"], [tmp_path])
    assert cs.ok, cs.diagnostics
    battery = load_battery(cs, "smollm2-frozen", smollm2_path)
    outcomes = run(battery, all_mutants(battery), jobs=2)
    s = report.summary(outcomes)
    assert s["passed"], report.failures(outcomes)
    assert s["mutants"] >= 500 and s["killed"] == s["mutants"]


@pytest.mark.parametrize("which", ["tensorless_gguf", "tensorless_padded_gguf"])
def test_frozen_tensorless_battery_passes_with_both_engines(tmp_path, capsys, request, which):
    """A vocab-only GGUF, and the same padded as gguf.cpp writes it: every artifact mutant keeps the
    file's end where the data offset rule puts it, no operator writes a count below zero, and both
    engines agree on every mutant (Note [Tensor-less GGUF]). The contract side does not depend on
    the rule; the frozen real file's battery above covers it (both engines: make demo)."""
    artifact = request.getfixturevalue(which)
    assert main(["freeze", str(artifact), "--id", "tensorless", "-o", str(tmp_path)]) == 0
    out = tmp_path / "battery.json"
    code = main(["mutate", "--contract", str(tmp_path / "artifacts" / "tensorless.yaml"), "--artifact", str(artifact),
                 "--engine", "both", "-j", "2", "-q", "--json", str(out), "--only", "artifact"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    outcomes, _ = report.from_json(out.read_text())
    s = report.summary(outcomes)
    assert s["passed"] and s["killed"] == s["mutants"] >= 200, s
    ids = {o.mutant.id for o in outcomes}
    assert "artifact:header.tensor_count:-1" not in ids and "artifact:header.tensor_count:+1" in ids
    assert "artifact:tensors.charter_mutant.weight:extra tensor" in ids
