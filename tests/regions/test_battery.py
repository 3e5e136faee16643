"""The region battery (Note [Region battery]): every region fact mutated, rejected at its code and
field; the gate's mutants refused by the F1 gate; numeric mutants declared, left to the parity run."""

from __future__ import annotations

import pytest

from charter.regions import battery
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "regions" / "smollm2-135m-instruct-q4_1.yaml"
QWEN = ROOT / "specs" / "regions" / "qwen4exp-text.yaml"
MUTANTS = battery.smollm2_mutants()
CASES = [(SPEC, m) for m in MUTANTS] + [(QWEN, m) for m in battery.qwen4exp_mutants()]
_BASES: dict = {}


def _base(spec):
    if spec not in _BASES:
        _BASES[spec] = (battery.base_data(spec), battery.contract_set(spec))
    return _BASES[spec]


@pytest.fixture(scope="module")
def base():
    return _base(SPEC)


@pytest.mark.parametrize("spec, mutant", CASES, ids=lambda x: x.name if hasattr(x, "edit") else x.stem)
def test_mutant(spec, mutant):
    data, cs = _base(spec)
    outcome = battery.run_mutant(mutant, data, cs)
    expected = "numeric" if mutant.side == "numeric" else "killed"
    assert outcome.verdict == expected, outcome.first.render() if outcome.first else "admitted"


def test_unchanged_contract_resolves(base):
    data, cs = base
    import yaml

    plan = battery.resolve_text(yaml.safe_dump(data, sort_keys=False), cs)
    assert plan.node_count == 453


def test_every_fact_family_is_mutated():
    families = {m.name.split(":")[0] for m in MUTANTS}
    assert {"ownership", "layers", "edge", "state", "activation", "node", "precision", "status", "gate",
            "numeric"} <= families


def test_charter_mutate_runs_the_region_battery(capsys, tmp_path):
    from charter.cli import main

    assert main(["mutate", "--contract", str(QWEN), "--json", str(tmp_path / "b.json")]) == 0
    assert "20/20 region mutations rejected" in capsys.readouterr().out
    import json

    assert {o["verdict"] for o in json.loads((tmp_path / "b.json").read_text())} == {"killed"}
    assert main(["mutate", "--contract", str(QWEN), "--engine", "both"]) == 2
