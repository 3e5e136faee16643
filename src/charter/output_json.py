"""The shapes of what every command prints under `--format json` (schemas/output.schema.json;
charter.contract.schema derives it, charter.diff.render builds on it). Kept out of charter.console,
which every command imports: a frozen dataclass costs about 0.4 ms to define, and `charter admit`
prints none of these unless asked."""

from __future__ import annotations

from dataclasses import dataclass

from charter.admission.report import _SCHEMA_CONFIG

# Plain dataclasses, as the reports are: the schema comes from them, the run builds dicts of the
# same shape (charter.console.Output.envelope, Output.publish). Every `location` is a LocationJSON when published.


@dataclass(frozen=True)
class LocationJSON:
    __pydantic_config__ = _SCHEMA_CONFIG
    file: str
    """the file, relative to the working directory when it lies below it, else absolute"""
    line: int | None
    """1-based line, or null when the finding is about the whole file"""
    column: int | None
    """1-based column, or null"""


@dataclass(frozen=True)
class DiagnosticJSON:
    __pydantic_config__ = _SCHEMA_CONFIG
    stage: str
    """the stage that found it (spec for a contract error; an admission stage)"""
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
    location: LocationJSON | None
    """the contract fact that says so"""
    offset: int | None
    """byte offset in the artifact, when known"""


@dataclass(frozen=True)
class CheckResult:
    __pydantic_config__ = _SCHEMA_CONFIG
    valid: bool
    """every contract is valid"""
    contracts: list[str]
    """the ids of the valid contracts (empty when any is invalid)"""


@dataclass(frozen=True)
class WrittenResult:
    """schema, freeze: the files written."""

    __pydantic_config__ = _SCHEMA_CONFIG
    written: list[str]
    """the files written, shown from the working directory"""


@dataclass(frozen=True)
class GenerateResult:
    __pydantic_config__ = _SCHEMA_CONFIG
    current: bool
    """the generated tree is what the contracts generate (after writing, or as checked)"""
    stale: list[str]
    """--check: every stale, missing or orphaned generated file"""
    written: list[str]
    """the files written (none under --check)"""


@dataclass(frozen=True)
class LocateResult:
    __pydantic_config__ = _SCHEMA_CONFIG
    path: str
    """the pinned artifact, its size and sha256 checked"""


@dataclass(frozen=True)
class OutputJSON:
    """What every command prints under --format json: one object."""

    __pydantic_config__ = _SCHEMA_CONFIG
    charter: str
    """charter's version"""
    command: str
    """the command that ran: check, check-changed, schema, generate, admit, locate, freeze, fixtures verify,
    fixtures capture, mutate, diff"""
    exit: int
    """the exit status (docs/cli.md#exit-codes)"""
    diagnostics: list[DiagnosticJSON]
    """every diagnostic of the run (an admission's rejection, a contract's errors)"""
    result: dict | list | None
    """the command's result, its shape set by `command` (allOf below), or null when it stopped before one (exit 2)"""


@dataclass(frozen=True)
class FixturesVerifyResult:
    __pydantic_config__ = _SCHEMA_CONFIG
    verified: bool
    """every fixture and text contract verified"""
    fixtures: dict[str, bool]
    """provenance contract id -> verified"""
    text: dict[str, bool]
    """text contract id -> verified"""


@dataclass(frozen=True)
class CapturedFixture:
    __pydantic_config__ = _SCHEMA_CONFIG
    output: str
    """the fixture file"""
    wrote: bool
    """it changed and was written (false: byte for byte what was there)"""
    updated: list[str]
    """arrays whose digests --update-digests rewrote"""


@dataclass(frozen=True)
class FixturesCaptureResult:
    __pydantic_config__ = _SCHEMA_CONFIG
    captured: bool
    """every producer ran and reproduced its arrays or cases"""
    fixtures: dict[str, CapturedFixture]
    """provenance contract id -> what was captured"""
    text: dict[str, bool]
    """text contract id -> its upstream cases reproduced"""
