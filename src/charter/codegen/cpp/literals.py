"""Literals of the checker runtime's own types (rt::Int, rt::Lit, optional locations), built on
the C++ escaper every target shares (charter.codegen.common.cpp, Note [Generated text]).
"""

from __future__ import annotations

import math

from charter.codegen.common.cpp import cpp_bool, cpp_int64, cpp_sv
from charter.floatbits import f32_bits, f64_bits

U64_MAX = 2**64 - 1


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
    """A std::int64_t value (an argument the runtime takes as int64, such as a tensor axis)."""
    return f"std::int64_t{{{cpp_int64(v)}}}"


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
