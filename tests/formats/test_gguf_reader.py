"""The strict GGUF reader: real and writer-built files parse and agree with gguf.GGUFReader; every
rejection has its exact code; no input bytes produce anything but a CharterError."""

from __future__ import annotations

import dataclasses
import hashlib
import struct
from pathlib import Path

import gguf
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charter.diagnostics import CharterError, Code
from charter.formats import ggml_types
from charter.formats.gguf import (
    GGUFArray,
    GGUFValueType,
    parse_gguf,
    read_gguf,
    serialize_gguf_header,
)

from tests import persisted

from .conftest import RICH_KVS, VT, expect, patched, rich_tensors, write_gguf

C = Code


def parse(data: bytes, **kw):
    return parse_gguf(data, len(data), **kw)


# --- ggml type table ------------------------------------------------------------------------------


def test_type_table_matches_gguf_py():
    """Every id gguf 0.19.0 knows is in the table with the same name and geometry, except Q8_1,
    where gguf-py keeps the pre-2024 f32-scale size (40) and ggml stores 36 bytes; ggml's types
    have no row header, and the table's other rows are ik_llama.cpp's types with one (Note [Row
    headers]), which gguf-py does not know."""
    ours = {t.id: (t.name, t.block_size, t.block_bytes) for t in ggml_types.GGML_TYPES.values()
            if not t.row_header}
    theirs = {
        int(q): (q.name, *gguf.constants.GGML_QUANT_SIZES[q]) for q in gguf.GGMLQuantizationType
    }
    assert set(ours) == set(theirs)
    assert not set(theirs) & {t.id for t in ggml_types.GGML_TYPES.values() if t.row_header}
    diverging = {i for i in ours if ours[i] != theirs[i]}
    assert diverging == {9}
    assert ours[9] == ("Q8_1", 32, 36) and theirs[9] == ("Q8_1", 32, 40)


@pytest.mark.parametrize(
    "name,block,size",
    [
        ("F32", 1, 4),
        ("F16", 1, 2),
        ("BF16", 1, 2),
        ("Q4_0", 32, 18),
        ("Q4_1", 32, 20),
        ("Q5_0", 32, 22),
        ("Q5_1", 32, 24),
        ("Q8_0", 32, 34),
        ("Q2_K", 256, 84),
        ("Q3_K", 256, 110),
        ("Q4_K", 256, 144),
        ("Q5_K", 256, 176),
        ("Q6_K", 256, 210),
        ("Q8_K", 256, 292),
        ("I8", 1, 1),
        ("I16", 1, 2),
        ("I32", 1, 4),
        ("I64", 1, 8),
        ("F64", 1, 8),
    ],
)
def test_type_geometry(name, block, size):
    t = ggml_types.GGML_TYPES_BY_NAME[name]
    assert (t.block_size, t.block_bytes) == (block, size)


def test_removed_ids_are_unknown():
    for i in (4, 5, 31, 32, 33, 36, 37, 38, 42, 2**32 - 1):
        assert ggml_types.ggml_type(i) is None


# --- the real SmolLM2 checkpoint -----------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2(smollm2_path):
    return read_gguf(smollm2_path)


@pytest.fixture(scope="module")
def smollm2_reference(smollm2_path):
    return reference(smollm2_path)


def test_smollm2_header(smollm2):
    h = smollm2
    assert (h.version, h.tensor_count, h.kv_count, h.alignment) == (3, 272, 33, 32)
    assert len(h.tensors) == 272 and len(h.kvs) == 33
    assert h.data_offset == 1785664 and h.data_offset % 32 == 0 and h.header_end <= h.data_offset
    emb = next(t for t in h.tensors if t.name == "token_embd.weight")
    assert emb.ggml_type.name == "Q8_0" and emb.dims == (576, 49152)
    assert emb.nbytes == 576 * 49152 // 32 * 34
    tokens = h.kvs["tokenizer.ggml.tokens"].value
    assert isinstance(tokens, GGUFArray) and tokens.elem_type is GGUFValueType.STRING
    assert tokens.count == 49152
    assert h.kvs["tokenizer.ggml.merges"].value.count == 48900
    assert all(t.end <= h.file_size for t in h.tensors)


@dataclasses.dataclass(frozen=True)
class Reference:
    """What gguf.GGUFReader reads from a file, as plain values: key -> (type, offset, element type,
    contents) without the GGUF.* header fields, and the tensors' (name, dims, ggml type)."""

    fields: dict
    data_offset: int
    alignment: int
    tensors: list


def reference(path: Path) -> Reference:
    """gguf.GGUFReader's reading of `path`. It takes seconds over SmolLM2's 49,152-token
    vocabulary and it is the field's reader, never a mutant: a large file's is read once and kept
    between test processes (tests/persisted.py), for the code-mutation gate's per-mutant runs above
    all; a small one's (the writer-built files of tmp_path) costs less than keeping it."""
    if Path(path).stat().st_size < 1 << 20:
        return _read_reference(path)
    return persisted.value("gguf-reference", persisted.file_key(path, "1"), lambda: _read_reference(path))


def _read_reference(path: Path) -> Reference:
    r = gguf.GGUFReader(path)
    fields = {k: (f.types[0], f.offset, f.types[-1], f.contents()) for k, f in r.fields.items()
              if not k.startswith("GGUF.")}
    tensors = [(t.name, tuple(int(d) for d in t.shape), int(t.tensor_type)) for t in r.tensors]
    return Reference(fields, int(r.data_offset), int(r.alignment), tensors)


def _assert_agrees(header, ref: Reference):
    """Every kv (type and value) and tensor (name, dims, type, offset) matches gguf.GGUFReader."""
    assert list(ref.fields) == list(header.kvs)
    for key, (vtype, offset, elem_type, contents) in ref.fields.items():
        kv = header.kvs[key]
        assert kv.type == vtype, key
        assert kv.offset == offset, key
        if kv.type is GGUFValueType.ARRAY:
            assert kv.value.elem_type == elem_type, key
            assert kv.value.items() == contents, key
        else:
            assert kv.value == contents, key
    if header.tensors:
        assert header.data_offset == ref.data_offset
    else:  # no data section: GGUFReader still rounds up, charter stops at the header (Note [Tensor-less GGUF])
        assert header.data_offset == header.header_end
        assert ref.data_offset == -(-header.header_end // header.alignment) * header.alignment
    assert header.alignment == ref.alignment
    assert [t.name for t in header.tensors] == [name for name, _, _ in ref.tensors]
    for ours, (_, dims, ggml_type) in zip(header.tensors, ref.tensors, strict=True):
        assert ours.dims == dims
        assert ours.ggml_type.id == ggml_type


def test_smollm2_agrees_with_gguf_reader(smollm2, smollm2_reference):
    _assert_agrees(smollm2, smollm2_reference)


def test_smollm2_round_trip(smollm2, smollm2_path):
    with open(smollm2_path, "rb") as f:
        head = f.read(smollm2.data_offset)
    assert serialize_gguf_header(smollm2) == head


def test_header_ending_on_the_alignment_gets_no_padding(smollm2, smollm2_path):
    """The real file is the aligned case: its header ends on a multiple of 32 and its data ends
    exactly at the last tensor's end, so neither padding nor trailing bytes exist."""
    assert smollm2.header_end == smollm2.data_offset and smollm2.header_end % 32 == 0
    assert max(t.end for t in smollm2.tensors) == smollm2.file_size
    assert len(serialize_gguf_header(smollm2)) == smollm2.header_end


# --- tensor-less files (Note [Tensor-less GGUF]) -------------------------------------------------


def test_vocab_only_file_ends_at_its_header(tensorless_gguf):
    """gguf-py's vocab-only file: no tensors, no padding, and no data section."""
    h = read_gguf(tensorless_gguf)
    assert h.tensor_count == 0 and h.tensors == [] and h.kv_count == 33
    assert h.header_end % h.alignment != 0  # the case that matters: an aligned end would hide it
    assert h.data_offset == h.header_end == h.file_size
    assert serialize_gguf_header(h) == tensorless_gguf.read_bytes()


def test_padded_tensorless_file_has_trailing_padding(tensorless_padded_gguf):
    """gguf.cpp pads the header of a tensor-less file: charter reads the padding as trailing bytes."""
    h = read_gguf(tensorless_padded_gguf)
    assert h.data_offset == h.header_end < h.file_size == -(-h.header_end // h.alignment) * h.alignment
    assert serialize_gguf_header(h) == tensorless_padded_gguf.read_bytes()[: h.header_end]


@pytest.mark.slow  # GGUFReader over a 49,152-token vocabulary: seconds for each file
@pytest.mark.parametrize("which", ["tensorless_gguf", "tensorless_padded_gguf"])
def test_tensorless_files_agree_with_gguf_reader(request, which):
    """GGUFReader loads both tensor-less files, and reads them as charter does."""
    path = request.getfixturevalue(which)
    ref = reference(path)
    assert ref.tensors == []
    _assert_agrees(read_gguf(path), ref)


def test_serializer_pads_only_when_there_are_tensors(tensorless_gguf, rich_gguf):
    h = read_gguf(tensorless_gguf)
    first = read_gguf(rich_gguf).tensors[0]
    blob = serialize_gguf_header(dataclasses.replace(h, tensor_count=1, tensors=[first]))
    assert len(blob) % h.alignment == 0 and len(blob) > h.header_end
    assert parse(blob + bytes(first.nbytes)).data_offset == len(blob)


def test_array_digest_is_sha256_of_stored_elements(smollm2, smollm2_path):
    tokens = smollm2.kvs["tokenizer.ggml.tokens"].value
    with open(smollm2_path, "rb") as f:
        f.seek(tokens.data_offset)
        stored = f.read(len(tokens.raw))
    assert tokens.sha256() == hashlib.sha256(stored).hexdigest()
    (first_len,) = struct.unpack_from("<Q", stored)
    assert tokens.items()[0].encode() == stored[8 : 8 + first_len]


# --- writer-built files -------------------------------------------------------------------------


def test_rich_file_agrees_with_gguf_reader(rich_gguf):
    _assert_agrees(read_gguf(rich_gguf), reference(rich_gguf))


def test_rich_file_values(rich_gguf):
    h = read_gguf(rich_gguf)
    for key, value, vtype, *_sub in RICH_KVS:
        kv = h.kvs[key]
        assert kv.type == vtype
        got = kv.value.items() if isinstance(kv.value, GGUFArray) else kv.value
        assert got == value
    q = next(t for t in h.tensors if t.name == "q.weight")
    assert q.dims == (32, 2) and q.nbytes == 68 and q.ggml_type.name == "Q8_0"


@pytest.mark.parametrize("alignment", [None, 1, 64, 4096])
def test_writer_round_trip(tmp_path, alignment):
    path = write_gguf(tmp_path / "w.gguf", RICH_KVS, rich_tensors(), alignment=alignment)
    h = read_gguf(path)
    assert h.alignment == (alignment or 32)
    data = path.read_bytes()
    assert serialize_gguf_header(h) == data[: h.data_offset]
    _assert_agrees(h, reference(path))


def test_no_tensors_and_no_kvs(tmp_path):
    path = write_gguf(tmp_path / "empty.gguf")
    h = read_gguf(path)
    assert h.tensors == [] and list(h.kvs) == ["general.architecture"]
    assert serialize_gguf_header(h) == path.read_bytes()[: h.data_offset]


def test_from_items_matches_parsed_raw(rich_gguf):
    h = read_gguf(rich_gguf)
    for key, value, vtype, *_sub in RICH_KVS:
        if vtype is VT.ARRAY:
            arr = h.kvs[key].value
            assert GGUFArray.from_items(arr.elem_type, value).raw == arr.raw


def test_field_offsets_point_at_fields(rich_bytes):
    h = parse(rich_bytes)
    kv = h.kvs["t.u32"]
    assert struct.unpack_from("<I", rich_bytes, kv.type_offset)[0] == GGUFValueType.UINT32
    assert struct.unpack_from("<I", rich_bytes, kv.value_offset)[0] == 4_000_000_000
    arr = h.kvs["t.strs"].value
    assert struct.unpack_from("<Q", rich_bytes, arr.count_offset)[0] == 5
    for t in h.tensors:
        assert struct.unpack_from("<I", rich_bytes, t.n_dims_offset)[0] == len(t.dims)
        assert struct.unpack_from(f"<{len(t.dims)}Q", rich_bytes, t.dims_offset) == t.dims
        assert struct.unpack_from("<I", rich_bytes, t.type_offset)[0] == t.ggml_type.id
        assert struct.unpack_from("<Q", rich_bytes, t.offset_offset)[0] == t.offset


def test_buffer_types(rich_bytes):
    expected = parse(rich_bytes)
    for buf in (bytearray(rich_bytes), memoryview(rich_bytes)):
        assert parse_gguf(buf, len(rich_bytes)) == expected


def test_version_2_is_accepted(rich_bytes):
    assert parse(patched(rich_bytes, 4, "<I", 2)).version == 2


def test_max_name_length_is_accepted(tmp_path):
    name = "n" * 63
    h = read_gguf(write_gguf(tmp_path / "n.gguf", tensors=[(name, np.zeros(4, np.float32))]))
    assert h.tensors[0].name == name


# --- rejections -----------------------------------------------------------------------------------


def test_magic(rich_bytes):
    d = expect(C.CONTAINER_MAGIC, parse, b"GGML" + rich_bytes[4:])
    assert (d.field, d.offset) == ("header.magic", 0)
    expect(C.CONTAINER_MAGIC, parse, b"\x00")


@pytest.mark.parametrize("size", [0, 2, 6, 15, 23])
def test_truncated_fixed_header(rich_bytes, size):
    d = expect(C.CONTAINER_TRUNCATED, parse, rich_bytes[:size])
    assert d.field.startswith("header.")


@pytest.mark.parametrize("version", [0, 1, 4, 0xFFFFFFFF])
def test_unsupported_version(rich_bytes, version):
    d = expect(C.CONTAINER_VERSION, parse, patched(rich_bytes, 4, "<I", version))
    assert (d.field, d.offset) == ("header.version", 4)


def test_big_endian_version(rich_bytes):
    d = expect(C.CONTAINER_VERSION, parse, patched(rich_bytes, 4, "<I", 0x03000000))
    assert "big-endian" in d.message


@pytest.mark.parametrize("offset,field", [(8, "header.tensor_count"), (16, "header.kv_count")])
def test_counts_bounded_by_remaining_bytes(rich_bytes, offset, field):
    for count in (2**64 - 1, 2**40, len(rich_bytes)):
        d = expect(C.CONTAINER_COUNT, parse, patched(rich_bytes, offset, "<Q", count))
        assert (d.field, d.offset) == (field, offset)


def test_key_length_past_end(rich_bytes):
    d = expect(C.CONTAINER_TRUNCATED, parse, patched(rich_bytes, 24, "<Q", 2**64 - 1))
    assert (d.field, d.offset) == ("kv[0].key", 32)


def test_empty_key(tmp_path):
    data = write_gguf(tmp_path / "k.gguf", [("", 1, VT.UINT8)]).read_bytes()
    d = expect(C.CONTAINER_KEY, parse, data)
    assert d.field == "kv[1].key"


def test_key_not_utf8(rich_bytes):
    kv = parse(rich_bytes).kvs["t.u8"]
    d = expect(C.CONTAINER_KEY, parse, patched(rich_bytes, kv.offset + 8, "B", 0xFF))
    assert (d.field, d.offset) == ("kv[1].key", kv.offset + 8)


def test_duplicate_key(rich_bytes):
    kv = parse(rich_bytes).kvs["t.i8"]
    data = patched(rich_bytes, kv.offset + 8, "4s", b"t.u8")
    d = expect(C.CONTAINER_DUPLICATE_KEY, parse, data)
    assert (d.field, d.offset) == ("kv[2].key", kv.offset)


@pytest.mark.parametrize("tag", [13, 255, 2**32 - 1])
def test_unknown_value_type(rich_bytes, tag):
    kv = parse(rich_bytes).kvs["t.u16"]
    d = expect(C.CONTAINER_VALUE_TYPE, parse, patched(rich_bytes, kv.type_offset, "<I", tag))
    assert (d.field, d.offset) == ("metadata.t.u16", kv.type_offset)


def test_unknown_array_element_type(rich_bytes):
    arr = parse(rich_bytes).kvs["t.i32s"].value
    expect(C.CONTAINER_VALUE_TYPE, parse, patched(rich_bytes, arr.offset, "<I", 13))


def test_bool_must_be_0_or_1(rich_bytes):
    kv = parse(rich_bytes).kvs["t.bool"]
    d = expect(C.CONTAINER_BOOL, parse, patched(rich_bytes, kv.value_offset, "B", 2))
    assert (d.field, d.offset) == ("metadata.t.bool", kv.value_offset)


def test_bool_array_element_must_be_0_or_1(rich_bytes):
    arr = parse(rich_bytes).kvs["t.bools"].value
    d = expect(C.CONTAINER_BOOL, parse, patched(rich_bytes, arr.data_offset + 1, "B", 7))
    assert (d.field, d.offset) == ("metadata.t.bools[1]", arr.data_offset + 1)


def test_string_value_not_utf8(rich_bytes):
    kv = parse(rich_bytes).kvs["t.str"]
    d = expect(C.CONTAINER_STRING, parse, patched(rich_bytes, kv.value_offset + 9, "B", 0xFF))
    assert (d.field, d.offset) == ("metadata.t.str", kv.value_offset + 9)


def test_string_element_not_utf8(rich_bytes):
    arr = parse(rich_bytes).kvs["t.strs"].value
    # elements "a", "ßé", "" take 9 + 12 + 8 bytes; "日本語" has its length, then its bytes
    payload = arr.data_offset + 9 + 12 + 8 + 8
    d = expect(C.CONTAINER_STRING, parse, patched(rich_bytes, payload + 1, "B", 0x41))
    assert (d.field, d.offset) == ("metadata.t.strs[3]", payload)


def test_utf8_sequence_split_across_elements(tmp_path):
    """Each element must be valid on its own: a lead byte ending one element and a continuation
    byte starting the next decode as one character if the region is checked as a whole."""
    data = write_gguf(tmp_path / "s.gguf", [("s", ["xA", "Bx"], VT.ARRAY, VT.STRING)]).read_bytes()
    arr = parse(data).kvs["s"].value
    data = patched(data, arr.data_offset + 9, "B", 0xC3)  # "x\xc3"
    data = patched(data, arr.data_offset + 18, "B", 0xA9)  # "\xa9x"
    d = expect(C.CONTAINER_STRING, parse, data)
    assert (d.field, d.offset) == ("metadata.s[0]", arr.data_offset + 9)


def test_utf8_sequence_completed_by_length_prefix(tmp_path):
    """A lead byte ending an element followed by a length whose low byte is a continuation byte
    (133 = 0x85) is valid UTF-8 as a region, but the element is not."""
    strings = ["Z", "y" * 133]
    data = write_gguf(tmp_path / "p.gguf", [("p", strings, VT.ARRAY, VT.STRING)]).read_bytes()
    arr = parse(data).kvs["p"].value
    d = expect(C.CONTAINER_STRING, parse, patched(data, arr.data_offset + 8, "B", 0xC3))
    assert (d.field, d.offset) == ("metadata.p[0]", arr.data_offset + 8)


def test_string_element_length_past_end(rich_bytes):
    arr = parse(rich_bytes).kvs["t.strs"].value
    second = arr.data_offset + 9
    d = expect(C.CONTAINER_TRUNCATED, parse, patched(rich_bytes, second, "<Q", 2**63))
    assert (d.field, d.offset) == ("metadata.t.strs[1]", second + 8)


def test_array_of_arrays(tmp_path):
    data = write_gguf(tmp_path / "aa.gguf", [("nest", [[1, 2], [3]], VT.ARRAY)]).read_bytes()
    d = expect(C.CONTAINER_ARRAY, parse, data)
    assert d.field == "metadata.nest"


@pytest.mark.parametrize("key", ["t.strs", "t.i32s", "t.bools", "t.f32s", "t.u8s"])
def test_array_count_bounded(rich_bytes, key):
    arr = parse(rich_bytes).kvs[key].value
    for count in (2**64 - 1, 2**62, len(rich_bytes)):
        d = expect(C.CONTAINER_COUNT, parse, patched(rich_bytes, arr.count_offset, "<Q", count))
        assert d.field == f"metadata.{key}"


def _tiny(kind: str) -> bytes:
    """A ~50-byte file whose one kv declares a 2**62-element array or a 2**64-1-byte string."""
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k"
    if kind == "array":
        body = struct.pack("<IIQ", VT.ARRAY, VT.UINT64, 2**62)
    else:
        body = struct.pack("<IQ", VT.STRING, 2**64 - 1)
    return (head + body).ljust(50, b"\x00")


def test_tiny_file_with_huge_array_rejected():
    assert len(_tiny("array")) == 50
    expect(C.CONTAINER_COUNT, parse, _tiny("array"))


def test_tiny_file_with_huge_string_rejected():
    expect(C.CONTAINER_TRUNCATED, parse, _tiny("string"))


def test_header_cap(rich_bytes):
    d = expect(C.CONTAINER_HEADER, parse, rich_bytes, max_header_bytes=300)
    assert d.offset < 300


@pytest.mark.parametrize("vtype", [VT.UINT64, VT.INT32, VT.STRING])
def test_alignment_must_be_uint32(tmp_path, vtype):
    value = "32" if vtype is VT.STRING else 32
    data = write_gguf(tmp_path / "a.gguf", [("general.alignment", value, vtype)]).read_bytes()
    d = expect(C.CONTAINER_ALIGNMENT, parse, data)
    assert (d.field, d.expected) == ("metadata.general.alignment", "uint32")


@pytest.mark.parametrize("alignment", [0, 3, 48, 2**31])
def test_alignment_power_of_two(tmp_path, alignment):
    data = write_gguf(
        tmp_path / "a.gguf", [("general.alignment", alignment, VT.UINT32)]
    ).read_bytes()
    h_kv_offset = data.index(b"general.alignment") - 8
    d = expect(C.CONTAINER_ALIGNMENT, parse, data)
    assert d.field == "metadata.general.alignment" and d.offset > h_kv_offset


def _tensor(data: bytes, name: str):
    return next(t for t in parse(data).tensors if t.name == name)


def test_tensor_name_not_utf8(rich_bytes):
    t = _tensor(rich_bytes, "c.bias")
    d = expect(C.CONTAINER_TENSOR_NAME, parse, patched(rich_bytes, t.info_offset + 8, "B", 0x80))
    assert d.field == "tensors[2].name"


def test_duplicate_tensor_name(rich_bytes):
    t = _tensor(rich_bytes, "q.weight")
    d = expect(
        C.CONTAINER_TENSOR_NAME, parse, patched(rich_bytes, t.info_offset + 8, "8s", b"a.weight")
    )
    assert (d.field, d.offset) == ("tensors[1].name", t.info_offset)


@pytest.mark.parametrize("name", ["", "n" * 64])
def test_tensor_name_length(tmp_path, name):
    data = write_gguf(tmp_path / "n.gguf", tensors=[(name, np.zeros(4, np.float32))]).read_bytes()
    d = expect(C.CONTAINER_TENSOR_NAME, parse, data)
    assert d.field == "tensors[0].name"


@pytest.mark.parametrize("n_dims", [0, 5, 2**32 - 1])
def test_tensor_rank(rich_bytes, n_dims):
    t = _tensor(rich_bytes, "a.weight")
    d = expect(C.CONTAINER_TENSOR_RANK, parse, patched(rich_bytes, t.n_dims_offset, "<I", n_dims))
    assert (d.field, d.offset) == ("tensors.a.weight.n_dims", t.n_dims_offset)


@pytest.mark.parametrize("dim", [0, 2**63, 2**64 - 1])
def test_tensor_dim(rich_bytes, dim):
    t = _tensor(rich_bytes, "a.weight")
    d = expect(C.CONTAINER_TENSOR_DIM, parse, patched(rich_bytes, t.dims_offset + 8, "<Q", dim))
    assert (d.field, d.offset) == ("tensors.a.weight.dims", t.dims_offset + 8)


def test_tensor_element_count_overflow(rich_bytes):
    t = _tensor(rich_bytes, "a.weight")
    d = expect(C.CONTAINER_OVERFLOW, parse, patched(rich_bytes, t.dims_offset, "<QQ", 2**40, 2**40))
    assert d.field == "tensors.a.weight.dims"


@pytest.mark.parametrize("type_id", [4, 5, 31, 42, 99, 2**32 - 1])
def test_tensor_type(rich_bytes, type_id):
    t = _tensor(rich_bytes, "a.weight")
    d = expect(C.CONTAINER_TENSOR_TYPE, parse, patched(rich_bytes, t.type_offset, "<I", type_id))
    assert (d.field, d.offset) == ("tensors.a.weight.type", t.type_offset)
    if type_id == 4:
        assert "Q4_2" in d.message


def test_tensor_block(rich_bytes):
    t = _tensor(rich_bytes, "q.weight")
    d = expect(C.CONTAINER_TENSOR_BLOCK, parse, patched(rich_bytes, t.dims_offset, "<Q", 48))
    assert d.field == "tensors.q.weight.dims"


def test_tensor_offset_alignment(rich_bytes):
    t = _tensor(rich_bytes, "q.weight")
    data = patched(rich_bytes, t.offset_offset, "<Q", t.offset + 1)
    d = expect(C.CONTAINER_OFFSET, parse, data)
    assert (d.field, d.offset) == ("tensors.q.weight.offset", t.offset_offset)


@pytest.mark.parametrize("offset", [2**63, 2**64 - 32, 4096])
def test_tensor_extent(rich_bytes, offset):
    t = _tensor(rich_bytes, "c.bias")
    d = expect(C.CONTAINER_EXTENT, parse, patched(rich_bytes, t.offset_offset, "<Q", offset))
    assert (d.field, d.offset) == ("tensors.c.bias.offset", t.offset_offset)


def test_truncated_payload_is_an_extent_error(rich_bytes):
    h = parse(rich_bytes)
    d = expect(C.CONTAINER_EXTENT, parse, rich_bytes[: h.tensors[-1].end - 1])
    assert d.field == "tensors.c.bias.offset"


def test_truncated_inside_tensor_infos(rich_bytes):
    t = _tensor(rich_bytes, "q.weight")
    d = expect(C.CONTAINER_TRUNCATED, parse, rich_bytes[: t.type_offset + 2])
    assert (d.field, d.offset) == ("tensors.q.weight.type", t.type_offset)


def test_buffer_shorter_than_file(rich_bytes):
    expect(C.CONTAINER_TRUNCATED, parse_gguf, rich_bytes[:100], len(rich_bytes))


def test_unreadable(tmp_path):
    expect(C.CONTAINER_UNREADABLE, read_gguf, tmp_path / "missing.gguf")
    expect(C.CONTAINER_UNREADABLE, read_gguf, tmp_path)


def test_empty_file(tmp_path):
    (tmp_path / "e.gguf").write_bytes(b"")
    expect(C.CONTAINER_TRUNCATED, read_gguf, tmp_path / "e.gguf")


# --- properties -----------------------------------------------------------------------------------

_FUZZ = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _only_charter_errors(data: bytes) -> None:
    try:
        h = parse(data)
    except CharterError as e:
        assert len(e.diagnostics) == 1
        d = e.diagnostics[0]
        assert d.code.value.startswith("CONTAINER_") and isinstance(d.offset, int)
        assert 0 <= d.offset <= len(data)
        return
    assert all(t.end <= len(data) for t in h.tensors)
    assert len(h.kvs) == h.kv_count and len(h.tensors) == h.tensor_count


@_FUZZ
@given(
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=8)
)
def test_fuzz_byte_edits(rich_bytes, edits):
    buf = bytearray(rich_bytes)
    for pos, value in edits:
        buf[pos % len(buf)] = value
    _only_charter_errors(bytes(buf))


@_FUZZ
@given(
    pos=st.integers(0, 800),
    value=st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, 2**31, 2**32 - 1, 2**62, 2**63, 2**64 - 1]),
    width=st.sampled_from(["<B", "<I", "<Q"]),
)
def test_fuzz_field_sized_edits(rich_bytes, pos, value, width):
    size = struct.calcsize(width)
    value %= 256**size
    pos %= len(rich_bytes) - size
    _only_charter_errors(patched(rich_bytes, pos, width, value))


@_FUZZ
@given(cut=st.integers(0, 2000))
def test_fuzz_truncation(rich_bytes, cut):
    _only_charter_errors(rich_bytes[: cut % (len(rich_bytes) + 1)])
