"""The result of one bundle admission: the stages of Note [Bundle stages] and the one diagnostic,
with the bundle file it is about. Plain dataclasses, as charter.admission.report."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from charter import __version__
from charter.admission.report import CLAIM, DiagnosticModel, StageOutcome, StageResult, _SCHEMA_CONFIG
from charter.diagnostics import BUNDLE_STAGES, Diagnostic, printable


@dataclass
class BundleReport:
    """Serialized with `to_json`; its JSON Schema is published as schemas/bundle-report.schema.json."""

    __pydantic_config__ = _SCHEMA_CONFIG
    bundle: str
    """the bundle folder, as given"""
    contract: str
    """the bundle contract's id"""
    spec: str
    """the bundle contract file"""
    artifact_contract: str
    """the artifact contract every weight file is admitted by"""
    format: str
    """the container format of the weight files"""
    status: str
    """the bundle contract's status, the claim boundary of this admission"""
    files: int = 0
    """files the contract lists"""
    weight_files: int = 0
    """files of role weights, each admitted by the artifact contract"""
    charter: str = __version__
    """the charter version that admitted it"""
    admitted: bool = False
    """true when every stage that ran passed"""
    stages: list[StageOutcome] = field(default_factory=list)
    """every bundle stage, in order, with its result"""
    file: str | None = None
    """the bundle file the diagnostic is about (a path inside the bundle), when it is about one"""
    diagnostic: DiagnosticModel | None = None
    """the one diagnostic that stopped admission; null when admitted"""
    claim: str = CLAIM
    """what an admission proves, and what it does not"""

    def record(self, stage: str, result: StageResult) -> None:
        self.stages.append(StageOutcome(stage=stage, result=result))

    def reject(self, stage: str, diagnostic: Diagnostic | DiagnosticModel, file: str | None) -> None:
        self.record(stage, "failed")
        self.diagnostic = diagnostic if isinstance(diagnostic, DiagnosticModel) else DiagnosticModel(**diagnostic.to_json())
        self.file = file

    def finish(self) -> "BundleReport":
        ran = {s.stage for s in self.stages}
        self.stages += [StageOutcome(stage=s.value, result="not-run") for s in BUNDLE_STAGES if s.value not in ran]
        order = [s.value for s in BUNDLE_STAGES]
        self.stages.sort(key=lambda s: order.index(s.stage))
        self.admitted = self.diagnostic is None
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def render(self, place=str) -> str:
        """One line; `place` shows the diagnostic's location text (charter.console.Output.place)."""
        if self.admitted:
            passed = sum(s.result == "passed" for s in self.stages)
            skipped = [s.stage for s in self.stages if s.result == "skipped"]
            extra = f"; skipped: {', '.join(skipped)}" if skipped else ""
            return (f"admitted: {printable(self.bundle)} is bundle {self.contract} (status {self.status}; "
                    f"{self.files} files, {self.weight_files} admitted by {self.artifact_contract}); "
                    f"{passed} stages passed{extra}")
        d = self.diagnostic
        where = f"{printable(place(d.location))}: " if d.location else ""
        of = f" ({printable(self.file)})" if self.file else ""
        at = f" (byte {d.offset} of {printable(self.file)})" if d.offset is not None and self.file else ""
        return f"rejected at {d.stage}{of}: {where}{d.code} {printable(d.field)}: {printable(d.message)}{at}"
