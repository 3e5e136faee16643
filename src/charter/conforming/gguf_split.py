"""Split a real GGUF into a split set exactly as llama.cpp's `gguf-split --split-max-tensors` does.

The facts it reproduces are Note [GGUF split sets] (charter.bundles.gguf_split): the first split
holds every KV pair of the source, each split the three split keys (last, in gguf-split's order),
tensors in source order with offsets packed at 32, n_dims trimmed as `ggml_n_dims` trims it,
the header and every tensor zero-padded to 32, version 3.

The source is read by charter's strict reader and each split written by charter's own header
serializer (`serialize_gguf_header`) plus a copy of the tensor bytes. gguf-py's GGUFWriter does
not reproduce gguf-split's bytes (it orders the split keys otherwise, drops empty strings and
arrays, puts `general.architecture` first, writes no split keys for one shard and does not trim
n_dims), so it serves as a cross-check in the tests, not as the writer here.

Output is all or nothing: every split is written to a temporary file beside its target, and the
files are renamed only once all are complete; on any failure nothing of this run is left behind.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from charter.atomic import _temp_beside
from charter.bundles.gguf_split import SPLIT_COUNT, SPLIT_KEYS, SPLIT_NO, SPLIT_TENSORS_COUNT, split_name
from charter.formats.gguf import KV, GGUFHeader, GGUFValueType, TensorInfo, read_gguf, serialize_gguf_header
from charter.language import align_up

GGUF_SPLIT_VERSION = 3  # GGUF_VERSION of the fresh gguf_context every split is written from
GGUF_SPLIT_ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT: gguf-split lays out and pads every split at 32
U16_MAX = 2**16 - 1
_COPY_CHUNK = 1 << 20


def split_gguf(src: Path, out_dir: Path, *, max_tensors: int, prefix: str,
               no_tensor_first_split: bool = False) -> list[Path]:
    """Write `out_dir/<prefix>-0000i-of-0000n.gguf` from the GGUF at `src`, at most `max_tensors`
    tensors per split (`--split-max-tensors`), and return the paths in split order."""
    source = read_gguf(src)
    _check_request(source, max_tensors, prefix)
    groups = plan_splits(len(source.tensors), max_tensors, no_tensor_first_split)
    count = len(groups)
    if count > U16_MAX:
        raise ValueError(f"{count} splits do not fit split.count (uint16)")
    headers = [
        split_header(source, number, count, [source.tensors[i] for i in group])
        for number, group in enumerate(groups)
    ]
    paths = [Path(out_dir) / split_name(prefix, number, count) for number in range(count)]
    with open(src, "rb") as payload:
        sources = [[(payload, source.tensors[i].start) for i in group] for group in groups]
        _write_all(paths, headers, sources)
    return paths


def _check_request(source: GGUFHeader, max_tensors: int, prefix: str) -> None:
    if max_tensors < 1:
        raise ValueError(f"max_tensors must be at least 1, got {max_tensors}")
    if not prefix or "/" in prefix or "\0" in prefix:
        raise ValueError(f"the prefix must be a non-empty file name, got {prefix!r}")
    if source.alignment != GGUF_SPLIT_ALIGNMENT:
        raise ValueError(
            f"the source is aligned at {source.alignment}; gguf-split would copy that general.alignment into "
            f"the first split but lay every split out at {GGUF_SPLIT_ALIGNMENT} (Note [GGUF split sets])")
    packed = 0
    for t in source.tensors:
        if t.offset != packed:
            raise ValueError(
                f"tensor {t.name!r} has offset {t.offset}, expected {packed}: gguf-split's reader (gguf.cpp) "
                f"accepts only tensor data packed in header order")
        packed += align_up(t.nbytes, source.alignment)


def plan_splits(n_tensors: int, max_tensors: int, no_tensor_first_split: bool = False) -> list[list[int]]:
    """The source tensor indices of each split: a new split before tensor i when i > 0 and
    i % max_tensors == 0 (gguf-split's `should_split`), after an empty first one if asked."""
    groups: list[list[int]] = [[]] if no_tensor_first_split else []
    groups.append([])
    for i in range(n_tensors):
        if i > 0 and i % max_tensors == 0:
            groups.append([])
        groups[-1].append(i)
    return groups


def split_header(source: GGUFHeader, number: int, count: int, tensors: Sequence[TensorInfo]) -> GGUFHeader:
    """The header of split `number` of `count`: the source's KV pairs on the first split only,
    then the split keys as gguf-split leaves them (split.no, split.tensors.count, split.count)."""
    kvs = [kv for kv in source.kvs.values() if kv.key not in SPLIT_KEYS] if number == 0 else []
    kvs += [
        new_kv(SPLIT_NO, GGUFValueType.UINT16, number),
        new_kv(SPLIT_TENSORS_COUNT, GGUFValueType.INT32, source.tensor_count),
        new_kv(SPLIT_COUNT, GGUFValueType.UINT16, count),
    ]
    return laid_out(GGUF_SPLIT_VERSION, kvs, tensors, GGUF_SPLIT_ALIGNMENT)


def new_kv(key: str, vtype: GGUFValueType, value) -> KV:
    """A KV pair to serialize (its offsets are the reader's business, not the writer's)."""
    return KV(key, vtype, value, 0, 0, 0)


def laid_out(version: int, kvs: Sequence[KV], tensors: Sequence[TensorInfo], alignment: int) -> GGUFHeader:
    """A header as gguf.cpp lays one out: tensor offsets packed from 0 at `alignment`
    (`gguf_add_tensor`), n_dims without trailing 1s (`ggml_n_dims`)."""
    infos, offset = [], 0
    for t in tensors:
        infos.append(TensorInfo(t.name, ggml_dims(t.dims), t.ggml_type, offset, t.nbytes, 0, 0))
        offset += align_up(t.nbytes, alignment)
    return GGUFHeader(version, len(infos), len(kvs), alignment, {kv.key: kv for kv in kvs}, infos, 0, 0, 0, 0)


def ggml_dims(dims: tuple[int, ...]) -> tuple[int, ...]:
    """The dims gguf.cpp writes: trailing 1s dropped, at least one (`ggml_n_dims`)."""
    n = len(dims)
    while n > 1 and dims[n - 1] == 1:
        n -= 1
    return dims[:n]


def write_gguf(out: BinaryIO, header: GGUFHeader, sources: Sequence[tuple[BinaryIO, int]]) -> None:
    """The header zero-padded to its alignment (always, as `gguf_write_out`), then each tensor's
    bytes, copied from its source (file, start), zero-padded to the alignment."""
    blob = serialize_gguf_header(header)
    out.write(blob + bytes(align_up(len(blob), header.alignment) - len(blob)))
    for tensor, (payload, start) in zip(header.tensors, sources, strict=True):
        _copy(payload, out, start, tensor.nbytes)
        out.write(bytes(align_up(tensor.nbytes, header.alignment) - tensor.nbytes))


def _copy(payload: BinaryIO, out: BinaryIO, start: int, size: int) -> None:
    payload.seek(start)
    left = size
    while left:
        chunk = payload.read(min(left, _COPY_CHUNK))
        if not chunk:
            raise ValueError(f"the source ends inside a tensor (byte {start + size - left})")
        out.write(chunk)
        left -= len(chunk)


def _write_all(paths: list[Path], headers: list[GGUFHeader], sources: list[list[tuple[BinaryIO, int]]]) -> None:
    """Every split to a temporary file first, then all renamed; on failure none is left."""
    temps: list[str] = []
    renamed: list[Path] = []
    try:
        for path, header, tensor_sources in zip(paths, headers, sources, strict=True):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = _temp_beside(path)
            temps.append(tmp)
            with os.fdopen(fd, "wb") as out:
                write_gguf(out, header, tensor_sources)
                out.flush()
                os.fsync(out.fileno())
        for path, tmp in zip(paths, temps):
            os.replace(tmp, path)
            renamed.append(path)
    except BaseException:
        for leftover in [*temps[len(renamed):], *renamed]:
            with contextlib.suppress(OSError):
                os.unlink(leftover)
        raise
