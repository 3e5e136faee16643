"""The value mutants of the SmolLM2 battery (charter.mutation.value_ops): two per checked tensor,
every one rejected at payload with its tensor, block and field by both engines, and the finite
controls rejected only by the pinned digest; a runtime that stops checking values lets them survive."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from charter.contract.contractset import load_set
from charter.mutation import value_ops
from charter.mutation.mutant import Verdict
from charter.mutation.run import all_mutants, load_battery, run_mutant
from tests.conftest import ROOT

SMOLLM2 = "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"


@pytest.fixture(scope="module")
def battery(smollm2_path):
    cs = load_set([ROOT / SMOLLM2], [ROOT / "specs"])
    assert cs.ok, cs.diagnostics
    return load_battery(cs, "smollm2-135m-instruct-q4_1", smollm2_path)


@pytest.fixture(scope="module")
def value_mutants(battery):
    return [m for m in all_mutants(battery, "artifact") if value_ops.is_value_mutant(m)]


def test_every_checked_tensor_has_first_and_last_mutants(battery, value_mutants):
    injected = [m for m in value_mutants if m.expect is not None and m.expect.code.value == "PAYLOAD_VALUE"]
    assert len(injected) == 2 * 271 + 8  # the one Q8_0 tensor gets every kind at both ends
    assert {m.target.split(".", 1)[1].rsplit(".", 2)[0] for m in injected} == {t.name for t in battery.view.tensors}
    codecs = {t.name: t.codec for t in battery.view.tensors}
    by_codec = Counter((codecs[m.target.split(".", 1)[1].rsplit(".", 2)[0]], m.operator) for m in injected)
    assert all(by_codec[(c, f"write {k}")] > 0 for c in ("F32", "Q4_1", "Q8_0") for k in value_ops.KINDS)
    controls = [m for m in value_mutants if m not in injected]
    assert sorted(m.expect.code.value for m in controls) == ["PAYLOAD_FILE_DIGEST"] * 3


def _sample(value_mutants):
    """The value mutants of the first tensor of each codec and the controls: every kind, both ends."""
    seen: dict[str, int] = {}
    out = []
    for m in value_mutants:
        tensor = m.target[len(value_ops.TARGET):].rsplit(".", 2)[0]
        seen.setdefault(tensor, len(seen))
        if seen[tensor] < 4 or m.operator.startswith("flip"):
            out.append(m)
    return out


@pytest.mark.parametrize("engines", ("python", "both"))
def test_value_mutants_are_killed(battery, value_mutants, engines):
    b = dataclasses.replace(battery, engines=engines, cpp_key=battery.plan.id)
    for m in _sample(value_mutants):
        outcome = run_mutant(b, m)
        assert outcome.verdict is Verdict.KILLED, (m.id, outcome)


def test_a_runtime_without_the_value_check_lets_them_survive(battery, value_mutants, monkeypatch):
    from charter.admission import runtime

    monkeypatch.setattr(runtime.Context, "_value_rules", lambda self, rules: {})
    outcomes = [run_mutant(battery, m) for m in _sample(value_mutants)[:4]]
    assert {o.verdict for o in outcomes} == {Verdict.REGRESSION}  # the file digest catches them, as digests
    assert {o.code for o in outcomes} == {"PAYLOAD_FILE_DIGEST"}


def test_a_cpp_scanner_that_disagrees_is_an_error(battery, value_mutants, monkeypatch):
    """With both engines, a value mutant's payload stage scans each chunk with numpy and with the
    C++ scanner (values.BOTH); a C++ scanner that names another block is an engine disagreement."""
    from charter import _native

    real = _native.first_bad_value

    def off_by_one(data, block_bytes, fields):
        hit = real(data, block_bytes, fields)
        return None if hit is None else (hit[0] + 1, hit[1], hit[2])

    monkeypatch.setattr(_native, "first_bad_value", off_by_one)
    b = dataclasses.replace(battery, engines="both", cpp_key=battery.plan.id)
    outcome = run_mutant(b, _sample(value_mutants)[0])
    assert outcome.verdict is Verdict.ERROR and "engines disagree" in outcome.detail, outcome
