"""The strings a generated literal may hold (Note [Generated text] in charter.codegen.common)."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


class EscapeError(ValueError):
    """A value that no generated literal holds faithfully; the message says which and where."""


def unicode_text(s: object) -> str:
    """`s` if it is Unicode text: a str without lone surrogates, which UTF-8 cannot encode (C++
    would need their raw bytes, Python a `\\ud800` no artifact string can equal)."""
    if not isinstance(s, str):
        raise TypeError(f"expected str, got {type(s).__name__}")
    found = _SURROGATE.search(s)
    if found:
        raise EscapeError(f"lone surrogate U+{ord(found.group()):04X} at index {found.start()} of {s[:60]!r}: "
                          "not Unicode text, so no generated literal can hold it (contracts refuse them at load)")
    return s
