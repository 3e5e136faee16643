"""Targeted edits of scalar values in YAML text: comments, order and layout stay as written.

`charter fixtures capture --update-digests` must change a spec's `sha256:` values and nothing
else. A generic YAML dumper would drop comments and reflow the file, so the edit is textual: the
loader's location of each value (line and column of its first character) is where the old value
must be found, exactly, plain or quoted; anything else is refused rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from charter.diagnostics import Location
from charter.contract.yamlload import resolve_plain


@dataclass(frozen=True)
class Edit:
    location: Location
    old: str
    new: str


class EditError(ValueError):
    pass


def _offset(lines: list[str], location: Location) -> int:
    if not 1 <= location.line <= len(lines):
        raise EditError(f"{location}: no such line")
    return sum(len(line) for line in lines[: location.line - 1]) + location.col - 1


def apply(text: str, edits: list[Edit]) -> str:
    """`text` with each edit's old scalar replaced by the new one (both plain strings)."""
    lines = text.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + lines[-1:]  # YAML's line breaks, not str.splitlines'
    spans = []
    for e in edits:
        at = _offset(lines, e.location)
        if text.startswith(e.old, at) and not text[at + len(e.old): at + len(e.old) + 1].strip(" \t\r\n#,]}"):
            spans.append((at, at + len(e.old), _plain(e.new)))
        elif text[at: at + 1] in ("'", '"') and text.startswith(e.old + text[at], at + 1):
            q = text[at]
            spans.append((at, at + len(e.old) + 2, q + e.new + q))
        else:
            raise EditError(f"{e.location}: expected the value {e.old!r} here")
    spans.sort()
    for (_, end_a, _), (start_b, _, _) in zip(spans, spans[1:]):
        if start_b < end_a:
            raise EditError("edits overlap")
    for start, end, replacement in reversed(spans):
        text = text[:start] + replacement + text[end:]
    return text


def _plain(value: str) -> str:
    """`value` as a plain scalar if charter's loader reads it back as that string, else quoted."""
    try:
        if resolve_plain(value, "", Location("")) == value:
            return value
    except Exception:  # noqa: BLE001 - any refusal means: quote it
        pass
    return f'"{value}"'
