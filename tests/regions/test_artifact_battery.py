"""The artifact side of the region battery (Note [Region artifact battery]): the real SmolLM2 file
changed so that one region fact must reject it; `charter admit --contract REGIONS`'s path rejects
it at the stage, code and field predicted, and the region check on the same tensor table gives the
predicted region code and field. The default set runs one mutant of each region code; every
mutant, and the command, are in the slow set."""

from __future__ import annotations

import json

import pytest

from charter.regions import artifact_battery as ab
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "regions" / "smollm2-135m-instruct-q4_1.yaml"
QWEN = ROOT / "specs" / "regions" / "qwen4exp-text.yaml"
MUTANTS = ab.smollm2_artifact_mutants()
# One mutant per region code (and the reader's rejection): the default set's share.
DEFAULT = {"a tensor renamed so no region owns it", "an owned tensor duplicated under its own name",
           "a K projection narrower than the kv state", "the F32 final norm stored as F16"}


@pytest.fixture(scope="module")
def bat():
    return ab.ArtifactBattery.load(SPEC)


def test_unchanged_file_is_admitted_and_owned(bat):
    outcome = bat.control()
    assert outcome.verdict == "admitted", outcome.admission.render()


@pytest.mark.parametrize("mutant", [pytest.param(m, marks=() if m.name in DEFAULT else pytest.mark.slow)
                                    for m in MUTANTS], ids=lambda m: m.name)
def test_artifact_mutant(bat, mutant):
    o = bat.run(mutant)
    got = f"{o.admission.render() if o.admission else 'admitted'} / {o.regions.render() if o.regions else 'none'}"
    assert o.verdict == "killed", got


def test_the_battery_states_every_region_file_fact():
    """Ownership (unowned, duplicated, a missing tensor), the graph's shapes and the precision
    steps each have a mutant, and predictions are data, not derived from the checks they judge."""
    assert {m.regions[0] for m in MUTANTS} == {"REGION_UNOWNED", "REGION_OWNERSHIP", "REGION_SIGNATURE",
                                               "REGION_PRECISION"}
    assert len({m.name for m in MUTANTS}) == len(MUTANTS) == 12
    assert all(isinstance(m.admission, ab.Prediction) and m.admission.field for m in MUTANTS)


def test_a_wrong_prediction_is_a_regression(bat):
    """The judge can fail: the same edit with another predicted code is not killed."""
    m = MUTANTS[0]
    wrong = ab.ArtifactMutant(m.name, m.edit, ab.Prediction("tensors", "TENSOR_UNEXPECTED", m.admission.field),
                              m.regions)
    assert bat.run(wrong).verdict == "regression"
    wrong_region = ab.ArtifactMutant(m.name, m.edit, m.admission, ("REGION_OWNERSHIP", m.regions[1]))
    assert bat.run(wrong_region).verdict == "regression"


def test_an_edit_admission_cannot_see_survives(bat):
    """A table change no fact owns (the same records) is admitted: a survivor, never counted killed."""
    same = ab.ArtifactMutant("no change", lambda ts: ts, MUTANTS[0].admission, MUTANTS[0].regions)
    o = bat.run(same)
    assert o.verdict == "survived" and o.admission is None and o.regions is None


def test_the_qwen4exp_battery_has_no_artifact_side(capsys):
    from charter.cli import main

    assert main(["mutate", "--contract", str(QWEN), "--only", "artifact"]) == 2
    assert "no artifact side" in capsys.readouterr().err


@pytest.mark.slow
def test_charter_mutate_runs_both_sides(capsys, tmp_path):
    from charter.cli import main

    assert main(["mutate", "--contract", str(SPEC), "--json", str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "51/51 region mutations rejected" in out and "12/12 artifact region mutations rejected" in out
    records = json.loads((tmp_path / "b.json").read_text())
    artifact = [r for r in records if r["side"] == "artifact"]
    assert len(artifact) == 13 and {r["verdict"] for r in artifact} == {"killed", "admitted"}
    assert main(["mutate", "--contract", str(SPEC), "--only", "artifact"]) == 0
    assert "12/12 artifact region mutations rejected" in capsys.readouterr().out
