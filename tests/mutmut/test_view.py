"""The admission view (charter/admission/view.py), field by field, as each container's reader
builds it: every later stage reads only this view, so an entry's offset, a type name or a view
built without the battery's parse memo must not go unnoticed (tools/mutmut_gate.py)."""

from __future__ import annotations

import json
import struct

from charter.admission.view import LazyMeta, MetaEntry, TensorEntry, parse_view, read_view
from charter.formats.accepted_strings import AcceptedStrings
from charter.formats.gguf import GGUFValueType as T
from charter.language import align_up
from tests.mutmut.gguf_bytes import error, gguf, gstr, kv, tinfo, u32
from tests.mutmut.test_safetensors_diagnostics import header

# Offsets, for the header below: the fixed part is 24 bytes (magic, version, two counts).
# "a.n" (a u32) starts at 24: its tag at 35, its value at 39; "a.s" (a string) at 43: tag 54,
# value 58; "a.v" (an array of two f32) at 68: tag 79, value 83. The tensor info record "w" at 103.
HEADER = gguf(
    kvs=[kv("a.n", T.UINT32, u32(7)), kv("a.s", T.STRING, gstr("hi")),
         kv("a.v", T.ARRAY, u32(T.FLOAT32) + struct.pack("<Q", 2) + struct.pack("<2f", 1.5, 2.5))],
    tensors=[tinfo("w", (4, 2))])  # ggml type 0: F32
DATA_AT = align_up(len(HEADER), 32)  # the default alignment
FILE = HEADER + bytes(DATA_AT - len(HEADER)) + bytes(32)


def safetensors_file() -> bytes:
    raw, _ = header(json.dumps({"__metadata__": {"k": "v", "j": "w"},
                                "t": {"dtype": "U8", "shape": [3], "data_offsets": [0, 3]}}))
    return raw + b"abc"


def test_a_gguf_view_states_every_entry_and_offset():
    v = parse_view(FILE, len(FILE), "gguf")
    assert (v.format, v.version, v.alignment, v.header_len_aligned) == ("gguf", 3, 32, None)
    assert (v.header_end, v.data_offset, v.file_size) == (len(HEADER), DATA_AT, len(FILE))
    assert list(v.meta) == ["a.n", "a.s", "a.v"] and len(v.meta) == 3
    assert v.meta["a.n"] == MetaEntry("a.n", "uint32", 7, None, 24, 35, 39)
    assert v.meta["a.s"] == MetaEntry("a.s", "string", "hi", None, 43, 54, 58)
    arr = v.meta["a.v"]
    assert arr[:2] == ("a.v", "array") and arr[3:] == ("float32", 68, 79, 83)
    assert arr.value.items() == [1.5, 2.5] and arr.value.offset == 83
    assert v.tensors == (TensorEntry("w", (4, 2), "F32", DATA_AT, DATA_AT + 32, 103),)
    assert v.header.kvs["a.n"].value == 7  # the parsed header itself, for the readers' own facts


def test_lazy_meta_answers_membership_without_building_entries():
    made = []
    meta = LazyMeta({"x": 1, "y": 2}, lambda key, record: made.append(key) or (key, record))
    assert "x" in meta and "z" not in meta and made == []
    assert meta["y"] == ("y", 2) and made == ["y"]
    assert list(meta) == ["x", "y"] and len(meta) == 2


def test_a_safetensors_view_states_its_entries():
    buf = safetensors_file()
    v = parse_view(buf, len(buf), "safetensors")
    assert (v.format, v.version, v.alignment, v.header_len_aligned) == ("safetensors", None, None, True)
    at = len(buf) - 3
    assert (v.header_end, v.data_offset, v.file_size) == (at, at, len(buf))
    assert list(v.meta) == ["k", "j"]
    assert v.meta["j"] == MetaEntry("j", "string", "w", None, 8, 8, 8)
    assert v.tensors == (TensorEntry("t", (3,), "U8", at, at + 3, 8),)


def test_read_view_reads_each_format_from_its_file(tmp_path):
    gguf_path, st_path = tmp_path / "m.gguf", tmp_path / "m.safetensors"
    gguf_path.write_bytes(FILE)
    st_path.write_bytes(safetensors_file())
    assert read_view(str(gguf_path), "gguf").tensors == parse_view(FILE, len(FILE), "gguf").tensors
    st = read_view(str(st_path), "safetensors")
    assert st.tensors[0].name == "t" and st.meta["k"].value == "v"


def test_a_file_of_another_format_is_named_before_any_reader_runs(tmp_path):
    path = tmp_path / "m.safetensors"
    path.write_bytes(FILE)
    want = {"code": "CONTAINER_FORMAT", "field": "format", "offset": 0, "expected": "'safetensors'",
            "actual": "'gguf'", "message": "this is a GGUF file; the contract expects safetensors"}
    assert error(read_view, str(path), "safetensors") == want
    assert error(parse_view, FILE, len(FILE), "safetensors") == want


def test_a_buffer_shorter_than_the_sniff_of_a_longer_file_is_truncated():
    got = error(parse_view, FILE[:10], len(FILE), "gguf")
    assert (got["code"], got["field"], got["actual"]) == ("CONTAINER_TRUNCATED", "format", "10")


def test_a_buffer_without_its_data_is_read_against_the_file_size():
    got = error(parse_view, HEADER, len(HEADER), "gguf")  # the tensor's 32 bytes lie past the end
    assert (got["code"], got["field"]) == ("CONTAINER_EXTENT", "tensors.w.offset")


def test_the_parse_memo_hands_a_header_parsed_again_the_same_entries():
    accepted = AcceptedStrings()
    first = parse_view(FILE, len(FILE), "gguf", accepted)
    again = parse_view(bytes(FILE), len(FILE), "gguf", accepted)
    assert again.tensors[0] is first.tensors[0]
    assert parse_view(bytes(FILE), len(FILE), "gguf").tensors[0] is not first.tensors[0]
