"""The strict GGUF reader, error path by error path: each hand-made header is rejected with exactly
this diagnostic (code, field, message, expected, actual, offset), or accepted at the boundary.

tests/formats checks codes and offsets against real writers; these tables pin every part of the
diagnostic so that mutants of charter/formats/gguf.py (tools/mutmut_gate.py) that change only a
message, a bound or a reported value are killed too. A row whose diagnostic is None must parse.
"""

from __future__ import annotations

import pytest

from charter.formats.gguf import GGUFArray, GGUFValueType, parse_gguf, read_gguf, serialize_gguf_header
from tests.mutmut.gguf_bytes import error, gguf, gstr, kv, tinfo, u32, u64

# one kv, one array, one tensor: cut inside each field to name it in the truncation message
FULL = gguf([kv("a", 4, u32(1)), kv("arr", 9, u32(4) + u64(1) + u32(5))], [tinfo("t", [32, 2], 0, 0)])

CASES = [
    ("cut in value type", FULL[:35], 10**6, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'metadata.a', 'message': 'value type lies past the 35 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 33}),
    ("cut in array element type", FULL[:58], 10**6, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'metadata.arr', 'message': 'array element type lies past the 58 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 56}),
    ("cut in array count", FULL[:64], 10**6, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'metadata.arr', 'message': 'array count lies past the 64 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 60}),
    ("cut in tensor name length", FULL[:76], 10**6, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'tensors[0].name', 'message': 'tensor name length lies past the 76 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 72}),
    ("cut in tensor name", FULL[:80], 10**6, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'tensors[0].name', 'message': 'tensor name lies past the 80 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 80}),
    ("cut in n_dims", FULL[:83], 10**6, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'tensors.t.n_dims', 'message': 'n_dims lies past the 83 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 81}),
    ("cut in dim 0", FULL[:90], 10**6, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'tensors.t.dims', 'message': 'dim 0 lies past the 90 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 85}),
    ("cut in dim 1", FULL[:98], 10**6, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'tensors.t.dims', 'message': 'dim 1 lies past the 98 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 93}),
    ("cut in ggml type", FULL[:103], 10**6, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'tensors.t.type', 'message': 'ggml type lies past the 103 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 101}),
    ("cut in data offset", FULL[:110], 10**6, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'tensors.t.offset', 'message': 'data offset lies past the 110 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 105}),
    ("bool array X", gguf([kv("a", 9, u32(7) + u64(3) + b"\x00X\x01")]), None, {}, {'code': 'CONTAINER_BOOL', 'field': 'metadata.a[1]', 'message': 'bool byte must be 0 or 1, got 88', 'expected': '0 or 1', 'actual': '88', 'offset': 50}),
    ("bool array 2", gguf([kv("a", 9, u32(7) + u64(2) + b"\x01\x02")]), None, {}, {'code': 'CONTAINER_BOOL', 'field': 'metadata.a[1]', 'message': 'bool byte must be 0 or 1, got 2', 'expected': '0 or 1', 'actual': '2', 'offset': 50}),
    ("buf longer than file", gguf([kv("a", 4, u32(1))]), 39, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'metadata.a', 'message': 'uint32 value needs 4 bytes at offset 37, only 2 remain', 'expected': '<= 2 bytes', 'actual': '4 bytes', 'offset': 37}),
    ("cap at the provided end", gguf([kv("a", 4, u32(1))])[:39], 1000, {"max_header_bytes": 41}, {'code': 'CONTAINER_TRUNCATED', 'field': 'metadata.a', 'message': 'uint32 value lies past the 39 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 37}),
    ("tensors then kvs do not fit", gguf(n_t=1, n_kv=1) + bytes(40), None, {}, {'code': 'CONTAINER_COUNT', 'field': 'header.kv_count', 'message': '1 kv pairs cannot fit in the 7 bytes left after the tensor infos (each takes at least 14)', 'expected': '<= 0', 'actual': '1', 'offset': 16}),
    ("str array walk overrun", gguf([kv("a", 9, u32(8) + u64(2) + gstr("x" * 10) + b"abcd")]), None, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'metadata.a[1]', 'message': 'string element length needs 8 bytes at offset 67, only 4 remain', 'expected': '<= 4 bytes', 'actual': '8 bytes', 'offset': 67}),
    ("empty", b"", None, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'header.magic', 'message': 'magic needs 4 bytes at offset 0, only 0 remain', 'expected': '<= 0 bytes', 'actual': '4 bytes', 'offset': 0}),
    ("short magic", b"GG", None, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'header.magic', 'message': 'magic needs 4 bytes at offset 0, only 2 remain', 'expected': '<= 2 bytes', 'actual': '4 bytes', 'offset': 0}),
    ("bad magic", b"GGML" + bytes(20), None, {}, {'code': 'CONTAINER_MAGIC', 'field': 'header.magic', 'message': 'not a GGUF file', 'expected': '47475546', 'actual': '47474d4c', 'offset': 0}),
    ("bad magic short", b"XY", None, {}, {'code': 'CONTAINER_MAGIC', 'field': 'header.magic', 'message': 'not a GGUF file', 'expected': '47475546', 'actual': '5859', 'offset': 0}),
    ("trunc version", b"GGUF\x03\x00", None, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'header.version', 'message': 'version needs 4 bytes at offset 4, only 2 remain', 'expected': '<= 2 bytes', 'actual': '4 bytes', 'offset': 4}),
    ("version 1", gguf(version=1), None, {}, {'code': 'CONTAINER_VERSION', 'field': 'header.version', 'message': 'unsupported GGUF version 1', 'expected': '2 or 3', 'actual': '1', 'offset': 4}),
    ("version 4", gguf(version=4), None, {}, {'code': 'CONTAINER_VERSION', 'field': 'header.version', 'message': 'unsupported GGUF version 4', 'expected': '2 or 3', 'actual': '4', 'offset': 4}),
    ("byteswapped 3", gguf(version=0x03000000), None, {}, {'code': 'CONTAINER_VERSION', 'field': 'header.version', 'message': 'version 0x03000000 is version 3 byte-swapped: big-endian GGUF is not supported', 'expected': '2 or 3 (little-endian)', 'actual': '0x03000000', 'offset': 4}),
    ("byteswapped 2", gguf(version=0x02000000), None, {}, {'code': 'CONTAINER_VERSION', 'field': 'header.version', 'message': 'version 0x02000000 is version 2 byte-swapped: big-endian GGUF is not supported', 'expected': '2 or 3 (little-endian)', 'actual': '0x02000000', 'offset': 4}),
    ("byteswapped 1", gguf(version=0x01000000), None, {}, {'code': 'CONTAINER_VERSION', 'field': 'header.version', 'message': 'version 0x01000000 is version 1 byte-swapped: big-endian GGUF is not supported', 'expected': '2 or 3 (little-endian)', 'actual': '0x01000000', 'offset': 4}),
    ("byteswapped 4", gguf(version=0x04000000), None, {}, {'code': 'CONTAINER_VERSION', 'field': 'header.version', 'message': 'unsupported GGUF version 67108864', 'expected': '2 or 3', 'actual': '67108864', 'offset': 4}),
    ("v 0x00010000", gguf(version=0x00010000), None, {}, {'code': 'CONTAINER_VERSION', 'field': 'header.version', 'message': 'unsupported GGUF version 65536', 'expected': '2 or 3', 'actual': '65536', 'offset': 4}),
    ("trunc tcount", gguf()[:12], None, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'header.tensor_count', 'message': 'tensor count needs 8 bytes at offset 8, only 4 remain', 'expected': '<= 4 bytes', 'actual': '8 bytes', 'offset': 8}),
    ("trunc kvcount", gguf()[:20], None, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'header.kv_count', 'message': 'kv count needs 8 bytes at offset 16, only 4 remain', 'expected': '<= 4 bytes', 'actual': '8 bytes', 'offset': 16}),
    ("tensor count huge", gguf(n_t=2), None, {}, {'code': 'CONTAINER_COUNT', 'field': 'header.tensor_count', 'message': '2 tensor infos cannot fit in the 0 bytes that remain (each takes at least 33)', 'expected': '<= 0', 'actual': '2', 'offset': 8}),
    ("kv count huge", gguf(n_kv=2), None, {}, {'code': 'CONTAINER_COUNT', 'field': 'header.kv_count', 'message': '2 kv pairs cannot fit in the 0 bytes left after the tensor infos (each takes at least 14)', 'expected': '<= 0', 'actual': '2', 'offset': 16}),
    ("key trunc", gguf(n_kv=1) + u64(100) + b"abcdef" + bytes(10), None, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'kv[0].key', 'message': 'key needs 100 bytes at offset 32, only 16 remain', 'expected': '<= 16 bytes', 'actual': '100 bytes', 'offset': 32}),
    ("empty key", gguf([kv(b"", 4, u32(1))]), None, {}, {'code': 'CONTAINER_KEY', 'field': 'kv[0].key', 'message': 'empty key', 'expected': None, 'actual': None, 'offset': 24}),
    ("key utf8", gguf([kv(b"\xff\xfe", 4, u32(1))]), None, {}, {'code': 'CONTAINER_KEY', 'field': 'kv[0].key', 'message': 'key is not valid UTF-8 (invalid start byte)', 'expected': None, 'actual': None, 'offset': 32}),
    ("dup key", gguf([kv("a", 4, u32(1)), kv("a", 4, u32(2))]), None, {}, {'code': 'CONTAINER_DUPLICATE_KEY', 'field': 'kv[1].key', 'message': "key 'a' already defined at offset 24", 'expected': None, 'actual': None, 'offset': 41}),
    ("unknown vtype", gguf([kv("a", 13, u32(1))]), None, {}, {'code': 'CONTAINER_VALUE_TYPE', 'field': 'metadata.a', 'message': 'unknown value type 13', 'expected': '0..12', 'actual': '13', 'offset': 33}),
    ("trunc u32 value", gguf([kv("a", 4, b"\x01\x00")]), None, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'metadata.a', 'message': 'uint32 value needs 4 bytes at offset 37, only 2 remain', 'expected': '<= 2 bytes', 'actual': '4 bytes', 'offset': 37}),
    ("bool 2", gguf([kv("a", 7, b"\x02")]), None, {}, {'code': 'CONTAINER_BOOL', 'field': 'metadata.a', 'message': 'bool byte must be 0 or 1, got 2', 'expected': '0 or 1', 'actual': '2', 'offset': 37}),
    ("string bad utf8", gguf([kv("a", 8, gstr(b"\xc3\x28"))]), None, {}, {'code': 'CONTAINER_STRING', 'field': 'metadata.a', 'message': 'string value is not valid UTF-8 (invalid continuation byte)', 'expected': None, 'actual': None, 'offset': 45}),
    ("string trunc", gguf([kv("a", 8, u64(100) + b"abc")]), None, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'metadata.a', 'message': 'string value needs 100 bytes at offset 45, only 3 remain', 'expected': '<= 3 bytes', 'actual': '100 bytes', 'offset': 45}),
    ("array of arrays", gguf([kv("a", 9, u32(9) + u64(1))]), None, {}, {'code': 'CONTAINER_ARRAY', 'field': 'metadata.a', 'message': 'arrays of arrays are not supported', 'expected': 'a scalar or string element type', 'actual': 'array', 'offset': 37}),
    ("array bad elem", gguf([kv("a", 9, u32(20) + u64(1))]), None, {}, {'code': 'CONTAINER_VALUE_TYPE', 'field': 'metadata.a', 'message': 'unknown value type 20', 'expected': '0..12', 'actual': '20', 'offset': 37}),
    ("array count huge", gguf([kv("a", 9, u32(4) + u64(3) + u32(1) + u32(2))]), None, {}, {'code': 'CONTAINER_COUNT', 'field': 'metadata.a', 'message': '3 uint32 elements (at least 4 bytes each) needs 12 bytes at offset 49, only 8 remain', 'expected': '<= 8 bytes', 'actual': '12 bytes', 'offset': 49}),
    ("array count exact", gguf([kv("a", 9, u32(4) + u64(2) + u32(1) + u32(2))]), None, {}, None),
    ("bool array", gguf([kv("a", 9, u32(7) + u64(3) + b"\x00\x01\x03")]), None, {}, {'code': 'CONTAINER_BOOL', 'field': 'metadata.a[2]', 'message': 'bool byte must be 0 or 1, got 3', 'expected': '0 or 1', 'actual': '3', 'offset': 51}),
    ("str array overrun", gguf([kv("a", 9, u32(8) + u64(2) + gstr("ab") + u64(50) + b"xy")]), None, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'metadata.a[1]', 'message': 'string element needs 50 bytes at offset 67, only 2 remain', 'expected': '<= 2 bytes', 'actual': '50 bytes', 'offset': 67}),
    ("str array bad utf8", gguf([kv("a", 9, u32(8) + u64(2) + gstr("ab") + gstr(b"\xe2\x82"))]), None, {}, {'code': 'CONTAINER_STRING', 'field': 'metadata.a[1]', 'message': 'string element is not valid UTF-8 (unexpected end of data)', 'expected': None, 'actual': None, 'offset': 67}),
    ("str array exact", gguf([kv("a", 9, u32(8) + u64(2) + gstr("ab") + gstr(""))]), None, {}, None),
    ("str array short prefix", gguf([kv("a", 9, u32(8) + u64(2) + gstr("ab") + b"\x00\x00")]), None, {}, {'code': 'CONTAINER_COUNT', 'field': 'metadata.a', 'message': '2 string elements (at least 8 bytes each) needs 16 bytes at offset 49, only 12 remain', 'expected': '<= 12 bytes', 'actual': '16 bytes', 'offset': 49}),
    ("align type", gguf([kv("general.alignment", 10, u64(32))]), None, {}, {'code': 'CONTAINER_ALIGNMENT', 'field': 'metadata.general.alignment', 'message': 'alignment must be a uint32, got UINT64', 'expected': 'uint32', 'actual': 'uint64', 'offset': 49}),
    ("align 0", gguf([kv("general.alignment", 4, u32(0))]), None, {}, {'code': 'CONTAINER_ALIGNMENT', 'field': 'metadata.general.alignment', 'message': 'alignment must be a power of two in [1, 1073741824], got 0', 'expected': 'power of two <= 1073741824', 'actual': '0', 'offset': 53}),
    ("align 24", gguf([kv("general.alignment", 4, u32(24))]), None, {}, {'code': 'CONTAINER_ALIGNMENT', 'field': 'metadata.general.alignment', 'message': 'alignment must be a power of two in [1, 1073741824], got 24', 'expected': 'power of two <= 1073741824', 'actual': '24', 'offset': 53}),
    ("align 2^31", gguf([kv("general.alignment", 4, u32(2**31))]), None, {}, {'code': 'CONTAINER_ALIGNMENT', 'field': 'metadata.general.alignment', 'message': 'alignment must be a power of two in [1, 1073741824], got 2147483648', 'expected': 'power of two <= 1073741824', 'actual': '2147483648', 'offset': 53}),
    ("align 2^30", gguf([kv("general.alignment", 4, u32(2**30))]), None, {}, None),
    ("tname empty", gguf(tensors=[tinfo("", [32])]), 10**6, {}, {'code': 'CONTAINER_TENSOR_NAME', 'field': 'tensors[0].name', 'message': 'tensor name must be 1..63 bytes, got 0', 'expected': '1..63 bytes', 'actual': '0', 'offset': 24}),
    ("tname 64", gguf(tensors=[tinfo("x" * 64, [32])]), None, {}, {'code': 'CONTAINER_TENSOR_NAME', 'field': 'tensors[0].name', 'message': 'tensor name must be 1..63 bytes, got 64', 'expected': '1..63 bytes', 'actual': '64', 'offset': 24}),
    ("tname 63", gguf(tensors=[tinfo("x" * 63, [32])]), 10**6, {}, None),
    ("tname dup", gguf(tensors=[tinfo("a", [32]), tinfo("a", [32], offset=128)]), 10**6, {}, {'code': 'CONTAINER_TENSOR_NAME', 'field': 'tensors[1].name', 'message': "duplicate tensor name 'a' (first at offset 24)", 'expected': None, 'actual': None, 'offset': 57}),
    ("rank 0", gguf(tensors=[tinfo("a", [])]), 10**6, {}, {'code': 'CONTAINER_TENSOR_RANK', 'field': 'tensors.a.n_dims', 'message': 'rank must be 1..4, got 0', 'expected': '1..4', 'actual': '0', 'offset': 33}),
    ("rank 5", gguf(tensors=[tinfo("a", [1, 1, 1, 1, 1])]), None, {}, {'code': 'CONTAINER_TENSOR_RANK', 'field': 'tensors.a.n_dims', 'message': 'rank must be 1..4, got 5', 'expected': '1..4', 'actual': '5', 'offset': 33}),
    ("rank 4", gguf(tensors=[tinfo("a", [1, 1, 1, 1])]), 10**6, {}, None),
    ("dim 0", gguf(tensors=[tinfo("a", [0])]), None, {}, {'code': 'CONTAINER_TENSOR_DIM', 'field': 'tensors.a.dims', 'message': 'dim 0 must be in [1, 2**63-1], got 0', 'expected': '1..2**63-1', 'actual': '0', 'offset': 37}),
    ("dim 2^63", gguf(tensors=[tinfo("a", [2**63])]), None, {}, {'code': 'CONTAINER_TENSOR_DIM', 'field': 'tensors.a.dims', 'message': 'dim 0 must be in [1, 2**63-1], got 9223372036854775808', 'expected': '1..2**63-1', 'actual': '9223372036854775808', 'offset': 37}),
    ("dim i64max", gguf(tensors=[tinfo("a", [2**63 - 1], ggml_type=24)]), 10**6, {}, {'code': 'CONTAINER_EXTENT', 'field': 'tensors.a.offset', 'message': 'data [64, 9223372036854775871) ends past the end of the file (1000000)', 'expected': 'end <= 1000000', 'actual': '9223372036854775871', 'offset': 49}),
    ("nelem overflow", gguf(tensors=[tinfo("a", [2**32, 2**32])]), None, {}, {'code': 'CONTAINER_OVERFLOW', 'field': 'tensors.a.dims', 'message': 'element count of dims [4294967296, 4294967296] exceeds 2**63-1', 'expected': '<= 2**63-1', 'actual': '18446744073709551616', 'offset': 45}),
    ("unknown type", gguf(tensors=[tinfo("a", [32], ggml_type=99)]), None, {}, {'code': 'CONTAINER_TENSOR_TYPE', 'field': 'tensors.a.type', 'message': 'unknown ggml type 99', 'expected': 'a known ggml type', 'actual': '99', 'offset': 45}),
    ("removed type", gguf(tensors=[tinfo("a", [32], ggml_type=4)]), None, {}, {'code': 'CONTAINER_TENSOR_TYPE', 'field': 'tensors.a.type', 'message': 'removed ggml type 4 (Q4_2)', 'expected': 'a known ggml type', 'actual': '4', 'offset': 45}),
    ("block", gguf(tensors=[tinfo("a", [33, 2], ggml_type=8)]), None, {}, {'code': 'CONTAINER_TENSOR_BLOCK', 'field': 'tensors.a.dims', 'message': "ne[0]=33 is not a multiple of Q8_0's block size 32", 'expected': 'multiple of 32', 'actual': '33', 'offset': 37}),
    ("nbytes overflow", gguf(tensors=[tinfo("a", [2**62], ggml_type=28)]), None, {}, {'code': 'CONTAINER_OVERFLOW', 'field': 'tensors.a.dims', 'message': 'byte size 36893488147419103232 exceeds 2**64-1', 'expected': '<= 2**64-1', 'actual': '36893488147419103232', 'offset': 37}),
    ("offset misaligned", gguf(tensors=[tinfo("a", [32], offset=4)]), 10**6, {}, {'code': 'CONTAINER_OFFSET', 'field': 'tensors.a.offset', 'message': 'offset 4 is not a multiple of the alignment 32', 'expected': 'multiple of 32', 'actual': '4', 'offset': 49}),
    ("extent past eof", gguf(tensors=[tinfo("a", [32], offset=32)]), 200, {}, {'code': 'CONTAINER_EXTENT', 'field': 'tensors.a.offset', 'message': 'data [96, 224) ends past the end of the file (200)', 'expected': 'end <= 200', 'actual': '224', 'offset': 49}),
    ("header cap", gguf([kv("a", 8, gstr("x" * 100))]), None, {"max_header_bytes": 50}, {'code': 'CONTAINER_HEADER', 'field': 'metadata.a', 'message': 'string value would extend the header past the 50-byte limit', 'expected': 'header <= 50 bytes', 'actual': 'ends at 145', 'offset': 45}),
    ("header cap exact", gguf([kv("a", 8, gstr("x" * 100))]), None, {"max_header_bytes": 145}, None),
    ("provided short", gguf([kv("a", 4, u32(1))])[:30], 100, {}, {'code': 'CONTAINER_TRUNCATED', 'field': 'kv[0].key', 'message': 'key length lies past the 30 bytes of the file that were provided', 'expected': None, 'actual': None, 'offset': 24}),
]


@pytest.mark.parametrize("name, buf, size, kwargs, want", CASES, ids=[c[0] for c in CASES])
def test_parse_gguf_diagnostics(name, buf, size, kwargs, want):
    size = len(buf) if size is None else size
    if want is None:
        parse_gguf(buf, size, **kwargs)
    else:
        assert error(parse_gguf, buf, size, **kwargs) == want


def test_header_fields_and_offsets():
    kvs = [kv("a", 4, u32(7)), kv("s", 8, gstr("hi")), kv("b", 7, b"\x01"),
           kv("arr", 9, u32(7) + u64(2) + b"\x01\x00")]
    head = gguf(kvs, [tinfo("t", [32, 2], ggml_type=0, offset=0), tinfo("u", [8], ggml_type=1, offset=256)])
    size = 64 * ((len(head) + 63) // 64) + 512
    h = parse_gguf(head, size)
    assert (h.version, h.tensor_count, h.kv_count, h.alignment, h.file_size) == (3, 2, 4, 32, size)
    assert h.tensor_infos_offset == 24 + sum(len(k) for k in kvs)
    assert h.header_end == len(head)
    assert h.data_offset == -(-len(head) // 32) * 32
    a, s, b, arr = h.kvs.values()
    assert (a.key, a.type, a.value, a.offset, a.value_offset, a.end, a.type_offset) == ("a", 4, 7, 24, 37, 41, 33)
    assert (s.value, s.offset, s.end) == ("hi", 41, 41 + 9 + 4 + 10)
    assert b.value is True and h.value("b") is True and h.value("zz", 5) == 5 and h.value("zz") is None
    assert arr.value.items() == [True, False]
    assert (arr.value.count, arr.value.offset, arr.value.count_offset, arr.value.data_offset) == (
        2, arr.value_offset, arr.value_offset + 4, arr.value_offset + 12)
    t, u = h.tensors
    assert (t.name, t.dims, t.ggml_type.name, t.offset, t.nbytes, t.info_offset) == ("t", (32, 2), "F32", 0, 256,
                                                                                     h.tensor_infos_offset)
    assert (t.start, t.end, t.n_elements) == (h.data_offset, h.data_offset + 256, 64)
    assert (u.ggml_type.name, u.start, u.nbytes) == ("F16", h.data_offset + 256, 16)
    assert t.n_dims_offset == t.info_offset + 9 and t.dims_offset == t.info_offset + 13
    assert t.type_offset == t.info_offset + 29 and t.offset_offset == t.info_offset + 33
    assert serialize_gguf_header(h)[:len(head)] == head


def test_array_values():
    arr = GGUFArray.from_items(GGUFValueType.BOOL, [True, False, True], 9)
    assert (arr.raw, arr.count, arr.offset, arr.items(), len(arr)) == (b"\x01\x00\x01", 3, 9, [True, False, True], 3)
    assert [type(v) for v in arr.items()] == [bool, bool, bool]
    assert GGUFArray.from_items(GGUFValueType.INT32, [-1, 2]).offset == 0
    assert GGUFArray.from_items(GGUFValueType.UINT8, [1, 0]).items() == [1, 0]
    assert GGUFArray.from_items(GGUFValueType.STRING, ["é", ""]).items() == ["é", ""]
    with pytest.raises(ValueError, match=r"^arrays of arrays are not supported$"):
        GGUFArray.from_items(GGUFValueType.ARRAY, [])


def test_read_gguf_files(tmp_path):
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    assert error(read_gguf, empty) == {
        "code": "CONTAINER_TRUNCATED", "field": "header.magic", "message": "magic needs 4 bytes at offset 0, only 0 "
        "remain", "expected": "<= 0 bytes", "actual": "4 bytes", "offset": 0}
    missing = tmp_path / "missing.gguf"
    got = error(read_gguf, missing)
    assert got == {"code": "CONTAINER_UNREADABLE", "field": "file", "message": f"cannot read {str(missing)!r}: "
                   f"[Errno 2] No such file or directory: {str(missing)!r}", "expected": None, "actual": None,
                   "offset": 0}
    got = error(read_gguf, tmp_path)
    assert (got["code"], got["field"], got["offset"]) == ("CONTAINER_UNREADABLE", "file", 0)
    assert got["message"].startswith(f"cannot read {str(tmp_path)!r}: [Errno 21] Is a directory")
    ok = tmp_path / "ok.gguf"
    ok.write_bytes(gguf([kv("a", 8, gstr("x" * 100))]))
    assert read_gguf(ok).kvs["a"].value == "x" * 100
    assert error(read_gguf, ok, max_header_bytes=50)["code"] == "CONTAINER_HEADER"
    assert read_gguf(str(ok), max_header_bytes=145).file_size == 145
