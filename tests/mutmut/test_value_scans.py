"""The value scans of charter/admission/values.py unit by unit: the bits each field is read as
(IQ1_M's scale gathered from four words), the verdict per block, the bound a value breaks, the
first matching rule, and the two scanners compared when both run (tools/mutmut_gate.py).
tests/mutmut/test_values.py checks the same through Context.payload."""

from __future__ import annotations

import struct

import pytest

from charter import _native
from charter.admission.runtime import block_bytes_of
from charter.admission.values import (BOTH, BadValue, OutOfBounds, ScannersDisagree, TensorBounds, TensorValues,
                                      tensor_bounds, tensor_rules)
from charter.diagnostics import Code
from charter.formats.values import INTEGER_ELEMENTS, VALUE_FIELDS
from tests.mutmut.views import tensor

GGUF = VALUE_FIELDS["gguf"]
BLOCK_BYTES = block_bytes_of("gguf")  # codec -> bytes per block, as Context.payload passes it
I8, I16 = INTEGER_ELEMENTS["gguf"]["I8"], INTEGER_ELEMENTS["gguf"]["I16"]
F32_INF = struct.pack("<3f", 1.0, float("inf"), 2.0)  # element 1 is +Inf


def scan(codec: str, native=None, compare: bool = False, name: str = "t", at: str | None = "V:1:1") -> TensorValues:
    """The value scan of a tensor of `codec` whose every value field must be finite."""
    return TensorValues(name, codec, GGUF[codec], BLOCK_BYTES(codec), at, native, compare)


def iq1m_block(words: tuple[int, int, int, int]) -> bytes:
    """An IQ1_M block (56 bytes): qs and qh of noise, then the four words of `scales`."""
    return bytes(range(1, 49)) + struct.pack("<4H", *words)


def test_an_iq1m_scale_is_the_top_nibble_of_each_of_its_four_words():
    """Each word's other bits set, so a shift or a mask read wrong changes the scale's bits."""
    finite = iq1m_block((0x1234, 0x0567, 0x389A, 0x3BCD))  # scale 0x3301
    nan = iq1m_block((0xA123, 0x5F45, 0xE9B7, 0x7ABD))  # scale 0x7E5A
    field = GGUF["IQ1_M"][0]
    iq1m = scan("IQ1_M")
    assert iq1m.first_bad(finite + nan + finite, 10) == BadValue(11, field, 0x7E5A)
    assert iq1m.bad_blocks(finite + nan + finite).tolist() == [False, True, False]
    assert iq1m.first_bad(finite * 3, 0) is None


def test_the_verdict_per_block_is_any_of_its_fields():
    d_bad, m_bad, fine = (struct.pack("<2H", 0x7C00, 0) + bytes(16), struct.pack("<2H", 0, 0xFE00) + bytes(16),
                          bytes(20))
    q = scan("Q4_1")
    assert q.bad_blocks(d_bad + fine + m_bad).tolist() == [True, False, True]
    assert q.first_bad(fine + m_bad + d_bad, 0) == BadValue(1, GGUF["Q4_1"][1], 0xFE00)
    assert q.first_bad(b"\x00", 0) is None  # less than a block: no field is read


def test_a_single_field_codec_still_names_its_blocks():
    assert scan("Q8_0", name="q").field_path(BadValue(3, GGUF["Q8_0"][0], 0x7C00)) == "values.q.blocks[3].d"
    assert scan("F32", name="f").field_path(BadValue(3, GGUF["F32"][0], 0x7F800000)) == "values.f[3]"


def lying_values(*_):
    return 0, 0, 0x7FC00000  # another first bad value than the file holds


def test_values_are_the_native_scanners_word_unless_both_are_compared():
    field = GGUF["F32"][0]
    for native, compare in ((None, False), (_native.first_bad_value, False), (_native.first_bad_value, True)):
        assert scan("F32", native, compare).first_bad(F32_INF, 5) == BadValue(6, field, 0x7F800000)
    assert TensorValues("t", "F32", GGUF["F32"], 4, None, lying_values).first_bad(F32_INF, 5) == \
        BadValue(5, field, 0x7FC00000)  # `compare` left at its default
    with pytest.raises(ScannersDisagree) as raised:
        scan("F32", lying_values, True).first_bad(F32_INF, 5)
    assert str(raised.value) == (f"engines disagree on the values of t: python {BadValue(6, field, 0x7F800000)} / "
                                 f"c++ {BadValue(5, field, 0x7FC00000)}")


RULE = ("r", ("t",), -3, 4, "V:1:1", "V:2:2")
OPEN = ("r", ("t",), None, None, None, None)


def test_a_bound_names_the_side_it_breaks():
    bounds = TensorBounds("t", "I8", I8, RULE)
    assert (bounds.lo, bounds.hi) == (-3, 4)
    assert (TensorBounds("t", "I8", I8, OPEN).lo, TensorBounds("t", "I8", I8, OPEN).hi) == (-128, 127)
    below = bounds.first_bad(bytes([1, 2, 0xFC]), 10)
    assert below == OutOfBounds(12, -4)
    assert bounds.finding(below, 100) == (Code.PAYLOAD_BOUND, "values.t[12]", "t: element 12 (I8) is -4 at byte "
                                          "112, below the bound min -3", "V:1:1", ">= -3", "-4", 112)
    assert bounds.finding(OutOfBounds(0, 5), 100) == (Code.PAYLOAD_BOUND, "values.t[0]", "t: element 0 (I8) is 5 "
                                                      "at byte 100, above the bound max 4", "V:2:2", "<= 4", "5", 100)
    wide = TensorBounds("w", "I16", I16, ("r", ("w",), 0, 9, None, None))
    assert wide.first_bad(struct.pack("<2h", 3, -1) + b"\x7f", 0) == OutOfBounds(1, -1)  # whole elements only
    assert wide.first_bad(struct.pack("<2h", 3, 9), 0) is None


def lying_bounds(*_):
    return 0, 99


def test_bounds_are_the_native_scanners_word_unless_both_are_compared():
    data = bytes([1, 0xFC])
    for native, compare in ((None, False), (_native.first_out_of_bounds, False), (_native.first_out_of_bounds, True)):
        assert TensorBounds("t", "I8", I8, RULE, native, compare).first_bad(data, 7) == OutOfBounds(8, -4)
    assert TensorBounds("t", "I8", I8, RULE, lying_bounds).first_bad(data, 7) == OutOfBounds(7, 99)
    with pytest.raises(ScannersDisagree, match=r"^engines disagree on the values of t: python "
                                               r"OutOfBounds\(index=8, value=-4\) / c\+\+ OutOfBounds\(index=7"):
        TensorBounds("t", "I8", I8, RULE, lying_bounds, True).first_bad(data, 7)


TENSORS = [tensor("i", (2,), "I8", 64, 66), tensor("n1", (2,), "F32", 66, 74), tensor("q", (32,), "Q4_1", 74, 94),
           tensor("z", (2,), "F32", 94, 102), tensor("x", (2,), "F32", 102, 110)]
RULES = (("norms", ("n*",), False, "V:3:3"), ("finite", ("q", "z"), True, "V:4:4"))


def test_the_first_matching_rule_decides_which_tensors_are_scanned(monkeypatch):
    monkeypatch.setattr(_native, "first_bad_value", lying_values)
    scans = tensor_rules(TENSORS, RULES, "gguf", BLOCK_BYTES)  # i: no float field; n1: excepted; x: no rule
    assert list(scans) == ["q", "z"] and scans["z"].at == "V:4:4" and scans["q"].block_bytes == 20
    assert scans["z"].first_bad(F32_INF, 0) == BadValue(1, GGUF["F32"][0], 0x7F800000)  # numpy by default
    assert tensor_rules(TENSORS, RULES, "gguf", BLOCK_BYTES, True)["z"].first_bad(F32_INF, 0).index == 0
    with pytest.raises(ScannersDisagree):
        tensor_rules(TENSORS, RULES, "gguf", BLOCK_BYTES, BOTH)["z"].first_bad(F32_INF, 0)


def test_bounds_apply_to_integer_tensors_their_first_rule_matches(monkeypatch):
    monkeypatch.setattr(_native, "first_out_of_bounds", lying_bounds)
    rules = (("r", ("i", "z"), -3, 4, "V:1:1", None),)
    scans = tensor_bounds(TENSORS, rules, "gguf")  # z matches but is F32; the other integers: none here
    assert list(scans) == ["i"] and (scans["i"].lo, scans["i"].hi) == (-3, 4)
    assert scans["i"].first_bad(bytes([1, 0xFC]), 0) == OutOfBounds(1, -4)  # numpy by default
    assert tensor_bounds(TENSORS, rules, "gguf", True)["i"].first_bad(bytes([1, 0xFC]), 0) == OutOfBounds(0, 99)
    with pytest.raises(ScannersDisagree):
        tensor_bounds(TENSORS, rules, "gguf", BOTH)["i"].first_bad(bytes([1, 0xFC]), 0)
    assert tensor_bounds([tensor("j", (2,), "I8", 0, 2)], rules, "gguf") == {}  # an integer no rule names
