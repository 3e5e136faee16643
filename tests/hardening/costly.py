"""Costly hostile artifacts: headers of as many small records as a limit (or the 64 MiB cap) allows.

Note [Costly corpus]
~~~~~~~~~~~~~~~~~~~~
The hostile corpus (corpus.py) changes one fact of a small file; these cases instead make the
reader and the checker do as much work per header byte as the format allows: many tiny kv pairs,
tensor infos, string elements or JSON values. Each starts from corpus.py's base file, so it is
admitted by the same contracts up to what it adds, and grows one kind of record to `n`. Each
kind comes twice: `n` just at the reader's limit (the most work a file can demand and still be
read) and `n` filling the 64 MiB header cap (rejected by the limit, before the records are read).
They are built by code, quickly (no field marks), from the standard library only: bench/hostile.py
times them in both engines; tests/hardening checks their verdicts at the limits.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from tests.hardening import corpus
from tests.hardening.corpus import ARRAY, BOOL, GGML_F32, INT32, STRING, UINT8, gstr, u32, u64

CAP = 64 * 2**20  # the GGUF reader's header cap; the safetensors cases stay under it too
# The readers' limits (charter.formats.gguf, charter.formats.safetensors), restated here as
# this module depends on nothing but the standard library; a test compares them.
KV_LIMIT, TENSOR_LIMIT, STRING_LIMIT, JSON_STRUCTURE_LIMIT = 2**16, 2**17, 2**20, 2**21
JSON_MEMBER_LIMIT = 2**19 + 2**16


@dataclass(frozen=True)
class Costly:
    """One costly case: `build()` returns its bytes (and `size`, if set, extends them with a hole)."""

    name: str
    format: str
    build: Callable[[], bytes]
    code: str  # the diagnostic both engines must give
    field: str | None
    size: int | None = None

    @property
    def contract_key(self) -> str:
        return self.format


def key(i: int) -> bytes:
    """Short unique names no base key or tensor has: `~` and base 36."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    s = ""
    while True:
        i, r = divmod(i, 36)
        s = digits[r] + s
        if not i:
            return b"~" + s.encode()


# --- GGUF -----------------------------------------------------------------------------------------


def _kv(kv: corpus.KV) -> bytes:
    return gstr(kv.key) + u32(kv.type) + kv.value


def _tensor(t: corpus.Tensor) -> bytes:
    return gstr(t.name) + u32(len(t.dims)) + b"".join(u64(d) for d in t.dims) + u32(t.type) + u64(t.offset)


def gguf(kvs: list[bytes] = (), tensors: list[bytes] = (), replace: dict[bytes, bytes] | None = None) -> bytes:
    """The base GGUF with serialized pairs replaced (by key) or added, and tensor infos added."""
    g = corpus.base_gguf_spec()
    replace = replace or {}
    base_kvs = [replace.get(kv.key, _kv(kv)) for kv in g.kvs]
    all_kvs = base_kvs + list(kvs)
    all_tensors = [_tensor(t) for t in g.tensors] + list(tensors)
    blob = b"".join([b"GGUF", u32(3), u64(len(all_tensors)), u64(len(all_kvs)), *all_kvs, *all_tensors])
    return blob + bytes(-len(blob) % 32) + g.data


def many_kvs(n: int) -> bytes:
    """`n` uint8 pairs `~0`, `~1`, ... after the base pairs."""
    return gguf(kvs=[gstr(key(i)) + u32(UINT8) + b"\x01" for i in range(n)])


def many_tensors(n: int) -> bytes:
    """`n` F32 [8] tensors `~0`, `~1`, ... packed after the base tensors (data: a hole, `size`)."""
    return gguf(tensors=[_tensor(corpus.Tensor(key(i), (8,), GGML_F32, 352 + 32 * i)) for i in range(n)])


def tensors_size(n: int) -> int:
    """The size of `many_tensors(n)` with every tensor's data (a hole past the header)."""
    return len(many_tensors(0)) + 60 * n + 352 + 32 * n


def _array(name: bytes, elem_type: int, count: int, elements: bytes) -> bytes:
    return gstr(name) + u32(ARRAY) + u32(elem_type) + u64(count) + elements


def many_bools(n: int) -> bytes:
    """test.bools (pinned: length 2) with `n` elements."""
    return gguf(replace={b"test.bools": _array(b"test.bools", BOOL, n, b"\x01\x00" * (n // 2) + b"\x01" * (n % 2))})


def many_int32(n: int) -> bytes:
    """An unpinned int32 array of `n` elements."""
    return gguf(kvs=[_array(b"x.ints", INT32, n, u32(7) * n)])


def many_strings(n: int, text: str = "") -> bytes:
    """test.strs (pinned: length 2) holding `n` copies of `text`."""
    return gguf(replace={b"test.strs": _array(b"test.strs", STRING, n, gstr(text) * n)})


def many_string_arrays(n: int) -> bytes:
    """`n` unpinned string arrays of one empty string each: the per-array work."""
    return gguf(kvs=[_array(key(i), STRING, 1, u64(0)) for i in range(n)])


def long_strings(n: int, length: int) -> bytes:
    """test.strs holding `n` strings of `length` bytes of non-ASCII text: the UTF-8 check."""
    return many_strings(n, ("é" * length)[: length // 2])


def everything(kvs: int, tensors: int, strings: int) -> bytes:
    """Pairs, tensor infos and string elements, each as many as given, in one header."""
    pairs = [gstr(key(i)) + u32(UINT8) + b"\x01" for i in range(kvs - 1)]
    pairs.append(_array(b"~strs", STRING, strings, u64(0) * strings))
    infos = [_tensor(corpus.Tensor(key(i), (8,), GGML_F32, 352 + 32 * i)) for i in range(tensors)]
    return gguf(kvs=pairs, tensors=infos)


def fill(per_record: int, header: int = CAP) -> int:
    """How many records of `per_record` bytes fill a header of `header` bytes."""
    return (header - len(corpus.base_gguf()) - 64) // per_record


# --- safetensors ----------------------------------------------------------------------------------


def _st(text: str) -> bytes:
    raw = text.encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return u64(len(raw)) + raw


def st_many_tensors(n: int) -> bytes:
    """The base header, then `n` U8 [1] tensors `~0`, `~1`, ..., one byte each after the base data."""
    base = json.dumps(corpus.st_header(), separators=(",", ":"))
    pos = corpus.ST_DATA_LEN
    parts = [base[:-1]]
    for i in range(n):
        parts.append(f',"{key(i).decode()}":{{"dtype":"U8","shape":[1],"data_offsets":[{pos + i},{pos + i + 1}]}}')
    return _st("".join(parts) + "}") + corpus._seeded(pos + n, 2)


def st_metadata(extra: str) -> bytes:
    """The base file with `extra` (JSON members, comma-first) appended to its __metadata__."""
    meta = json.dumps(corpus.ST_METADATA, separators=(",", ":"))[:-1] + extra + "}"
    tensors = json.dumps(corpus.ST_TENSORS, separators=(",", ":"))
    return _st('{"__metadata__":' + meta + "," + tensors[1:]) + corpus._seeded(corpus.ST_DATA_LEN, 2)


def st_many_metadata_keys(n: int) -> bytes:
    """`n` extra metadata pairs `"~0":""`, `"~1":""`, ..."""
    return st_metadata("".join(f',"{key(i).decode()}":""' for i in range(n)))


def st_long_metadata_value(n: int) -> bytes:
    """An extra metadata value of `n` bytes of template text (none of the characters , : [)."""
    return st_metadata(',"x":' + json.dumps(("{{ message }} " * (n // 14 + 1))[:n]))


def st_nested_lists(n: int) -> bytes:
    """A metadata value that is a list of `n` empty lists: JSON values as dense as they come."""
    return st_metadata(',"x":[' + ",".join(["[]"] * n) + "]")


# --- the cases ------------------------------------------------------------------------------------

GGUF_BASE_KVS, GGUF_BASE_TENSORS, GGUF_BASE_STRINGS = 7, 3, 2
ST_BASE_STRUCTURE = 40  # , : [ in base_safetensors()'s header
ST_BASE_MEMBERS = 17  # : in base_safetensors()'s header


def cases() -> list[Costly]:
    """Each kind of record at its limit (the most work a readable file demands) and filling the
    header (rejected by the limit first), with the diagnostic of the corpus contracts."""
    kv_room = KV_LIMIT - GGUF_BASE_KVS
    tensor_room = TENSOR_LIMIT - GGUF_BASE_TENSORS
    unexpected = ("METADATA_UNEXPECTED", "metadata.~0")
    strs_length = ("METADATA_ARRAY_LENGTH", "metadata.test.strs.length")
    st_room = (JSON_STRUCTURE_LIMIT - ST_BASE_STRUCTURE) // 2
    member_room = JSON_MEMBER_LIMIT - ST_BASE_MEMBERS
    c = Costly
    return [
        c("gguf/kvs-at-limit", "gguf", lambda: many_kvs(kv_room), *unexpected),
        c("gguf/kvs-filling-64-mib", "gguf", lambda: many_kvs(fill(18)), "CONTAINER_COUNT", "header.kv_count"),
        c("gguf/string-arrays-at-limit", "gguf", lambda: many_string_arrays(kv_room), *unexpected),
        c("gguf/tensors-at-limit", "gguf", lambda: many_tensors(tensor_room), "TENSOR_UNEXPECTED", "tensors.~0",
          size=tensors_size(tensor_room)),
        c("gguf/tensors-filling-64-mib", "gguf", lambda: many_tensors(fill(37)), "CONTAINER_COUNT",
          "header.tensor_count", size=tensors_size(fill(37))),
        c("gguf/bools-filling-64-mib", "gguf", lambda: many_bools(fill(1)), "METADATA_ARRAY_LENGTH",
          "metadata.test.bools.length"),
        c("gguf/int32s-filling-64-mib", "gguf", lambda: many_int32(fill(4)), "METADATA_UNEXPECTED", "metadata.x.ints"),
        c("gguf/strings-at-limit", "gguf", lambda: many_strings(STRING_LIMIT), *strs_length),
        c("gguf/non-ascii-strings-at-limit", "gguf", lambda: many_strings(STRING_LIMIT, "é"), *strs_length),
        c("gguf/strings-filling-64-mib", "gguf", lambda: many_strings(fill(8)), "CONTAINER_COUNT",
          "metadata.test.strs"),
        c("gguf/non-ascii-text-64-mib", "gguf", lambda: long_strings(64, fill(64)), *strs_length),
        c("gguf/everything-at-limits", "gguf",
          lambda: everything(kv_room, tensor_room, STRING_LIMIT - GGUF_BASE_STRINGS), *unexpected,
          size=tensors_size(tensor_room) + 16 * STRING_LIMIT + 20 * KV_LIMIT),
        c("safetensors/tensors-at-limit", "safetensors", lambda: st_many_tensors(TENSOR_LIMIT), "TENSOR_UNEXPECTED",
          "tensors.~0"),
        c("safetensors/tensors-filling-64-mib", "safetensors", lambda: st_many_tensors(CAP // 64), "CONTAINER_HEADER",
          "header"),
        c("safetensors/metadata-keys-at-limit", "safetensors", lambda: st_many_metadata_keys(member_room),
          *unexpected),
        c("safetensors/metadata-keys-at-structure-limit", "safetensors", lambda: st_many_metadata_keys(st_room),
          "CONTAINER_HEADER", "header"),
        c("safetensors/metadata-keys-filling-64-mib", "safetensors", lambda: st_many_metadata_keys(CAP // 11),
          "CONTAINER_HEADER", "header"),
        c("safetensors/metadata-value-64-mib", "safetensors", lambda: st_long_metadata_value(CAP - 1024),
          "METADATA_UNEXPECTED", "metadata.x"),
        c("safetensors/nested-lists-at-limit", "safetensors", lambda: st_nested_lists(st_room - 1),
          "CONTAINER_METADATA", "metadata.x"),
        c("safetensors/nested-lists-filling-64-mib", "safetensors", lambda: st_nested_lists(CAP // 3),
          "CONTAINER_HEADER", "header"),
    ]
