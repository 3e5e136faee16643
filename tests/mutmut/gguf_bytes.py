"""Byte builders for hand-made GGUF headers (little-endian, as the format stores them)."""

from __future__ import annotations

import struct

from charter.diagnostics import CharterError


def u32(n: int) -> bytes:
    return struct.pack("<I", n)


def u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def gstr(text: str | bytes) -> bytes:
    b = text.encode("utf-8") if isinstance(text, str) else text
    return u64(len(b)) + b


def kv(key: str | bytes, vtype: int, payload: bytes) -> bytes:
    return gstr(key) + u32(vtype) + payload


def tinfo(name: str | bytes, dims, ggml_type: int = 0, offset: int = 0, n_dims: int | None = None) -> bytes:
    return gstr(name) + u32(len(dims) if n_dims is None else n_dims) + b"".join(u64(d) for d in dims) + \
        u32(ggml_type) + u64(offset)


def gguf(kvs=(), tensors=(), version: int = 3, n_kv: int | None = None, n_t: int | None = None) -> bytes:
    return b"GGUF" + u32(version) + u64(len(tensors) if n_t is None else n_t) + \
        u64(len(kvs) if n_kv is None else n_kv) + b"".join(kvs) + b"".join(tensors)


def error(call, *args, **kwargs) -> dict:
    try:
        call(*args, **kwargs)
    except CharterError as exc:
        (d,) = exc.diagnostics
        return {"code": d.code.value, "field": d.field, "message": d.message, "expected": d.expected,
                "actual": d.actual, "offset": d.offset}
    raise AssertionError("no CharterError")
