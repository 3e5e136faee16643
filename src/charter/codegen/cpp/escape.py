"""The only way a contract's values reach generated C++: literals built here, never spliced.

`cpp_sv` is the one string escaping function. Its output is a `std::string_view` literal
(`"..."sv`) whose length is the literal's own, so an embedded NUL does not cut it short, and whose
bytes are exactly the UTF-8 encoding of the string:

* `"` and `\\` are escaped; newline, carriage return and tab use their short escapes;
* every other control character (NUL included) and every byte of a non-ASCII character is a
  three-digit octal escape, which ends by itself (a following digit cannot extend it, unlike
  `\\x`), so the file stays ASCII whatever the compiler's execution character set, and U+2028,
  U+2029 or a BOM inside a contract string are just bytes;
* every `?` is `\\?`, so no trigraph can form; a `/` after `*` is octal, so `*/` never appears;
* a lone surrogate (which UTF-8 cannot encode) becomes its three surrogate bytes: such a string
  can never equal a validated UTF-8 value from an artifact, exactly as in Python.
"""

from __future__ import annotations

import math

from charter.codegen.naming import identifier  # noqa: F401 - the one identifier policy, re-exported
from charter.floatbits import f32_bits, f64_bits

U64_MAX = 2**64 - 1


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


def cpp_sv(s: str) -> str:
    """A std::string_view literal holding exactly the UTF-8 bytes of `s` (see the module docstring)."""
    if not isinstance(s, str):
        raise TypeError(f"expected str, got {type(s).__name__}")
    out = ['"']
    prev = 0
    for b in _utf8(s):
        if b == 0x22:
            out.append('\\"')
        elif b == 0x5C:
            out.append("\\\\")
        elif b == 0x0A:
            out.append("\\n")
        elif b == 0x0D:
            out.append("\\r")
        elif b == 0x09:
            out.append("\\t")
        elif b == 0x3F:
            out.append("\\?")
        elif b == 0x2F and prev == 0x2A:
            out.append("\\057")
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
        prev = b
    out.append('"sv')
    return "".join(out)


def cpp_opt_sv(s: str | None) -> str:
    """A string_view literal, or `{}` (empty) for None: locations and optional strings."""
    return "{}" if s is None else cpp_sv(s)


def cpp_int(v: int) -> str:
    """An rt::Int literal: exact in [-(2**64-1), 2**64-1], else a value that equals nothing."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected int, got {type(v).__name__}")
    if 0 <= v <= U64_MAX:
        return f"rt::Int({v}ull)"
    if -U64_MAX <= v < 0:
        return f"rt::Int::negative({-v}ull)"
    return f"rt::Int::out_of_range({'true' if v < 0 else 'false'})"


def cpp_i64(v: int) -> str:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected int, got {type(v).__name__}")
    if not -(2**63) < v < 2**63:
        raise ValueError(f"{v} does not fit int64")
    return f"std::int64_t{{{v}}}"


def cpp_bool(v: bool) -> str:
    if not isinstance(v, bool):
        raise TypeError(f"expected bool, got {type(v).__name__}")
    return "true" if v else "false"


def _packs(value) -> tuple[bool, int, bool, int]:
    """What runtime.py's _same_bits does to an expected value: the float64 and float32 bits of
    float(value) (Note [Float bits] in charter/floatbits.py)."""
    try:
        f = float(value)
    except (TypeError, ValueError, OverflowError):
        return False, 0, False, 0
    b64 = f64_bits(f)
    try:
        b32 = f32_bits(f)
    except OverflowError:
        return True, b64, False, 0
    return True, b64, True, b32


def cpp_lit(value) -> str:
    """An rt::Lit: a contract value (int, bool, float or str) with its precomputed float packings."""
    if isinstance(value, bool):
        return f"rt::Lit::boolean({cpp_bool(value)})"
    h64, b64, h32, b32 = _packs(value)
    packs = f"{cpp_bool(h64)}, 0x{b64:016x}ull, {cpp_bool(h32)}, 0x{b32:08x}u"
    if isinstance(value, int):
        return f"rt::Lit::integer({cpp_int(value)}, {packs})"
    if isinstance(value, float):
        if math.isnan(value):
            real = "__builtin_nan(\"\")"
        elif math.isinf(value):
            real = "__builtin_inf()" if value > 0 else "-__builtin_inf()"
        else:
            real = float.hex(value)  # exact: a C++17 hexadecimal floating literal
        return f"rt::Lit::real({real}, 0x{b64:016x}ull, {cpp_bool(h32)}, 0x{b32:08x}u)"
    if isinstance(value, str):
        return f"rt::Lit::str({cpp_sv(value)}, {packs})"
    raise TypeError(f"no C++ literal for {type(value).__name__}")


def cpp_comment(text: str) -> str:
    """Text safe in a `//` comment: one line, printable ASCII, no trailing backslash (a line splice)
    and no `??` (a trigraph)."""
    out = "".join(c if 0x20 <= ord(c) < 0x7F and c not in "\\?" else "_" for c in text)
    return out[:300]
