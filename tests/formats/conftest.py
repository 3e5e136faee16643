"""Builders for the reader tests: real writers for valid files, byte patches for the rest."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import gguf
import numpy as np
import pytest

from charter.diagnostics import CharterError, Code

VT = gguf.GGUFValueType
QT = gguf.GGMLQuantizationType


def plain_id(value) -> str:
    """A test id that pytest selects again when it is given back on its command line, as the
    code-mutation gate gives each test's id (tests/mutmut/isolate.py refuses any other): printable
    ASCII without backslashes or brackets, any other character as %XX; past 40 characters, the
    first 40 and the length (pytest numbers ids that collide)."""
    text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
    shown = text if len(text) <= 40 else f"{text[:40]}...({len(text)})"
    return "".join(c if c.isascii() and c.isprintable() and c not in "\\[]%" else f"%{ord(c):02X}" for c in shown)


def write_gguf(path: Path, kvs=(), tensors=(), alignment: int | None = None) -> Path:
    """Write a GGUF with gguf.GGUFWriter. kvs: (key, value, vtype[, sub_type]);
    tensors: (name, ndarray[, raw_dtype])."""
    w = gguf.GGUFWriter(str(path), arch="llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    for key, value, vtype, *sub in kvs:
        w.add_key_value(key, value, vtype, sub[0] if sub else None)
    for name, array, *raw in tensors:
        w.add_tensor(name, array, raw_dtype=raw[0] if raw else None)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


RICH_KVS = [
    ("t.u8", 7, VT.UINT8),
    ("t.i8", -3, VT.INT8),
    ("t.u16", 65535, VT.UINT16),
    ("t.i16", -32768, VT.INT16),
    ("t.u32", 4_000_000_000, VT.UINT32),
    ("t.i32", -5, VT.INT32),
    ("t.f32", 1.5, VT.FLOAT32),
    ("t.u64", 2**63 + 5, VT.UINT64),
    ("t.i64", -(2**40), VT.INT64),
    ("t.f64", 2.25, VT.FLOAT64),
    ("t.bool", True, VT.BOOL),
    ("t.str", "héllo wörld", VT.STRING),
    ("t.strs", ["a", "ßé", "", "日本語", "Ġthe"], VT.ARRAY, VT.STRING),
    ("t.i32s", [1, -2, 3], VT.ARRAY, VT.INT32),
    ("t.bools", [True, False, True], VT.ARRAY, VT.BOOL),
    ("t.f32s", [0.5, -1.25], VT.ARRAY, VT.FLOAT32),
    ("t.u8s", [0, 255], VT.ARRAY, VT.UINT8),
]


def rich_tensors():
    return [
        ("a.weight", np.arange(3 * 32, dtype=np.float32).reshape(3, 32)),
        ("q.weight", np.zeros((2, 34), dtype=np.uint8), QT.Q8_0),  # dims (32, 2)
        ("c.bias", np.ones(5, dtype=np.float16)),
    ]


@pytest.fixture(scope="session")
def rich_gguf(tmp_path_factory) -> Path:
    """A small valid GGUF holding every value type and three tensors."""
    return write_gguf(tmp_path_factory.mktemp("gguf") / "rich.gguf", RICH_KVS, rich_tensors())


@pytest.fixture(scope="session")
def rich_bytes(rich_gguf) -> bytes:
    return rich_gguf.read_bytes()


def patched(data: bytes, offset: int, fmt: str, *values) -> bytes:
    """A copy of `data` with struct `fmt` packed at `offset`."""
    buf = bytearray(data)
    struct.pack_into(fmt, buf, offset, *values)
    return bytes(buf)


def expect(code: Code, fn, *args, **kw):
    """Call fn; it must raise a CharterError with exactly one diagnostic of `code`."""
    with pytest.raises(CharterError) as info:
        fn(*args, **kw)
    diags = info.value.diagnostics
    assert len(diags) == 1, diags
    d = diags[0]
    assert d.code is code, d
    assert d.code.value.startswith("CONTAINER_")
    assert isinstance(d.offset, int) and d.offset >= 0
    assert d.field and d.message
    return d


def st_bytes(header, data: bytes | int = b"", pad: bool = True) -> bytes:
    """A safetensors file from a header (dict or raw JSON text) and data (bytes or a length)."""
    text = header if isinstance(header, str) else json.dumps(header, separators=(",", ":"))
    raw = text.encode("utf-8")
    if pad:
        raw += b" " * (-len(raw) % 8)
    if isinstance(data, int):
        data = bytes(data)
    return struct.pack("<Q", len(raw)) + raw + data
