"""Float bit patterns survive Python floats (Note [Float bits]): every NaN keeps its sign, quiet bit
and payload through the GGUF reader, the writer, the runtime's comparison and the contract."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from charter.admission.runtime import _same_bits
from charter.floatbits import f32_bits, f32_from_bits, f64_bits, f64_from_bits
from charter.formats.gguf import GGUFArray, GGUFValueType, _encode_scalar, parse_gguf, serialize_gguf_header
from charter.contract.load import load_contract_text

SNAN, QNAN = 0x7F800001, 0x7FC00001  # struct's `<f` makes these one value


def test_struct_alone_loses_the_quiet_bit():
    widened = [struct.unpack("<f", struct.pack("<I", b))[0] for b in (SNAN, QNAN)]
    assert struct.pack("<f", widened[0]) == struct.pack("<f", widened[1])  # why floatbits exists


@given(st.integers(0, 2**32 - 1))
def test_every_float32_pattern_round_trips(bits):
    value = f32_from_bits(bits)
    assert f32_bits(value) == bits
    assert _encode_scalar(GGUFValueType.FLOAT32, value) == struct.pack("<I", bits)


@given(st.integers(0, 2**64 - 1))
def test_every_float64_pattern_round_trips(bits):
    assert f64_bits(f64_from_bits(bits)) == bits


def test_finite_values_and_infinities_widen_as_c_does():
    for bits in (0, 0x80000000, 0x7F800000, 0xFF800000, 0x3F800000, 0x00000001, 0x7F7FFFFF):
        assert f32_from_bits(bits) == struct.unpack("<f", struct.pack("<I", bits))[0]
        assert f32_bits(f32_from_bits(bits)) == bits


def test_nans_of_one_class_differ_in_the_runtime():
    assert not _same_bits("float32", f32_from_bits(SNAN), f32_from_bits(QNAN))
    assert not _same_bits("float32", 0.0, -0.0)
    assert not _same_bits("float64", f64_from_bits(0x7FF8000000000000), f64_from_bits(0xFFF8000000000000))
    assert _same_bits("float32", f32_from_bits(SNAN), f32_from_bits(SNAN))


def test_the_gguf_reader_keeps_a_signalling_nan_and_writes_it_back():
    from charter.formats.gguf import GGUFHeader, KV

    kv = KV("x.snan", GGUFValueType.FLOAT32, f32_from_bits(SNAN), 24, 24 + 8 + 6 + 4, 0)
    arr = GGUFArray.from_items(GGUFValueType.FLOAT32, [f32_from_bits(SNAN), f32_from_bits(QNAN)])
    kva = KV("x.arr", GGUFValueType.ARRAY, arr, 0, 0, 0)
    h = GGUFHeader(3, 0, 2, 32, {"x.snan": kv, "x.arr": kva}, [], 0, 0, 0, 0)
    blob = serialize_gguf_header(h)
    back = parse_gguf(blob, len(blob))
    assert f32_bits(back.kvs["x.snan"].value) == SNAN
    assert [f32_bits(v) for v in back.kvs["x.arr"].value.items()] == [SNAN, QNAN]
    assert serialize_gguf_header(back) == blob


def test_the_contract_states_what_yaml_cannot_write_as_bits():
    text = """charter: 1
kind: artifact
id: a
status: structural
model: m
format: gguf
metadata:
  keys:
    x.snan: {type: float32, bits: "0x7f800001"}
    x.ninf: {type: float64, bits: "0xfff0000000000000"}
"""
    keys = load_contract_text(text).contract.metadata.keys
    assert keys["x.snan"].bits == "0x7f800001" and keys["x.ninf"].value is None
