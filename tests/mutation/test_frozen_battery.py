"""The battery of a contract written by `charter freeze` from the real SmolLM2 file."""

from __future__ import annotations

from charter.cli import main
from charter.mutation import report
from charter.mutation.run import all_mutants, load_battery, run
from charter.spec.contractset import load_set


def test_frozen_contract_battery_passes(tmp_path, smollm2_path):
    assert main(["freeze", str(smollm2_path), "--id", "smollm2-frozen", "-o", str(tmp_path)]) == 0
    cs = load_set([tmp_path / "artifacts" / "smollm2-frozen.yaml"], [tmp_path])
    assert cs.ok, cs.diagnostics
    battery = load_battery(cs, "smollm2-frozen", smollm2_path)
    outcomes = run(battery, all_mutants(battery), jobs=2)
    s = report.summary(outcomes)
    assert s["passed"], report.failures(outcomes)
    assert s["mutants"] >= 500 and s["killed"] == s["mutants"]
