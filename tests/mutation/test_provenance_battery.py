"""The provenance battery's own guarantees: controls admitted, shipped files untouched, exact
verdicts (cascades are regressions), and that a weakened verify fails it."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter

import pytest

from charter.cli import main
from charter.diagnostics import Code, Diagnostic
from charter.mutation import provenance_ops, provenance_run, report
from charter.mutation.mutant import Expect, Verdict
from charter.provenance import verify as verify_mod
from charter.contract.contractset import load_set
from tests.conftest import ROOT

DEQUANT = ROOT / "specs/provenance/dequant-smollm2.yaml"
ROUTER = ROOT / "specs/provenance/router-topk-ties.yaml"


@pytest.fixture(scope="module")
def batteries():
    out = {}
    for spec in (DEQUANT, ROUTER):
        cs = load_set([spec], [ROOT / "specs"])
        assert cs.ok, cs.diagnostics
        (cid,) = cs.primary
        out[cid] = provenance_run.battery_of(cs, cid)
    return out


def _run(battery, pick):
    b, mutants = battery
    return provenance_run.run(b, [m for m in mutants if pick(m)])


def test_controls_are_admitted_and_equivalences_give_reasons(batteries):
    for b, mutants in batteries.values():
        outcomes = provenance_run.run(b, [m for m in mutants if m.expect is None])
        controls = [o for o in outcomes if o.verdict is not Verdict.EQUIVALENT]
        assert {o.mutant.operator for o in controls} >= {"unchanged", "reverse member order", "deflate members",
                                                          "fortran order", "reverse label order"}
        assert all(o.verdict is Verdict.ADMITTED for o in controls), [(o.mutant.id, o.detail) for o in controls]
        equivalent = [o for o in outcomes if o.verdict is Verdict.EQUIVALENT]
        assert {o.mutant.target for o in equivalent} >= {"description", "id", "status"}
        assert all(o.detail for o in equivalent)


def test_every_operator_of_the_issue_is_generated(batteries):
    """Per array: every other class, producer, version, digest, dtype, shape, label, inputs; per file:
    drop, add, change one element."""
    b, mutants = batteries["dequant-smollm2"]
    ops = Counter((m.target, m.operator) for m in mutants)
    for label in b.loaded.contract.arrays:
        n = label.name
        others = [c for c in provenance_ops.CLASSES if c != label.cls.value]
        for c in others:
            assert ops[(f"{n}.class", f"relabel {c}")] == 1 and ops[(f"{n}.class", f"relabel {c}, completed")] == 1
        assert ops[(f"{n}.sha256", "flip one bit")] == 1
        assert ops[(f"{n}.dtype", "other dtype")] == ops[(f"{n}.shape", "append dim 1")] == 1
        assert ops[(n, "drop label")] == 1
        assert sum(ops[(f"{n}.inputs[{k}]", "missing input")] for k in range(len(label.inputs))) == len(label.inputs)
        assert ops[(f"dequant-smollm2.npz:{n}", "drop array")] == ops[(f"dequant-smollm2.npz:{n}", "edit one element")] == 1
    assert ops[("q8_0_expected.producer.package", "edit package")] == 1
    assert ops[("q8_0_expected.producer.version", "bump version")] == 1
    assert ops[("q8_0_oracle.producer.callable", "edit callable")] == 1
    assert ops[("q8_0_oracle.producer.module", "sibling module")] == 1
    assert any(op == "add unlabelled array" for _, op in ops)


def test_value_and_class_mutants_are_killed_exactly(batteries):
    wanted = {"flip one bit", "edit one element", "drop array", "add unlabelled array", "drop label",
              "missing input", "bump version", "edit package", "edit callable", "truncate", "pickled member",
              "duplicate member", "numpy alias", "last dim +1"}
    for battery in batteries.values():
        outcomes = _run(battery, lambda m: m.operator in wanted or m.operator.startswith("relabel"))
        assert outcomes
        bad = [(o.mutant.id, o.verdict.value, o.detail) for o in outcomes if o.verdict is not Verdict.KILLED]
        assert not bad, bad
    relabels = [o for o in _run(batteries["dequant-smollm2"], lambda m: m.operator.startswith("relabel"))]
    assert {o.code for o in relabels} == {"SPEC_SCHEMA", "FIXTURE_CLASS"}
    # a model constant's changed value breaks its source and its digest: both are expected
    (k,) = _run(batteries["router-topk-ties"], lambda m: m.id == "artifact:router-topk-ties.npz:k:edit one element")
    assert (k.verdict, k.code, k.mutant.also) == (Verdict.KILLED, "FIXTURE_SOURCE",
                                                  ((Code.FIXTURE_DIGEST, "k.sha256"),))


def test_shipped_fixtures_are_only_read(batteries):
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (ROOT / "specs/provenance").iterdir()}
    for b, mutants in batteries.values():
        provenance_run.run(b, mutants)
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (ROOT / "specs/provenance").iterdir()}
    assert before == after


def test_a_cascade_is_a_regression():
    m = provenance_ops.ProvenanceMutant("contract", "x.dtype", "op", Expect.of(Code.FIXTURE_DTYPE, "x.dtype"))
    dtype = Diagnostic(Code.FIXTURE_DTYPE, "x.dtype", "wrong dtype")
    source = Diagnostic(Code.FIXTURE_SOURCE, "x.producer.derived_from", "differs")
    assert provenance_run.verdict(m, [dtype]).verdict is Verdict.KILLED
    assert provenance_run.verdict(m, [dtype, source]).verdict is Verdict.REGRESSION
    assert provenance_run.verdict(m, [source, dtype]).verdict is Verdict.REGRESSION
    assert provenance_run.verdict(m, []).verdict is Verdict.SURVIVED
    declared = provenance_ops.ProvenanceMutant("contract", "x", "op", Expect.of(Code.FIXTURE_DTYPE, "x.dtype"),
                                               also=((Code.FIXTURE_SOURCE, "x.producer.derived_from"),))
    assert provenance_run.verdict(declared, [dtype, source]).verdict is Verdict.KILLED
    assert provenance_run.verdict(declared, [dtype]).verdict is Verdict.REGRESSION


def test_weakened_verify_lets_the_digest_mutants_survive(batteries, monkeypatch):
    """A verify that no longer compares digests: every digest mutant survives and the battery fails."""
    original = verify_mod.check_array

    def no_digest(*args):
        return [d for d in original(*args) if d.code is not Code.FIXTURE_DIGEST]

    monkeypatch.setattr(verify_mod, "check_array", no_digest)
    for battery in batteries.values():
        outcomes = _run(battery, lambda m: m.operator in ("flip one bit", "edit one element", "unchanged"))
        by_verdict = Counter(o.verdict for o in outcomes)
        flips = [o for o in outcomes if o.mutant.operator == "flip one bit"]
        assert flips and all(o.verdict is Verdict.SURVIVED for o in flips)
        for o in outcomes:
            if o.mutant.operator == "edit one element":
                # a model constant's source check still rejects it, but without its digest: a regression
                assert o.verdict is (Verdict.REGRESSION if o.mutant.also else Verdict.SURVIVED), o.mutant.id
        assert by_verdict[Verdict.ADMITTED] == 2  # the unchanged contract and fixture still verify
        assert not report.summary(outcomes)["passed"]


def test_charter_mutate_runs_the_provenance_battery(tmp_path, capsys):
    out_json = tmp_path / "b.json"
    code = main(["mutate", "--contract", str(DEQUANT), "--only", "artifact", "-q", "--json", str(out_json),
                 "--html", str(tmp_path / "b.html")])
    out = capsys.readouterr().out
    assert code == 0, out
    line = out.strip().splitlines()[-1]
    m = re.match(r"(\d+)/(\d+) mutations rejected \((\d+) at the expected stage, code and field; 0 regressions, "
                 r"0 survivors, 0 errors\); 0 declared equivalent; 4 acceptance controls admitted, 0 refused", line)
    assert m and m[1] == m[2] == m[3], line
    data = json.loads(out_json.read_text())
    assert data["config"]["kind"] == "provenance" and data["config"]["summary"]["passed"]
    outcomes, _ = report.from_json(out_json.read_text())
    assert {o.stage for o in outcomes if o.verdict.value == "killed"} == {"spec"}
    assert "charter mutation battery: dequant-smollm2" in (tmp_path / "b.html").read_text()


def test_artifact_flags_do_not_apply(capsys):
    assert main(["mutate", "--contract", str(DEQUANT), "--engine", "both", "-q"]) == 2
    assert "do not apply" in capsys.readouterr().err
