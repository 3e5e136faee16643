"""Strict, header-only GGUF reader (versions 2 and 3, little-endian).

This is the security gate in front of expensive work, so no number in the file is trusted: every
length and count is bounded by the bytes that remain before it is used, nothing is allocated from
a count, nothing recurses on file structure, and every failure is one `CharterError` carrying a
`CONTAINER_*` diagnostic with the byte offset of the offending field. Tensor bytes are never read.

Policies decided here (later stages and contracts rely on them):

* Arrays of arrays are rejected (CONTAINER_ARRAY): no shipped model uses them, and they would make
  the size bound of an array recursive.
* Array values stay lazy: a `GGUFArray` keeps the element type, count, offset and the serialized
  elements exactly as stored (`raw`). Its canonical digest is `sha256(raw)`: the elements as
  stored, for string arrays each element's u64 length followed by its bytes. Strings inside
  arrays are still bounds-checked and UTF-8 validated during the parse.
* `general.alignment`, if present, must be a uint32 power of two in [1, 2**30]; 2**30 (1 GiB, the
  largest huge page) is far above any real layout and keeps padding arithmetic small. Default 32.
* Tensor names: 1..63 bytes of UTF-8, unique. ggml's GGML_MAX_NAME is 64 including the NUL and
  gguf.cpp rejects names with length >= 64.
* Tensor rank 1..4; every dim in [1, 2**63-1] and their product <= 2**63-1 (ggml's ne is int64);
  ne[0] a multiple of the type's block size; byte size <= 2**64-1.
* The header (through the tensor infos) may not exceed `max_header_bytes` (CONTAINER_HEADER):
  64 MiB by default, 36 times SmolLM2's 1.8 MB header with its 49k-token vocabulary and merges.
* The data section starts at the header's end rounded up to the alignment, except in a file
  that declares no tensors, which has none (Note [Tensor-less GGUF], `data_offset`).
* Counts are limited too (CONTAINER_COUNT, Note [Reader limits]): at most `max_kv_count` pairs
  (2**16), `max_tensor_count` tensor infos (2**17) and `max_string_elements` string elements in
  all arrays together (2**20). Parameters, like the header cap, should a real model need more.
* Not checked here, left to the layout stage that reads this model: tensor overlap, order, gaps,
  the content of padding and trailing bytes.

Note [Tensor-less GGUF]
~~~~~~~~~~~~~~~~~~~~~~~
A GGUF that declares no tensors (llama.cpp's vocab-only files) has no data section, and its
writers disagree on the padding before it: ggml's gguf.cpp (`gguf_write_out`) always pads the
header to the alignment, while gguf-py pads only in `GGUFWriter.write_tensors_to_file`, which
convert_hf_to_gguf.py's vocab-only export (`write_vocab`: header, KV data, close) never calls, so
such a file ends right after its last KV pair. Both loaders (gguf.cpp, `gguf.GGUFReader`) accept
either, since nothing is read at the data offset. charter's rule: with tensors the data section
starts at align_up(header end, alignment), as ggml's; with none, the data offset *is* the header
end, and whatever follows it (gguf.cpp's padding) is trailing bytes, governed by the contract's
`layout.trailing` (its default, `alignment`, allows exactly that padding) and, with
`layout.padding: zero`, checked to be zero by the payload stage. The reader, the C++ reader
(charter/gguf.hpp), the serializer, and hence freeze and the mutation battery, all take the data
offset from `data_offset` (or its C++ twin).

`read_gguf` maps the file and touches only header pages. A file truncated by another process
while it is being read can raise SIGBUS; a concurrent writer defeats any check anyway.

Note [Reader limits]
~~~~~~~~~~~~~~~~~~~~
A header of 64 MiB holds up to 4.8 million kv pairs, 1.7 million tensor infos or 8 million string
elements, and each costs the reader (and every stage after it) some work of its own: a file of
3 million one-byte pairs once took the Python engine 39 s and 1.8 GiB. The counts are therefore
limited far above any real model: GGUF files hold tens of kv pairs and up to a few thousand
tensors (10,000-tensor files must work: the tensor limit is 13 times that), and the largest
tokenizers hold about 200k-260k tokens and up to 450k-500k merges (2**20 string elements hold
both). A count past its limit is rejected with CONTAINER_COUNT, on the count itself, before a
record it counts is read: `header.tensor_count` and `header.kv_count` once both counts are
known to fit the file (those checks come first), a string array's count (field `metadata.<key>`,
offset the count) before its elements are walked. The C++ reader (native/include/charter/gguf.hpp)
has the same limits, in the same order.

The records are read by a fast path that handles every well-formed record without naming
fields; anything it does not accept outright (a bound, a bad byte, a duplicate, a limit) is read
again from the record's start by the checked path, which owns every diagnostic. So the two agree
by construction, and the fast path only needs to never accept what the checked path rejects.

A mutation battery's parses share what the fast paths accepted before (an `AcceptedStrings`, Note
[Accepted string arrays] and Note [Array marks] in charter/formats/accepted_strings.py); nothing
is consulted without the fast paths (FAST_PATHS).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import mmap
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from itertools import repeat
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from charter.diagnostics import CharterError, Code, Diagnostic
from charter.floatbits import f32_bits, f32_from_bits
from charter.formats.ggml_types import GGML_TYPES, REMOVED, GGMLType, codec_bytes, ggml_type
from charter.memo import BaseMemo, IdMemo
from charter.formats.records import gc_paused

if TYPE_CHECKING:  # a battery's parses share one (charter.formats.accepted_strings); a reader never imports it
    from charter.formats.accepted_strings import AcceptedStrings

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_ALIGNMENT = 2**30
MAX_NAME_BYTES = 63
MAX_DIMS = 4
MAX_HEADER_BYTES = 64 * 2**20
MAX_KV_COUNT = 2**16
MAX_TENSOR_COUNT = 2**17
MAX_STRING_ELEMENTS = 2**20
U64_MAX = 2**64 - 1
I64_MAX = 2**63 - 1


class GGUFValueType(IntEnum):
    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


_T = GGUFValueType
_SCALARS: dict[GGUFValueType, struct.Struct] = {
    _T.UINT8: struct.Struct("<B"),
    _T.INT8: struct.Struct("<b"),
    _T.UINT16: struct.Struct("<H"),
    _T.INT16: struct.Struct("<h"),
    _T.UINT32: struct.Struct("<I"),
    _T.INT32: struct.Struct("<i"),
    _T.FLOAT32: struct.Struct("<f"),
    _T.BOOL: struct.Struct("<B"),
    _T.UINT64: struct.Struct("<Q"),
    _T.INT64: struct.Struct("<q"),
    _T.FLOAT64: struct.Struct("<d"),
}
_U32 = _SCALARS[_T.UINT32]
_U64 = _SCALARS[_T.UINT64]
_MIN_ELEM = {t: s.size for t, s in _SCALARS.items()} | {_T.STRING: 8}
_MIN_KV = 8 + 1 + 4 + 1  # key length + 1-byte key + type tag + smallest value
_MIN_TENSOR_INFO = (
    8 + 1 + 4 + 8 + 4 + 8
)  # name length + 1-byte name + n_dims + 1 dim + type + offset
_VTYPES = tuple(GGUFValueType)  # by tag, without calling the enum
_BOOL, _STRING, _ARRAY, _FLOAT32 = int(_T.BOOL), int(_T.STRING), int(_T.ARRAY), int(_T.FLOAT32)  # plain ints: the
# fast paths compare tags
_SCALAR_BY_TAG = {int(t): s for t, s in _SCALARS.items()}
_ARRAY_HEAD = struct.Struct("<IQ")  # element type, count
_HIGH_BYTES = 0x8080808080808080  # a length prefix with a byte >= 0x80 is not ASCII
MARK = 1024  # a walk of a string array records where every MARK-th element starts (Note [Array marks])
_DIMS_TAIL = {n: struct.Struct(f"<{n}QIQ") for n in range(1, MAX_DIMS + 1)}  # dims, ggml type, offset
_TAIL_READERS = {n: (s.unpack_from, s.size) for n, s in _DIMS_TAIL.items()}  # by rank, for the fast path
_UTF8_CHUNK = 1 << 20
# The fast path's view of each ggml type: (type, block size, block bytes, row header), the
# arguments of codec_bytes (one lookup, no method call); and a name's end at most this far past
# its length prefix.
_CODEC_SIZES = {i: (t, t.block_size, t.block_bytes, t.row_header) for i, t in GGML_TYPES.items()}
_MAX_NAME_END = 8 + MAX_NAME_BYTES
FAST_PATHS = True  # False: every record through the checked path (tests compare the two)
_new = tuple.__new__  # builds a named tuple from its fields in half the time of calling the class


def _fail(code: Code, field: str, message: str, offset: int, expected=None, actual=None):
    expected = None if expected is None else str(expected)
    actual = None if actual is None else str(actual)
    raise CharterError([Diagnostic(code, field, message, expected, actual, offset=offset)])


@dataclass(frozen=True)
class GGUFArray:
    """An array value kept as its serialized elements: cheap to hold and hash, decoded on demand."""

    elem_type: GGUFValueType
    count: int
    offset: int  # the element-type tag; the u64 count follows at +4, the elements at +12
    raw: bytes = field(repr=False)
    # where every MARK-th string element starts in `raw`, if a walk recorded it (Note [Array marks])
    marks: tuple[int, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def count_offset(self) -> int:
        return self.offset + 4

    @property
    def data_offset(self) -> int:
        return self.offset + 12

    def __len__(self) -> int:
        return self.count

    def sha256(self) -> str:
        """The canonical digest of a GGUF array: sha256 of its elements exactly as stored. Kept per
        bytes object: parses that share an accepted string array (Note [Accepted string arrays])
        share its bytes, and a battery checks a vocabulary's digest once per mutant."""
        raw = self.raw  # bytes are immutable: their digest cannot change while the memo keeps them
        return _bytes_digest(raw) if type(raw) is bytes else _sha256_hex(raw)

    def items(self) -> list:
        """Decode the elements (validated at parse time, so this cannot fail on parsed arrays)."""
        raw, t = self.raw, self.elem_type
        if t is _T.STRING:
            out, pos = [], 0
            for _ in range(self.count):
                (n,) = _U64.unpack_from(raw, pos)
                out.append(str(raw[pos + 8 : pos + 8 + n], "utf-8"))
                pos += 8 + n
            return out
        if t is _T.FLOAT32:  # NaNs keep their exact bits (Note [Float bits])
            return [f32_from_bits(b) for b in struct.unpack(f"<{self.count}I", raw)]
        values = list(struct.unpack(f"<{self.count}{_SCALARS[t].format[1:]}", raw))
        return [v != 0 for v in values] if t is _T.BOOL else values

    @classmethod
    def from_items(cls, elem_type: GGUFValueType, items: list, offset: int = 0) -> GGUFArray:
        """Build an array value from Python items (for writers and mutation tools)."""
        elem_type = GGUFValueType(elem_type)
        if elem_type is _T.ARRAY:
            raise ValueError("arrays of arrays are not supported")
        raw = b"".join(_encode_scalar(elem_type, v) for v in items)
        return cls(elem_type, len(items), offset, raw)

    def spliced(self, start: int, stop: int, items: list, at: dict[int, int] | None = None) -> GGUFArray:
        """`from_items(elem_type, self.items()[:start] + items + self.items()[stop:])`, the elements
        kept as their bytes: a parsed array's elements encode back to exactly those (the reader
        accepts only canonical bools and valid UTF-8; floats keep their bits), and a mutation battery
        edits one element of a 151,936-token vocabulary per mutant. `at`: self.offsets() of `start`
        and `stop`, if the caller holds them."""
        at = at if at is not None else self.offsets((start, stop))
        raw = self.raw[:at[start]] + b"".join(_encode_scalar(self.elem_type, v) for v in items) + self.raw[at[stop]:]
        return GGUFArray(self.elem_type, self.count - (stop - start) + len(items), 0, raw)

    def integers(self):
        """An integer array's elements as a numpy array, read in place (a mutation battery's element
        type mutants of a 151,936-entry token type array: converted in C, not one Python int each).
        numpy is imported here only: the reader never asks."""
        import numpy as np

        return np.frombuffer(self.raw, np.dtype(_SCALARS[self.elem_type].format))

    def as_type(self, elem_type: GGUFValueType) -> GGUFArray:
        """The same integers as an array of `elem_type`, an integer type that holds each of them."""
        import numpy as np

        raw = self.integers().astype(np.dtype(_SCALARS[elem_type].format)).tobytes()
        return GGUFArray(elem_type, self.count, 0, raw)

    def offsets(self, indices: Iterable[int]) -> dict[int, int]:
        """Where each element of `indices` starts in `raw` (`count`: where the last ends); strings in
        one walk of their length prefixes to the last asked for, without decoding any (a mutation
        battery's array mutants need three places of a 151,936-token vocabulary)."""
        wanted = sorted(set(indices))
        if self.elem_type is not _T.STRING:
            size = _SCALARS[self.elem_type].size
            return {i: min(i, self.count) * size for i in wanted}
        out, pos, walked, raw, marks = {}, 0, 0, self.raw, self.marks or (0,)
        for j in wanted:
            stop = min(j, self.count)
            mark = min(stop // MARK, len(marks) - 1)
            if mark * MARK > walked:  # the walk resumes at the last mark before `stop`
                pos, walked = marks[mark], mark * MARK
            for _ in repeat(None, stop - walked):
                pos += 8 + _U64.unpack_from(raw, pos)[0]
            out[j], walked = pos, stop
        return out

    def element(self, pos: int):
        """The element that starts at `pos` in `raw` (an offset of offsets()), decoded as items() does."""
        t = self.elem_type
        if t is _T.STRING:
            (n,) = _U64.unpack_from(self.raw, pos)
            return str(self.raw[pos + 8 : pos + 8 + n], "utf-8")
        if t is _T.FLOAT32:  # a NaN keeps its exact bits (Note [Float bits])
            return f32_from_bits(_U32.unpack_from(self.raw, pos)[0])
        (value,) = _SCALARS[t].unpack_from(self.raw, pos)
        return value != 0 if t is _T.BOOL else value


def _sha256_hex(raw) -> str:
    return hashlib.sha256(raw).hexdigest()


_bytes_digest = IdMemo(_sha256_hex, bound=64)  # id(array bytes) -> their sha256 (Note [Identity memo])


class KV(NamedTuple):
    """One metadata pair; offsets point into the file so a tool can patch one field in place.
    (Records are named tuples, not dataclasses: a header holds up to 2**16 of them and 2**17
    tensor infos, and a tuple is built in a third of the time; `_replace` edits one.)"""

    key: str
    type: GGUFValueType
    value: int | float | bool | str | GGUFArray
    offset: int  # start of the pair: the key's u64 length
    value_offset: int  # first byte of the value (string: its u64 length; array: its element tag)
    end: int  # first byte after the pair

    @property
    def type_offset(self) -> int:
        return self.value_offset - 4


class TensorInfo(NamedTuple):
    """One tensor info record; `dims` as stored (ne[0], the row width, first)."""

    name: str
    dims: tuple[int, ...]
    ggml_type: GGMLType
    offset: int  # relative to the data section, as stored
    nbytes: int
    info_offset: int  # start of the record: the name's u64 length
    data_start: int  # absolute offset of the data section (the header's data_offset)

    @property
    def n_dims_offset(self) -> int:
        return self.info_offset + 8 + len(self.name.encode("utf-8"))

    @property
    def dims_offset(self) -> int:
        return self.n_dims_offset + 4

    @property
    def type_offset(self) -> int:
        return self.dims_offset + 8 * len(self.dims)

    @property
    def offset_offset(self) -> int:
        return self.type_offset + 4

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def start(self) -> int:
        return self.data_start + self.offset

    @property
    def end(self) -> int:
        return self.start + self.nbytes


@dataclass(frozen=True)
class GGUFHeader:
    """Everything before the data section, with the byte offset of every field."""

    version: int
    tensor_count: int
    kv_count: int
    alignment: int
    kvs: dict[str, KV]  # file order
    tensors: list[TensorInfo]  # file order
    tensor_infos_offset: int  # end of the kv pairs
    header_end: int  # end of the tensor infos
    data_offset: int  # align_up(header_end, alignment)
    file_size: int

    MAGIC_OFFSET: ClassVar[int] = 0
    VERSION_OFFSET: ClassVar[int] = 4
    TENSOR_COUNT_OFFSET: ClassVar[int] = 8
    KV_COUNT_OFFSET: ClassVar[int] = 16
    KVS_OFFSET: ClassVar[int] = 24

    def value(self, key: str, default=None):
        kv = self.kvs.get(key)
        return default if kv is None else kv.value


class _Cursor:
    """Bounds-checked reads: `end` is the first byte we may not read, whatever the reason."""

    __slots__ = ("buf", "pos", "file_size", "cap", "end", "strings_left", "accepted")

    def __init__(self, buf, file_size: int, cap: int, accepted: AcceptedStrings | None = None):
        self.buf, self.pos, self.file_size, self.cap = buf, 0, file_size, cap
        self.end = min(len(buf), file_size, cap)
        self.strings_left = MAX_STRING_ELEMENTS  # string elements the limit still allows
        self.accepted = accepted  # string arrays read before, whose bytes need no second walk

    def short(self, n: int, field: str, what: str, code: Code = Code.CONTAINER_TRUNCATED):
        """Raise for a read of `n` bytes at `pos` that does not fit; `code` if the file is short."""
        need, pos = self.pos + n, self.pos
        if need > self.file_size:
            left = max(self.file_size - pos, 0)
            _fail(
                code,
                field,
                f"{what} needs {n} bytes at offset {pos}, only {left} remain",
                pos,
                f"<= {left} bytes",
                f"{n} bytes",
            )
        if need > self.cap:
            _fail(
                Code.CONTAINER_HEADER,
                field,
                f"{what} would extend the header past the {self.cap}-byte limit",
                pos,
                f"header <= {self.cap} bytes",
                f"ends at {need}",
            )
        _fail(
            Code.CONTAINER_TRUNCATED,
            field,
            f"{what} lies past the {len(self.buf)} bytes of the file that were provided",
            pos,
        )

    def take(self, n: int, field: str, what: str) -> int:
        start = self.pos
        if start + n > self.end:
            self.short(n, field, what)
        self.pos = start + n
        return start

    def u32(self, field: str, what: str) -> int:
        return _U32.unpack_from(self.buf, self.take(4, field, what))[0]

    def u64(self, field: str, what: str) -> int:
        return _U64.unpack_from(self.buf, self.take(8, field, what))[0]

    def string(self, field: str, what: str, code: Code) -> tuple[str, int]:
        """A gguf string; `code` for bad UTF-8. Returns (text, byte length)."""
        n = self.u64(field, f"{what} length")
        start = self.take(n, field, what)
        data = self.buf[start : start + n]
        try:
            return str(data, "utf-8"), n
        except UnicodeDecodeError as e:
            _fail(code, field, f"{what} is not valid UTF-8 ({e.reason})", start + e.start)


def read_gguf(path: str | os.PathLike, *, max_header_bytes: int = MAX_HEADER_BYTES, **limits) -> GGUFHeader:
    """Parse the header of the GGUF file at `path`, touching only the header's pages. `limits`:
    the counts of `parse_gguf`."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return parse_gguf(b"", 0, max_header_bytes=max_header_bytes, **limits)
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        _fail(Code.CONTAINER_UNREADABLE, "file", f"cannot read {os.fspath(path)!r}: {e}", 0)
    except ValueError as e:  # mmap of a non-regular file
        _fail(Code.CONTAINER_UNREADABLE, "file", f"cannot map {os.fspath(path)!r}: {e}", 0)
    try:
        return parse_gguf(mm, size, max_header_bytes=max_header_bytes, **limits)
    finally:
        with contextlib.suppress(BufferError):  # a live traceback holds a view; freed later
            mm.close()


@gc_paused()
def parse_gguf(buf, file_size: int, *, max_header_bytes: int = MAX_HEADER_BYTES, max_kv_count: int = MAX_KV_COUNT,
               max_tensor_count: int = MAX_TENSOR_COUNT,
               max_string_elements: int = MAX_STRING_ELEMENTS,
               accepted: AcceptedStrings | None = None) -> GGUFHeader:
    """Parse the GGUF header held in `buf` (bytes-like) of a file of `file_size` bytes, within the
    limits of Note [Reader limits]; `accepted` lets many parses of near-identical headers share
    their string arrays (Note [Accepted string arrays])."""
    cur = _Cursor(buf, max(int(file_size), 0), max_header_bytes, accepted)
    cur.strings_left = max_string_elements
    _read_magic(cur)
    version = _read_version(cur)
    tensor_count = cur.u64("header.tensor_count", "tensor count")
    kv_count = cur.u64("header.kv_count", "kv count")
    left = cur.file_size - cur.pos
    if tensor_count * _MIN_TENSOR_INFO > left:
        _fail(
            Code.CONTAINER_COUNT,
            "header.tensor_count",
            f"{tensor_count} tensor infos cannot fit in the {left} bytes that remain "
            f"(each takes at least {_MIN_TENSOR_INFO})",
            8,
            f"<= {left // _MIN_TENSOR_INFO}",
            tensor_count,
        )
    left -= tensor_count * _MIN_TENSOR_INFO
    if kv_count * _MIN_KV > left:
        _fail(
            Code.CONTAINER_COUNT,
            "header.kv_count",
            f"{kv_count} kv pairs cannot fit in the {left} bytes left after the tensor infos "
            f"(each takes at least {_MIN_KV})",
            16,
            f"<= {left // _MIN_KV}",
            kv_count,
        )
    _within_limit(tensor_count, max_tensor_count, "header.tensor_count", "tensor infos", 8)
    _within_limit(kv_count, max_kv_count, "header.kv_count", "kv pairs", 16)
    kvs = _read_kvs(cur, kv_count)
    alignment = _alignment(kvs)
    infos_offset = cur.pos
    raw_infos = _read_tensor_infos(cur, tensor_count)
    header_end = cur.pos
    start = data_offset(header_end, alignment, tensor_count)
    tensors = _finish_tensors(raw_infos, cur.file_size, alignment, start, cur.accepted if FAST_PATHS else None)
    return GGUFHeader(
        version,
        tensor_count,
        kv_count,
        alignment,
        kvs,
        tensors,
        infos_offset,
        header_end,
        start,
        cur.file_size,
    )


def data_offset(header_end: int, alignment: int, tensor_count: int) -> int:
    """Where the data section starts: the header end rounded up to the alignment, or, in a file
    that declares no tensors, the header end itself (Note [Tensor-less GGUF])."""
    if tensor_count == 0:
        return header_end
    return -(-header_end // alignment) * alignment


def _within_limit(count: int, limit: int, field: str, what: str, offset: int) -> None:
    if count > limit:
        _fail(
            Code.CONTAINER_COUNT,
            field,
            f"{count} {what} are more than the reader's limit of {limit}",
            offset,
            f"<= {limit}",
            count,
        )


def _read_magic(cur: _Cursor) -> None:
    head = bytes(cur.buf[: min(4, cur.end)])
    if head == MAGIC:
        cur.pos = 4
        return
    if len(head) < 4 and MAGIC.startswith(head):
        cur.short(4, "header.magic", "magic")
    _fail(Code.CONTAINER_MAGIC, "header.magic", "not a GGUF file", 0, MAGIC.hex(), head.hex())


def _read_version(cur: _Cursor) -> int:
    version = cur.u32("header.version", "version")
    if version in SUPPORTED_VERSIONS:
        return version
    swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
    if version & 0xFFFF == 0 and swapped in (1, 2, 3):
        _fail(
            Code.CONTAINER_VERSION,
            "header.version",
            f"version {version:#010x} is version {swapped} byte-swapped: big-endian GGUF is "
            "not supported",
            4,
            "2 or 3 (little-endian)",
            f"{version:#010x}",
        )
    _fail(
        Code.CONTAINER_VERSION,
        "header.version",
        f"unsupported GGUF version {version}",
        4,
        "2 or 3",
        version,
    )


# --- kv pairs ------------------------------------------------------------------------------------


def _read_kvs(cur: _Cursor, kv_count: int) -> dict[str, KV]:
    kvs: dict[str, KV] = {}
    fast = FAST_PATHS
    for i in range(kv_count):
        if not (fast and _fast_kv(cur, kvs)):
            _read_kv(cur, i, kvs)
    return kvs


def _fast_kv(cur: _Cursor, kvs: dict[str, KV]) -> bool:
    """Read the pair at `cur.pos` into `kvs` if it is well-formed (Note [Reader limits]); else
    leave everything as it was and return False, for `_read_kv` to say why."""
    buf, end, start = cur.buf, cur.end, cur.pos
    if start + 8 > end:
        return False
    key_end = start + 8 + _U64.unpack_from(buf, start)[0]
    if key_end == start + 8 or key_end + 4 > end:
        return False
    try:
        key = str(buf[start + 8 : key_end], "utf-8")
    except UnicodeDecodeError:
        return False
    if key in kvs:
        return False
    tag = _U32.unpack_from(buf, key_end)[0]
    at = key_end + 4
    if tag == _STRING:
        if at + 8 > end:
            return False
        stop = at + 8 + _U64.unpack_from(buf, at)[0]
        if stop > end:
            return False
        try:
            value = str(buf[at + 8 : stop], "utf-8")
        except UnicodeDecodeError:
            return False
    elif tag == _ARRAY:
        value = _fast_array(cur, at)
        if value is None:
            return False
        stop = at + 12 + len(value.raw)
    elif tag < len(_VTYPES):
        s = _SCALAR_BY_TAG[tag]
        stop = at + s.size
        if stop > end:
            return False
        value = s.unpack_from(buf, at)[0]
        if tag == _BOOL:
            if value > 1:
                return False
            value = value == 1
        elif tag == _FLOAT32:  # a NaN keeps its exact bits (Note [Float bits])
            value = f32_from_bits(_U32.unpack_from(buf, at)[0])
    else:
        return False
    kvs[key] = _new(KV, (key, _VTYPES[tag], value, start, at, stop))
    cur.pos = stop
    return True


def _fast_array(cur: _Cursor, at: int) -> GGUFArray | None:
    """The array value at `at` if it is well-formed and within the string limit, else None."""
    buf, end = cur.buf, cur.end
    if at + 12 > end:
        return None
    tag, count = _ARRAY_HEAD.unpack_from(buf, at)
    if tag >= len(_VTYPES) or tag == _ARRAY:
        return None
    start = at + 12
    accepted, marks = cur.accepted, None
    if tag == _STRING:
        if count > cur.strings_left or count * 8 > end - start:
            return None
        found = accepted.find(buf, start, (tag, count), end) if accepted is not None else None
        if found is None:
            walked = accepted.spliced(buf, start, count, end) if accepted is not None else None
            if walked is None:
                marks = [] if accepted is not None else None
                whole = _walk_strings(buf, start, count, end, marks)
                walked = None if whole is None else (whole[0], start, whole[0], whole[1])
            if walked is None:
                return None
            stop, checked, checked_end, splits = walked
            raw = bytes(buf[start:stop])
            region = raw if checked == start and checked_end == stop else raw[checked - start:checked_end - start]
            if _utf8_error(region, checked, splits) is not None:
                return None
            if accepted is not None:
                accepted.add((tag, count), raw, start, marks)
        else:
            raw, marks = found
        cur.strings_left -= count
    else:
        stop = start + count * _SCALAR_BY_TAG[tag].size
        if stop > end:
            return None
        found = accepted.find(buf, start, (tag, count), end) if accepted is not None else None
        raw = found[0] if found is not None else bytes(buf[start:stop])
        if found is None:
            if tag == _BOOL and raw.translate(None, b"\x00\x01"):
                return None
            if accepted is not None:
                accepted.add((tag, count), raw, start)
    return GGUFArray(_VTYPES[tag], count, at, raw, tuple(marks) if marks else None)


def _read_kv(cur: _Cursor, i: int, kvs: dict[str, KV]) -> None:
    """The checked read of pair `i`: every field named, the first fault raised."""
    start = cur.pos
    key, n = cur.string(f"kv[{i}].key", "key", Code.CONTAINER_KEY)
    if n == 0:
        _fail(Code.CONTAINER_KEY, f"kv[{i}].key", "empty key", start)
    if key in kvs:
        _fail(
            Code.CONTAINER_DUPLICATE_KEY,
            f"kv[{i}].key",
            f"key {key!r} already defined at offset {kvs[key].offset}",
            start,
        )
    field = f"metadata.{key}"
    type_at = cur.pos
    vtype = _value_type(cur.u32(field, "value type"), field, type_at)
    value_at = cur.pos
    array = vtype is _T.ARRAY
    value = _read_array(cur, field) if array else _read_scalar(cur, vtype, field)
    kvs[key] = KV(key, vtype, value, start, value_at, cur.pos)


def _value_type(tag: int, field: str, offset: int) -> GGUFValueType:
    if tag < len(_VTYPES):
        return _VTYPES[tag]
    _fail(Code.CONTAINER_VALUE_TYPE, field, f"unknown value type {tag}", offset, "0..12", tag)


def _read_scalar(cur: _Cursor, vtype: GGUFValueType, field: str):
    if vtype is _T.STRING:
        return cur.string(field, "string value", Code.CONTAINER_STRING)[0]
    s = _SCALARS[vtype]
    at = cur.take(s.size, field, f"{vtype.name.lower()} value")
    (value,) = s.unpack_from(cur.buf, at)
    if vtype is _T.FLOAT32:  # a NaN keeps its exact bits (Note [Float bits])
        return f32_from_bits(_U32.unpack_from(cur.buf, at)[0])
    if vtype is _T.BOOL:
        if value > 1:
            _fail(
                Code.CONTAINER_BOOL,
                field,
                f"bool byte must be 0 or 1, got {value}",
                at,
                "0 or 1",
                value,
            )
        return value == 1
    return value


def _read_array(cur: _Cursor, field: str) -> GGUFArray:
    at = cur.pos
    etype = _value_type(cur.u32(field, "array element type"), field, at)
    if etype is _T.ARRAY:
        _fail(
            Code.CONTAINER_ARRAY,
            field,
            "arrays of arrays are not supported",
            at,
            "a scalar or string element type",
            "array",
        )
    count = cur.u64(field, "array count")
    size = _MIN_ELEM[etype]
    if count * size > cur.end - cur.pos:
        cur.short(
            count * size,
            field,
            f"{count} {etype.name.lower()} elements (at least {size} bytes each)",
            Code.CONTAINER_COUNT,
        )
    if etype is _T.STRING and count > cur.strings_left:
        _fail(
            Code.CONTAINER_COUNT,
            field,
            f"{count} string elements are more than the {cur.strings_left} left of the reader's "
            "limit on string elements in all arrays",
            at + 4,
            f"<= {cur.strings_left}",
            count,
        )
    start = cur.pos
    if etype is _T.STRING:
        walked = _walk_strings(cur.buf, start, count, cur.end)
        if walked is None:
            _string_overrun(cur, start, count, field)
        stop, splits = walked
    else:
        stop = start + count * size
    raw = bytes(cur.buf[start:stop])
    cur.pos = stop
    if etype is _T.STRING:
        bad = _utf8_error(raw, start, splits)
        if bad is not None:
            j = _element_at(raw, bad[0] - start)
            _fail(Code.CONTAINER_STRING, f"{field}[{j}]", f"string element is not valid UTF-8 ({bad[1]})", bad[0])
        cur.strings_left -= count
    if etype is _T.BOOL:
        bad = raw.translate(None, b"\x00\x01")
        if bad:
            j = next(k for k, b in enumerate(raw) if b > 1)
            _fail(
                Code.CONTAINER_BOOL,
                f"{field}[{j}]",
                f"bool byte must be 0 or 1, got {raw[j]}",
                start + j,
                "0 or 1",
                raw[j],
            )
    return GGUFArray(etype, count, at, raw)


def _walk_strings(buf, start: int, count: int, end: int, marks: list[int] | None = None
                  ) -> tuple[int, list[int]] | None:
    """Bounds-check `count` length-prefixed strings at `start`: (end of the last, offsets of the
    length prefixes holding a byte >= 0x80), or None if one overruns `end`. No list of every
    element: a header's 2**20 of them would cost more memory than the header; a prefix with a high
    byte stands for a string of at least 128 bytes, so there are at most 1/136 as many offsets as
    the header has bytes. One walk (a prefix past `end` fails the read of the view cut at `end`).
    `marks`, if given, gets where every MARK-th element starts, from `start` (Note [Array marks])."""
    unpack, p, high, splits = _U64.unpack_from, start, _HIGH_BYTES, []
    with memoryview(buf) as whole, whole[:end] as view:
        try:
            for block in range(0, count, MARK):
                if marks is not None:
                    marks.append(p - start)
                for _ in repeat(None, min(MARK, count - block)):
                    (n,) = unpack(view, p)
                    if n & high:
                        splits.append(p)
                    p += 8 + n
        except (struct.error, OverflowError):  # a length prefix starts past end - 8
            return None
    return (p, splits) if p <= end else None


def _string_overrun(cur: _Cursor, start: int, count: int, field: str) -> None:
    """Slow path: walk again, one checked read at a time, to name the element that overruns."""
    cur.pos = start
    for j in range(count):
        n = cur.u64(f"{field}[{j}]", "string element length")
        cur.take(n, f"{field}[{j}]", "string element")
    _fail(Code.CONTAINER_TRUNCATED, field, "string elements overrun the header", start)


def _utf8_error(raw: bytes, base: int, splits: list[int]) -> tuple[int, str] | None:
    """(file offset, reason) of the first byte that makes a string element of `raw` (the elements
    with their length prefixes, from file offset `base`) invalid UTF-8, or None. A prefix whose
    bytes are all ASCII is decoded with the text: an ASCII byte can neither continue nor complete
    a sequence, so the region is valid iff every element is, and the first error is the same. The
    other prefixes (`splits`) are skipped. Decoded in chunks of about 1 MiB, cut where no sequence
    can span the cut."""
    if raw.isascii():
        return None
    view = memoryview(raw)
    a = 0
    for p in [*(s - base for s in splits), len(raw)]:
        while a < p:
            c = _safe_cut(view, a, p)
            try:
                str(view[a:c], "utf-8")
            except UnicodeDecodeError as e:
                return base + a + e.start, e.reason
            a = c
        a = p + 8
    return None


def _safe_cut(view: memoryview, a: int, b: int) -> int:
    """A cut in (a, b] at most _UTF8_CHUNK bytes after `a` that ends no sequence early: `b`, or a
    byte that is ASCII or a lead byte. If the 4 bytes before the cut are all continuation bytes,
    the text is invalid before it (a sequence has at most 3), and the cut stands."""
    c = a + _UTF8_CHUNK
    if c >= b:
        return b
    for k in range(c, c - 4, -1):
        if not 0x80 <= view[k] < 0xC0:
            return k
    return c


def _element_at(raw: bytes, rel: int) -> int:
    """Index of the string element of `raw` that holds byte `rel` (a diagnostic's slow path)."""
    p = j = 0
    while True:
        p += 8 + _U64.unpack_from(raw, p)[0]
        if rel < p:
            return j
        j += 1


def _alignment(kvs: dict[str, KV]) -> int:
    kv = kvs.get("general.alignment")
    if kv is None:
        return DEFAULT_ALIGNMENT
    field = "metadata.general.alignment"
    if kv.type is not _T.UINT32:
        _fail(
            Code.CONTAINER_ALIGNMENT,
            field,
            f"alignment must be a uint32, got {kv.type.name}",
            kv.type_offset,
            "uint32",
            kv.type.name.lower(),
        )
    a = kv.value
    if a == 0 or a & (a - 1) or a > MAX_ALIGNMENT:
        _fail(
            Code.CONTAINER_ALIGNMENT,
            field,
            f"alignment must be a power of two in [1, {MAX_ALIGNMENT}], got {a}",
            kv.value_offset,
            f"power of two <= {MAX_ALIGNMENT}",
            a,
        )
    return a


# --- tensor infos --------------------------------------------------------------------------------


def _read_tensor_infos(cur: _Cursor, tensor_count: int) -> list[tuple]:
    """Each record's own fields, as (name, dims, type, offset, nbytes, start, offset_at); offsets
    wait until the data start is known. The loop is the fast path of Note [Reader limits]: a
    record it does not accept outright is read again by the checked `_read_tensor_info`."""
    buf, end, pos = cur.buf, cur.end, cur.pos
    fast = FAST_PATHS
    accepted = cur.accepted if fast else None
    start = pos
    out: list[tuple] = []
    seen: dict[str, int] = {}
    if accepted is not None:  # Note [Accepted string arrays]: the loop would accept these records again
        out, pos, seen = accepted.table(buf, pos, tensor_count, end)
        if len(out) == tensor_count:
            cur.pos = pos
            return out
    u64, u32, tails, codecs, prod = _U64.unpack_from, _U32.unpack_from, _TAIL_READERS, _CODEC_SIZES, math.prod
    append = out.append
    checked = False
    tries = _RESYNCS
    for i in range(len(out), tensor_count):
        read = False
        if fast and pos + 8 <= end:
            rank_at = pos + 8 + u64(buf, pos)[0]
            tail = tails.get(u32(buf, rank_at)[0]) if pos + 8 < rank_at <= end - 4 and rank_at - pos <= _MAX_NAME_END else None
            if tail is not None and rank_at + 4 + tail[1] <= end:
                try:
                    name = str(buf[pos + 8 : rank_at], "utf-8")
                except UnicodeDecodeError:
                    name = None
                fields = tail[0](buf, rank_at + 4)
                dims, codec = fields[:-2], codecs.get(fields[-2])
                n_elements = prod(dims)
                if (name is not None and codec is not None and n_elements and n_elements <= I64_MAX
                        and not dims[0] % codec[1] and name not in seen):
                    gtype, block, block_bytes, row_header = codec
                    nbytes = codec_bytes(n_elements, dims[0], block, block_bytes, row_header)
                    if nbytes <= U64_MAX:
                        seen[name] = pos
                        stop = rank_at + 4 + tail[1]
                        append((name, dims, gtype, fields[-1], nbytes, pos, stop - 8))
                        pos = stop
                        read = True
        if not read:
            cur.pos = pos
            append(_read_tensor_info(cur, i, seen))
            pos = cur.pos
            checked = True
        rest = accepted.rest(buf, pos, tensor_count, i + 1, end, seen) if accepted is not None and tries > 0 else None
        tries -= 1
        if rest is not None:  # the records after a changed one, as accepted before (Note [Accepted string arrays])
            out.extend(rest[0])
            pos = rest[1]
            break
    if accepted is not None and not checked:
        accepted.add_table(buf, start, out, pos)
    cur.pos = pos
    return out


_RESYNCS = 4  # records after which the loop looks for the rest of an accepted table (one memcmp each)


def _read_tensor_info(cur: _Cursor, i: int, seen: dict[str, int]) -> tuple:
    """The checked read of tensor info `i`: every field named, the first fault raised."""
    start = cur.pos
    name, n = cur.string(f"tensors[{i}].name", "tensor name", Code.CONTAINER_TENSOR_NAME)
    if not 0 < n <= MAX_NAME_BYTES:
        _fail(
            Code.CONTAINER_TENSOR_NAME,
            f"tensors[{i}].name",
            f"tensor name must be 1..{MAX_NAME_BYTES} bytes, got {n}",
            start,
            f"1..{MAX_NAME_BYTES} bytes",
            n,
        )
    if name in seen:
        _fail(
            Code.CONTAINER_TENSOR_NAME,
            f"tensors[{i}].name",
            f"duplicate tensor name {name!r} (first at offset {seen[name]})",
            start,
        )
    seen[name] = start
    field = f"tensors.{name}"
    rank_at = cur.pos
    n_dims = cur.u32(f"{field}.n_dims", "n_dims")
    if not 1 <= n_dims <= MAX_DIMS:
        _fail(
            Code.CONTAINER_TENSOR_RANK,
            f"{field}.n_dims",
            f"rank must be 1..{MAX_DIMS}, got {n_dims}",
            rank_at,
            f"1..{MAX_DIMS}",
            n_dims,
        )
    dims = []
    n_elements = 1
    for k in range(n_dims):
        at = cur.pos
        d = cur.u64(f"{field}.dims", f"dim {k}")
        if not 1 <= d <= I64_MAX:
            _fail(
                Code.CONTAINER_TENSOR_DIM,
                f"{field}.dims",
                f"dim {k} must be in [1, 2**63-1], got {d}",
                at,
                "1..2**63-1",
                d,
            )
        dims.append(d)
        n_elements *= d
        if n_elements > I64_MAX:
            _fail(
                Code.CONTAINER_OVERFLOW,
                f"{field}.dims",
                f"element count of dims {dims} exceeds 2**63-1",
                at,
                "<= 2**63-1",
                n_elements,
            )
    type_at = cur.pos
    type_id = cur.u32(f"{field}.type", "ggml type")
    gtype = _tensor_type(type_id, f"{field}.type", type_at)
    if dims[0] % gtype.block_size:
        _fail(
            Code.CONTAINER_TENSOR_BLOCK,
            f"{field}.dims",
            f"ne[0]={dims[0]} is not a multiple of {gtype.name}'s block size "
            f"{gtype.block_size}",
            rank_at + 4,
            f"multiple of {gtype.block_size}",
            dims[0],
        )
    nbytes = gtype.nbytes(n_elements, dims[0])
    if nbytes > U64_MAX:
        _fail(
            Code.CONTAINER_OVERFLOW,
            f"{field}.dims",
            f"byte size {nbytes} exceeds 2**64-1",
            rank_at + 4,
            "<= 2**64-1",
            nbytes,
        )
    off_at = cur.pos
    offset = cur.u64(f"{field}.offset", "data offset")
    return name, tuple(dims), gtype, offset, nbytes, start, off_at


def _tensor_type(type_id: int, field: str, at: int) -> GGMLType:
    gtype = ggml_type(type_id)
    if gtype is not None:
        return gtype
    why = (
        f"removed ggml type {type_id} ({REMOVED[type_id]})"
        if type_id in REMOVED
        else (f"unknown ggml type {type_id}")
    )
    _fail(Code.CONTAINER_TENSOR_TYPE, field, why, at, "a known ggml type", type_id)


def _finish_tensors(raw_infos: list[tuple], file_size: int, alignment: int, data_start: int,
                    accepted: AcceptedStrings | None = None) -> list[TensorInfo]:
    """Each record's offset, now that the data section's start is known: aligned, and the
    extent inside the file, checked in record order.

    Note [Finished records]
    ~~~~~~~~~~~~~~~~~~~~~~~
    A battery parses thousands of headers that differ from the conforming one in a record or two,
    and the fast path hands back the very record tuples it read before for every record that did
    not move (Note [Accepted string arrays]). Finishing a record is a function of the record and
    of the file size, alignment and data start alone, so with `accepted`, under the same three, a
    record of the first table finished (the conforming one, in a battery) is that table's
    TensorInfo wherever a later table holds the very record at the same position
    (charter.memo.BaseMemo); the others are finished in record order, so the first record that
    fails is still the one reported (the reused ones passed)."""
    finish = functools.partial(_finish_records, file_size, alignment, data_start)
    if accepted is not None:
        return accepted.memo((file_size, alignment, data_start), lambda: BaseMemo(finish)).map(raw_infos)
    return finish(raw_infos)


def _finish_records(file_size: int, alignment: int, data_start: int, raw_infos: list[tuple]) -> list[TensorInfo]:
    """_finish_tensors' records, each finished."""
    out = []
    for name, dims, gtype, offset, nbytes, start, off_at in raw_infos:
        if offset % alignment or data_start + offset + nbytes > file_size:
            _finish_tensor(file_size, alignment, data_start, name, offset, nbytes, off_at)
        out.append(_new(TensorInfo, (name, dims, gtype, offset, nbytes, start, data_start)))
    return out


def _finish_tensor(file_size, alignment, data_start, name, offset, nbytes, off_at) -> None:
    """Raise the diagnostic of a misplaced tensor."""
    field = f"tensors.{name}.offset"
    if offset % alignment:
        _fail(
            Code.CONTAINER_OFFSET,
            field,
            f"offset {offset} is not a multiple of the alignment {alignment}",
            off_at,
            f"multiple of {alignment}",
            offset,
        )
    end = data_start + offset + nbytes
    _fail(
        Code.CONTAINER_EXTENT,
        field,
        f"data [{data_start + offset}, {end}) ends past the end of the file ({file_size})",
        off_at,
        f"end <= {file_size}",
        end,
    )


# --- writing -------------------------------------------------------------------------------------


def _encode_string(s: str) -> bytes:
    b = s.encode("utf-8")
    return _U64.pack(len(b)) + b


def _encode_scalar(vtype: GGUFValueType, value) -> bytes:
    if vtype is _T.STRING:
        return _encode_string(value)
    if vtype is _T.BOOL:
        return b"\x01" if value else b"\x00"
    if vtype is _T.FLOAT32:
        return _U32.pack(f32_bits(value))
    return _SCALARS[vtype].pack(value)


def _tensor_info_bytes(t: TensorInfo) -> bytes:
    return b"".join([_encode_string(t.name), _U32.pack(len(t.dims)), *(_U64.pack(d) for d in t.dims),
                     _U32.pack(t.ggml_type.id), _U64.pack(t.offset)])


# One tensor info record's bytes, once per record object: a mutation battery serializes a header per
# mutant, all but one of its records shared with the conforming header's (Note [Identity memo]).
_encode_tensor_info = IdMemo(_tensor_info_bytes)


def serialize_gguf_header(header: GGUFHeader) -> bytes:
    """Write the header back: fields as held (counts included, so a mutation can make them lie),
    arrays from their raw bytes, then zero padding up to the data offset (none without tensors:
    Note [Tensor-less GGUF]). Round-trips byte for byte the header of any parsed file whose
    padding is zero (up to its data offset, so without a tensor-less file's trailing padding)."""
    return serialized(header)[0]


def serialized(header: GGUFHeader) -> tuple[bytes, int]:
    """serialize_gguf_header's bytes, and how many zero bytes of padding end them."""
    out = [MAGIC, _U32.pack(header.version), _U64.pack(header.tensor_count), _U64.pack(header.kv_count)]
    for kv in header.kvs.values():
        out += _kv_pieces(kv)
    out += _encode_tensor_info.each(header.tensors)
    end = sum(map(len, out))
    padding = data_offset(end, header.alignment, header.tensor_count) - end
    out.append(bytes(padding))
    return b"".join(out), padding  # one copy of a header that holds a vocabulary


def record_lengths(header: GGUFHeader) -> tuple[list[int], list[int]]:
    """How many bytes each kv pair and each tensor info of `header` is written as, in file order."""
    return ([sum(map(len, _kv_pieces(kv))) for kv in header.kvs.values()],
            [len(b) for b in _encode_tensor_info.each(header.tensors)])


def _kv_pieces(kv: KV) -> list[bytes]:
    """A kv pair's bytes, in pieces (an array's raw bytes as held: no copy)."""
    if isinstance(kv.value, GGUFArray):
        a = kv.value
        return [_encode_string(kv.key), _U32.pack(kv.type), _U32.pack(a.elem_type), _U64.pack(a.count), a.raw]
    return [_encode_string(kv.key), _U32.pack(kv.type), _encode_scalar(kv.type, kv.value)]
