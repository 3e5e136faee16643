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
    """the stage's name, in the order admission runs them (docs/diagnostics.md)"""
    result: StageResult
    """passed; failed (the diagnostic says why); not-run (an earlier stage failed); skipped (the opt-in payload
    stage, not asked for)"""


@dataclass(frozen=True)
class DiagnosticModel:
    __pydantic_config__ = _SCHEMA_CONFIG
    stage: str
    """the stage that rejected the artifact"""
    code: str
    """the stable diagnostic code, documented in docs/diagnostics.md"""
    field: str
    """the field path of the fact, e.g. metadata.llama.block_count"""
    message: str
    """what was expected and what was found, in words"""
    expected: str | None
    """the contract's value, when there is one to print"""
    actual: str | None
    """the artifact's value, when there is one to print"""
    location: str | None
    """where the contract states the fact: {file, line, column} in the published JSON (the report
    holds its name, file:line:col, Note [Spec names and shown paths])"""
    offset: int | None
    """byte offset in the artifact, when known"""


@dataclass
class AdmissionReport:
    """Serialized with `to_json`; its JSON Schema is published as schemas/admission-report.schema.json."""

    __pydantic_config__ = _SCHEMA_CONFIG
    artifact: str
    """the artifact file admitted, as given"""
    contract: str
    """the artifact contract's id"""
    spec: str
    """the contract file"""
    format: str
    """the container format: gguf or safetensors"""
    status: str
    """the contract's status, the claim boundary of this admission"""
    charter: str = __version__
    """the charter version that admitted it"""
    admitted: bool = False
    """true when every stage that ran passed"""
    stages: list[StageOutcome] = field(default_factory=list)
    """every stage, in order, with its result"""
    diagnostic: DiagnosticModel | None = None
    """the one diagnostic that stopped admission; null when admitted"""
    claim: str = CLAIM
    """what an admission proves, and what it does not"""

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
