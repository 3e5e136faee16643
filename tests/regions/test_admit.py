"""`charter admit --contract <regions contract>`: the artifact admitted by its artifact contract,
then the ownership of the file's own tensors (Note [Ownership at admission])."""

from __future__ import annotations

import json

from charter.cli import main
from charter.contract.contractset import load_set
from charter.regions.commands import ownership
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "regions" / "smollm2-135m-instruct-q4_1.yaml"


def test_admit_with_a_regions_contract(capsys):
    assert main(["admit", "--contract", str(SPEC)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("admitted: ") and "63 region instances own all 272 tensors" in out
    assert main(["admit", "--contract", str(SPEC), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["result"]
    assert report["owned"] is True and report["admission"]["admitted"] is True


def test_ownership_of_a_tensor_table():
    plan = load_set([SPEC], [ROOT / "specs"]).regions["smollm2-135m-instruct-q4_1-regions"]
    names = sorted(plan.codecs)
    assert ownership(plan, names) == []
    extra = ownership(plan, names + ["blk.30.attn_q.weight"])
    assert [(d.code.value, d.field) for d in extra] == [("REGION_UNOWNED", "blk.30.attn_q.weight")]
    missing = ownership(plan, [n for n in names if n != "output_norm.weight"])
    assert [(d.code.value, d.field) for d in missing] == [("REGION_UNOWNED", "output_norm.weight")]


def test_the_cpp_engine_is_refused_with_a_regions_contract(capsys):
    assert main(["admit", "--contract", str(SPEC), "--engine", "cpp"]) == 2


def test_no_public_route_claims_support(capsys):
    """AFN-013: the F1 interpreter is a private seam; the public selector stays rejecting. Admission
    that requires `supported` fails closed for the regions contract, as for its artifact."""
    assert main(["admit", "--contract", str(SPEC), "--require-status", "supported"]) == 1
    assert "POLICY_STATUS" in capsys.readouterr().out
