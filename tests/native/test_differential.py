"""Differential verdicts: the generated C++ checker and the Python checker give the same first
diagnostic -- stage, code, field and byte offset -- on every artifact mutant of the batteries, on
the hostile inputs of tests/formats, and on random byte edits (Note [Ordered admission]). The
SmolLM2 battery's artifact mutants are compared by tests/batteries/smollm2.battery.yaml
(`engines: both`: the same comparison, each mutant also killed where predicted; make test-slow)."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charter.mutation.run import all_mutants
from tests.hardening import corpus

from tests.conftest import need_checker

from .conftest import TINY_GGUF, TINY_ST, load_battery_for
from .differential import cpp_read, cpp_verdict, python_read, python_verdict


def _same(p, q) -> bool:
    return p.finding == q.finding


@pytest.fixture(scope="module", params=[TINY_ST, TINY_GGUF], ids=["tiny-st", "tiny-gguf"])
def battery(request, native, tmp_path_factory):
    cid, b = load_battery_for(request.param, tmp_path_factory.mktemp("battery"))
    need_checker(native, cid)
    return cid, b


def test_every_artifact_mutant_agrees(native, battery):
    cid, b = battery
    mutants = [m for m in all_mutants(b, "artifact") if m.make is not None]
    assert len(mutants) > 100
    differ, codes = [], set()
    for m in mutants:
        made = m.make()
        buf, size = made[0], made[1]
        if len(made) > 2 and made[2]:
            continue  # bytes patched outside the header (store manifests): not a header mutant
        p = python_verdict(b.checker, b.plan.format, buf, size, b.require_status)
        q = cpp_verdict(native, cid, buf, size, b.require_status)
        codes.add(p.finding.code)
        if not _same(p, q):
            differ.append(f"{m.id}: python {p} / c++ {q}")
    assert not differ, f"{len(differ)}/{len(mutants)} mutants differ:\n" + "\n".join(differ[:20])
    assert len(codes) > 10  # the battery reaches many stages and codes, not one


# --- the hostile inputs of tests/formats --------------------------------------------------------


def _gguf(kvs=(), tensors=(), version=3, alignment_pad=32) -> bytes:
    """A GGUF written by hand: kvs (key, type tag, payload bytes), tensors (name, dims, type, offset)."""
    out = [b"GGUF", struct.pack("<IQQ", version, len(tensors), len(kvs))]
    for key, tag, payload in kvs:
        k = key.encode()
        out += [struct.pack("<Q", len(k)), k, struct.pack("<I", tag), payload]
    for name, dims, ttype, offset in tensors:
        n = name.encode()
        out += [struct.pack("<Q", len(n)), n, struct.pack("<I", len(dims))]
        out += [struct.pack("<Q", d) for d in dims] + [struct.pack("<IQ", ttype, offset)]
    blob = b"".join(out)
    return blob + bytes(-len(blob) % alignment_pad)


def _s(text: str) -> bytes:
    b = text.encode("utf-8", "surrogatepass")
    return struct.pack("<Q", len(b)) + b


HOSTILE_GGUF = {
    "empty": b"",
    "short magic": b"GG",
    "bad magic": b"GGML" + bytes(40),
    "version 1": b"GGUF" + struct.pack("<IQQ", 1, 0, 0),
    "big-endian": b"GGUF" + struct.pack(">IQQ", 3, 0, 0),
    "tensor count": b"GGUF" + struct.pack("<IQQ", 3, 2**62, 0) + bytes(64),
    "kv count": b"GGUF" + struct.pack("<IQQ", 3, 0, 2**64 - 1) + bytes(64),
    "empty key": _gguf([("", 4, struct.pack("<I", 1))]),
    "key not utf8": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2) + b"\xc3\x28" + bytes(16),
    "duplicate key": _gguf([("a", 4, struct.pack("<I", 1)), ("a", 4, struct.pack("<I", 2))]),
    "value type": _gguf([("a", 13, b"")]),
    "bool 2": _gguf([("a", 7, b"\x02")]),
    "string not utf8": _gguf([("a", 8, struct.pack("<Q", 3) + b"a\xff\xfe")]),
    "array of arrays": _gguf([("a", 9, struct.pack("<IQ", 9, 1))]),
    "huge array": (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _s("k") + struct.pack("<IIQ", 9, 10, 2**62)).ljust(50, b"\0"),
    "huge string": (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _s("k") + struct.pack("<IQ", 8, 2**64 - 1)).ljust(50, b"\0"),
    "string element overrun": _gguf([("a", 9, struct.pack("<IQ", 8, 2) + _s("x") + struct.pack("<Q", 999))]),
    "string element not utf8": _gguf([("a", 9, struct.pack("<IQ", 8, 3) + _s("ok") + _s("é") + struct.pack("<Q", 2) + b"\xe2\x82")]),
    "bool array": _gguf([("a", 9, struct.pack("<IQ", 7, 3) + b"\x00\x01\x05")]),
    "alignment uint64": _gguf([("general.alignment", 10, struct.pack("<Q", 32))]),
    "alignment 48": _gguf([("general.alignment", 4, struct.pack("<I", 48))]),
    "alignment 0": _gguf([("general.alignment", 4, struct.pack("<I", 0))]),
    "name 64 bytes": _gguf(tensors=[("n" * 64, (32,), 0, 0)]),
    "empty name": _gguf(tensors=[("", (32,), 0, 0)]),
    "duplicate tensor": _gguf(tensors=[("t", (32,), 0, 0), ("t", (32,), 0, 128)]),
    "rank 0": _gguf(tensors=[("t", (), 0, 0)]),
    "rank 5": _gguf(tensors=[("t", (1, 1, 1, 1, 1), 0, 0)]),
    "dim 0": _gguf(tensors=[("t", (0,), 0, 0)]),
    "dim 2**63": _gguf(tensors=[("t", (2**63,), 0, 0)]),
    "element overflow": _gguf(tensors=[("t", (2**32, 2**32), 0, 0)]),
    "removed type": _gguf(tensors=[("t", (32,), 4, 0)]),
    "unknown type": _gguf(tensors=[("t", (32,), 99, 0)]),
    "block": _gguf(tensors=[("t", (33,), 2, 0)]),
    "byte overflow": _gguf(tensors=[("t", (2**40, 2**22), 15, 0)]),
    "offset alignment": _gguf(tensors=[("t", (8,), 0, 3)]),
    "extent": _gguf(tensors=[("t", (8,), 0, 2**63)]),
    "extent wraps": _gguf(tensors=[("t", (8,), 0, 2**64 - 32)]),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_GGUF))
def test_hostile_gguf(native, name):
    data = HOSTILE_GGUF[name]
    for size in sorted({len(data), len(data) + 100, 2**40}):
        p, q = python_read("gguf", data, size), cpp_read(native, "gguf", data, size)
        assert _same(p, q), (name, size, str(p), str(q))
        assert p.admitted or p.finding.code.startswith("CONTAINER_")


def test_gguf_header_cap(native):
    data = _gguf([("k", 8, _s("x" * 500))])
    p, q = python_read("gguf", data, len(data), 300), cpp_read(native, "gguf", data, len(data), 300)
    assert _same(p, q) and p.finding.code == "CONTAINER_HEADER"


def _st(header, data=b"", pad=True) -> bytes:
    text = header if isinstance(header, str) else json.dumps(header, separators=(",", ":"))
    raw = text.encode("utf-8", "surrogatepass")
    if pad:
        raw += b" " * (-len(raw) % 8)
    if isinstance(data, int):
        data = bytes(data)
    return struct.pack("<Q", len(raw)) + raw + data


def _entry(dtype="F32", shape=(2,), begin=0, end=None, **extra):
    end = begin + 4 * int(np.prod(shape)) if end is None else end
    return {"dtype": dtype, "shape": list(shape), "data_offsets": [begin, end], **extra}


HOSTILE_ST = {
    "short": b"\x08" * 7,
    "length cap": struct.pack("<Q", 100_000_001) + b"{}",
    "length 2**64-1": struct.pack("<Q", 2**64 - 1) + b"{}",
    "length past end": struct.pack("<Q", 64) + b"{}      ",
    "not utf8": struct.pack("<Q", 10) + b'{"a\xff": 1}',
    "empty text": _st(""),
    "array": _st("[]"),
    "open": _st("{"),
    "no value": _st('{"a":'),
    "no colon": _st('{"a" 1}'),
    "comma": _st("{,}"),
    "trailing comma": _st('{"t": {"a": 1,}}'),
    "trailing array comma": _st('{"t": [1,]}'),
    "trailing text": _st('{"t": {}} x'),
    "single quotes": _st("{'a': 1}"),
    "nan": _st('{"t": NaN}'),
    "infinity": _st('{"t": [Infinity]}'),
    "-infinity": _st('{"t": [-Infinity]}'),
    "deep": _st('{"t": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}"),
    "big int": _st('{"t": [' + "9" * 5000 + "]}"),
    "4300 digits": _st('{"t": {"dtype": "F32", "shape": [' + "9" * 4300 + '], "data_offsets": [0, 0]}}'),
    "control char": _st('{"a\x01": 1}'),
    "lone surrogate key": _st('{"\\ud800": {}}'),
    "bad escape": _st('{"a\\q": 1}'),
    "bad unicode escape": _st('{"a\\u12x4": 1}'),
    "short unicode escape": _st('{"a\\u12'),
    "surrogate pair": _st('{"\\ud83d\\ude00": ' + json.dumps(_entry()) + "}", 8),
    "bad second escape": _st('{"\\ud83d\\uzzzz": 1}'),
    "unterminated": _st('{"abc'),
    "leading zero": _st('{"t": [01]}'),
    "dup tensor": _st('{"t": E, "t": E}'.replace("E", json.dumps(_entry())), 8),
    "dup metadata": _st('{"__metadata__": {}, "__metadata__": {}}'),
    "dup in entry": _st('{"t": {"dtype": "F32", "dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', 8),
    "dup in metadata": _st('{"__metadata__": {"k": "a", "k": "b"}}'),
    "dup nested": _st('{"t": {"dtype": "F32", "shape": [{"a": 1, "a": 2}], "data_offsets": [0, 8]}}', 8),
    "metadata list": _st({"__metadata__": []}),
    "metadata value int": _st('{"__metadata__": {"ü": "é", "k": 3}}'),
    "metadata lone value": _st('{"__metadata__": {"k": "\\udc00"}}'),
    "metadata lone key": _st('{"__metadata__": {"\\udc00": "v"}}'),
    "entry list": _st({"t": []}, 8),
    "entry extra": _st({"t": _entry(extra_key=1)}, 8),
    "entry lone key": _st('{"t": {"\\ud800": 1}}', 8),
    "entry missing": _st({"t": {"dtype": "F32", "shape": [2]}}, 8),
    "dtype lower": _st({"t": _entry(dtype="f32")}, 8),
    "dtype int": _st({"t": _entry(dtype=4)}, 8),
    "shape int": _st({"t": _entry() | {"shape": 2}}, 8),
    "dim negative": _st({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 8]}}, 8),
    "dim bool": _st({"t": {"dtype": "F32", "shape": [True, 2], "data_offsets": [0, 8]}}, 8),
    "dim float": _st({"t": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}}, 8),
    "shape overflow": _st({"t": {"dtype": "U8", "shape": [2**32, 2**32], "data_offsets": [0, 0]}}),
    "shape zero then huge": _st({"t": {"dtype": "U8", "shape": [0, 2**70], "data_offsets": [0, 0]}}),
    "shape huge": _st({"t": {"dtype": "U8", "shape": [2**64], "data_offsets": [0, 0]}}),
    "bit overflow": _st({"t": {"dtype": "F64", "shape": [2**61], "data_offsets": [0, 0]}}),
    "offsets arity": _st({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0]}}, 8),
    "offsets negative": _st({"t": {"dtype": "F32", "shape": [2], "data_offsets": [-1, 7]}}, 8),
    "offsets huge": _st({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 2**64]}}, 8),
    "offsets reversed": _st({"t": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, 8),
    "size mismatch": _st({"t": _entry(shape=(2,), end=12)}, 12),
    "sub-byte": _st({"t": {"dtype": "F4", "shape": [3], "data_offsets": [0, 1]}}, 1),
    "gap": _st({"a": _entry(begin=4)}, 12),
    "overlap": _st({"a": _entry(begin=0), "b": _entry(begin=4)}, 12),
    "trailing bytes": _st({"a": _entry(begin=0)}, 12),
    "past end": _st({"a": _entry(begin=0)}, 4),
    "unaligned header": _st({"t": _entry()}, 8, pad=False),
    "whitespace": _st(' \n {"t": ' + json.dumps(_entry()) + "}  \t", 8),
    # Note [Safetensors numbers]: -0 is the float -0.0 wherever it stands, as serde_json reads it
    "offsets minus zero": _st('{"t": {"dtype": "F32", "shape": [2], "data_offsets": [-0, 8]}}', 8),
    "offsets minus zero spaced": _st('{"t": {"dtype": "F32", "shape": [2], "data_offsets": [ \n-0 , 8]}}', 8),
    "offsets minus zero end": _st('{"t": {"dtype": "F32", "shape": [0], "data_offsets": [0, -0]}}'),
    "dim minus zero": _st('{"t": {"dtype": "F32", "shape": [-0], "data_offsets": [0, 0]}}'),
    "dim minus zero exponent": _st('{"t": {"dtype": "F32", "shape": [-0e0], "data_offsets": [0, 0]}}'),
    "metadata minus zero": _st('{"__metadata__": {"k": -0}}'),
    "nested minus zero": _st('{"t": {"dtype": "F32", "shape": [[-0]], "data_offsets": [0, 0]}}'),
    "minus zero in strings": _st('{"__metadata__": {"d": "2024-01-01", "k": "[-0]"}, "a,-0": ' + json.dumps(_entry())
                                 + "}", 8),
    "minus zero in an extra field": _st({"t": _entry()} | {"x": {}}, 8).replace(b"{}", b"-0 "),
    "dim 8.0": _st('{"t": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}}', 8),
    "dim 2E0": _st('{"t": {"dtype": "F32", "shape": [2E0], "data_offsets": [0, 8]}}', 8),
    "offsets 8e0": _st('{"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8e0]}}', 8),
    "offsets 1e400": _st('{"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 1e400]}}', 8),
    "offsets plus": _st('{"t": {"dtype": "F32", "shape": [2], "data_offsets": [+0, 8]}}', 8),
    "offsets leading zero": _st('{"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 08]}}', 8),
    "metadata 1e2": _st('{"__metadata__": {"k": 1e2}}'),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_ST))
def test_hostile_safetensors(native, name):
    data = HOSTILE_ST[name]
    for size in sorted({len(data), len(data) + 4}):
        p, q = python_read("safetensors", data, size), cpp_read(native, "safetensors", data, size)
        assert _same(p, q), (name, size, str(p), str(q))


NUMBER_CASES = [c for c in corpus.all_cases() if c.klass == "numbers"]


@pytest.mark.parametrize("case", NUMBER_CASES, ids=lambda c: c.name)
def test_number_spellings(native, case):
    """Every spelling of the corpus's class "numbers" (tests/formats/test_safetensors_numbers.py):
    the same diagnostic, offset included, from both readers."""
    p, q = python_read("safetensors", case.data, len(case.data)), cpp_read(native, "safetensors", case.data,
                                                                          len(case.data))
    assert (p.finding.code, p.finding.field) == (case.code, case.field) and _same(p, q), (str(p), str(q))


# --- random edits: both engines agree, whatever the bytes ------------------------------------------

_FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def tiny_gguf(native, tmp_path_factory):
    cid, b = load_battery_for(TINY_GGUF, tmp_path_factory.mktemp("fuzz"))
    need_checker(native, cid)
    return cid, b


@pytest.fixture(scope="module")
def tiny_st(native, tmp_path_factory):
    cid, b = load_battery_for(TINY_ST, tmp_path_factory.mktemp("fuzz"))
    need_checker(native, cid)
    return cid, b


def _agree(native, cid, b, buf: bytes, size: int) -> None:
    p = python_verdict(b.checker, b.plan.format, buf, size, b.require_status)
    q = cpp_verdict(native, cid, buf, size, b.require_status)
    assert _same(p, q), (str(p), str(q))


@_FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=6))
def test_fuzz_gguf_byte_edits(native, tiny_gguf, edits):
    cid, b = tiny_gguf
    buf = bytearray(b.raw_header)
    for pos, value in edits:
        buf[pos % len(buf)] = value
    _agree(native, cid, b, bytes(buf), b.view.file_size)


@_FUZZ
@given(pos=st.integers(0, 10**6), value=st.sampled_from([0, 1, 2, 7, 0x7F, 0x80, 0xFF, 2**31, 2**32 - 1, 2**62,
                                                           2**63, 2**64 - 1]),
       width=st.sampled_from(["<B", "<I", "<Q"]), grow=st.integers(-64, 64))
def test_fuzz_gguf_field_edits(native, tiny_gguf, pos, value, width, grow):
    cid, b = tiny_gguf
    size = struct.calcsize(width)
    buf = bytearray(b.raw_header)
    pos %= len(buf) - size
    struct.pack_into(width, buf, pos, value % 256**size)
    _agree(native, cid, b, bytes(buf), max(b.view.file_size + grow, 0))


@_FUZZ
@given(cut=st.integers(0, 10**6), file_grows=st.booleans())
def test_fuzz_gguf_truncation(native, tiny_gguf, cut, file_grows):
    cid, b = tiny_gguf
    raw = b.raw_header[: cut % (len(b.raw_header) + 1)]
    _agree(native, cid, b, raw, b.view.file_size if file_grows else len(raw))


@_FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=6))
def test_fuzz_safetensors_byte_edits(native, tiny_st, edits):
    cid, b = tiny_st
    buf = bytearray(b.raw_header)
    for pos, value in edits:
        buf[8 + pos % (len(buf) - 8)] = value
    _agree(native, cid, b, bytes(buf), b.view.file_size)


_TOKENS = ['"', "{", "}", "[", "]", ",", ":", "0", "-1", "1e999", "1.5", "-", "01", '"F4"', "NaN", "-Infinity",
           "true", "nul", "\\", "\\u12", "\\ud800", "\\ud83d\\ude00", "\x01", "é", " ", '"__metadata__"',
           "99999999999999999999999", "18446744073709551616", "-0", "-0.0", "8.0", "1E2", "+1", "00"]


@_FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(_TOKENS), st.booleans()), min_size=1,
                      max_size=3))
def test_fuzz_safetensors_json_token_edits(native, tiny_st, edits):
    cid, b = tiny_st
    n = struct.unpack_from("<Q", b.raw_header)[0]
    text = b.raw_header[8 : 8 + n]
    for pos, token, replace in edits:
        pos %= len(text) + 1
        tok = token.encode()
        text = text[:pos] + tok + (text[pos + len(tok):] if replace else text[pos:])
    data_len = b.view.file_size - b.view.data_offset
    buf = struct.pack("<Q", len(text)) + text
    _agree(native, cid, b, buf, len(buf) + data_len)


@_FUZZ
@given(text=st.text(alphabet=st.sampled_from(list('{}[],:"\\ u0123456789abcdefEe.-+ntrlsNaIfy\x01é')), max_size=40))
def test_fuzz_json_error_positions(native, text):
    """The JSON scanner's error positions, on near-JSON text inside a tensor entry."""
    raw = ('{"t": ' + text + "}").encode()
    data = struct.pack("<Q", len(raw)) + raw
    p, q = python_read("safetensors", data, len(data)), cpp_read(native, "safetensors", data, len(data))
    assert _same(p, q), (text, str(p), str(q))


# --- the format sniff (Note [Format sniff] in charter/formats/sniff.py) -----------------------------

FORMAT_CASES = corpus.format_cases()


@pytest.mark.parametrize("case", FORMAT_CASES, ids=lambda c: c.name)
def test_format_sniff(native, tiny_gguf, tiny_st, case):
    cid, b = tiny_gguf if case.format == "gguf" else tiny_st
    for size in (len(case.data), len(case.data) + 100):
        p = python_verdict(b.checker, b.plan.format, case.data, size, b.require_status)
        q = cpp_verdict(native, cid, case.data, size, b.require_status)
        assert (p.finding.code, p.finding.field) == (case.code, case.field) and _same(p, q), (str(p), str(q))


def test_format_sniff_on_short_buffers(native, tiny_gguf, tiny_st):
    """A span shorter than the sniff's window of a longer file: the same CONTAINER_TRUNCATED, and
    the C++ engine asks for the window."""
    for cid, b in (tiny_gguf, tiny_st):
        for n in range(17):
            buf = b.raw_header[:n]
            p = python_verdict(b.checker, b.plan.format, buf, b.view.file_size, b.require_status)
            d = native.admit_detail(cid, buf, b.view.file_size, b.require_status or "")
            q = cpp_verdict(native, cid, buf, b.view.file_size, b.require_status)
            assert _same(p, q), (n, str(p), str(q))
            if n < 16:
                assert (p.finding.code, p.finding.field, d["needs_more"], d["need"]) == (
                    "CONTAINER_TRUNCATED", "format", True, 16)


_MAGICS = [b"", b"GGUF", b"PK\x03\x04", b"PK\x05\x06", b"\x80\x02", b"\x80\x05", b"\x80\x06", b"\xef\xbb\xbf", b"{",
           b"[", b" \n", b"\x06\x00\x00\x00\x0c\x00Wh"]


@_FUZZ
@given(magic=st.sampled_from(_MAGICS), rest=st.binary(max_size=20), st_contract=st.booleans(),
       cut=st.integers(0, 40))
def test_fuzz_first_bytes(native, tiny_gguf, tiny_st, magic, rest, st_contract, cut):
    """Random first bytes over a real header, under both contracts, whole or cut."""
    cid, b = tiny_st if st_contract else tiny_gguf
    head = magic + rest
    buf = head + b.raw_header[len(head):]
    _agree(native, cid, b, buf, b.view.file_size)
    _agree(native, cid, b, buf[:cut], cut)
