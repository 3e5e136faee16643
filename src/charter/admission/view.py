"""One view of an artifact's header, whatever its container: metadata entries and tensor extents.

The admission stages after `container` read only this view, so one runtime serves GGUF and
safetensors. Building it is the container stage: the strict readers raise CONTAINER_* diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass

from charter.formats.gguf import GGUFArray, GGUFHeader, parse_gguf, read_gguf
from charter.formats.safetensors import SafetensorsHeader, parse_safetensors, read_safetensors
from charter.formats.sniff import SNIFF_BYTES, read_head, require_format


@dataclass(frozen=True)
class MetaEntry:
    key: str
    type: str  # "uint32", "string", "array", ...
    value: object  # scalar, or GGUFArray for arrays
    element: str | None  # element type of an array
    offset: int  # where the entry starts (GGUF: the key's length)
    type_offset: int  # the type tag (GGUF) or the entry (safetensors)
    value_offset: int  # the first byte of the value


@dataclass(frozen=True)
class TensorEntry:
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
    meta: dict[str, MetaEntry]
    tensors: tuple[TensorEntry, ...]  # header order
    header: object


def read_view(path: str, fmt: str) -> ArtifactView:
    """The view of the file at `path` as a `fmt` file, once its first bytes say it is one
    (Note [Format sniff])."""
    head = read_head(path)
    if head is not None:
        require_format(*head, fmt)
    if fmt == "gguf":
        return gguf_view(read_gguf(path))
    return safetensors_view(read_safetensors(path))


def parse_view(buf, file_size: int, fmt: str) -> ArtifactView:
    """The same view from header bytes held in memory (the mutation battery's mutants)."""
    require_format(buf[:SNIFF_BYTES], file_size, fmt)
    if fmt == "gguf":
        return gguf_view(parse_gguf(buf, file_size))
    return safetensors_view(parse_safetensors(buf, file_size))


def _type_name(t) -> str:
    return t.name.lower()


def gguf_view(h: GGUFHeader) -> ArtifactView:
    meta = {}
    for kv in h.kvs.values():
        element = _type_name(kv.value.elem_type) if isinstance(kv.value, GGUFArray) else None
        meta[kv.key] = MetaEntry(kv.key, _type_name(kv.type), kv.value, element, kv.offset, kv.type_offset,
                                 kv.value_offset)
    tensors = tuple(
        TensorEntry(t.name, tuple(t.dims), t.ggml_type.name, t.start, t.end, t.info_offset) for t in h.tensors
    )
    return ArtifactView("gguf", h.version, h.alignment, None, h.header_end, h.data_offset, h.file_size, meta,
                        tensors, h)


def safetensors_view(h: SafetensorsHeader) -> ArtifactView:
    meta = {k: MetaEntry(k, "string", v, None, 8, 8, 8) for k, v in (h.metadata or {}).items()}
    tensors = tuple(
        TensorEntry(t.name, tuple(t.shape), t.dtype, h.data_offset + t.begin, h.data_offset + t.end, 8)
        for t in h.tensors
    )
    return ArtifactView("safetensors", None, None, h.header_len_aligned, h.data_offset, h.data_offset, h.file_size,
                        meta, tensors, h)
