"""Artifact mutation operators for safetensors: edit the JSON header, re-serialize, keep the data.

The header is re-written as compact JSON padded with spaces to a multiple of 8 (as the format's
writers do); the data section keeps its size after the new header, so extents keep their meaning.
"""

from __future__ import annotations

import copy
import json
import struct
from collections.abc import Iterator

from charter.diagnostics import Code
from charter.formats.safetensors import DTYPE_BITS, SafetensorsHeader
from charter.mutation import oracle
from charter.mutation.mutant import Expect, Mutant
from charter.contract.plan import ArtifactPlan, value_of

SAME_SIZE = {"F32": "I32", "I32": "F32", "F16": "BF16", "BF16": "F16", "I64": "F64", "F64": "I64", "U8": "I8",
             "I8": "U8"}
OTHER_SIZE = {"F32": "F16", "F16": "F32", "BF16": "F32", "I32": "I64", "I64": "I32", "U8": "I16", "I8": "I16",
              "F64": "F32"}


def serialize(doc: dict, data_len: int) -> tuple[bytes, int]:
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, 8 + len(text) + data_len


def mutants(h: SafetensorsHeader, raw: bytes, plan: ArtifactPlan) -> Iterator[Mutant]:
    own = oracle.Ownership.of(plan)
    doc = json.loads(raw[8:8 + h.header_len])
    data_len = h.file_size - h.data_offset

    def edit(fn) -> tuple[bytes, int]:
        new = copy.deepcopy(doc)
        fn(new)
        return serialize(new, data_len)

    yield Mutant("artifact", "baseline", "unchanged", None, lambda: (raw, h.file_size))
    yield Mutant("artifact", "header", "re-serialize compactly (whitespace is not a fact)",
                 None if value_of(plan.header_aligned) is not False else Expect.of(Code.CONTAINER_HEADER,
                                                                                   "container.header_aligned"),
                 lambda: serialize(doc, data_len))
    yield from _header(h, raw, data_len)
    yield from _metadata(doc, own, edit)
    names = [t.name for t in h.tensors]
    for name in _representatives(names, plan):
        yield from _tensor(h, doc, name, own, edit)
    last = max(h.tensors, key=lambda t: t.end, default=None)
    if last is not None:
        yield Mutant("artifact", f"tensors.{last.name}", "truncate data by 1 byte",
                     Expect.of(Code.CONTAINER_EXTENT, f"tensors.{last.name}.data_offsets"),
                     lambda: (raw, h.file_size - 1))
    yield Mutant("artifact", "file", "append trailing bytes", Expect.of(Code.CONTAINER_EXTENT, "tensors"),
                 lambda: (raw, h.file_size + 8))
    yield Mutant("artifact", "tensors.charter_mutant", "extra empty tensor",
                 Expect.of(Code.TENSOR_UNEXPECTED, "tensors.charter_mutant"),
                 lambda: edit(lambda d: d.__setitem__("charter_mutant", {"dtype": "F32", "shape": [0],
                                                                          "data_offsets": [data_len, data_len]})))


def _representatives(names: list[str], plan: ArtifactPlan) -> list[str]:
    present = set(names)
    return [name for name in oracle.row_ends(plan) if name in present]


def _header(h: SafetensorsHeader, raw: bytes, data_len: int) -> Iterator[Mutant]:
    def length(n: int) -> tuple[bytes, int]:
        return struct.pack("<Q", n) + raw[8:], h.file_size

    yield Mutant("artifact", "header.length", "+8", oracle.ANY_CONTAINER, lambda: length(h.header_len + 8))
    yield Mutant("artifact", "header.length", "over the cap", Expect.of(Code.CONTAINER_HEADER, "header.length"),
                 lambda: length(100_000_001))
    yield Mutant("artifact", "header", "not JSON", Expect.of(Code.CONTAINER_JSON, "header"),
                 lambda: (raw[:8] + b"[" + raw[9:], h.file_size))


def _metadata(doc: dict, own: oracle.Ownership, edit) -> Iterator[Mutant]:
    meta = doc.get("__metadata__") or {}
    for key, value in meta.items():
        target = f"metadata.{key}"
        for op, new in (("empty", ""), ("edit one char", value + "x"), ("case", value.swapcase())):
            if new == value:
                yield Mutant("artifact", target, op, None, equivalent=f"{op} leaves {value!r} unchanged")
                continue
            yield Mutant("artifact", target, op, own.value_change(key, new),
                         lambda k=key, n=new: edit(lambda d: d["__metadata__"].__setitem__(k, n)))
        yield Mutant("artifact", target, "non-string value", Expect.of(Code.CONTAINER_METADATA, target),
                     lambda k=key: edit(lambda d: d["__metadata__"].__setitem__(k, 1)))
        yield Mutant("artifact", target, "delete key", own.missing(key),
                     lambda k=key: edit(lambda d: d["__metadata__"].pop(k)))
    yield Mutant("artifact", "metadata.charter.mutant", "extra key", own.extra("charter.mutant"),
                 lambda: edit(lambda d: d.setdefault("__metadata__", {}).__setitem__("charter.mutant", "1")))


def _tensor(h: SafetensorsHeader, doc: dict, name: str, own: oracle.Ownership, edit) -> Iterator[Mutant]:
    entry = doc[name]
    target = f"tensors.{name}"
    dtype, shape = entry["dtype"], entry["shape"]
    extent = Expect.of(Code.CONTAINER_EXTENT, f"{target}.data_offsets")
    yield Mutant("artifact", target, "rename", Expect.of(Code.TENSOR_MISSING, target),
                 lambda: edit(lambda d: d.__setitem__(name + "_", d.pop(name))))
    if dtype in SAME_SIZE:
        yield Mutant("artifact", target, f"dtype {dtype}->{SAME_SIZE[dtype]}",
                     Expect.of(Code.TENSOR_CODEC, f"{target}.codec"),
                     lambda: edit(lambda d: d[name].__setitem__("dtype", SAME_SIZE[dtype])))
    if dtype in OTHER_SIZE and DTYPE_BITS[OTHER_SIZE[dtype]] != DTYPE_BITS[dtype] and _elements(shape):
        yield Mutant("artifact", target, f"dtype {dtype}->{OTHER_SIZE[dtype]}", extent,
                     lambda: edit(lambda d: d[name].__setitem__("dtype", OTHER_SIZE[dtype])))
    yield Mutant("artifact", target, "unknown dtype", Expect.of(Code.CONTAINER_DTYPE, f"{target}.dtype"),
                 lambda: edit(lambda d: d[name].__setitem__("dtype", "F33")))
    for j, dim in enumerate(shape):
        grown = shape[:j] + [dim + 1] + shape[j + 1:]
        yield Mutant("artifact", target, f"dim[{j}] +1",
                     extent if _elements(grown) != _elements(shape)
                     else Expect.of(Code.TENSOR_SHAPE, f"{target}.shape[{j}]"),
                     lambda g=grown: edit(lambda d: d[name].__setitem__("shape", g)))
        yield Mutant("artifact", target, f"dim[{j}] negative",
                     Expect.of(Code.CONTAINER_TENSOR_DIM, f"{target}.shape"),
                     lambda j=j: edit(lambda d: d[name]["shape"].__setitem__(j, -1)))
    for j in range(len(shape) - 1):
        if shape[j] == shape[j + 1]:
            yield Mutant("artifact", target, f"swap dims {j},{j + 1}", None,
                         equivalent=f"swapping equal dims {shape} changes nothing")
            continue
        swapped = shape[:j] + [shape[j + 1], shape[j]] + shape[j + 2:]
        logits = own.logits is not None and own.logits[0] == name and own.logits[1] in (j, j + 1)
        yield Mutant("artifact", target, f"swap dims {j},{j + 1}",
                     Expect.of(Code.TOKENIZER_LOGITS_ROWS, "tokenizer.logits_rows") if logits
                     else Expect.of(Code.TENSOR_SHAPE, f"{target}.shape[{j}]"),
                     lambda s=swapped: edit(lambda d: d[name].__setitem__("shape", s)))
    yield Mutant("artifact", target, "rank +1", Expect.of(Code.TENSOR_RANK, f"{target}.rank"),
                 lambda: edit(lambda d: d[name].__setitem__("shape", shape + [1])))
    begin, end = entry["data_offsets"]
    offsets = f"{target}.data_offsets"
    yield Mutant("artifact", target, "data_offsets reversed" if begin != end else "data_offsets end+1",
                 Expect.of(Code.CONTAINER_OFFSET, offsets) if begin != end else extent,
                 lambda: edit(lambda d: d[name].__setitem__("data_offsets", [end, begin] if begin != end
                                                             else [begin, end + 1])))
    yield Mutant("artifact", target, "data_offsets arity 1", Expect.of(Code.CONTAINER_OFFSET, offsets),
                 lambda: edit(lambda d: d[name].__setitem__("data_offsets", [begin])))
    yield Mutant("artifact", target, "data_offsets negative", Expect.of(Code.CONTAINER_OFFSET, offsets),
                 lambda: edit(lambda d: d[name].__setitem__("data_offsets", [-1, end])))
    yield Mutant("artifact", target, "extra field", Expect.of(Code.CONTAINER_HEADER, f"{target}.charter"),
                 lambda: edit(lambda d: d[name].__setitem__("charter", 1)))


def _elements(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
