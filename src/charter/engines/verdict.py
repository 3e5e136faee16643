"""What one engine says of one artifact, in the same type for both engines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from charter.admission.report import AdmissionReport, DiagnosticModel
from charter.diagnostics import ADMISSION_STAGES, Diagnostic, Stage



class Finding(NamedTuple):
    """What both engines must agree on: the diagnostic's stage, code, field and byte offset (all
    None for an admission)."""

    stage: str | None = None
    code: str | None = None
    field: str | None = None
    offset: int | None = None


@dataclass(frozen=True)
class Verdict:
    """The stages that passed and, for a rejection, the stage whose check failed and its one
    diagnostic (Note [Ordered admission] in charter.admission.runtime). An engine that cannot
    judge the artifact raises instead: a verdict is always a judgement of the file."""

    passed: tuple[Stage, ...] = ()
    failed: Stage | None = None
    diagnostic: DiagnosticModel | None = None

    @property
    def admitted(self) -> bool:
        return self.failed is None

    @property
    def finding(self) -> Finding:
        d = self.diagnostic
        return Finding() if d is None else Finding(d.stage, d.code, d.field, d.offset)

    def __str__(self) -> str:
        return show(self.finding)

    @classmethod
    def rejected(cls, stage: Stage, diagnostic: Diagnostic | DiagnosticModel,
                 passed: tuple[Stage, ...] = ()) -> Verdict:
        model = diagnostic if isinstance(diagnostic, DiagnosticModel) else DiagnosticModel(**diagnostic.to_json())
        return cls(passed, stage, model)

    @classmethod
    def of_report(cls, report: AdmissionReport) -> Verdict:
        passed = tuple(Stage(s.stage) for s in report.stages if s.result == "passed")
        failed = next((Stage(s.stage) for s in report.stages if s.result == "failed"), None)
        return cls(passed, failed, report.diagnostic)

    def header_only(self) -> Verdict:
        """This verdict as an engine that never runs the payload stage gives it (the C++ one): a
        rejection at payload is an admission of the header."""
        return Verdict(self.passed) if self.failed is Stage.PAYLOAD else self

    def report(self, *, artifact: str, contract: str, spec: str, format: str, status: str) -> AdmissionReport:
        """The AdmissionReport of this verdict: a stage that neither passed nor failed did not run,
        except payload, skipped when the header was admitted."""
        out = AdmissionReport(artifact=artifact, contract=contract, spec=spec, format=format, status=status)
        for s in ADMISSION_STAGES:
            if s in self.passed:
                out.record(s.value, "passed")
            elif s is self.failed:
                out.record(s.value, "failed")
            elif s is Stage.PAYLOAD and self.admitted:
                out.record(s.value, "skipped")
        out.diagnostic = self.diagnostic
        return out.finish()


def show(finding: Finding, offsets: bool = True) -> str:
    """`admitted`, or `stage CODE field @offset` (the offset left out unless `offsets`)."""
    if finding[0] is None:
        return "admitted"
    return " ".join(str(x) for x in finding[:3]) + (f" @{finding[3]}" if offsets else "")


def disagreement(python: Verdict, cpp: Verdict, *, offsets: bool = True) -> str | None:
    """None when both engines give the same first diagnostic (stage, code, field and, with
    `offsets`, the byte offset), else what each said: for `charter mutate --engine both` and the
    differential tests."""
    n = 4 if offsets else 3
    if python.finding[:n] == cpp.finding[:n]:
        return None
    return f"engines disagree: python {show(python.finding, offsets)} / c++ {show(cpp.finding, offsets)}"
