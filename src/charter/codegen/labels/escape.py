"""The only ways a contract's strings reach a generated label file: one function per language.

A contract can never inject code: every string becomes a literal built here, never spliced into
source text by a template.
"""

from __future__ import annotations

import keyword
import re

CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t
class compl concept const consteval constexpr constinit const_cast continue co_await co_return
co_yield decltype default delete do double dynamic_cast else enum explicit export extern false
float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr
operator or or_eq private protected public register reinterpret_cast requires return short signed
sizeof static static_assert static_cast struct switch template this thread_local throw true try
typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq
""".split())


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


def identifier(name: str) -> str:
    """An identifier for both Python and C++ from a contract id ([a-z0-9][a-z0-9._-]*)."""
    out = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", name)).strip("_") or "fixture"
    if out[0].isdigit():
        out = f"c_{out}"
    if keyword.iskeyword(out) or keyword.issoftkeyword(out) or out in CPP_KEYWORDS:
        out += "_"
    return out


def _int(v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected int, got {type(v).__name__}")
    return v
