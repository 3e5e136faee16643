"""One view of an artifact's header, whatever its container: metadata entries and tensor extents.

The admission stages after `container` read only this view, so one runtime serves GGUF and
safetensors. Building it is the container stage: the strict readers raise CONTAINER_* diagnostics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import repeat
from operator import add, itemgetter
from typing import TYPE_CHECKING, NamedTuple

from charter.formats.gguf import MAX_HEADER_BYTES, GGUFHeader, GGUFValueType, parse_gguf, read_gguf
from charter.formats.records import gc_paused
from charter.formats.sniff import SNIFF_BYTES, read_head, require_format
from charter.memo import BaseMemo

if TYPE_CHECKING:  # the safetensors reader is imported by the views that need it, never for a GGUF;
    # a battery's parse memo is handed in, never imported by an admission
    from charter.formats.accepted_strings import AcceptedStrings
    from charter.formats.safetensors import SafetensorsHeader


class MetaEntry(NamedTuple):
    """One metadata entry. (Entries are named tuples: a header holds up to 2**16 of them and 2**17
    tensors, Note [Reader limits] in charter/formats/gguf.py, and a tuple is built in a third of
    the time of a frozen dataclass.)"""

    key: str
    type: str  # "uint32", "string", "array", ...
    value: object  # scalar, or GGUFArray for arrays
    element: str | None  # element type of an array
    offset: int  # where the entry starts (GGUF: the key's length)
    type_offset: int  # the type tag (GGUF) or the entry (safetensors)
    value_offset: int  # the first byte of the value


class TensorEntry(NamedTuple):
    name: str
    shape: tuple[int, ...]  # in the container's own order (GGUF: ne[0] first)
    codec: str  # ggml type name or safetensors dtype
    start: int  # absolute byte offsets in the file
    end: int
    offset: int  # where the tensor's record starts in the header


@dataclass(frozen=True)
class ArtifactView:
    format: str
    version: int | None
    alignment: int | None
    header_len_aligned: bool | None
    header_end: int  # end of the header records; [header_end, data_offset) is alignment padding
    data_offset: int
    file_size: int
    meta: Mapping[str, MetaEntry]  # file order; entries built when asked for (`LazyMeta`)
    tensors: tuple[TensorEntry, ...]  # header order
    header: object


class LazyMeta(Mapping):
    """A header's metadata entries, each built from its record when asked for: checking the key
    set walks the keys alone, so a header of 2**16 pairs (or a safetensors header of a million
    metadata keys) builds the one entry a diagnostic names, not all of them."""

    __slots__ = ("_records", "_entry")

    def __init__(self, records: Mapping, entry: Callable[[str, object], MetaEntry]) -> None:
        self._records, self._entry = records, entry

    def __getitem__(self, key: str) -> MetaEntry:
        return self._entry(key, self._records[key])

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)


def read_view(path: str, fmt: str, max_header_bytes: int = MAX_HEADER_BYTES) -> ArtifactView:
    """The view of the file at `path` as a `fmt` file, once its first bytes say it is one
    (Note [Format sniff]); `max_header_bytes` caps a GGUF header."""
    head = read_head(path)
    if head is not None:
        require_format(*head, fmt)
    if fmt == "gguf":
        return gguf_view(read_gguf(path, max_header_bytes=max_header_bytes))
    from charter.formats.safetensors import read_safetensors

    return safetensors_view(read_safetensors(path))


def parse_view(buf, file_size: int, fmt: str, accepted=None) -> ArtifactView:
    """The same view from header bytes held in memory (the mutation battery's mutants); `accepted`
    (a charter.formats.accepted_strings.AcceptedStrings) shares string arrays between such parses."""
    require_format(buf[:SNIFF_BYTES], file_size, fmt)
    if fmt == "gguf":
        return gguf_view(parse_gguf(buf, file_size, accepted=accepted), accepted)
    from charter.formats.safetensors import parse_safetensors

    return safetensors_view(parse_safetensors(buf, file_size))


_TYPE_NAMES = {t: t.name.lower() for t in GGUFValueType}
_ARRAY = GGUFValueType.ARRAY


def _gguf_entry(key: str, kv) -> MetaEntry:
    _, vtype, value, offset, value_offset, _ = kv
    element = _TYPE_NAMES[value.elem_type] if vtype is _ARRAY else None
    return MetaEntry(key, _TYPE_NAMES[vtype], value, element, offset, value_offset - 4, value_offset)


def _tensor_entries(infos: list) -> list[TensorEntry]:
    new = tuple.__new__  # a named tuple from its fields, without the call's argument binding
    return [new(TensorEntry, (name, dims, gtype.name, data_start + offset, data_start + offset + nbytes, info_offset))
            for name, dims, gtype, offset, nbytes, info_offset, data_start in infos]


def _safetensors_entry(key: str, value: str) -> MetaEntry:
    return MetaEntry(key, "string", value, None, 8, 8, 8)


@gc_paused()
def gguf_view(h: GGUFHeader, accepted: AcceptedStrings | None = None) -> ArtifactView:
    """The view of a parsed header; with `accepted` (a battery's parses), a tensor info the first
    table viewed holds at the same position keeps that table's entry (Note [Finished records] in
    charter.formats.gguf)."""
    meta = LazyMeta(h.kvs, _gguf_entry)
    tensors = tuple(_tensor_entries(h.tensors) if accepted is None else
                    accepted.memo("entries", lambda: BaseMemo(_tensor_entries)).map(h.tensors))
    return ArtifactView("gguf", h.version, h.alignment, None, h.header_end, h.data_offset, h.file_size, meta,
                        tensors, h)


@gc_paused()
def safetensors_view(h: SafetensorsHeader) -> ArtifactView:
    meta = LazyMeta(h.metadata or {}, _safetensors_entry)
    # each field a column mapped in C, not a Python loop per tensor (131,072 in a hostile header)
    names, dtypes, shapes, begins, ends = (map(itemgetter(k), h.tensors) for k in range(5))
    at = h.data_offset
    starts, stops = map(add, begins, repeat(at)), map(add, ends, repeat(at))
    tensors = tuple(map(tuple.__new__, repeat(TensorEntry), zip(names, shapes, dtypes, starts, stops, repeat(8))))
    return ArtifactView("safetensors", None, None, h.header_len_aligned, h.data_offset, h.data_offset, h.file_size,
                        meta, tensors, h)
