"""The diff gate's allowlist: a loosening or identity change a reviewer accepted, with a reason and
an expiry date (PyTorch's forward/backward-compatibility allowlist, in YAML).

Note [Allowlist entries expire]: an entry names a rule id, a contract id and the leaf (`field`,
an fnmatch pattern, so `tensors[*].role` covers every row), says why, and stops allowing on its
`expires` date (ISO, quoted: the strict YAML loader reads no dates). An expired entry allows
nothing and is reported, so an exception granted for a migration cannot outlive it silently; an
entry that matches no finding is reported as unused. The file is `[tool.charter] diff-allowlist`,
or `--allowlist FILE`; it is read with the contracts' strict loader, and every schema error is a
located diagnostic (exit 2).

    # charter diff allowlist (docs/mutation.md, "The diff gate")
    allow:
      - rule: LOOSEN_CHECK_REMOVED
        contract: smollm2-135m-instruct-q4_1
        field: tokenizer.stop[0]
        reason: upstream dropped the second stop id (PR 123)
        expires: "2027-03-31"
"""

from __future__ import annotations

import datetime
import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints, ValidationError

from charter.diagnostics import CharterError, Code, Diagnostic, Location
from charter.diff.rules import Rule

_Text = Annotated[str, StringConstraints(min_length=1)]


def _iso_date(text: str) -> str:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"expected a date as YYYY-MM-DD (quoted), got {text!r}") from None
    if len(text) != 10:
        raise ValueError(f"expected a date as YYYY-MM-DD (quoted), got {text!r}")
    return text


def _rule_id(text: str) -> str:
    if text not in Rule._value2member_map_:
        raise ValueError(f"unknown rule id {text!r}; the ids are in docs/mutation.md (\"The diff gate\")")
    return text


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    rule: Annotated[str, AfterValidator(_rule_id)]
    contract: _Text
    field: _Text
    reason: _Text
    expires: Annotated[str, AfterValidator(_iso_date)]


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    allow: list[_Entry]


@dataclass(frozen=True)
class Entry:
    rule: Rule
    contract: str
    field: str
    reason: str
    expires: datetime.date
    location: Location

    def matches(self, finding) -> bool:
        return finding.rule is self.rule and finding.contract == self.contract \
            and fnmatch.fnmatchcase(finding.field, self.field)

    def describe(self) -> str:
        return f"{self.rule.value} {self.contract}:{self.field} (expires {self.expires}: {self.reason})"


@dataclass(frozen=True)
class Allowlist:
    file: str
    entries: tuple[Entry, ...]


def load(path: str | Path) -> Allowlist:
    """The allowlist at `path`; raises CharterError with located diagnostics."""
    from charter.contract.load import refusal
    from charter.contract.paths import display_path
    from charter.contract.yamlload import load_file

    shown = display_path(Path(path))
    if not Path(path).is_file():
        raise CharterError([Diagnostic(Code.FILE_UNREADABLE, "", "the diff allowlist does not exist "
                                       "([tool.charter] diff-allowlist, --allowlist)", location=Location(shown))])
    doc = load_file(path, shown)
    try:
        parsed = _File.model_validate(doc.data)
    except ValidationError as exc:
        raise refusal(exc, doc) from None
    return Allowlist(shown, tuple(
        Entry(Rule(e.rule), e.contract, e.field, e.reason, datetime.date.fromisoformat(e.expires),
              doc.where(("allow", i)))
        for i, e in enumerate(parsed.allow)))


@dataclass
class Applied:
    """What the allowlist did to one diff's findings."""

    findings: list  # the findings, each allowed one with its entry's reason
    expired: list[Entry]  # entries past their date (each allows nothing)
    unused: list[Entry]  # live entries that matched no finding


def apply(allowlist: Allowlist | None, findings: list, today: datetime.date) -> Applied:
    """Mark each failing finding an unexpired entry allows (Note [Allowlist entries expire])."""
    import dataclasses

    if allowlist is None:
        return Applied(findings, [], [])
    live = [e for e in allowlist.entries if e.expires >= today]
    expired = [e for e in allowlist.entries if e.expires < today]
    used: set[int] = set()
    out = []
    for f in findings:
        entry = next((e for e in live if e.matches(f)), None) if f.rule.category.fails else None
        if entry is not None:
            used.add(id(entry))
            f = dataclasses.replace(f, allowed=entry.reason)
        else:
            stale = next((e for e in expired if e.matches(f)), None)
            if stale is not None:
                f = dataclasses.replace(f, note="; ".join(filter(None, [
                    f.note, f"the allowlist entry at {stale.location} expired on {stale.expires}"])))
        out.append(f)
    return Applied(out, expired, [e for e in live if id(e) not in used])
