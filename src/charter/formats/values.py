"""Where each codec keeps the values that can be non-finite: float elements and block scales.

Note [Value rules]
~~~~~~~~~~~~~~~~~~
The value policy of an artifact contract (`values:`) asks the payload stage for ggml's own
verdict, `ggml_validate_row_data` in ggml/src/ggml-quants.c (what `llama.cpp --check-tensors`
runs): a float element (F32, F16, BF16, F64) or a float field of a block (the scale `d`, the
minimum `m` or `dmin`) is bad exactly when its exponent bits are all ones (an infinity or a NaN,
quiet or signalling); an MXFP4 block's e8m0 exponent `e` is bad when it is 0xff. Integer tensors
and NVFP4 (whose ue4m3 scales have no non-finite encoding) hold nothing that can be non-finite:
ggml accepts every byte, and so does charter. The integer sub-block scales of the k-quants and
i-quants (6-bit, 4-bit, 3-bit fields) cannot be non-finite either; ggml checks only the float
fields, and so does charter. IQ1_M has no float field: its f16 super-block scale is the top
nibble of each of the four little-endian uint16 words of `scales` (ggml's `iq1m_scale_t`).

A codec ggml does not validate (Q8_1: `ggml_validate_row_data` refuses the type) or whose float
encoding charter does not model (safetensors' F8/F6/F4 and complex dtypes) has no rule: a policy
that would check one of its tensors is refused by `charter check`, by name, with the codecs that
have one (charter.contract.resolve).

Note [Value bounds]
~~~~~~~~~~~~~~~~~~~
An integer tensor holds nothing non-finite, but it can hold an element no reader expects: a
position id of 512 in a table of 512 positions, a negative token id, a boolean byte of 2. A
contract bounds such tensors by name (`values.bounds`: patterns, inclusive `min` and `max`,
literals or expressions over the constants); `charter check` refuses a bound on a tensor without
an integer codec and a bound that does not fit the codec (an I8's `max: 128`, a U8's `min: -1`).
The payload stage streams a bounded tensor in the same pass as the digests and reports the first
element outside its bounds (PAYLOAD_BOUND: the tensor, the element's index, its file byte, the
bound it breaks and its value). Bounds apply whatever `default` says: they are stated per
tensor, and a tensor that a bound names cannot also be excepted. Like finiteness, a bound is not
correctness: `0 <= id <= 511` admits 512 ids in any order.

Offsets are bytes into the block (`block_*` structs of ggml-common.h, little-endian, packed).
This module imports nothing heavy: the header-only admission path may import it.
"""

from __future__ import annotations

from typing import NamedTuple


class ValueField(NamedTuple):
    """One value of a block that must be finite: its name, byte offset and encoding."""

    name: str  # "value" for the element of a float tensor; else the block field (`d`, `m`, `dmin`, `e`, `scales`)
    offset: int
    kind: str  # "f16", "bf16", "f32", "f64", "e8m0" or "iq1m" (Note [Value rules])


KIND_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "e8m0": 1, "iq1m": 8}

_D = (ValueField("d", 0, "f16"),)
_DM = (ValueField("d", 0, "f16"), ValueField("m", 2, "f16"))
_DDMIN = (ValueField("d", 0, "f16"), ValueField("dmin", 2, "f16"))

_FLOATS: dict[str, tuple[ValueField, ...]] = {
    "F32": (ValueField("value", 0, "f32"),),
    "F16": (ValueField("value", 0, "f16"),),
    "BF16": (ValueField("value", 0, "bf16"),),
    "F64": (ValueField("value", 0, "f64"),),
}
_INTEGERS = ("I8", "I16", "I32", "I64")

GGML_VALUE_FIELDS: dict[str, tuple[ValueField, ...]] = {
    **_FLOATS,
    **{name: () for name in _INTEGERS},
    "Q4_0": _D,
    "Q4_1": _DM,
    "Q5_0": _D,
    "Q5_1": _DM,
    "Q8_0": _D,
    "Q2_K": (ValueField("d", 80, "f16"), ValueField("dmin", 82, "f16")),  # scales[16], qs[64], d, dmin
    "Q3_K": (ValueField("d", 108, "f16"),),  # hmask[32], qs[64], scales[12], d
    "Q4_K": _DDMIN,
    "Q5_K": _DDMIN,
    "Q6_K": (ValueField("d", 208, "f16"),),  # ql[128], qh[64], scales[16], d
    "Q8_K": (ValueField("d", 0, "f32"),),
    "IQ2_XXS": _D,
    "IQ2_XS": _D,
    "IQ3_XXS": _D,
    "IQ1_S": _D,
    "IQ4_NL": _D,
    "IQ3_S": _D,
    "IQ2_S": _D,
    "IQ4_XS": _D,
    "IQ1_M": (ValueField("scales", 48, "iq1m"),),  # qs[32], qh[16], scales[8]
    "TQ1_0": (ValueField("d", 52, "f16"),),  # qs[48], qh[4], d
    "TQ2_0": (ValueField("d", 64, "f16"),),  # qs[64], d
    "MXFP4": (ValueField("e", 0, "e8m0"),),
    "NVFP4": (),
    "Q1_0": _D,
}

SAFETENSORS_VALUE_FIELDS: dict[str, tuple[ValueField, ...]] = {
    **_FLOATS,
    **{name: () for name in ("BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64")},
}

VALUE_FIELDS: dict[str, dict[str, tuple[ValueField, ...]]] = {
    "gguf": GGML_VALUE_FIELDS,
    "safetensors": SAFETENSORS_VALUE_FIELDS,
}


class IntegerElement(NamedTuple):
    """An integer codec's element, for value bounds (Note [Value bounds]): its scanner kind, width
    and the range a bound must fit."""

    kind: str  # "i8", "u8", "i16", "u16", "i32", "u32", "i64" or "u64" (little-endian)
    bytes: int
    lo: int
    hi: int


def _integer(kind: str, lo: int | None = None, hi: int | None = None) -> IntegerElement:
    bits = int(kind[1:])
    signed = kind[0] == "i"
    low = -(1 << (bits - 1)) if signed else 0
    high = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    return IntegerElement(kind, bits // 8, low if lo is None else lo, high if hi is None else hi)


# codec -> its element, per format. A safetensors BOOL is one byte that holds 0 or 1: bounds on it
# fit 0..1, and its bytes are scanned as u8, so a byte of 2 is outside `max: 1`.
INTEGER_ELEMENTS: dict[str, dict[str, IntegerElement]] = {
    "gguf": {name: _integer("i" + name[1:]) for name in _INTEGERS},
    "safetensors": {
        "BOOL": _integer("u8", 0, 1),
        **{name: _integer(name[0].lower() + name[1:]) for name in ("U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64")},
    },
}


def describe(kind: str, raw: int) -> str:
    """What a bad value is, by its bits: `+Inf`, `-Inf`, `NaN` (quiet) or `sNaN` (signalling)."""
    if kind == "e8m0":
        return f"NaN (e8m0 0x{raw:02x})"
    width, mantissa_bits = {"f16": (16, 10), "iq1m": (16, 10), "bf16": (16, 7), "f32": (32, 23), "f64": (64, 52)}[kind]
    mantissa = raw & ((1 << mantissa_bits) - 1)
    negative = raw >> (width - 1) & 1
    name = "f16" if kind == "iq1m" else kind
    hexed = f"0x{raw:0{width // 4}x}"
    if mantissa == 0:
        return f"{'-' if negative else '+'}Inf ({name} {hexed})"
    quiet = mantissa >> (mantissa_bits - 1) & 1
    return f"{'NaN' if quiet else 'sNaN'} ({name} {hexed})"
