"""The strict safetensors reader: files from safetensors.numpy.save_file parse and agree with the
crate; every rejection has its exact code; no input bytes produce anything but a CharterError."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from safetensors.numpy import save_file

from charter.diagnostics import CharterError, Code
from charter.formats.safetensors import (
    DTYPE_BITS,
    MAX_HEADER_BYTES,
    parse_safetensors,
    read_safetensors,
)

from .conftest import expect, plain_id, st_bytes

C = Code


def parse(data: bytes):
    return parse_safetensors(data, len(data))


def entry(dtype="F32", shape=(2,), begin=0, end=None, **extra):
    end = begin + 4 * int(np.prod(shape)) if end is None else end
    return {"dtype": dtype, "shape": list(shape), "data_offsets": [begin, end], **extra}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("st") / "m.safetensors"
    tensors = {
        "b.weight": np.zeros((2, 3), np.float32),
        "a.bias": np.arange(5, dtype=np.int64),
        "empty": np.zeros((0, 4), np.float16),
        "flag": np.array([True, False]),
        "u": np.ones((3,), np.uint16),
    }
    save_file(tensors, str(path), metadata={"format": "pt", "note": "ünïcode"})
    return path, tensors


def test_saved_file(saved):
    path, tensors = saved
    h = read_safetensors(path)
    data = path.read_bytes()
    assert h.metadata == {"format": "pt", "note": "ünïcode"}
    assert h.header_len == struct.unpack_from("<Q", data)[0] and h.header_len_aligned
    assert h.data_offset == 8 + h.header_len and h.file_size == len(data)
    assert {t.name for t in h.tensors} == set(tensors)
    header = json.loads(data[8 : h.data_offset])
    assert [t.name for t in h.tensors] == [k for k in header if k != "__metadata__"]
    with safe_open(str(path), framework="numpy") as f:
        for t in h.tensors:
            s = f.get_slice(t.name)
            assert list(t.shape) == s.get_shape()
            assert t.dtype == s.get_dtype()
            assert t.nbytes == tensors[t.name].nbytes
            assert t.n_elements == tensors[t.name].size


def test_no_metadata_no_tensors():
    h = parse(st_bytes({}))
    assert h.metadata is None and h.tensors == [] and h.header_len == 8


def test_unaligned_header_length_is_accepted():
    data = st_bytes({"t": entry()}, 8, pad=False)
    h = parse(data)
    assert h.header_len % 8 != 0 and not h.header_len_aligned


def test_whitespace_around_header():
    h = parse(st_bytes(' \n {"t": ' + json.dumps(entry()) + "}  \t", 8))
    assert h.tensors[0].name == "t"


@pytest.mark.parametrize("dtype", sorted(DTYPE_BITS))
def test_every_dtype(dtype, tmp_path):
    """Each dtype of the 0.8 crate is accepted, and the crate agrees on the file."""
    nbytes = 4 * DTYPE_BITS[dtype] // 8  # shape [4]: 4 elements, a whole number of bytes for all
    data = st_bytes({"t": entry(dtype, (4,), 0, nbytes)}, nbytes)
    assert parse(data).tensors[0].dtype == dtype
    (tmp_path / "d.safetensors").write_bytes(data)
    with safe_open(str(tmp_path / "d.safetensors"), framework="numpy") as f:
        assert f.get_slice("t").get_dtype() == dtype


def test_zero_sized_tensors_share_an_offset():
    h = parse(
        st_bytes(
            {
                "a": entry(shape=(0,), begin=0),
                "b": entry(shape=(0, 3), begin=0),
                "c": entry(shape=(1,), begin=0),
            },
            4,
        )
    )
    assert [t.nbytes for t in h.tensors] == [0, 0, 4]


def test_only_header_bytes_are_read(tmp_path):
    path = tmp_path / "big.safetensors"
    path.write_bytes(st_bytes({"t": entry(shape=(1024,))}, 4096))
    assert read_safetensors(path).tensors[0].end == 4096


# --- rejections -----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 7])
def test_file_shorter_than_length(size):
    d = expect(C.CONTAINER_TRUNCATED, parse, b"\x08" * size)
    assert (d.field, d.offset) == ("header.length", 0)


def test_header_length_cap():
    for n in (MAX_HEADER_BYTES + 1, 2**64 - 1):
        d = expect(C.CONTAINER_HEADER, parse, struct.pack("<Q", n) + b"{}")
        assert (d.field, d.offset) == ("header.length", 0)


def test_header_length_past_end():
    d = expect(C.CONTAINER_TRUNCATED, parse, struct.pack("<Q", 64) + b"{}      ")
    assert d.field == "header.length"


def test_header_not_utf8():
    raw = b'{"a\xff": 1}'
    d = expect(C.CONTAINER_JSON, parse, struct.pack("<Q", len(raw)) + raw)
    assert (d.field, d.offset) == ("header", 8 + raw.index(b"\xff"))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '"x"',
        "1",
        "{",
        '{"a":',
        '{"a" 1}',
        "{,}",
        '{"t": {}} x',
        "{'a': 1}",
        '{"t": NaN}',
        '{"t": [Infinity]}',
        '{"t": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}",
        '{"t": [' + "9" * 5000 + "]}",
        '{"a\x01": 1}',
        '{"\\ud800": {}}',
    ],
    ids=plain_id,
)
def test_not_a_json_object(text):
    expect(C.CONTAINER_JSON, parse, st_bytes(text))


@pytest.mark.parametrize(
    "text,field",
    [
        ('{"t": E, "t": E}'.replace("E", json.dumps(entry())), "tensors.t"),
        ('{"__metadata__": {}, "__metadata__": {}}', "metadata"),
        (
            '{"t": {"dtype": "F32", "dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}',
            "tensors.t",
        ),
        ('{"__metadata__": {"k": "a", "k": "b"}}', "metadata"),
        (
            '{"t": {"dtype": "F32", "shape": [{"a": 1, "a": 2}], "data_offsets": [0, 8]}}',
            "tensors.t",
        ),
    ],
)
def test_duplicate_keys(text, field):
    d = expect(C.CONTAINER_DUPLICATE_KEY, parse, st_bytes(text, 8))
    assert d.field.startswith(field)


def test_duplicate_key_offset():
    text = '{"t": E, "t": E}'.replace("E", json.dumps(entry()))
    d = expect(C.CONTAINER_DUPLICATE_KEY, parse, st_bytes(text, 8))
    assert d.offset == 8 + text.rindex('"t"')


@pytest.mark.parametrize("meta", [[], "x", 1, None, {"k": 1}, {"k": ["a"]}, {"k": None}, entry()])
def test_metadata_must_be_str_map(meta):
    d = expect(C.CONTAINER_METADATA, parse, st_bytes({"__metadata__": meta}))
    assert d.field.startswith("metadata")


def test_metadata_offset_is_byte_offset_after_non_ascii():
    text = '{"__metadata__": {"ü": "é", "k": 3}}'
    d = expect(C.CONTAINER_METADATA, parse, st_bytes(text))
    assert (d.field, d.offset) == ("metadata.k", 8 + text.encode().index(b"3"))


@pytest.mark.parametrize(
    "value",
    [
        [],
        "F32",
        3,
        entry(extra_key=1),
        {"dtype": "F32", "shape": [2]},
        {"shape": [2], "data_offsets": [0, 8]},
        entry(shape=(2,)) | {"shape": 2},
    ],
)
def test_malformed_entry(value):
    d = expect(C.CONTAINER_HEADER, parse, st_bytes({"t": value}, 8))
    assert d.field.startswith("tensors.t")


@pytest.mark.parametrize("dtype", ["f32", "F8", "Q4_0", "", 4, None, ["F32"], "F32 "])
def test_unknown_dtype(dtype):
    d = expect(C.CONTAINER_DTYPE, parse, st_bytes({"t": entry(dtype=dtype)}, 8))
    assert d.field == "tensors.t.dtype"


@pytest.mark.parametrize("shape", [[-1], [True, 2], [2.0], ["2"], [None], [[2]]])
def test_bad_dims(shape):
    value = {"dtype": "F32", "shape": shape, "data_offsets": [0, 8]}
    d = expect(C.CONTAINER_TENSOR_DIM, parse, st_bytes({"t": value}, 8))
    assert d.field == "tensors.t.shape"


@pytest.mark.parametrize("shape", [[2**32, 2**32], [2**40, 2**40, 0], [2**64]])
def test_shape_overflow(shape):
    value = {"dtype": "U8", "shape": shape, "data_offsets": [0, 0]}
    expect(C.CONTAINER_OVERFLOW, parse, st_bytes({"t": value}))


def test_bit_count_overflow():
    value = {"dtype": "F64", "shape": [2**61], "data_offsets": [0, 0]}
    expect(C.CONTAINER_OVERFLOW, parse, st_bytes({"t": value}))


@pytest.mark.parametrize(
    "offsets", [[0], [0, 8, 8], [-1, 7], [0, True], [0.0, 8], "0,8", [0, 2**64], [8, 0]]
)
def test_bad_data_offsets(offsets):
    value = {"dtype": "F32", "shape": [2], "data_offsets": offsets}
    d = expect(C.CONTAINER_OFFSET, parse, st_bytes({"t": value}, 8))
    assert d.field == "tensors.t.data_offsets"


def test_size_mismatch():
    d = expect(C.CONTAINER_EXTENT, parse, st_bytes({"t": entry(shape=(2,), end=12)}, 12))
    assert "need 8" in d.message and d.field == "tensors.t.data_offsets"


def test_sub_byte_tensor_must_fill_whole_bytes():
    value = {"dtype": "F4", "shape": [3], "data_offsets": [0, 1]}
    d = expect(C.CONTAINER_EXTENT, parse, st_bytes({"t": value}, 1))
    assert "whole number of bytes" in d.message


@pytest.mark.parametrize(
    "entries,data,word",
    [
        ({"a": entry(begin=4)}, 12, "gap"),
        ({"a": entry(begin=0), "b": entry(begin=12)}, 20, "gap"),
        ({"a": entry(begin=0), "b": entry(begin=4)}, 12, "overlap"),
        ({"a": entry(begin=0)}, 12, "trailing"),
        ({}, 4, "trailing"),
        ({"a": entry(begin=0)}, 4, "past the end"),
    ],
)
def test_tiling(entries, data, word):
    d = expect(C.CONTAINER_EXTENT, parse, st_bytes(entries, data))
    assert word in d.message


def test_tiling_is_checked_in_offset_order():
    h = parse(st_bytes({"b": entry(begin=8), "a": entry(begin=0)}, 16))
    assert [t.name for t in h.tensors] == ["b", "a"]


def test_unreadable(tmp_path):
    expect(C.CONTAINER_UNREADABLE, read_safetensors, tmp_path / "missing.safetensors")
    expect(C.CONTAINER_UNREADABLE, read_safetensors, tmp_path)


def test_huge_length_in_tiny_file_is_fast():
    expect(C.CONTAINER_TRUNCATED, parse, struct.pack("<Q", 99_999_999) + b"{}".ljust(42))


# --- properties -----------------------------------------------------------------------------------

_FUZZ = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def small(saved):
    return saved[0].read_bytes()


def _only_charter_errors(data: bytes) -> None:
    try:
        h = parse(data)
    except CharterError as e:
        assert len(e.diagnostics) == 1
        d = e.diagnostics[0]
        assert d.code.value.startswith("CONTAINER_") and 0 <= d.offset <= max(len(data), 8)
        return
    assert sum(t.nbytes for t in h.tensors) == h.file_size - h.data_offset


@_FUZZ
@given(
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=6)
)
def test_fuzz_byte_edits(small, edits):
    buf = bytearray(small)
    for pos, value in edits:
        buf[pos % len(buf)] = value
    _only_charter_errors(bytes(buf))


@_FUZZ
@given(
    pos=st.integers(8, 400),
    text=st.sampled_from(
        ['"', "{", "}", "[", "]", ",", ":", "0", "-1", "1e999", '"F4"', "NaN", "\\", "\\u12"]
    ),
)
def test_fuzz_json_token_edits(small, pos, text):
    pos = 8 + pos % (len(small) - 8)
    _only_charter_errors(small[:pos] + text.encode() + small[pos + len(text) :])


@_FUZZ
@given(cut=st.integers(0, 1000))
def test_fuzz_truncation(small, cut):
    _only_charter_errors(small[: cut % (len(small) + 1)])
