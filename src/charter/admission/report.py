"""The result of one admission: which stages ran, and the one diagnostic that stopped it.

Plain dataclasses, so an admission imports no validation library; the published JSON Schema
(schemas/admission-report.schema.json) is derived from these same classes by charter.contract.schema,
which reads `__pydantic_config__` and the field docstrings.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Literal

from charter import __version__
from charter.diagnostics import ADMISSION_STAGES, Diagnostic, printable

StageResult = Literal["passed", "failed", "not-run", "skipped"]

CLAIM = (
    "structural admission only: the artifact's header matches the contract. It does not prove the "
    "weights compute the model, that any runtime supports it, or payload integrity unless payload passed."
)
_SCHEMA_CONFIG = {"extra": "forbid", "use_attribute_docstrings": True}


@dataclass(frozen=True)
class StageOutcome:
    __pydantic_config__ = _SCHEMA_CONFIG
    stage: str
    result: StageResult


@dataclass(frozen=True)
class DiagnosticModel:
    __pydantic_config__ = _SCHEMA_CONFIG
    stage: str
    code: str
    field: str
    message: str
    expected: str | None
    actual: str | None
    location: str | None
    """file:line:col of the contract fact"""
    offset: int | None
    """byte offset in the artifact, when known"""


@dataclass
class AdmissionReport:
    """Serialized with `to_json`; its JSON Schema is published as schemas/admission-report.schema.json."""

    __pydantic_config__ = _SCHEMA_CONFIG
    artifact: str
    contract: str
    spec: str
    format: str
    status: str
    charter: str = __version__
    admitted: bool = False
    stages: list[StageOutcome] = field(default_factory=list)
    diagnostic: DiagnosticModel | None = None
    claim: str = CLAIM

    def record(self, stage: str, result: StageResult) -> None:
        self.stages.append(StageOutcome(stage=stage, result=result))

    def reject(self, stage: str, diagnostic: Diagnostic) -> None:
        self.record(stage, "failed")
        self.diagnostic = DiagnosticModel(**diagnostic.to_json())
        self.admitted = False

    def finish(self) -> "AdmissionReport":
        ran = {s.stage for s in self.stages}
        for stage in ADMISSION_STAGES:
            if stage.value not in ran:
                self.stages.append(StageOutcome(stage=stage.value, result="not-run"))
        order = [s.value for s in ADMISSION_STAGES]
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
            return (f"admitted: {printable(self.artifact)} is {self.contract} (status {self.status}); "
                    f"{passed} stages passed{extra}")
        d = self.diagnostic
        where = f"{printable(place(d.location))}: " if d.location else ""
        at = f" (artifact byte {d.offset})" if d.offset is not None else ""
        return f"rejected at {d.stage}: {where}{d.code} {printable(d.field)}: {printable(d.message)}{at}"
