"""The only ways a contract's strings reach a generated label file: one function per language.

A contract can never inject code: every string becomes a literal built here, never spliced into
source text by a template.
"""

from __future__ import annotations

import re

from charter.codegen.naming import identifier  # noqa: F401 - the one identifier policy, re-exported



def py_str(s: str) -> str:
    """A Python string literal: repr escapes quotes, backslashes, NUL, newlines, non-printables."""
    if not isinstance(s, str):
        raise TypeError(f"expected str, got {type(s).__name__}")
    return repr(s)


def py_ints(values) -> str:
    items = [str(_int(v)) for v in values]
    return "()" if not items else f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def py_strs(values) -> str:
    items = [py_str(v) for v in values]
    return "()" if not items else f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def cpp_str(s: str) -> str:
    """A C++ narrow string literal holding exactly `s` (UTF-8 execution character set).

    Quotes and backslashes are escaped; newline, carriage return and tab use their escapes; other
    control characters (NUL included) become three-digit octal escapes, which end by themselves
    (a following digit cannot extend them, unlike \\x); every `?` is `\\?`, so no trigraph can
    form; a `/` after `*` is octal, so `*/` never appears in the file; non-ASCII characters are
    universal character names (\\uXXXX, \\UXXXXXXXX), so the file itself is ASCII.
    """
    if not isinstance(s, str):
        raise TypeError(f"expected str, got {type(s).__name__}")
    out = ['"']
    prev = ""
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "?":
            out.append("\\?")
        elif ch == "/" and prev == "*":
            out.append("\\057")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\{o:03o}")
        elif o < 0x80:
            out.append(ch)
        elif 0xD800 <= o <= 0xDFFF:
            raise ValueError(f"lone surrogate U+{o:04X} cannot be encoded")
        elif o <= 0xFFFF:
            out.append(f"\\u{o:04X}")
        else:
            out.append(f"\\U{o:08X}")
        prev = ch
    out.append('"')
    return "".join(out)


def cpp_sv(s: str) -> str:
    """A std::string_view literal (`"..."sv`): its length is the literal's, so an embedded NUL
    does not cut it short as a `const char*` conversion would."""
    return cpp_str(s) + "sv"


def cpp_int64(value: int) -> str:
    v = _int(value)
    if not -(2**63) < v < 2**63:
        raise ValueError(f"{v} does not fit int64")
    return str(v)


def comment(text: str) -> str:
    """Text safe in a `#` or `//` comment: one line, no backslash (C++ line splicing), no `??`."""
    return re.sub(r"[^A-Za-z0-9 ._/+:@=,()-]", "_", text)[:300]


def _int(v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected int, got {type(v).__name__}")
    return v
