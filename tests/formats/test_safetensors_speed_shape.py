"""The reader's fast path (C decoder, no positions) against its positional walker (the reference):
on random valid headers the fast path alone accepts and builds the walker's header; on random
edits of them both give the same header or the same diagnostic (code, field, offset, message)."""

from __future__ import annotations

import json
import struct
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charter.diagnostics import CharterError
from charter.formats import safetensors as S

from .conftest import plain_id

_PROPS = settings(max_examples=200, deadline=None)

# --- headers as JSON text, so top-level duplicates and raw fragments can be written -------------


@st.composite
def tensors(draw):
    """[(name, entry)] tiling the data section in a random order, and the data length."""
    names = draw(
        st.lists(
            st.text(min_size=0, max_size=8).filter(lambda s: s != "__metadata__"),
            max_size=6,
            unique=True,
        )
    )
    specs = []
    for _ in names:
        dtype = draw(st.sampled_from(sorted(S.DTYPE_BITS)))
        shape = draw(st.lists(st.integers(0, 5), max_size=3))
        count = 1
        for d in shape:
            count *= d
        if count * S.DTYPE_BITS[dtype] % 8:
            shape.append(8)  # sub-byte dtypes must fill whole bytes
            count *= 8
        specs.append((dtype, shape, count * S.DTYPE_BITS[dtype] // 8))
    order = draw(st.permutations(range(len(names))))
    begins, pos = {}, 0
    for i in order:
        begins[i], pos = pos, pos + specs[i][2]
    entries = [
        (name, {"dtype": dt, "shape": sh, "data_offsets": [begins[i], begins[i] + nb]})
        for i, (name, (dt, sh, nb)) in enumerate(zip(names, specs))
    ]
    return entries, pos


@st.composite
def layouts(draw):
    """How a writer might lay the JSON out: separators, escaping, padding."""
    return {
        "sep": draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")])),
        "ascii": draw(st.booleans()),
        "lead": draw(st.sampled_from(["", " ", "\n\t "])),
        "pad": draw(st.booleans()),
    }


class Raw(str):
    """A JSON fragment written as is (duplicate keys, NaN, escapes json.dumps would not write)."""


def dump(value, layout) -> str:
    if isinstance(value, Raw):
        return value
    return json.dumps(value, ensure_ascii=layout["ascii"], separators=layout["sep"])


def header_text(items, layout) -> str:
    comma, colon = layout["sep"]
    body = comma.join(f"{dump(k, layout)}{colon}{dump(v, layout)}" for k, v in items)
    return layout["lead"] + "{" + body + "}"


def st_file(text: str, data_len: int, pad: bool) -> bytes:
    raw = text.encode("utf-8")
    if pad:
        raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + bytes(data_len)


@st.composite
def valid_files(draw):
    entries, data_len = draw(tensors())
    items = list(entries)
    if draw(st.booleans()):
        meta = draw(st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=3))
        items.insert(draw(st.integers(0, len(items))), ("__metadata__", meta))
    layout = draw(layouts())
    return st_file(header_text(items, layout), data_len, layout["pad"])


# Zero-sized at [0, 0] where the fault allows, so that fault is the only one and tiling holds.
BAD_VALUES = [
    [],
    "F32",
    None,
    {"dtype": "F32", "shape": [0]},
    {"dtype": "F32", "shape": [0], "data_offsets": [0, 0], "x": 1},
    {"dtype": "F33", "shape": [0], "data_offsets": [0, 0]},
    {"dtype": ["F32"], "shape": [0], "data_offsets": [0, 0]},
    {"dtype": "F32", "shape": 0, "data_offsets": [0, 0]},
    {"dtype": "F32", "shape": [-1, 0], "data_offsets": [0, 0]},
    {"dtype": "F32", "shape": [True, 0], "data_offsets": [0, 0]},
    {"dtype": "F32", "shape": [0.0], "data_offsets": [0, 0]},
    {"dtype": "F32", "shape": [[0]], "data_offsets": [0, 0]},
    {"dtype": "U8", "shape": [2**40, 2**40, 0], "data_offsets": [0, 0]},
    {"dtype": "F64", "shape": [2**61], "data_offsets": [0, 0]},
    {"dtype": "F32", "shape": [0], "data_offsets": [0]},
    {"dtype": "F32", "shape": [0], "data_offsets": [0, 0, 0]},
    {"dtype": "F32", "shape": [0], "data_offsets": [0, False]},
    {"dtype": "F32", "shape": [0], "data_offsets": [0.0, 0]},
    {"dtype": "F32", "shape": [0], "data_offsets": [2**64, 2**64]},
    {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]},
    {"dtype": "F32", "shape": [2], "data_offsets": [0, 12]},
    {"dtype": "F4", "shape": [3], "data_offsets": [0, 1]},
    {"dtype": "U8", "shape": [1], "data_offsets": [10**6, 10**6 + 1]},
    Raw('{"dtype": "F32", "dtype": "F32", "shape": [0], "data_offsets": [0, 0]}'),
    Raw('{"dtype": "F32", "shape": [{"a": 1, "a": 2}], "data_offsets": [0, 0]}'),
    Raw('{"dtype": "F32", "shape": [NaN], "data_offsets": [0, 0]}'),
    Raw('{"dtype": "\\ud800", "shape": [0], "data_offsets": [0, 0]}'),
    Raw('{"\\udc00": 1, "dtype": "F32", "shape": [0], "data_offsets": [0, 0]}'),
    Raw('{"dtype": "F32", "shape": [1e999], "data_offsets": [0, 0]}'),
]
BAD_METADATA = [
    [],
    {"k": 1},
    {"a": "b", "k": ["a"]},
    Raw('{"k": "a", "k": "b"}'),
    Raw('{"a": "b", "k": "\\ud800"}'),
    Raw('{"\\udfff": "v"}'),
]


def _data_len(bad) -> int:
    """The data section a lone bad entry says it spans (0 if it cannot say)."""
    offsets = bad.get("data_offsets") if isinstance(bad, dict) else None
    if isinstance(offsets, list) and offsets and all(type(x) is int for x in offsets):
        return min(max(offsets[-1], 0), 2**20)
    return 0


FAULTS = [
    *["sole", "value", "value", "value", "shift", "shift"],
    *["metadata", "duplicate", "surrogate", "size"],
]


@st.composite
def broken_files(draw):
    """Valid headers with bad entries added, entries duplicated or moved, bad metadata, a key
    with a lone surrogate, a data section of another length, or a bad entry alone: up to three
    faults, so their order counts, and single faults that reach each of the fast path's checks."""
    entries, data_len = draw(tensors())
    items = list(entries)
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), ("__metadata__", {"a": "b"}))
    for k in range(draw(st.integers(1, 3))):
        fault = draw(st.sampled_from(FAULTS))
        at = draw(st.integers(0, len(items)))
        if fault == "shift" and entries:  # a gap, an overlap or past the end, found by tiling
            i = draw(st.integers(0, len(entries) - 1))
            name, entry = entries[i]
            begin, end = entry["data_offsets"]
            start = max(begin + draw(st.integers(-8, 8)), 0)
            moved = (name, entry | {"data_offsets": [start, start + end - begin]})
            items[items.index(entries[i])] = entries[i] = moved
        elif fault == "value":
            items.insert(at, (f"bad{k}", draw(st.sampled_from(BAD_VALUES))))
        elif fault == "sole":  # the bad entry alone, the data section as long as it says
            bad = draw(st.sampled_from(BAD_VALUES))
            items, entries, data_len = [("bad", bad)], [], _data_len(bad)
        elif fault == "metadata":
            meta = [i for i, (key, _) in enumerate(items) if key == "__metadata__"]
            bad = ("__metadata__", draw(st.sampled_from(BAD_METADATA)))
            if meta:
                items[meta[0]] = bad
            else:
                items.insert(at, bad)
        elif fault == "duplicate" and items:
            items.insert(at, draw(st.sampled_from(items)))
        elif fault == "surrogate":
            zero = {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}
            items.insert(at, (Raw('"\\ud800x"'), zero))
        elif fault == "size":
            data_len = max(data_len + draw(st.integers(-8, 8)), 0)
    layout = draw(layouts())
    return st_file(header_text(items, layout), data_len, layout["pad"])


# --- the two paths ------------------------------------------------------------------------------


def outcome(data: bytes, size: int, fast: bool):
    try:
        return S._parse(data, size, fast=fast)
    except CharterError as e:
        return e.diagnostics


def assert_agree(data: bytes, size: int | None = None) -> None:
    size = len(data) if size is None else size
    fast, slow = outcome(data, size, True), outcome(data, size, False)
    assert fast == slow
    if isinstance(slow, list):
        assert len(slow) == 1


def no_walker(*args, **kw):
    raise AssertionError("the fast path gave up on a valid header")


@_PROPS
@given(data=valid_files())
def test_fast_path_alone_accepts_valid_headers(data):
    slow = S._parse(data, len(data), fast=False)
    with mock.patch.object(S, "_walk", no_walker):
        fast = S.parse_safetensors(data, len(data))
    assert fast == slow


@_PROPS
@given(data=broken_files())
def test_broken_headers_same_diagnostic(data):
    assert_agree(data)


@_PROPS
@given(
    data=valid_files(),
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_byte_edits_same_outcome(data, edits):
    buf = bytearray(data)
    for pos, value in edits:
        buf[pos % len(buf)] = value
    assert_agree(bytes(buf))


TOKENS = [
    *['"', "{", "}", "[", "]", ",", ":", " ", "\x01", "\\", "\\ud800", '\\udc00"'],
    *["0", "-1", "1e999", "NaN", "-Infinity", "18446744073709551616", '"F4"', '"__metadata__"'],
]


@_PROPS
@given(
    data=valid_files(),
    pos=st.integers(0, 10**6),
    token=st.sampled_from(TOKENS),
    replace=st.booleans(),
    size_delta=st.integers(-4, 4),
)
def test_token_edits_same_outcome(data, pos, token, replace, size_delta):
    pos = 8 + pos % max(len(data) - 8, 1)
    tail = data[pos + len(token):] if replace else data[pos:]
    edited = data[:pos] + token.encode() + tail
    assert_agree(edited, max(len(edited) + size_delta, 0))


LAYOUT = {"sep": (",", ":"), "ascii": True, "lead": "", "pad": True}


def _alone(bad) -> bytes:
    return st_file(header_text([("bad", bad)], LAYOUT), _data_len(bad), True)


@pytest.mark.parametrize("bad", BAD_VALUES, ids=plain_id)
def test_each_bad_entry_alone(bad):
    """Each fault alone, so the fast path's own check for it decides (none is masked)."""
    data = _alone(bad)
    assert isinstance(outcome(data, len(data), False), list)
    assert_agree(data)


@pytest.mark.parametrize("bad", BAD_METADATA, ids=plain_id)
def test_each_bad_metadata_alone(bad):
    data = st_file(header_text([("__metadata__", bad)], LAYOUT), 0, True)
    assert isinstance(outcome(data, len(data), False), list)
    assert_agree(data)


# --- the fast path's bulk checks ------------------------------------------------------------------


def no_entry_by_entry(name, *args):
    raise AssertionError(f"entry {name!r} of a valid header was checked one by one")


@_PROPS
@given(data=valid_files())
def test_valid_headers_are_checked_in_bulk(data):
    """The bulk checks accept every valid header the generator makes (zero-sized tensors, empty
    shapes, sub-byte dtypes, any order of extents), so the entry-by-entry loop never runs."""
    slow = S._parse(data, len(data), fast=False)
    with mock.patch.object(S, "_fast_tensor", no_entry_by_entry), mock.patch.object(S, "_walk", no_walker):
        assert S.parse_safetensors(data, len(data)) == slow


def _columns(data: bytes):
    """What each of the two checks makes of a header the C decoder reads (None: it declines)."""
    n = struct.unpack_from("<Q", data)[0]
    top = json.loads(data[8 : 8 + n])
    if type(top) is not dict:
        return None, None
    data_len = len(data) - 8 - n
    try:
        one_by_one = S._entries_one_by_one(top, data_len, False)
    except S._Recheck:
        one_by_one = None
    return S._bulk_entries(top, data_len, False), one_by_one


@_PROPS
@given(data=broken_files())
def test_bulk_checks_accept_only_what_the_entry_checks_accept(data):
    try:
        bulk, one_by_one = _columns(data)
    except ValueError:  # not JSON to the C decoder
        return
    if bulk is not None:
        assert bulk == one_by_one


@pytest.mark.parametrize("shape", [[0, 2**40, 2**40], [0], [], [3, 0, 5]], ids=plain_id)
def test_bulk_checks_fold_zero_element_shapes(shape):
    top = {"a": {"dtype": "U8", "shape": shape, "data_offsets": [0, 0 if 0 in shape else 1]}}
    data_len = 0 if 0 in shape else 1
    assert S._bulk_entries(top, data_len, False) == S._entries_one_by_one(top, data_len, False)


@pytest.mark.parametrize("shape", [[2**40, 2**40, 0], [0, 2**64], [1] * 65, [2**32, 2**32]], ids=plain_id)
def test_bulk_checks_decline_what_they_cannot_decide_cheaply(shape):
    """An overflow before a 0, a dim past u64 after a 0, a rank past 64 (so no product grows
    big), a product past u64: the entry-by-entry checks decide (and stop at an overflow)."""
    top = {"a": {"dtype": "U8", "shape": shape, "data_offsets": [0, 0 if 0 in shape else 1]}}
    assert S._bulk_entries(top, 1, False) is None
