"""charter.engines.Options and Verdict: one options object for both engines (rt::Options), one
verdict type that both engines give and `--engine both` compares."""

from __future__ import annotations

import dataclasses

import pytest

from charter.admission.report import AdmissionReport, DiagnosticModel
from charter.diagnostics import ADMISSION_STAGES, Stage
from charter.engines import Options, Verdict, cpp, disagreement, python
from charter.engines.choose import python_checker
from charter.formats.gguf import MAX_HEADER_BYTES
from tests.conftest import ROOT

from tests.conftest import need_checker

CID = "smollm2-135m-instruct-q4_1"


@pytest.fixture(scope="module")
def checker(smollm2_set):
    return python_checker(smollm2_set, CID, ROOT / "generated").module


def _diagnostic(**kw) -> DiagnosticModel:
    base = dict(stage="tensors", code="TENSOR_MISSING", field="tensors.x", message="m", expected=None, actual=None,
                location="specs/a.yaml:3:5", offset=7)
    return DiagnosticModel(**{**base, **kw})


def test_options_are_frozen_and_typed():
    o = Options(require_status="supported")
    assert o.require_status == "supported" and o.status == "supported"
    assert Options().status is None and Options().max_header_bytes == MAX_HEADER_BYTES
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.verify_payload = True  # type: ignore[misc]
    with pytest.raises(ValueError):
        Options(require_status="suported")


def test_the_header_cap_mirrors_the_cpp_runtime(native):
    assert Options().max_header_bytes == native.GGUF_MAX_HEADER_BYTES


def test_both_engines_honour_the_header_cap(native, smollm2_path, checker):
    """max_header_bytes is an option of both engines' readers, with the same diagnostic."""
    need_checker(native, CID)
    small = Options(max_header_bytes=4096)
    py = python.run(smollm2_path, checker, small)
    c = cpp.run_file(smollm2_path, CID, small)
    assert py.finding.code == "CONTAINER_HEADER" and disagreement(py, c) is None, (str(py), str(c))
    assert python.run(smollm2_path, checker).admitted and cpp.run_file(smollm2_path, CID).admitted


def test_a_verdict_is_what_its_report_says(smollm2_path, checker):
    """Verdict.of_report and Verdict.report are inverse: the report of either engine's verdict is
    the AdmissionReport charter prints (JSON included)."""
    identity = dict(artifact=str(smollm2_path), contract=checker.CONTRACT_ID, spec=checker.SPEC,
                    format=checker.FORMAT, status=checker.STATUS)
    for options in (Options(), Options(require_status="supported"), Options(verify_payload=True)):
        report = python.admit(smollm2_path, checker, options)
        verdict = Verdict.of_report(report)
        assert verdict.report(**identity).to_json() == report.to_json()
    rejected = Verdict.of_report(python.admit(smollm2_path, checker, Options(require_status="supported")))
    assert rejected.failed is Stage.POLICY and rejected.finding == ("policy", "POLICY_STATUS", "status",
                                                                    rejected.diagnostic.offset)
    assert rejected.passed == ADMISSION_STAGES[:ADMISSION_STAGES.index(Stage.POLICY)]


def test_report_of_a_verdict():
    admitted = Verdict(tuple(s for s in ADMISSION_STAGES if s is not Stage.PAYLOAD))
    report = admitted.report(artifact="a", contract="c", spec="s", format="gguf", status="structural")
    assert isinstance(report, AdmissionReport) and report.admitted
    assert [s.result for s in report.stages] == ["passed"] * 9 + ["skipped"]
    failed = Verdict.rejected(Stage.TENSORS, _diagnostic(), ADMISSION_STAGES[:4])
    report = failed.report(artifact="a", contract="c", spec="s", format="gguf", status="structural")
    assert [s.result for s in report.stages] == ["passed"] * 4 + ["failed"] + ["not-run"] * 5
    assert report.diagnostic == _diagnostic() and not report.admitted


def test_payload_rejections_are_header_admissions_for_the_cpp_engine():
    passed = ADMISSION_STAGES[:-1]
    at_payload = Verdict.rejected(Stage.PAYLOAD, _diagnostic(stage="payload", code="PAYLOAD_DIGEST"), passed)
    assert at_payload.header_only() == Verdict(passed) and at_payload.header_only().admitted
    at_tensors = Verdict.rejected(Stage.TENSORS, _diagnostic())
    assert at_tensors.header_only() is at_tensors


def test_disagreement_names_what_each_engine_said():
    a, b = Verdict.rejected(Stage.TENSORS, _diagnostic()), Verdict()
    assert disagreement(a, a) is None and disagreement(b, Verdict(ADMISSION_STAGES)) is None
    assert disagreement(a, b) == "engines disagree: python tensors TENSOR_MISSING tensors.x @7 / c++ admitted"
    moved = Verdict.rejected(Stage.TENSORS, _diagnostic(offset=8, message="other words"))
    assert disagreement(a, moved) == ("engines disagree: python tensors TENSOR_MISSING tensors.x @7 / "
                                      "c++ tensors TENSOR_MISSING tensors.x @8")
    assert disagreement(a, moved, offsets=False) is None
    assert str(a) == "tensors TENSOR_MISSING tensors.x @7" and str(b) == "admitted"
