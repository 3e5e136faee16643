"""C++ text from contract values: string literals, bools, int64s, floats and `//` comments.

`cpp_str` is the one string escaper of every C++ target (checkers, labels, bindings) and of MSL,
which is C++14 (Metal headers hold comments and numbers only). Its output is an ASCII narrow
string literal whose bytes are exactly the UTF-8 encoding of the string, whatever the compiler's
source or execution character set:

* printable ASCII stands for itself, except `"` and `\\` (escaped), `?` (always `\\?`, so no
  trigraph can form under -trigraphs or C++14) and a `/` after `*` (octal, so `*/` never appears);
* newline, carriage return and tab use their short escapes;
* every other byte (other controls, NUL, DEL, each byte of a non-ASCII character) is a
  three-digit octal escape. An octal escape ends after three digits, so a following digit never
  extends it (`\\x` would swallow every following hex digit); a universal character name
  (`\\u00e9`) would be encoded in the execution character set, which need not be UTF-8;
* a lone surrogate is refused (charter.codegen.common.text).
"""

from __future__ import annotations

import functools
import math
import re
import struct

from charter.codegen.common.text import unicode_text

_SHORT = {0x22: '\\"', 0x5C: "\\\\", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x3F: "\\?"}


def cpp_str(s: str) -> str:
    """A C++ narrow string literal holding exactly the UTF-8 bytes of `s` (see the module docstring);
    each str escaped once (a mutation battery renders a C++ checker per contract mutant)."""
    return _escaped(s) if type(s) is str else _escaped.__wrapped__(s)


@functools.lru_cache(maxsize=1 << 16)
def _escaped(s: str) -> str:
    out = ['"']
    prev = 0
    for b in unicode_text(s).encode("utf-8"):
        if b in _SHORT:
            out.append(_SHORT[b])
        elif b < 0x20 or b >= 0x7F or (b == 0x2F and prev == 0x2A):
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
        prev = b
    out.append('"')
    return "".join(out)


def cpp_sv(s: str) -> str:
    """A std::string_view literal (`"..."sv`): its length is the literal's, so an embedded NUL does
    not cut it short as a `const char*` conversion would."""
    return cpp_str(s) + "sv"


def cpp_bool(v: bool) -> str:
    if not isinstance(v, bool):
        raise TypeError(f"expected bool, got {type(v).__name__}")
    return "true" if v else "false"


def cpp_int64(v: int) -> str:
    """A decimal literal of an int64 (INT64_MIN has none: `-9223372036854775808` is unary minus
    applied to a literal no signed type holds)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected int, got {type(v).__name__}")
    if not -(2**63) < v < 2**63:
        raise ValueError(f"{v} does not fit int64")
    return str(v)


def cpp_float(v: float, ctype: str) -> str:
    """An exact hexadecimal literal of `v` rounded to `ctype` (float: to nearest float32, with the
    `f` suffix; double: as is). Non-finite values, and values whose float32 rounding overflows, are
    refused: the literal must be the number the contract states, rounded once."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"expected a number, got {type(v).__name__}")
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"{v} is not finite")
    if ctype == "double":
        return v.hex()
    if ctype != "float":
        raise ValueError(f"no float literal of C++ type {ctype}")
    try:
        (rounded,) = struct.unpack("<f", struct.pack("<f", v))
    except OverflowError:
        raise ValueError(f"{v} does not fit float32") from None
    return rounded.hex() + "f"


@functools.lru_cache(maxsize=1 << 16)  # a battery comments the same locations in every mutant's checker
def cpp_comment(text: str) -> str:
    """Text for a `//` comment (C++ and MSL): one line of printable ASCII (others become `_`), with
    no backslash (a line splice would comment out the next line) and no `?` (no trigraph `??/`)."""
    return _NOT_IN_COMMENT.sub("_", text)


_NOT_IN_COMMENT = re.compile(r"[^\x20-\x7e]|[\\?]")  # each such character (code point) becomes one `_`
