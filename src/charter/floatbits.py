"""IEEE-754 bit patterns that survive a trip through Python floats.

Note [Float bits]
~~~~~~~~~~~~~~~~~
A contract pins a float metadata value bit for bit: -0.0 is not 0.0, and one NaN is not another
(sign, quiet bit and payload are part of the value). A Python float is a double, and a double
keeps any bit pattern as long as nothing computes with it (`struct` packs and unpacks `<d` by
copying bytes). A float32 does not survive `struct`: unpacking `<f` widens a signalling NaN into
a quiet one and packing `<f` narrows it the same way, so 0x7f800001 and 0x7fc00001 become one
value. So charter widens a float32 NaN itself, moving its 23 payload bits (quiet bit included) to
the top of the double's 52, and narrows it back the same way: `f32_bits(f32_from_bits(b)) == b`
for every 32-bit `b`. Finite values and infinities widen and narrow exactly as C casts do. The
GGUF reader and writer, the runtime's comparison, the code generators' literals and the contract
language's `bits:` all go through these four functions; the C++ runtime compares the stored
float32 bits directly, which is the same relation.
"""

from __future__ import annotations

import math
import struct

_F32_EXP = 0x7F800000
_F32_MANT = 0x007FFFFF
_F64_EXP = 0x7FF0000000000000
_F64_MANT = 0x000FFFFFFFFFFFFF
_F32_QUIET = 0x00400000


def f64_from_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def f64_bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def f32_from_bits(bits: int) -> float:
    """The float32 `bits` as a Python float; a NaN keeps its sign, quiet bit and payload."""
    if bits & _F32_EXP == _F32_EXP and bits & _F32_MANT:
        sign = (bits >> 31) << 63
        return f64_from_bits(sign | _F64_EXP | (bits & _F32_MANT) << 29)
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def f32_bits(value: float) -> int:
    """The float32 bits of `value` (OverflowError beyond the float32 range, as struct raises).
    A NaN narrows by its top payload bits; one with none there becomes the quiet NaN."""
    if math.isnan(value):
        b = f64_bits(value)
        mant = (b & _F64_MANT) >> 29
        return (b >> 63) << 31 | _F32_EXP | (mant or _F32_QUIET)
    return struct.unpack("<I", struct.pack("<f", value))[0]


def float_bits(ctype: str, value: float) -> int:
    """The bits a `float32` or `float64` field holds for `value`."""
    return f32_bits(value) if ctype == "float32" else f64_bits(value)


def float_from_bits(ctype: str, bits: int) -> float:
    return f32_from_bits(bits) if ctype == "float32" else f64_from_bits(bits)

