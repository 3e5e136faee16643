"""The committed generated checker is its contract, literal for literal, and admits its artifact.

mutmut mutates the literals of every `check_<stage>` function of generated/python/*.py (ints
+1, strings "XX..XX", None, dropped or replaced arguments). Two tests kill them: every call a
stage makes is compared with the checks charter.codegen derives from the contract (so every
literal, location strings included, is pinned), and the real pinned artifact is admitted with
payload verification (so a mutated literal that the comparison missed must still not reject it).
Module-level constants (CONTRACT_ID, SPEC, FORMAT, STATUS, STAGES) are not mutated by mutmut;
they are pinned here anyway and by the artifact-side battery (docs/mutation.md).
"""

from __future__ import annotations

import pytest

from charter.admission.runtime import Context, admit
from charter.admission.view import read_view
from charter.diagnostics import ADMISSION_STAGES
from tests.mutmut.conftest import checker_files, contract_plan, load_checker, smollm2_gguf

CHECKERS = checker_files()
for _path in CHECKERS:  # load while collecting, so no test's duration (mutmut orders tests by it) includes it
    try:
        contract_plan(load_checker(_path).SPEC)
    except Exception:  # noqa: BLE001  (the test of that checker reports it; collection must not fail)
        pass


class Recorder:
    """A stand-in Context that records every call a stage makes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple, dict]] = []

    def __getattr__(self, method: str):
        def record(*args, **kwargs):
            self.calls.append((method, args, kwargs))

        return record


def test_there_is_a_generated_checker():
    assert CHECKERS, "no generated/python/*.py checker to mutate"


@pytest.mark.parametrize("path", CHECKERS, ids=[p.stem for p in CHECKERS])
def test_every_call_carries_the_contract_literals(path):
    from charter.codegen.python.build import python_value
    from charter.contract.checks import arguments, checks_of

    checker = load_checker(path)
    plan = contract_plan(checker.SPEC)
    assert (checker.CONTRACT_ID, checker.MODEL_ID, checker.FORMAT, checker.STATUS) == (
        plan.id, plan.model, plan.format, plan.status)
    assert [name for name, _ in checker.STAGES] == [s.value for s in ADMISSION_STAGES]
    recorded = []
    for stage, check in checker.STAGES:
        ctx = Recorder()
        assert check(ctx) is None
        recorded += [(stage, method, args, kwargs) for method, args, kwargs in ctx.calls]
    expected = [(c.stage.value, c.method, (), {k: python_value(v) for k, v in arguments(c).items()})
                for c in checks_of(plan)]
    # == says 1 == 1.0 == True; a literal must keep its type too (a uint32 is not a float), so the
    # calls are compared by repr. Failures name the first differing call only: pytest's diff of two
    # long tables costs far more than the test, once per killed mutant.
    first = next((i for i, (got, want) in enumerate(zip(recorded, expected)) if repr(got) != repr(want)), None)
    if first is not None:
        pytest.fail(f"call {first} differs from the contract:\n  got  {recorded[first]!r}\n  want {expected[first]!r}",
                    pytrace=False)
    if len(recorded) != len(expected):
        pytest.fail(f"{len(recorded)} calls, the contract has {len(expected)} checks", pytrace=False)


@pytest.fixture(scope="module")
def smollm2():
    return next(p for p in CHECKERS if p.stem == "smollm2_135m_instruct_q4_1")


def test_smollm2_checker_admits_the_pinned_artifact(smollm2):
    report = admit(str(smollm2_gguf()), load_checker(smollm2), require_status="pinned-not-supported")
    assert report.diagnostic is None, report.diagnostic
    assert report.admitted
    assert [(s.stage, s.result) for s in report.stages] == [
        (s.value, "skipped" if s.value == "payload" else "passed") for s in ADMISSION_STAGES]


def test_smollm2_checker_verifies_the_payload(smollm2):
    """Only the payload stage: streaming the 98 MB file is the slowest thing here, run it once."""
    path = str(smollm2_gguf())
    ctx = Context(read_view(path, "gguf"), path)
    assert load_checker(smollm2).check_payload(ctx) is None
