"""A diff's findings as the run prints them: text lines, GitHub annotations, or the JSON result.

Findings print through the run's Output (Note [One output per run] in charter.console), as
diagnostics do: `file:line:col: RULE contract:field: ...` from where the user stands, the NEW fact's
location. Under `--format github` a finding that fails the gate is an `::error`, an allowed one or
one whose entry expired a `::warning`, the rest `::notice`. Order is the findings' (stable).
"""

from __future__ import annotations

from dataclasses import dataclass

from charter.output_json import _SCHEMA_CONFIG, DiagnosticJSON, LocationJSON
from charter.diff.allowlist import Applied
from charter.diff.classify import ArtifactVerdict, DiffResult, Finding
from charter.diff.rules import Category


# --- the published JSON (schemas/output.schema.json, command "diff") ------------------------------

@dataclass(frozen=True)
class DiffRejectionJSON:
    __pydantic_config__ = _SCHEMA_CONFIG
    contract: str
    """the artifact contract whose pinned artifact NEW's checker rejects"""
    artifact: str
    """the pinned artifact, shown from the working directory"""
    diagnostic: DiagnosticJSON
    """the rejection, as `charter admit` prints it"""


@dataclass(frozen=True)
class DiffFindingJSON:
    __pydantic_config__ = _SCHEMA_CONFIG
    rule: str
    """the stable rule id (docs/mutation.md, "The diff gate")"""
    category: str
    """tightened, loosened, identity or equivalent (the rule's category)"""
    contract: str
    """the contract id (NEW's; OLD's for a removed contract)"""
    kind: str
    """the contract's kind"""
    field: str
    """the leaf, as the battery names contract leaves (`tensors[0].role`)"""
    old: str | None
    """OLD's value (repr), or null when the leaf was added"""
    new: str | None
    """NEW's value (repr), or null when the leaf was removed"""
    location: LocationJSON | None
    """the fact in NEW (null for a removed contract)"""
    checks: str
    """the check-level verdict: equivalent (no generated check changed), tightened or loosened"""
    changed: list[str]
    """the generated checks that moved: `added: check_metadata: ctx.value('llama.block_count')`"""
    rejects: list[DiffRejectionJSON]
    """the pinned artifacts the change alone makes NEW reject (OLD admits them)"""
    note: str
    """how it was judged when not plainly (no artifact pinned, judged with NEW's other changes)"""
    allowed: str | None
    """the reason of the allowlist entry that allows it, or null"""
    fails: bool
    """it fails the gate: a loosening or identity change no live allowlist entry allows"""


@dataclass(frozen=True)
class DiffArtifactJSON:
    __pydantic_config__ = _SCHEMA_CONFIG
    contract: str
    """an artifact contract that changed, or whose model changed"""
    artifact: str | None
    """its pinned artifact, or null when none is pinned or found (`reason`)"""
    old: bool | None
    """OLD's checker admits it (header stages)"""
    new: bool | None
    """NEW's checker admits it (header stages)"""
    diagnostic: DiagnosticJSON | None
    """NEW's rejection, when it rejects"""
    reason: str
    """why no artifact was admitted"""


@dataclass(frozen=True)
class DiffAllowlistEntryJSON:
    __pydantic_config__ = _SCHEMA_CONFIG
    rule: str
    """the rule id it allows"""
    contract: str
    """the contract id it allows it in"""
    field: str
    """the leaf pattern (fnmatch)"""
    reason: str
    """why the change was accepted"""
    expires: str
    """the last day it allows (YYYY-MM-DD)"""
    location: LocationJSON | None
    """the entry in the allowlist file"""


@dataclass(frozen=True)
class DiffAllowlistJSON:
    __pydantic_config__ = _SCHEMA_CONFIG
    file: str
    """the allowlist read"""
    expired: list[DiffAllowlistEntryJSON]
    """entries past their date: they allow nothing"""
    unused: list[DiffAllowlistEntryJSON]
    """live entries that matched no finding"""


@dataclass(frozen=True)
class DiffResultJSON:
    __pydantic_config__ = _SCHEMA_CONFIG
    old: str
    """OLD as given: paths, or the git revision"""
    new: str
    """NEW as given"""
    passed: bool
    """no finding fails the gate"""
    counts: dict[str, int]
    """findings by category: tightened, loosened, identity, equivalent"""
    findings: list[DiffFindingJSON]
    """every changed leaf, classified, in a stable order"""
    artifacts: list[DiffArtifactJSON]
    """the pinned artifacts of the changed artifact contracts, admitted by OLD's and NEW's checkers"""
    allowlist: DiffAllowlistJSON | None
    """what the allowlist did, or null without one"""


def result_json(old: str, new: str, result: DiffResult, applied: Applied, allowlist_file: str | None) -> dict:
    findings = applied.findings
    counts = {c.value: sum(f.rule.category is c for f in findings) for c in Category}
    return {
        "old": old, "new": new, "passed": not any(f.fails for f in findings), "counts": counts,
        "findings": [_finding(f) for f in findings],
        "artifacts": [_artifact(a) for a in result.artifacts],
        "allowlist": None if allowlist_file is None else {
            "file": allowlist_file, "expired": [_entry(e) for e in applied.expired],
            "unused": [_entry(e) for e in applied.unused]},
    }


def _finding(f: Finding) -> dict:
    return {"rule": f.rule.value, "category": f.rule.category.value, "contract": f.contract, "kind": f.kind,
            "field": f.field, "old": f.old, "new": f.new, "location": str(f.location) if f.location else None,
            "checks": f.checks, "changed": list(f.changed),
            "rejects": [{"contract": r.contract, "artifact": r.artifact, "diagnostic": r.diagnostic.to_json()}
                        for r in f.rejects],
            "note": f.note, "allowed": f.allowed, "fails": f.fails}


def _artifact(a: ArtifactVerdict) -> dict:
    return {"contract": a.contract, "artifact": a.artifact, "old": a.old, "new": a.new,
            "diagnostic": a.diagnostic.to_json() if a.diagnostic else None, "reason": a.reason}


def _entry(e) -> dict:
    return {"rule": e.rule.value, "contract": e.contract, "field": e.field, "reason": e.reason,
            "expires": e.expires.isoformat(), "location": str(e.location)}


# --- text and GitHub annotations --------------------------------------------------------------------

def print_findings(out, result: DiffResult, applied: Applied) -> None:
    """Every finding, the pinned artifacts, the allowlist's expired and unused entries."""
    for f in applied.findings:
        if out.format == "github":
            level = "error" if f.fails else "warning" if f.allowed is not None or "expired on" in f.note \
                else "notice"
            out.say(out.github(f, level))
        else:
            out.say(out.line(f))
    for a in result.artifacts:
        if a.artifact is None:
            out.info(f"{a.contract}: {a.reason}: judged by the checks alone")
        elif a.old and not a.new:
            out.info(f"{a.contract}: NEW rejects the pinned {a.artifact} that OLD admits "
                     f"({a.diagnostic.code.value} {a.diagnostic.field})")
        else:
            said = {True: "admits", False: "rejects"}
            out.info(f"{a.contract}: OLD {said[a.old]} and NEW {said[a.new]} the pinned {a.artifact}")
    for e in applied.expired:
        message = f"allowlist entry expired on {e.expires}, it allows nothing: {e.describe()}"
        out.say(out.github_line(e.location, message, "warning") if out.format == "github"
                else f"{out.place(e.location)}: {message}")
    for e in applied.unused:
        out.info(f"{out.place(e.location)}: allowlist entry matches no finding: {e.describe()}")


def summary(applied: Applied) -> tuple[str, bool]:
    findings = applied.findings
    failing = [f for f in findings if f.fails]
    allowed = sum(f.allowed is not None for f in findings)
    counts = ", ".join(f"{sum(f.rule.category is c for f in findings)} {c.value}" for c in Category)
    tail = f"; {allowed} allowed by the allowlist" if allowed else ""
    if failing:
        return f"failed: {len(failing)} of {len(findings)} change(s) loosen or change identity ({counts}){tail}", False
    return f"ok: {len(findings)} change(s), none fails the gate ({counts}){tail}", True
