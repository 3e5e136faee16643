"""Strict, header-only safetensors reader.

Layout: u64 little-endian header length N, N bytes of UTF-8 JSON, then the data section. The
reader never trusts a size: N is capped at 100,000,000 bytes like the Rust crate and must fit in
the file before a byte of JSON is read; tensor bytes are never read.

Policies decided here:

* Stricter than the crate: duplicate keys are rejected at every level (the crate keeps one
  silently), tensor entries must have exactly `dtype`, `shape`, `data_offsets` (the crate ignores
  extras), strings may not hold lone surrogates, and NaN/Infinity literals are rejected.
* `__metadata__` is optional and must be a str -> str map; an entry of that name is always
  metadata, never a tensor.
* Dtypes are those of the safetensors 0.8 crate, with their bit widths; a sub-byte tensor (F4,
  F6_*) must fill a whole number of bytes, as the crate requires.
* Element counts and bit sizes are folded in order and must stay <= 2**64-1, as the crate's
  checked usize arithmetic does (so [2**40, 2**40, 0] is an overflow, not an empty tensor).
* Extents, sorted by (begin, end), must tile the data section: start at 0, no gap, no overlap,
  end exactly at the end of the file (all CONTAINER_EXTENT; the message says which).
* A header length that is not a multiple of 8 is accepted, as the crate does; the spec's writers
  pad with spaces to 8, and `header_len_aligned` records it so a contract can demand it.
* JSON nesting depth is bounded by the stdlib decoder's recursion guard (reported as
  CONTAINER_JSON); this module itself only walks two fixed levels.
* The JSON the decoders build is bounded before it is decoded (Note [JSON structure limit]): at
  most `max_json_structure` (2**21) of the characters `,` `:` `[` (CONTAINER_HEADER, field
  `header`), and at most `max_json_members` (2**19 + 2**16) of them `:` (Note [JSON member limit]).

Note [Safetensors numbers]
~~~~~~~~~~~~~~~~~~~~~~~~~~
The crate reads dims and offsets as u64 through serde_json, whose grammar is JSON's: an integer is
`0` or `[1-9][0-9]*` with an optional `-`; a fraction or an exponent makes a float, whatever its
value (`0.0`, `1.0`, `1e2`, `1E2`, `1e400`), and serde_json reads `-0` as the float -0.0. Python's
json reads `-0` as the int 0, so a header with `"data_offsets":[-0,64]` would mean what the crate
refuses to read. The walker's decoder therefore reads `-0` as -0.0 too (`_serde_int`); the fast
path, whose C decoder cannot, gives up on any text holding `-0` at a value position (a cheap
over-approximation: `,-0` inside a string only costs a walk). So a dim or an offset is exactly an
unsigned JSON integer <= 2**64-1; every other number is rejected at its place (CONTAINER_TENSOR_DIM,
CONTAINER_OFFSET, CONTAINER_OVERFLOW when the integer is too big, CONTAINER_METADATA in
`__metadata__`, whose values are strings), and text that is not JSON (`+1`, `01`, `.5`, `0x8`)
is CONTAINER_JSON. This is the crate's accept/reject on every spelling (tests/formats/
test_safetensors_numbers.py); only the codes are finer than the crate's one JSON error.

Two paths, one verdict. Diagnostics carry byte offsets, and knowing them means walking the JSON in
Python, ~15x the cost of the C decoder on a real header. So the fast path (for speed) decodes the
whole header with the C decoder and makes every check without positions: it returns the header
or gives up. Offsets are computed only for a diagnostic, by the positional walker (the reference):
after a tiling failure, for the one entry named; after an entry fails, the walker re-walks the
JSON (its errors come first) and re-checks just that entry; after a JSON failure, everything.
Every diagnostic is thus the walker's own: same code, field and offset.

Note [JSON structure limit]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
A decoder builds an object for every JSON value, and values can be as dense as 3 bytes (`[],`):
a 64 MiB header of them took the Python engine 36 s and 3.3 GiB, the C++ engine 2.5 GiB. Every
value but the outermost follows one of `[` (an array's first element), `,` (the next element
or member) and `:` (a member's value), and every key follows `{` or `,` and precedes `:`; so the
count of those three characters bounds what a decoder builds, before it builds anything. The
count is of the raw text, strings included: exact and cheap in both engines, and a header whose
strings hold that many is no real header either. The limit, 2**21, is 2,097,152: 131,072 tensors
of rank 4 take 13 each (1,703,936), and the largest real headers hold a few thousand tensors and
a handful of metadata strings. Counted on the header's bytes once they are known to fit, before
they are decoded (so it comes before any UTF-8 or JSON error, and a header it rejects is never
decoded); the C++ reader (native/include/charter/safetensors.hpp) counts at the same point.

Note [JSON member limit]
~~~~~~~~~~~~~~~~~~~~~~~~
A member costs a decoder more than an element: a key string, a value, a slot of a dict (about 0.6
us in CPython's decoder against 0.3 us for `[]`). At the structure limit a header of 2**20 members
`"~0":""` took the Python engine 1.0-1.1 s in all, over the 1 s a hostile header may cost. So the
`:` among those characters have a limit of their own, 2**19 + 2**16 = 589,824: four members for
each of 131,072 tensors (name, dtype, shape, data_offsets) and 65,536 metadata entries (GGUF's
key limit). Counted with the structure, on the raw text before decoding (CONTAINER_HEADER, field
`header`; the structure limit is checked first); a metadata string that quotes JSON spends the
same budget, which a real header's strings do not approach.
"""

from __future__ import annotations

import json
import math
import os
import re
import reprlib
import struct
from dataclasses import dataclass
from itertools import chain, compress, repeat
from json.decoder import scanstring
from operator import itemgetter, mul, not_, sub
from typing import NamedTuple

from charter.diagnostics import CharterError, Code, Diagnostic
from charter.formats.records import gc_paused

MAX_HEADER_BYTES = 100_000_000
MAX_JSON_STRUCTURE = 2**21
MAX_JSON_MEMBERS = 2**19 + 2**16
U64_MAX = 2**64 - 1
TENSOR_KEYS = ("dtype", "shape", "data_offsets")
_TENSOR_KEY_SET = frozenset(TENSOR_KEYS)

# safetensors 0.8 `Dtype` -> bits per element (`Dtype::bitsize`).
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}
_DTYPE_NAME = {name: name for name in DTYPE_BITS}  # one str object per dtype, shared by every tensor

_WS = re.compile(r"[ \t\n\r]*")
_REPR = reprlib.Repr()  # keeps values quoted from the file short in messages
_REPR.maxlist, _REPR.maxstring, _REPR.maxother = 4, 40, 40


def _fail(code: Code, field: str, message: str, offset: int, expected=None, actual=None):
    expected = None if expected is None else str(expected)
    actual = None if actual is None else str(actual)
    raise CharterError([Diagnostic(code, field, message, expected, actual, offset=offset)])


class SafetensorsTensor(NamedTuple):
    """One tensor entry; `begin`/`end` are relative to the data section, as stored (a named
    tuple, as charter.formats.gguf's records)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class SafetensorsHeader:
    header_len: int
    metadata: dict[str, str] | None
    tensors: list[SafetensorsTensor]  # JSON order
    data_offset: int  # 8 + header_len
    file_size: int
    header_len_aligned: bool  # header_len % 8 == 0, as the spec's writers pad it


class _Dup(Exception):
    def __init__(self, key: str):
        self.key = key


def _no_dupes(pairs: list) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _Dup(k)
            seen.add(k)
    return d


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _serde_int(text: str) -> int | float:
    """An integer literal as serde_json reads it (Note [Safetensors numbers])."""
    return -0.0 if text == "-0" else int(text)


# The fast path's decoder (C integers) and the walker's (serde_json's -0).
_DECODER = json.JSONDecoder(object_pairs_hook=_no_dupes, parse_constant=_no_constant)
_WALK_DECODER = json.JSONDecoder(object_pairs_hook=_no_dupes, parse_constant=_no_constant, parse_int=_serde_int)
# A `-0` integer can only follow `[`, `,` or `:`; the match also finds it inside strings.
_MINUS_ZERO = re.compile(r"[\[,:][ \t\n\r]*-0")
# Without the hook: builds each object in C, a third faster on a header of 2**17 tensors, but keeps
# one of two equal keys silently. `_fast` uses it only where it can count that none was dropped.
_PLAIN = json.JSONDecoder(parse_constant=_no_constant)


class _Json:
    """Walks the two object levels safetensors defines, keeping where each value starts."""

    def __init__(self, text: str, n: int):
        self.text = text
        self.ascii = len(text) == n  # as many characters as UTF-8 bytes

    def offset(self, i: int) -> int:
        """File offset of character `i` of the header text."""
        return 8 + (i if self.ascii else len(self.text[:i].encode("utf-8")))

    def bad(
        self, i: int, message: str, field="header", code=Code.CONTAINER_JSON, **expected_actual
    ):
        _fail(code, field, message, self.offset(min(i, len(self.text))), **expected_actual)

    def ws(self, i: int) -> int:
        return _WS.match(self.text, i).end()

    def value(self, i: int, field: str):
        try:
            return _WALK_DECODER.raw_decode(self.text, i)
        except _Dup as e:
            self.bad(i, f"duplicate key {e.key!r}", field, Code.CONTAINER_DUPLICATE_KEY)
        except json.JSONDecodeError as e:
            self.bad(e.pos, f"invalid JSON: {e.msg}")
        except RecursionError:
            self.bad(i, "JSON nested too deeply")
        except ValueError as e:  # NaN/Infinity, integers past the int-string limit
            self.bad(i, f"invalid JSON value: {e}")

    def object(
        self, i: int, field: str, until: str | None = None
    ) -> tuple[list[tuple[str, int, object, int]], int]:
        """Parse the object at `i` one level deep: [(key, key_at, value, value_at)], end.
        With `until`, stop after that key's value (the rest is not looked at)."""
        text, pairs, seen = self.text, [], set()
        if i >= len(text) or text[i] != "{":
            self.bad(i, "expected a JSON object")
        i = self.ws(i + 1)
        if i < len(text) and text[i] == "}":
            return pairs, i + 1
        while True:
            if i >= len(text) or text[i] != '"':
                self.bad(i, "expected a string key")
            try:
                key, j = scanstring(text, i + 1, True)
            except json.JSONDecodeError as e:
                self.bad(e.pos, f"invalid JSON: {e.msg}")
            self.check_str(key, i, field)
            if key in seen:
                self.bad(
                    i, f"duplicate key {key!r}", _join(field, key), Code.CONTAINER_DUPLICATE_KEY
                )
            seen.add(key)
            j = self.ws(j)
            if j >= len(text) or text[j] != ":":
                self.bad(j, "expected ':' after a key")
            v_at = self.ws(j + 1)
            value, j = self.value(v_at, _join(field, key))
            pairs.append((key, i, value, v_at))
            if key == until:
                return pairs, j
            i = self.ws(j)
            if i < len(text) and text[i] == ",":
                i = self.ws(i + 1)
            elif i < len(text) and text[i] == "}":
                return pairs, i + 1
            else:
                self.bad(i, "expected ',' or '}'")

    def value_offset(self, key: str) -> int:
        """File offset of the top-level value of `key`, walking only up to it: for a diagnostic
        of the fast path, whose header has already been decoded whole."""
        pairs, _ = self.object(self.ws(0), "header", until=key)
        return self.offset(pairs[-1][3])

    def check_str(self, s: str, i: int, field: str) -> None:
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            self.bad(i, "string holds a lone surrogate escape", field)


def _join(field: str, key: str) -> str:
    if field == "header":
        return "metadata" if key == "__metadata__" else f"tensors.{key}"
    return f"{field}.{key}"


def read_safetensors(path: str | os.PathLike, *, max_json_structure: int = MAX_JSON_STRUCTURE,
                     max_json_members: int = MAX_JSON_MEMBERS) -> SafetensorsHeader:
    """Parse the header of the safetensors file at `path`, reading only the header bytes (and
    holding them only until they are decoded)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(8)
            if len(head) == 8:
                (n,) = struct.unpack("<Q", head)
                if n <= MAX_HEADER_BYTES and 8 + n <= size:
                    head += f.read(n)
    except OSError as e:
        _fail(Code.CONTAINER_UNREADABLE, "file", f"cannot read {os.fspath(path)!r}: {e}", 0)
    n, text = _header_text(head, size, max_json_structure, max_json_members)
    del head
    return _parse_text(n, text, size, True)


def parse_safetensors(buf, file_size: int, *, max_json_structure: int = MAX_JSON_STRUCTURE,
                      max_json_members: int = MAX_JSON_MEMBERS) -> SafetensorsHeader:
    """Parse a safetensors header from `buf` (bytes-like, at least 8 + N bytes) of a file of
    `file_size` bytes."""
    return _parse(buf, file_size, True, max_json_structure, max_json_members)


def _parse(buf, file_size: int, fast: bool, max_json_structure: int = MAX_JSON_STRUCTURE,
           max_json_members: int = MAX_JSON_MEMBERS) -> SafetensorsHeader:
    """`fast=False` runs the positional walker alone: the reference the fast path is tested
    against."""
    return _parse_text(*_header_text(buf, file_size, max_json_structure, max_json_members), file_size, fast)


def _header_text(buf, file_size: int, max_json_structure: int, max_json_members: int) -> tuple[int, str]:
    """The header length N and the N bytes after it decoded as UTF-8, once they are known to fit
    and to hold no more JSON than Notes [JSON structure limit] and [JSON member limit] allow."""
    file_size = max(int(file_size), 0)
    avail = min(len(buf), file_size)
    if avail < 8:
        why = "the file" if file_size < 8 else "the provided buffer"
        _fail(
            Code.CONTAINER_TRUNCATED,
            "header.length",
            f"{why} holds {avail} bytes, the header length needs 8",
            0,
            ">= 8 bytes",
            avail,
        )
    (n,) = struct.unpack_from("<Q", buf, 0)
    if n > MAX_HEADER_BYTES:
        _fail(
            Code.CONTAINER_HEADER,
            "header.length",
            f"header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit",
            0,
            f"<= {MAX_HEADER_BYTES}",
            n,
        )
    if 8 + n > avail:
        why = "file" if 8 + n > file_size else "provided buffer"
        _fail(
            Code.CONTAINER_TRUNCATED,
            "header.length",
            f"header of {n} bytes does not fit in the {why} ({avail} bytes after offset 0)",
            0,
            f"<= {avail - 8}",
            n,
        )
    with memoryview(buf) as view, view[8 : 8 + n] as body:
        raw = buf if isinstance(buf, bytes) else bytes(view[: 8 + n])
        members = raw.count(b":", 8, 8 + n)
        structure = raw.count(b",", 8, 8 + n) + members + raw.count(b"[", 8, 8 + n)
        del raw
        if structure > max_json_structure:
            _fail(
                Code.CONTAINER_HEADER,
                "header",
                f"the header holds {structure} of the JSON characters , : [ (each may start a value), "
                f"more than the reader's limit of {max_json_structure}",
                8,
                f"<= {max_json_structure}",
                structure,
            )
        if members > max_json_members:
            _fail(
                Code.CONTAINER_HEADER,
                "header",
                f"the header holds {members} of the JSON character : (each starts a member's value), "
                f"more than the reader's limit of {max_json_members}",
                8,
                f"<= {max_json_members}",
                members,
            )
        try:
            return n, str(body, "utf-8")
        except UnicodeDecodeError as e:
            _fail(Code.CONTAINER_JSON, "header", f"header is not valid UTF-8 ({e.reason})", 8 + e.start)


@gc_paused()
def _parse_text(n: int, text: str, file_size: int, fast: bool) -> SafetensorsHeader:
    """The header from its text (Note [JSON structure limit], then the fast path or the walker)."""
    file_size = max(int(file_size), 0)
    js = _Json(text, n)
    suspect = None
    if fast:
        try:
            return _fast(js, n, file_size)
        except _Recheck as e:
            suspect = e.key
    return _walk(js, n, file_size, suspect)


class _Recheck(Exception):
    """The fast path found a problem it cannot place. `key`: the first entry that failed its
    checks, or None when the JSON itself (or a string in it) is at fault."""

    def __init__(self, key: str | None = None):
        self.key = key


class _Dropped(Exception):
    """The plain decoder may have dropped a duplicate key: decode again with the hook."""


def _fast(js: _Json, n: int, file_size: int) -> SafetensorsHeader:
    """Every check of the walker, on the header decoded whole by the C decoder: the walker's own
    decoder and hooks, so duplicates, NaN/Infinity, deep nesting and oversized integers fail here
    too. No positions: any failure but tiling raises _Recheck, for the walker to report. A header
    without a backslash is decoded first without the duplicate hook (`_fast_with`)."""
    if "\\" not in js.text:
        try:
            return _fast_with(js, n, file_size, _PLAIN)
        except _Dropped:
            pass
    return _fast_with(js, n, file_size, _DECODER)


def _fast_with(js: _Json, n: int, file_size: int, decoder: json.JSONDecoder) -> SafetensorsHeader:
    text = js.text
    if "-0" in text and _MINUS_ZERO.search(text):  # the C decoder reads it as 0 (Note [Safetensors numbers])
        raise _Recheck()
    try:
        top = decoder.decode(text)  # leading/trailing whitespace as the walker's _WS
    except (ValueError, RecursionError, _Dup):  # JSONDecodeError is a ValueError
        raise _Recheck() from None
    # Lone surrogates can only come from \u escapes: the text itself is valid UTF-8. Checked for
    # the strings the walker checks that are not compared against fixed names below.
    escapes = "\\u" in text
    if type(top) is not dict or (escapes and _lone_surrogate(top)):
        raise _Recheck()
    data_len = file_size - 8 - n
    columns = _bulk_entries(top, data_len, escapes) or _entries_one_by_one(top, data_len, escapes)
    del top  # the decoded entries: the columns hold what is kept of them
    metadata, names, dtypes, shapes, begins, ends = columns
    if decoder is _PLAIN and not _no_key_dropped(text, metadata, names):
        raise _Dropped()
    tensors = list(map(tuple.__new__, repeat(SafetensorsTensor), zip(names, dtypes, map(tuple, shapes), begins, ends)))
    if not _tiles(begins, ends, data_len):
        _check_tiling(tensors, data_len, 8 + n, js.value_offset)  # raises, at the walker's offset
    return SafetensorsHeader(n, metadata, tensors, 8 + n, file_size, n % 8 == 0)


def _no_key_dropped(text: str, metadata: dict | None, names: list[str]) -> bool:
    """Whether every `:` of a text without backslashes is accounted for by a member the plain
    decoder kept or by a string that holds it: then no duplicate key was dropped (a dropped one
    leaves its `:` over). Only for a header the fast path accepts: objects are the top level,
    __metadata__ (strings to strings) and tensor entries (three fixed keys; a dtype, ints)."""
    meta = metadata or {}
    members = len(names) + (metadata is not None) + len(meta) + 3 * len(names)
    colons = text.count(":")
    if colons == members:  # none in strings, none dropped: both counts are >= 0
        return True
    return colons == members + "".join(chain(names, meta, meta.values())).count(":")


def _lone_surrogate(strings) -> bool:
    for s in strings:
        try:
            s.encode()  # UTF-8, str.encode's only default
        except UnicodeEncodeError:
            return True
    return False


# What the fast path keeps of a header: (metadata, names, dtypes, shapes, begins, ends), the last
# five in JSON order (a shape is the decoded list).
_Columns = tuple
_BULK_RANK = 64  # longer shapes (none is real) are checked one by one, which stops at an overflow


def _fast_metadata(value, escapes: bool) -> bool:
    return (
        type(value) is dict
        and set(map(type, value.values())) <= {str}
        and not (escapes and (_lone_surrogate(value) or _lone_surrogate(value.values())))
    )


def _entries_one_by_one(top: dict, data_len: int, escapes: bool) -> _Columns:
    """The fast path's checks entry by entry, in JSON order, raising _Recheck with the first entry
    that fails (the walker re-checks just that one): for headers `_bulk_entries` declines."""
    metadata, rows = None, []
    for name, value in top.items():
        if name == "__metadata__":
            if not _fast_metadata(value, escapes):
                raise _Recheck(name)
            metadata = value
        else:
            rows.append(_fast_tensor(name, value, data_len))
    return (metadata, *map(list, zip(*rows))) if rows else (metadata, [], [], [], [], [])


def _fast_tensor(name: str, value, data_len: int) -> tuple:
    """_tensor's checks as one pass/fail: dict of exactly TENSOR_KEYS, known dtype, shape of ints
    >= 0 whose running product and bit count stay <= 2**64-1, two ordered u64 offsets spanning
    exactly the tensor's whole bytes, inside the data section."""
    if type(value) is not dict or value.keys() != _TENSOR_KEY_SET:
        raise _Recheck(name)
    dtype, shape, offsets = value["dtype"], value["shape"], value["data_offsets"]
    width = DTYPE_BITS.get(dtype) if type(dtype) is str else None
    if width is None or type(shape) is not list or type(offsets) is not list or len(offsets) != 2:
        raise _Recheck(name)
    count = 1
    for d in shape:
        if type(d) is not int or not 0 <= d <= U64_MAX:
            raise _Recheck(name)
        count *= d
        if count > U64_MAX:
            raise _Recheck(name)
    bits = count * width
    begin, end = offsets
    if not (
        type(begin) is int
        and type(end) is int
        and 0 <= begin <= end <= U64_MAX
        and bits <= U64_MAX
        and bits % 8 == 0
        and end - begin == bits // 8
        and end <= data_len
    ):
        raise _Recheck(name)
    return name, _DTYPE_NAME[dtype], shape, begin, end


def _bulk_entries(top: dict, data_len: int, escapes: bool) -> _Columns | None:
    """`_entries_one_by_one`'s checks over whole columns at once, each a pass of a builtin in C
    (all of them together about half the cost of the loop per entry). A column passes only if every entry
    would pass `_fast_tensor`; None if any check does not pass outright (the one-by-one checks
    then find the entry, or accept what a bulk check is too coarse for), never a wrong answer."""
    names, values = list(top), list(top.values())
    metadata = None
    if "__metadata__" in top:
        at = names.index("__metadata__")
        metadata = values[at]
        if not _fast_metadata(metadata, escapes):
            return None
        del names[at], values[at]
    try:  # entries of three items holding these three keys are dicts of exactly TENSOR_KEYS
        if sum(map(len, values)) != 3 * len(values):
            return None
        dtypes = list(map(_DTYPE_NAME.get, map(itemgetter("dtype"), values)))
        shapes = list(map(itemgetter("shape"), values))
        offsets = list(map(itemgetter("data_offsets"), values))
    except (KeyError, TypeError):  # a key missing; not a dict (a number has no len, a list or
        return None  # a string no "dtype"); an unhashable dtype
    del values
    if None in dtypes or set(map(type, shapes)) - {list} or set(map(type, offsets)) - {list}:
        return None
    if set(map(len, offsets)) - {2}:
        return None
    dims = list(chain.from_iterable(shapes))
    if set(map(type, dims)) - {int} or (dims and (min(dims) < 0 or max(dims) > U64_MAX)):
        return None
    del dims
    if max(map(len, shapes), default=0) > _BULK_RANK:  # so a product has at most 64 * 64 bits
        return None
    counts = list(map(math.prod, shapes))
    if max(counts, default=0) > U64_MAX or (0 in counts and not _prefixes_fit(shapes, counts)):
        return None
    bits = list(map(mul, counts, map(DTYPE_BITS.__getitem__, dtypes)))
    del counts
    if max(bits, default=0) > U64_MAX:
        return None
    begins, ends = list(map(itemgetter(0), offsets)), list(map(itemgetter(1), offsets))
    del offsets
    if set(map(type, begins)) - {int} or set(map(type, ends)) - {int}:
        return None
    # 8 * (end - begin) == bits: begin <= end, and the bits are whole bytes, as many as the span
    if begins and (min(begins) < 0 or max(ends) > min(data_len, U64_MAX)):
        return None
    if list(map(mul, map(sub, ends, begins), repeat(8))) != bits:
        return None
    return metadata, names, dtypes, shapes, begins, ends


def _prefixes_fit(shapes: list[list[int]], counts: list[int]) -> bool:
    """For the shapes whose element count is 0: whether each running product stays <= 2**64-1
    before a 0 ends it (when the count is > 0, every running product is at most the count)."""
    for shape in compress(shapes, map(not_, counts)):
        n = 1
        for d in shape:
            n *= d
            if n > U64_MAX:
                return False
    return True


def _tiles(begins: list[int], ends: list[int], data_len: int) -> bool:
    """Whether the extents, in JSON order or sorted by begin, follow each other from 0 to exactly
    data_len. Either implies that `_check_tiling` (sorted by (begin, end)) passes: in such a chain
    an extent of more than 0 bytes comes after the empty ones at its begin, so sorting by (begin,
    end) keeps the chain. False only means "ask `_check_tiling`", which finds and reports the fault."""
    if not begins:
        return data_len == 0
    if begins[0] == 0 and ends[-1] == data_len and begins[1:] == ends[:-1]:
        return True
    order = sorted(range(len(begins)), key=begins.__getitem__)
    begins, ends = list(map(begins.__getitem__, order)), list(map(ends.__getitem__, order))
    return begins[0] == 0 and ends[-1] == data_len and begins[1:] == ends[:-1]


def _walk(js: _Json, n: int, file_size: int, suspect: str | None = None) -> SafetensorsHeader:
    """The positional walker: every check, in order, each failure with its exact offset.
    `suspect` is the entry the fast path saw fail first: the JSON is still walked whole, as its
    errors come first (and the recursion guard, counting this walker's frames, may trip where the
    fast decode did not), but only that entry is re-checked, the others having passed."""
    text = js.text
    start = js.ws(0)
    pairs, end = js.object(start, "header")
    if js.ws(end) != len(text):
        js.bad(js.ws(end), "trailing characters after the header object")
    data_offset = 8 + n
    data_len = file_size - data_offset
    for key, _key_at, value, value_at in pairs:
        if key == suspect:  # raises; if it did not, the full pass below decides
            _entry(js, key, value, value_at, data_len)
    metadata, tensors = None, []
    for key, _key_at, value, value_at in pairs:
        if key == "__metadata__":
            metadata = _metadata(js, value, value_at)
        else:
            tensors.append(_tensor(js, key, value, value_at, data_len))
    at = {key: v_at for key, _, _, v_at in pairs}
    _check_tiling(tensors, data_len, data_offset, lambda name: js.offset(at[name]))
    return SafetensorsHeader(n, metadata, tensors, data_offset, file_size, n % 8 == 0)


def _entry(js: _Json, key: str, value, at: int, data_len: int):
    if key == "__metadata__":
        return _metadata(js, value, at)
    return _tensor(js, key, value, at, data_len)


def _metadata(js: _Json, value, at: int) -> dict[str, str]:
    if not isinstance(value, dict):
        js.bad(
            at,
            f"__metadata__ must be a map of strings, got {type(value).__name__}",
            "metadata",
            Code.CONTAINER_METADATA,
            expected="object",
            actual=type(value).__name__,
        )
    pairs, _ = js.object(at, "metadata")  # positions and duplicates; cheap, metadata is small
    for key, _key_at, v, v_at in pairs:
        if not isinstance(v, str):
            js.bad(
                v_at,
                f"metadata values must be strings, got {type(v).__name__}",
                f"metadata.{key}",
                Code.CONTAINER_METADATA,
                expected="str",
                actual=type(v).__name__,
            )
        js.check_str(v, v_at, f"metadata.{key}")
    return dict(value)


def _tensor(js: _Json, name: str, value, at: int, data_len: int) -> SafetensorsTensor:
    field = f"tensors.{name}"
    if not isinstance(value, dict):
        js.bad(
            at,
            f"tensor entry must be an object, got {type(value).__name__}",
            field,
            Code.CONTAINER_HEADER,
            expected="object",
            actual=type(value).__name__,
        )
    pairs, _ = js.object(at, field)
    where = {k: v_at for k, _, _, v_at in pairs}
    for k, k_at, _, _ in pairs:
        if k not in TENSOR_KEYS:
            js.bad(
                k_at,
                f"unexpected key {k!r} in tensor entry",
                f"{field}.{k}",
                Code.CONTAINER_HEADER,
                expected=", ".join(TENSOR_KEYS),
                actual=k,
            )
    for k in TENSOR_KEYS:
        if k not in where:
            js.bad(
                at,
                f"tensor entry lacks {k!r}",
                f"{field}.{k}",
                Code.CONTAINER_HEADER,
                expected=k,
                actual="missing",
            )
    dtype, shape, offsets = value["dtype"], value["shape"], value["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        js.bad(
            where["dtype"],
            f"unknown dtype {_REPR.repr(dtype)}",
            f"{field}.dtype",
            Code.CONTAINER_DTYPE,
            expected="a safetensors dtype",
            actual=_REPR.repr(dtype),
        )
    n_elements = _elements(js, shape, where["shape"], f"{field}.shape")
    bits = n_elements * DTYPE_BITS[dtype]
    if bits > U64_MAX:
        js.bad(
            where["shape"],
            f"{n_elements} elements of {dtype} overflow a u64 bit count",
            f"{field}.shape",
            Code.CONTAINER_OVERFLOW,
            expected="<= 2**64-1 bits",
            actual=bits,
        )
    o_field, o_at = f"{field}.data_offsets", where["data_offsets"]
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(type(x) is int and 0 <= x <= U64_MAX for x in offsets)
    ):
        js.bad(
            o_at,
            f"data_offsets must be two integers in [0, 2**64-1], got {_REPR.repr(offsets)}",
            o_field,
            Code.CONTAINER_OFFSET,
            expected="[begin, end]",
            actual=_REPR.repr(offsets),
        )
    begin, end = offsets
    if begin > end:
        js.bad(
            o_at,
            f"data_offsets begin {begin} > end {end}",
            o_field,
            Code.CONTAINER_OFFSET,
            expected=f"begin <= {end}",
            actual=begin,
        )
    if bits % 8:
        js.bad(
            where["shape"],
            f"{n_elements} elements of {dtype} are not a whole number of bytes",
            f"{field}.shape",
            Code.CONTAINER_EXTENT,
            expected="a multiple of 8 bits",
            actual=f"{bits} bits",
        )
    if end - begin != bits // 8:
        _fail(
            Code.CONTAINER_EXTENT,
            o_field,
            f"data_offsets span {end - begin} bytes, shape and dtype need {bits // 8}",
            js.offset(o_at),
            bits // 8,
            end - begin,
        )
    if end > data_len:
        _fail(
            Code.CONTAINER_EXTENT,
            o_field,
            f"data [{begin}, {end}) extends past the end of the file (data section holds "
            f"{data_len} bytes)",
            js.offset(o_at),
            f"end <= {data_len}",
            end,
        )
    return SafetensorsTensor(name, dtype, tuple(shape), begin, end)


def _elements(js: _Json, shape, at: int, field: str) -> int:
    """Element count, folded left to right with the crate's u64 overflow check."""
    if not isinstance(shape, list):
        js.bad(
            at,
            f"shape must be a list, got {type(shape).__name__}",
            field,
            Code.CONTAINER_HEADER,
            expected="list",
            actual=type(shape).__name__,
        )
    n = 1
    for k, d in enumerate(shape):
        if type(d) is not int or d < 0:
            js.bad(
                at,
                f"dim {k} must be a non-negative integer, got {_REPR.repr(d)}",
                field,
                Code.CONTAINER_TENSOR_DIM,
                expected="integer >= 0",
                actual=_REPR.repr(d),
            )
        n *= d
        if n > U64_MAX or d > U64_MAX:  # after a 0, only the dim itself can be out of range
            js.bad(
                at,
                f"element count overflows a u64 at dim {k}" if n else f"dim {k} is more than 2**64-1",
                field,
                Code.CONTAINER_OVERFLOW,
                expected="<= 2**64-1",
                actual=n if n else d,
            )
    return n


def _check_tiling(
    tensors: list[SafetensorsTensor], data_len: int, data_offset: int, offset_of
) -> None:
    """Sorted by (begin, end), extents must cover [0, data_len) exactly once. `offset_of(name)`
    is the file offset of a tensor's entry, asked for only when reporting it."""
    pos = 0
    for t in sorted(tensors, key=lambda t: (t.begin, t.end)):
        field = f"tensors.{t.name}.data_offsets"
        if t.begin > pos:
            what = "the data section starts" if pos == 0 else "the previous tensor ends"
            _fail(
                Code.CONTAINER_EXTENT,
                field,
                f"gap: tensor begins at {t.begin} but {what} at {pos}",
                offset_of(t.name),
                pos,
                t.begin,
            )
        if t.begin < pos:
            _fail(
                Code.CONTAINER_EXTENT,
                field,
                f"overlap: tensor begins at {t.begin}, before the previous tensor ends at {pos}",
                offset_of(t.name),
                pos,
                t.begin,
            )
        pos = t.end
    if pos != data_len:
        _fail(
            Code.CONTAINER_EXTENT,
            "tensors",
            f"trailing bytes: tensors end at {pos} but the data section holds {data_len} bytes",
            data_offset + pos,
            data_len,
            pos,
        )
