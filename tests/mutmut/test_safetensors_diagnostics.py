"""The strict safetensors reader, error path by error path, with the whole diagnostic pinned
(code, field, message, expected, actual, offset): kills mutants of charter/formats/safetensors.py
that change only a message, a bound or a reported value (tools/mutmut_gate.py)."""

from __future__ import annotations

import json
import struct

import pytest

from charter.diagnostics import CharterError
from charter.formats.safetensors import MAX_HEADER_BYTES, parse_safetensors, read_safetensors
from tests.mutmut.gguf_bytes import error


def header(text: str, data_len: int = 0) -> tuple[bytes, int]:
    """A header padded with spaces to a multiple of 8, as the format's writers do."""
    raw = text.encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw, 8 + len(raw) + data_len


def U8(begin: int, end: int, shape=None) -> dict:
    return {"dtype": "U8", "shape": [end - begin] if shape is None else shape, "data_offsets": [begin, end]}


def ext(field, message, expected, actual, offset, code="CONTAINER_EXTENT"):
    return {"code": code, "field": field, "message": message, "expected": expected, "actual": actual,
            "offset": offset}


CASES = [
    ("gap at start", {"a": U8(4, 8)}, 8, ext(
        "tensors.a.data_offsets", "gap: tensor begins at 4 but the data section starts at 0", "0", "4", 13)),
    ("gap after a", {"a": U8(0, 4), "b": U8(6, 8)}, 8, ext(
        "tensors.b.data_offsets", "gap: tensor begins at 6 but the previous tensor ends at 4", "4", "6", 65)),
    ("overlap", {"a": U8(0, 6), "b": U8(4, 8)}, 8, ext(
        "tensors.b.data_offsets", "overlap: tensor begins at 4, before the previous tensor ends at 6", "6", "4", 65)),
    ("trailing", {"a": U8(0, 4)}, 6, ext(
        "tensors", "trailing bytes: tensors end at 4 but the data section holds 6 bytes", "6", "4", 68)),
    ("tiled out of order", {"b": U8(4, 8), "a": U8(0, 4)}, 8, None),
    ("empty tensor first", {"z": U8(0, 0), "a": U8(0, 4)}, 4, None),
    ("shape not a list", {"a": U8(0, 0, 3)}, 0, ext(
        "tensors.a.shape", "shape must be a list, got int", "list", "int", 35, "CONTAINER_HEADER")),
    ("negative dim", {"a": U8(0, 0, [2, -1])}, 0, ext(
        "tensors.a.shape", "dim 1 must be a non-negative integer, got -1", "integer >= 0", "-1", 35,
        "CONTAINER_TENSOR_DIM")),
    ("bool dim", {"a": U8(0, 1, [True])}, 1, ext(
        "tensors.a.shape", "dim 0 must be a non-negative integer, got True", "integer >= 0", "True", 35,
        "CONTAINER_TENSOR_DIM")),
    ("zero dim", {"a": U8(0, 0, [0, 5])}, 0, None),
    ("overlap reported at its own entry", {"b": U8(4, 8), "a": U8(0, 6)}, 8, ext(
        "tensors.b.data_offsets", "overlap: tensor begins at 4, before the previous tensor ends at 6", "6", "4", 13)),
    # an error anywhere sends the whole header through the positional walk, zero dims included
    ("zero dim on the diagnostic walk", {"a": U8(0, 0, [0, 5]), "b": {"dtype": "Q9", "shape": [1],
                                                                       "data_offsets": [0, 1]}}, 1, ext(
        "tensors.b.dtype", "unknown dtype 'Q9'", "a safetensors dtype", "'Q9'", 76, "CONTAINER_DTYPE")),
    ("zero dim in the entry at fault", {"a": U8(0, 1, [0, 5])}, 1, ext(
        "tensors.a.data_offsets", "data_offsets span 1 bytes, shape and dtype need 0", "0", "1", 56)),
    ("u64 max elements", {"a": U8(0, 0, [2**64 - 1])}, 0, ext(
        "tensors.a.shape", "18446744073709551615 elements of U8 overflow a u64 bit count", "<= 2**64-1 bits",
        str((2**64 - 1) * 8), 35, "CONTAINER_OVERFLOW")),
    ("element overflow", {"a": U8(0, 0, [2**40, 2**40])}, 0, ext(
        "tensors.a.shape", "element count overflows a u64 at dim 1", "<= 2**64-1", str(2**80), 35,
        "CONTAINER_OVERFLOW")),
]


@pytest.mark.parametrize("name, doc, data_len, want", CASES, ids=[c[0] for c in CASES])
def test_parse_safetensors_diagnostics(name, doc, data_len, want):
    buf, size = header(json.dumps(doc, separators=(",", ":")), data_len)
    if want is None:
        parse_safetensors(buf, size)
    else:
        assert error(parse_safetensors, buf, size) == want


def test_duplicates_and_constants_are_named():
    buf, size = header('{"__metadata__":{"a":"1","a":"2"}}')
    assert error(parse_safetensors, buf, size) == ext("metadata", "duplicate key 'a'", None, None, 24,
                                                      "CONTAINER_DUPLICATE_KEY")
    buf, size = header('{"a":NaN}')
    assert error(parse_safetensors, buf, size) == ext("header", "invalid JSON value: NaN is not JSON", None, None,
                                                      13, "CONTAINER_JSON")


def test_read_safetensors_files(tmp_path):
    buf, size = header(json.dumps({"a": U8(0, 4)}), 4)
    path = tmp_path / "ok.safetensors"
    path.write_bytes(buf + b"\x01\x02\x03\x04")
    h = read_safetensors(path)
    assert (h.file_size, h.data_offset, [t.name for t in h.tensors]) == (size, len(buf), ["a"])
    assert read_safetensors(str(path)).file_size == size
    short = tmp_path / "short.safetensors"
    short.write_bytes(buf[:-1])
    assert error(read_safetensors, short)["code"] == error(parse_safetensors, buf[:-1], len(buf) - 1)["code"]
    tiny = tmp_path / "tiny.safetensors"
    tiny.write_bytes(buf[:5])
    assert error(read_safetensors, tiny) == error(parse_safetensors, buf[:5], 5)
    huge = tmp_path / "huge.safetensors"
    huge.write_bytes(struct.pack("<Q", MAX_HEADER_BYTES + 1) + b"{}      ")
    assert error(read_safetensors, huge) == error(parse_safetensors, struct.pack("<Q", MAX_HEADER_BYTES + 1), 16)
    bare = tmp_path / "bare.safetensors"  # a header that ends exactly at the end of the file
    buf, size = header("{}")
    bare.write_bytes(buf)
    assert (read_safetensors(bare).data_offset, read_safetensors(bare).file_size) == (size, size)
    missing = tmp_path / "missing.safetensors"
    assert error(read_safetensors, missing) == ext(
        "file", f"cannot read {str(missing)!r}: [Errno 2] No such file or directory: {str(missing)!r}", None, None,
        0, "CONTAINER_UNREADABLE")


# Valid headers the fast path must accept alone: escapes that are not lone surrogates, non-ASCII
# names and values, metadata, several dtypes, an empty header.
VALID = [
    ("{}", 0),
    ('{"__metadata__":{"k":"v"}}', 0),
    ('{"caf\\u00e9":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('{"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a\\n":{"dtype":"BF16","shape":[1,2],'
     '"data_offsets":[1,5]}}', 5),
    ('{"__metadata__":{"t\\u00e9":"\\ud83d\\ude00","q":"\\"x\\""},"w":{"dtype":"I64","shape":[],'
     '"data_offsets":[0,8]}}', 8),
    ('{"n\u00e9":{"dtype":"F16","shape":[0],"data_offsets":[0,0]}}', 0),
]


def test_the_fast_path_alone_reads_valid_headers(tmp_path, monkeypatch):
    """The fast path is a speed path only if it accepts valid headers by itself: with the
    positional walker removed, both entry points still read each, as the walker reads it."""
    from charter.formats import safetensors

    expected = []
    for text, data_len in VALID:
        buf, size = header(text, data_len)
        expected.append(safetensors._parse(buf + bytes(data_len), size, False))

    def no_walker(*args):
        raise AssertionError("the fast path gave up on a valid header")

    monkeypatch.setattr(safetensors, "_walk", no_walker)
    for (text, data_len), walked in zip(VALID, expected):
        buf, size = header(text, data_len)
        assert parse_safetensors(buf + bytes(data_len), size) == walked, text
        path = tmp_path / "valid.safetensors"
        path.write_bytes(buf + bytes(data_len))
        assert read_safetensors(path) == walked, text


def test_read_safetensors_reads_the_header_bytes_only(tmp_path, monkeypatch):
    """The length first, then the header's N bytes when they fit in the file and the limit, never
    the tensor data nor what a hostile length claims (docs/security.md)."""
    import builtins

    from charter.formats import safetensors

    reads: list[int | None] = []

    class Counted:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def fileno(self):
            return self.f.fileno()

        def read(self, n=None):
            reads.append(n)
            return self.f.read(n)

    monkeypatch.setattr(safetensors, "open", lambda *a, **k: Counted(builtins.open(*a, **k)), raising=False)
    buf, _ = header(json.dumps({"a": U8(0, 4)}), 4)
    cases = [(buf + b"\x01\x02\x03\x04", [8, len(buf) - 8]),
             (buf[:-1], [8]),  # the header does not fit in the file
             (struct.pack("<Q", (1 << 64) - 1) + b"{}", [8]),  # a length past any signed reading
             (struct.pack("<Q", 65) + bytes(80), [8])]  # over the limit (64 here) though it fits
    padded, _ = header('{"__metadata__":{"k":"%s"}}' % ("v" * (64 - 26)))
    assert len(padded) == 8 + 64
    cases.append((padded, [8, 64]))  # at the limit
    monkeypatch.setattr(safetensors, "MAX_HEADER_BYTES", 64)
    for data, expected in cases:
        path = tmp_path / "a.safetensors"
        path.write_bytes(data)
        reads.clear()
        try:
            read_safetensors(path)
        except CharterError:  # what is refused is refused after these reads
            pass
        assert reads == expected, (data[:8], reads)


# (name, header text, data bytes, diagnostic or None): the JSON level, tensor entries, metadata.
HEADERS = [
    ('not an object', '[]', 0, {'code': 'CONTAINER_JSON', 'field': 'header', 'message': 'expected a JSON object', 'expected': None, 'actual': None, 'offset': 8}),
    ('not JSON', '{"a":', 0, {'code': 'CONTAINER_JSON', 'field': 'header', 'message': 'invalid JSON: Expecting value', 'expected': None, 'actual': None, 'offset': 16}),
    ('trailing garbage', '{} x', 0, {'code': 'CONTAINER_JSON', 'field': 'header', 'message': 'trailing characters after the header object', 'expected': None, 'actual': None, 'offset': 11}),
    ('empty header', '{}', 0, None),
    ('metadata not object', '{"__metadata__":[]}', 0, {'code': 'CONTAINER_METADATA', 'field': 'metadata', 'message': '__metadata__ must be a map of strings, got list', 'expected': 'object', 'actual': 'list', 'offset': 24}),
    ('metadata value not string', '{"__metadata__":{"a":1}}', 0, {'code': 'CONTAINER_METADATA', 'field': 'metadata.a', 'message': 'metadata values must be strings, got int', 'expected': 'str', 'actual': 'int', 'offset': 29}),
    ('metadata ok', '{"__metadata__":{"a":"b"}}', 0, None),
    ('tensor not object', '{"a":1}', 0, {'code': 'CONTAINER_HEADER', 'field': 'tensors.a', 'message': 'tensor entry must be an object, got int', 'expected': 'object', 'actual': 'int', 'offset': 13}),
    ('missing dtype', '{"a":{"shape":[1],"data_offsets":[0,1]}}', 1, {'code': 'CONTAINER_HEADER', 'field': 'tensors.a.dtype', 'message': "tensor entry lacks 'dtype'", 'expected': 'dtype', 'actual': 'missing', 'offset': 13}),
    ('extra field', '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}}', 1, {'code': 'CONTAINER_HEADER', 'field': 'tensors.a.x', 'message': "unexpected key 'x' in tensor entry", 'expected': 'dtype, shape, data_offsets', 'actual': 'x', 'offset': 60}),
    ('unknown dtype', '{"a":{"dtype":"Q9","shape":[1],"data_offsets":[0,1]}}', 1, {'code': 'CONTAINER_DTYPE', 'field': 'tensors.a.dtype', 'message': "unknown dtype 'Q9'", 'expected': 'a safetensors dtype', 'actual': "'Q9'", 'offset': 22}),
    ('dtype not string', '{"a":{"dtype":7,"shape":[1],"data_offsets":[0,1]}}', 1, {'code': 'CONTAINER_DTYPE', 'field': 'tensors.a.dtype', 'message': 'unknown dtype 7', 'expected': 'a safetensors dtype', 'actual': '7', 'offset': 22}),
    ('offsets arity', '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}}', 1, {'code': 'CONTAINER_OFFSET', 'field': 'tensors.a.data_offsets', 'message': 'data_offsets must be two integers in [0, 2**64-1], got [0]', 'expected': '[begin, end]', 'actual': '[0]', 'offset': 54}),
    ('offsets not list', '{"a":{"dtype":"U8","shape":[1],"data_offsets":3}}', 1, {'code': 'CONTAINER_OFFSET', 'field': 'tensors.a.data_offsets', 'message': 'data_offsets must be two integers in [0, 2**64-1], got 3', 'expected': '[begin, end]', 'actual': '3', 'offset': 54}),
    ('offsets negative', '{"a":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}}', 1, {'code': 'CONTAINER_OFFSET', 'field': 'tensors.a.data_offsets', 'message': 'data_offsets must be two integers in [0, 2**64-1], got [-1, 0]', 'expected': '[begin, end]', 'actual': '[-1, 0]', 'offset': 54}),
    ('offsets reversed', '{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}}', 1, {'code': 'CONTAINER_OFFSET', 'field': 'tensors.a.data_offsets', 'message': 'data_offsets begin 1 > end 0', 'expected': 'begin <= 0', 'actual': '1', 'offset': 54}),
    ('offsets float', '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1.0]}}', 1, {'code': 'CONTAINER_OFFSET', 'field': 'tensors.a.data_offsets', 'message': 'data_offsets must be two integers in [0, 2**64-1], got [0, 1.0]', 'expected': '[begin, end]', 'actual': '[0, 1.0]', 'offset': 54}),
    ('size mismatch', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', 4, {'code': 'CONTAINER_EXTENT', 'field': 'tensors.a.data_offsets', 'message': 'data_offsets span 4 bytes, shape and dtype need 8', 'expected': '8', 'actual': '4', 'offset': 55}),
    ('past data', '{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}', 2, {'code': 'CONTAINER_EXTENT', 'field': 'tensors.a.data_offsets', 'message': 'data [0, 4) extends past the end of the file (data section holds 2 bytes)', 'expected': 'end <= 2', 'actual': '4', 'offset': 54}),
    ('sub-byte', '{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}', 2, {'code': 'CONTAINER_EXTENT', 'field': 'tensors.a.shape', 'message': '3 elements of F4 are not a whole number of bytes', 'expected': 'a multiple of 8 bits', 'actual': '12 bits', 'offset': 35}),
    ('sub-byte ok', '{"a":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}}', 2, None),
    ('lone surrogate key', '{"\\ud800":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', 1, {'code': 'CONTAINER_JSON', 'field': 'header', 'message': 'string holds a lone surrogate escape', 'expected': None, 'actual': None, 'offset': 9}),
    ('lone surrogate metadata', '{"__metadata__":{"a":"\\udc00"}}', 0, {'code': 'CONTAINER_JSON', 'field': 'metadata.a', 'message': 'string holds a lone surrogate escape', 'expected': None, 'actual': None, 'offset': 29}),
    ('dup tensor key', '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', 1, {'code': 'CONTAINER_DUPLICATE_KEY', 'field': 'tensors.a', 'message': "duplicate key 'a'", 'expected': None, 'actual': None, 'offset': 61}),
    ('dup field', '{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}', 1, {'code': 'CONTAINER_DUPLICATE_KEY', 'field': 'tensors.a', 'message': "duplicate key 'dtype'", 'expected': None, 'actual': None, 'offset': 13}),
    ('infinity', '{"a":Infinity}', 0, {'code': 'CONTAINER_JSON', 'field': 'header', 'message': 'invalid JSON value: Infinity is not JSON', 'expected': None, 'actual': None, 'offset': 13}),
]


@pytest.mark.parametrize("name, text, data_len, want", HEADERS, ids=[c[0] for c in HEADERS])
def test_header_diagnostics(name, text, data_len, want):
    buf, size = header(text, data_len)
    if want is None:
        parse_safetensors(buf, size)
    else:
        assert error(parse_safetensors, buf, size) == want


LENGTHS = [
    ('length past file', b'd\x00\x00\x00\x00\x00\x00\x00{}      ', 16, {'code': 'CONTAINER_TRUNCATED', 'field': 'header.length', 'message': 'header of 100 bytes does not fit in the file (16 bytes after offset 0)', 'expected': '<= 8', 'actual': '100', 'offset': 0}),
    ('length over cap', b'\x01\xe1\xf5\x05\x00\x00\x00\x00{}', 1000000000, {'code': 'CONTAINER_HEADER', 'field': 'header.length', 'message': 'header length 100000001 exceeds the 100000000-byte limit', 'expected': '<= 100000000', 'actual': '100000001', 'offset': 0}),
    ('short length', b'\x01\x00', 2, {'code': 'CONTAINER_TRUNCATED', 'field': 'header.length', 'message': 'the file holds 2 bytes, the header length needs 8', 'expected': '>= 8 bytes', 'actual': '2', 'offset': 0}),
]


@pytest.mark.parametrize("name, buf, size, want", LENGTHS, ids=[c[0] for c in LENGTHS])
def test_header_length_diagnostics(name, buf, size, want):
    assert error(parse_safetensors, buf, size) == want


def test_unpadded_header_is_accepted_and_recorded():
    raw = b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    h = parse_safetensors(struct.pack("<Q", len(raw)) + raw, 8 + len(raw) + 1)
    assert (h.header_len_aligned, h.data_offset) == (len(raw) % 8 == 0, 8 + len(raw))
    padded, size = header(raw.decode(), 1)
    assert parse_safetensors(padded, size).header_len_aligned is True


def test_the_json_structure_limit_counts_the_header_bytes_alone(monkeypatch):
    """Note [JSON structure limit]: the , : [ characters of the header's N bytes are counted before
    anything is decoded -- from its first byte to its last, and not those of the length before it
    (N = 0x5b3a2c: its bytes are `,` `:` `[`) nor of the data after it. N is also the header cap
    here: a header of exactly the cap is read."""
    from charter.formats import safetensors

    n = 0x5B3A2C
    monkeypatch.setattr(safetensors, "MAX_HEADER_BYTES", n)
    raw = b",:[" + b" " * (n - 6) + b"[:,"  # not JSON at all: the count comes first
    buffers = []
    for after in (b",", b":", b"["):
        buf = struct.pack("<Q", n) + raw + after * 4
        buffers += [buf, bytearray(buf)]  # bytes are counted in place, other buffers copied first
    for data in buffers:
        assert error(parse_safetensors, data, len(data), max_json_structure=6)["code"] == "CONTAINER_JSON"
        assert error(parse_safetensors, data, len(data), max_json_structure=5) == ext(
            "header", "the header holds 6 of the JSON characters , : [ (each may start a value), more than the "
            "reader's limit of 5", "<= 5", "6", 8, "CONTAINER_HEADER")


def test_the_json_member_limit_counts_colons_after_the_structure():
    """Note [JSON member limit]: the `:` of the header's bytes have a limit of their own, checked
    after the structure limit and before anything is decoded; `,` and `[` do not count."""
    raw = b'{"a":"b","c":"d"} :: ,,[['
    data = struct.pack("<Q", len(raw)) + raw
    assert error(parse_safetensors, data, len(data), max_json_members=4)["code"] == "CONTAINER_JSON"
    assert error(parse_safetensors, data, len(data), max_json_members=3) == ext(
        "header", "the header holds 4 of the JSON character : (each starts a member's value), more than the "
        "reader's limit of 3", "<= 3", "4", 8, "CONTAINER_HEADER")
    assert error(parse_safetensors, data, len(data), max_json_structure=7, max_json_members=3)["actual"] == "9"


def test_a_short_buffer_is_not_a_short_file():
    buf, size = header('{"__metadata__":{"k":"v"}}')
    assert error(parse_safetensors, buf[:7], size)["message"] == "the provided buffer holds 7 bytes, the header length needs 8"
    assert error(parse_safetensors, buf[:7], 7)["message"] == "the file holds 7 bytes, the header length needs 8"
    assert error(parse_safetensors, buf[:7], 8)["message"] == "the provided buffer holds 7 bytes, the header length needs 8"
    n = len(buf) - 8
    assert error(parse_safetensors, buf[:-1], size) == ext(
        "header.length", f"header of {n} bytes does not fit in the provided buffer ({len(buf) - 1} bytes after offset 0)",
        f"<= {len(buf) - 9}", str(n), 0, "CONTAINER_TRUNCATED")
    assert error(parse_safetensors, buf, len(buf) - 1) == ext(
        "header.length", f"header of {n} bytes does not fit in the file ({len(buf) - 1} bytes after offset 0)",
        f"<= {len(buf) - 9}", str(n), 0, "CONTAINER_TRUNCATED")
    assert parse_safetensors(buf, len(buf)).data_offset == len(buf)  # a header that ends the file fits
