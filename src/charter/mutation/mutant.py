"""What a mutant is and what can become of it.

Note [Mutation verdicts]
~~~~~~~~~~~~~~~~~~~~~~~~
A mutant changes exactly one fact, of the artifact (its bytes) or of the contract (one leaf), and
carries the rejection that must follow: stage, code and field. Running it gives one verdict:

* killed      -- rejected exactly as expected;
* regression  -- rejected, but at another stage, code or field (a diagnostic regression);
* survived    -- admitted (the fact is not enforced);
* admitted    -- an acceptance control was admitted, as it must be;
* refused     -- an acceptance control was rejected (the checker rejects too much);
* equivalent  -- declared by its operator, with the reason, as unable to change meaning; not run.

Survivors, regressions and refused controls fail the battery. An expectation with stage None
("garbage" mutants: a count that makes the following bytes parse as other records) requires a
rejection at any stage; the verdict table lists them separately.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from charter.diagnostics import Code, Stage


class Verdict(str, Enum):
    KILLED = "killed"
    REGRESSION = "regression"
    SURVIVED = "survived"
    ADMITTED = "admitted"
    REFUSED = "refused"
    EQUIVALENT = "equivalent"
    ERROR = "error"

    @property
    def passes(self) -> bool:
        return self in (Verdict.KILLED, Verdict.ADMITTED, Verdict.EQUIVALENT)


@dataclass(frozen=True)
class Expect:
    """The rejection a mutant must get; None is a wildcard (any code, any field, any stage)."""

    stage: Stage | None
    code: Code | None = None
    field: str | None = None

    def __post_init__(self) -> None:
        if self.code is not None and self.code.stage is not self.stage:
            raise ValueError(f"{self.code.value} belongs to stage {self.code.stage.value}, not {self.stage}")

    @classmethod
    def of(cls, code: Code, field: str | None = None) -> "Expect":
        """A rejection with `code` (and `field`), at the stage that owns the code."""
        return cls(code.stage, code, field)

    def __str__(self) -> str:
        if self.stage is None:
            return "any rejection"
        return f"{self.stage.value} {self.code.value if self.code else '*'} {self.field or '*'}"

    def to_json(self) -> dict:
        return {"stage": self.stage and self.stage.value, "code": self.code and self.code.value, "field": self.field}

    @classmethod
    def from_json(cls, data: dict) -> "Expect":
        """The inverse of to_json; ValueError on an unknown stage or code."""
        stage, code = data["stage"], data["code"]
        return cls(None if stage is None else Stage(stage), None if code is None else Code(code), data["field"])


@dataclass(frozen=True)
class Mutant:
    side: str  # "artifact" or "contract"
    target: str  # the fact: an artifact field path or a contract leaf path
    operator: str
    expect: Expect | None  # None: an acceptance control that must be admitted
    make: Callable[[], object] | None = field(default=None, compare=False, repr=False)
    equivalent: str | None = None  # the operator's reason why this cannot change meaning
    leaf: tuple = field(default=(), compare=False)  # a contract mutant's changed path in its document

    @property
    def id(self) -> str:
        return f"{self.side}:{self.target}:{self.operator}"


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    verdict: Verdict
    stage: str | None = None
    code: str | None = None
    field: str | None = None
    detail: str = ""
    enforced_by: str = ""  # the generated check(s) a contract mutant changed, or the contract rule

    def to_json(self) -> dict:
        m = self.mutant
        return {
            "id": m.id, "side": m.side, "target": m.target, "operator": m.operator,
            "expect": None if m.expect is None else m.expect.to_json(),
            "verdict": self.verdict.value, "stage": self.stage, "code": self.code, "field": self.field,
            "detail": self.detail, "equivalent": m.equivalent, "enforced_by": self.enforced_by,
        }

    @classmethod
    def from_json(cls, data: dict) -> "Outcome":
        """The inverse of to_json, equal to the outcome that wrote it (its mutant has no `make`:
        it is not run again). ValueError when `data` is not an outcome."""
        expect = None if data["expect"] is None else Expect.from_json(data["expect"])
        mutant = Mutant(data["side"], data["target"], data["operator"], expect, None, data["equivalent"])
        if mutant.id != data["id"]:
            raise ValueError(f"outcome {data['id']!r}: its id is not side:target:operator")
        return cls(mutant, Verdict(data["verdict"]), data["stage"], data["code"], data["field"], data["detail"],
                   data["enforced_by"])


def judge(mutant: Mutant, admitted: bool, stage: str | None, code: str | None, field_: str | None,
          detail: str = "") -> Outcome:
    """The verdict of Note [Mutation verdicts] for one run."""
    e = mutant.expect
    if e is None:
        return Outcome(mutant, Verdict.ADMITTED if admitted else Verdict.REFUSED, stage, code, field_, detail)
    if admitted:
        return Outcome(mutant, Verdict.SURVIVED, detail=detail)
    exact = e.stage is None or (e.stage == stage and (e.code is None or e.code == code)
                                and (e.field is None or e.field == field_))
    return Outcome(mutant, Verdict.KILLED if exact else Verdict.REGRESSION, stage, code, field_, detail)
