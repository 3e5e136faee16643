"""Artifact mutation operators for GGUF: change one fact in the header bytes and re-serialize.

Each mutant is built lazily (`make()` returns the mutated header bytes and the file size a
runtime would see), so a battery of hundreds of mutants never holds more than one in memory.
The data section is not copied: stages before `payload` read only the header, and the size of
the data section is preserved, so extents keep their meaning.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import math
import struct
from collections.abc import Iterator

import numpy as np

from charter.diagnostics import Code, Finding, code_for
from charter.floatbits import float_bits
from charter.formats.ggml_types import GGML_TYPES_BY_NAME
from charter.formats.gguf import (
    KV,
    U64_MAX,
    GGUFArray,
    GGUFHeader,
    GGUFValueType,
    TensorInfo,
)
from charter.mutation import oracle
from charter.mutation.shared_records import rebuilt
from charter.language import INT_RANGES, align_up
from charter.mutation.mutant import Expect, Mutant
from charter.contract.plan import ArtifactPlan, value_of

T = GGUFValueType
INT_TYPES = {t: INT_RANGES[t.name.lower()] for t in T if t.name.lower() in INT_RANGES}
EXTRA_KEY = "charter.mutant.extra"
EXTRA_TENSOR = "charter_mutant.weight"
# Codec swaps that keep a plausible tensor: each codec's alternative.
CODEC_SWAP = {"F32": "F16", "F16": "F32", "BF16": "F16", "Q4_0": "Q4_1", "Q4_1": "Q4_0", "Q5_0": "Q5_1",
              "Q5_1": "Q5_0", "Q8_0": "Q4_0", "Q4_K": "Q5_K", "Q5_K": "Q4_K", "Q6_K": "Q8_0", "Q2_K": "Q3_K",
              "Q3_K": "Q2_K", "Q8_K": "Q6_K"}


def rebuild(h: GGUFHeader, *, kvs=None, tensors=None, kv_count=None, tensor_count=None, alignment=None,
            version=None) -> tuple[bytes, int]:
    """Serialize a modified header (kept for Note [Shared records]); the data section keeps its
    size after the new data offset."""
    kvs = h.kvs if kvs is None else kvs
    tensors = h.tensors if tensors is None else tensors
    changed = dataclasses.replace(
        h, kvs=kvs, tensors=tensors,
        kv_count=len(kvs) if kv_count is None else kv_count,
        tensor_count=len(tensors) if tensor_count is None else tensor_count,
        alignment=h.alignment if alignment is None else alignment,
        version=h.version if version is None else version)
    blob = rebuilt(changed)
    return blob, len(blob) + _tail(h, len(blob))


def _tail(h: GGUFHeader, data_offset: int) -> int:
    """How many bytes follow a rebuilt header that ends at `data_offset`: the data section and any
    trailing bytes, as they were. A tensor-less file's bytes after its header are its writer's
    alignment padding, or none (Note [Tensor-less GGUF]): the new header gets the padding its own
    end needs, as that writer would write it."""
    tail = h.file_size - h.data_offset
    if not h.tensors and 0 < tail <= -h.data_offset % h.alignment:
        return -data_offset % h.alignment
    return tail


def patch(h: GGUFHeader, raw: bytes, offset: int, data: bytes) -> tuple[bytes, int]:
    """Overwrite bytes in place (counts and tags that no serializer would write wrong), copying the
    header once."""
    with memoryview(raw) as view:
        return b"".join((view[:offset], data, view[offset + len(data):])), h.file_size


def mutants(h: GGUFHeader, raw: bytes, plan: ArtifactPlan) -> Iterator[Mutant]:
    own = oracle.Ownership.of(plan)
    yield Mutant("artifact", "baseline", "unchanged", None, lambda: (raw, h.file_size))
    yield from _controls(h)
    yield from _container(h, raw)
    for kv in h.kvs.values():
        yield from _kv_mutants(h, raw, kv, own)
    yield from _key_set(h, own)
    moves = oracle.ShiftedLayout([(t.name, t.start, t.end) for t in h.tensors], h.data_offset, h.file_size,
                                 value_of(plan.alignment), plan.layout.policy())
    for index in representatives(h, plan):
        yield from _tensor_mutants(h, raw, index, h.tensors[index], own, plan, moves)
    yield from _tensor_set(h, own)
    yield from _boundary(h, plan)
    yield from _layout_mutants(h, plan)


def representatives(h: GGUFHeader, plan: ArtifactPlan) -> list[int]:
    """Tensor operators run on the first and last tensor of every contract row (oracle.row_ends),
    and on every tensor the contract does not state (there are none in an admitted artifact)."""
    index = {t.name: i for i, t in enumerate(h.tensors)}
    return [index[name] for name in oracle.row_ends(plan) if name in index]


def _controls(h: GGUFHeader) -> Iterator[Mutant]:
    """Changes that are not facts of the contract: a checker that rejects them rejects too much."""
    reversed_kvs = dict(reversed(list(h.kvs.items())))
    yield Mutant("artifact", "metadata", "reverse key order (order is not a fact)", None,
                 lambda: rebuild(h, kvs=reversed_kvs))
    if "general.alignment" not in h.kvs:
        yield Mutant("artifact", "metadata.general.alignment", "state the default alignment explicitly", None,
                     lambda: _with_alignment(h, h.alignment))


# --- container ------------------------------------------------------------------------------


def _container(h: GGUFHeader, raw: bytes) -> Iterator[Mutant]:
    yield Mutant("artifact", "header.magic", "edit", Expect.of(Code.CONTAINER_MAGIC, "header.magic"),
                 lambda: patch(h, raw, 0, b"GGUG"))
    for version in (h.version - 1, h.version + 1):
        yield Mutant("artifact", "header.version", f"{version}",
                     Expect.of(Code.CONTAINER_VERSION, "header.version") if version not in (2, 3)
                     else Expect.of(Code.CONTAINER_VERSION, "container.version"),
                     lambda v=version: patch(h, raw, 4, struct.pack("<I", v)))
    for field, offset, count in (("header.tensor_count", 8, h.tensor_count), ("header.kv_count", 16, h.kv_count)):
        for delta in (-1, +1):
            if not 0 <= count + delta <= U64_MAX:
                continue  # no u64 to write (a tensor count -1 of a tensor-less file): does not apply
            yield Mutant("artifact", field, f"{delta:+d}", oracle.ANY_CONTAINER if delta > 0 else Expect(None),
                         lambda o=offset, c=count, d=delta: patch(h, raw, o, struct.pack("<Q", c + d)))
    # Alignment: the key added (or changed) to another power of two, and to values that are not one.
    for value in (h.alignment * 2, h.alignment // 2, 0, h.alignment + 1):
        if value == h.alignment // 2 and value < 1:
            continue
        yield Mutant("artifact", "metadata.general.alignment", f"set {value}", _alignment_expect(h, value),
                     lambda v=value: _with_alignment(h, v))


def _alignment_expect(h: GGUFHeader, value: int) -> Expect:
    if value == 0 or value & (value - 1):
        return Expect.of(Code.CONTAINER_ALIGNMENT, "metadata.general.alignment")
    for t in h.tensors:
        if t.offset % value:
            return Expect.of(Code.CONTAINER_OFFSET, f"tensors.{t.name}.offset")
    return Expect.of(Code.CONTAINER_ALIGNMENT, "container.alignment")


def _with_alignment(h: GGUFHeader, value: int) -> tuple[bytes, int]:
    kvs = dict(h.kvs)
    kvs["general.alignment"] = KV("general.alignment", T.UINT32, value, 0, 0, 0)
    pad = value if value and not value & (value - 1) else h.alignment
    return rebuild(h, kvs=kvs, alignment=pad)


# --- metadata values and types ----------------------------------------------------------------


def _replace_kv(h: GGUFHeader, kv: KV, **changes) -> dict:
    kvs = dict(h.kvs)
    kvs[kv.key] = kv._replace(**changes)
    return kvs


def _kv_mutants(h: GGUFHeader, raw: bytes, kv: KV, own: oracle.Ownership) -> Iterator[Mutant]:
    target = f"metadata.{kv.key}"
    if kv.key == "general.alignment":
        return
    if isinstance(kv.value, GGUFArray):
        yield from _array_mutants(h, raw, kv, own)
        return
    for op, value in _scalar_edits(kv.type, kv.value):
        if _same(kv.type, value, kv.value):
            yield Mutant("artifact", target, op, None, equivalent=f"{op} leaves {kv.value!r} unchanged")
            continue
        expect = own.value_change(kv.key, value)
        yield Mutant("artifact", target, op, expect,
                     lambda v=value: rebuild(h, kvs=_replace_kv(h, kv, value=v)))
    for other in _retype(kv.type, kv.value):
        expect = (Expect.of(Code.IDENTITY_MISMATCH, f"identity.{kv.key}") if kv.key in own.identity
                  else Expect.of(Code.METADATA_TYPE, f"metadata.{kv.key}") if kv.key in own.pinned
                  else None)
        yield Mutant("artifact", target, f"retype {kv.type.name.lower()}->{other.name.lower()}", expect,
                     lambda o=other: rebuild(h, kvs=_replace_kv(h, kv, type=o,
                                                                value=_convert(o, kv.value))))
    if kv.type is T.BOOL:
        yield Mutant("artifact", target, "bool byte 2", Expect.of(Code.CONTAINER_BOOL, target),
                     lambda: patch(h, raw, kv.value_offset, b"\x02"))


def _scalar_edits(t: GGUFValueType, value) -> list[tuple[str, object]]:
    if t is T.BOOL:
        return [("flip", not value)]
    if t is T.STRING:
        edits = [("empty", ""), ("case", value.swapcase())]
        if value:
            i = len(value) // 2
            c = value[i]
            edits.append(("edit one char", value[:i] + ("x" if c != "x" else "y") + value[i + 1:]))
        return edits
    if t in INT_TYPES:
        lo, hi = INT_TYPES[t]
        return [(op, v) for op, v in (("+1", value + 1), ("-1", value - 1), ("zero", 0), ("type max", hi))
                if lo <= v <= hi]
    if t in (T.FLOAT32, T.FLOAT64):
        dtype = np.float32 if t is T.FLOAT32 else np.float64
        with np.errstate(invalid="ignore"):  # the next of a NaN is a NaN: an equivalent edit
            nxt = float(np.nextafter(dtype(value), dtype(np.inf)))
        return [("next representable", nxt), ("nan", math.nan), ("+inf", math.inf), ("-inf", -math.inf)]
    return []


def _same(t: GGUFValueType, a, b) -> bool:
    if t in (T.FLOAT32, T.FLOAT64):
        return float_bits(t.name.lower(), a) == float_bits(t.name.lower(), b)
    return a == b and type(a) is type(b)


def _retype(t: GGUFValueType, value) -> list[GGUFValueType]:
    """Other types that print the same value (a uint32 30 is not a uint64 30)."""
    if t in INT_TYPES:
        return [o for o in (T.UINT64, T.INT64, T.UINT32, T.INT32, T.UINT16) if o != t
                and INT_TYPES[o][0] <= value <= INT_TYPES[o][1]][:2]
    if t is T.FLOAT32:
        return [T.FLOAT64]
    if t is T.FLOAT64:
        return [T.FLOAT32] if struct.unpack("<f", struct.pack("<f", value))[0] == value else []
    if t is T.BOOL:
        return [T.UINT8]
    return []


def _convert(t: GGUFValueType, value):
    if t is T.UINT8 and isinstance(value, bool):
        return int(value)
    if t in (T.FLOAT32, T.FLOAT64):
        return float(value)
    return value


def _array_mutants(h: GGUFHeader, raw: bytes, kv: KV, own: oracle.Ownership) -> Iterator[Mutant]:
    arr: GGUFArray = kv.value
    fact = own.metadata_owned.get(kv.key)
    stage = fact.stage if fact else "metadata"
    target = f"metadata.{kv.key}"
    n, i = arr.count, arr.count // 2

    @functools.cache
    def at() -> dict[int, int]:
        """Where the splices below start and stop: one walk, in the process that makes the first of
        these mutants (a worker), not before any forks."""
        return arr.offsets((i, i + 1, n - 1, n))

    def with_items(new_items):
        return rebuild(h, kvs=_replace_kv(h, kv, value=GGUFArray.from_items(arr.elem_type, new_items)))

    def spliced(start: int, stop: int, new_items: list):
        """with_items(items[:start] + new_items + items[stop:]), the other elements' bytes as held."""
        return rebuild(h, kvs=_replace_kv(h, kv, value=arr.spliced(start, stop, new_items, at())))

    length = Expect.of(code_for(stage, Finding.ARRAY_LENGTH), f"{stage}.{kv.key}.length") if fact else None
    if not n:
        yield Mutant("artifact", target, "length +1", length, lambda: with_items(_one(arr.elem_type)))
    else:
        yield Mutant("artifact", target, "length -1", length, lambda: spliced(n - 1, n, []))
        yield Mutant("artifact", target, "length +1", length, lambda: spliced(n, n, [arr.element(at()[n - 1])]))
        if fact is None:
            expect = None
        elif fact.values is not None:
            expect = Expect.of(code_for(stage, Finding.VALUE), f"{stage}.{kv.key}.values[{i}]")
        else:
            expect = Expect.of(code_for(stage, Finding.ARRAY_DIGEST), f"{stage}.{kv.key}.sha256")
        yield Mutant("artifact", target, f"element [{i}] edit", expect,
                     lambda: spliced(i, i + 1, [_edit_element(arr.elem_type, arr.element(at()[i]))]))
    for other in _retype_elements(arr):
        expect = Expect.of(Code.METADATA_TYPE, f"metadata.{kv.key}.element") if fact else None
        yield Mutant("artifact", target, f"element type {arr.elem_type.name.lower()}->{other.name.lower()}",
                     expect, lambda o=other: rebuild(h, kvs=_replace_kv(h, kv, value=arr.as_type(o))))
    yield Mutant("artifact", target, "array of arrays", Expect.of(Code.CONTAINER_ARRAY, target),
                 lambda: patch(h, raw, kv.value_offset, struct.pack("<I", int(T.ARRAY))))


def _one(t: GGUFValueType) -> list:
    return [""] if t is T.STRING else [False] if t is T.BOOL else [0.0] if t in (T.FLOAT32, T.FLOAT64) else [0]


def _edit_element(t: GGUFValueType, value):
    if t is T.STRING:
        return value + "x"
    if t is T.BOOL:
        return not value
    if t in (T.FLOAT32, T.FLOAT64):
        return value + 1.0
    lo, hi = INT_TYPES[t]
    return value + 1 if value < hi else value - 1


def _retype_elements(arr: GGUFArray) -> list[GGUFValueType]:
    """The integer type an integer array's elements are retyped to: the first other that holds them all."""
    if arr.elem_type not in INT_TYPES:
        return []
    values = arr.integers()
    lo, hi = (int(values.min()), int(values.max())) if arr.count else (0, 0)
    return [o for o in (T.INT64, T.UINT32, T.INT32) if o != arr.elem_type and INT_TYPES[o][0] <= lo
            and hi <= INT_TYPES[o][1]][:1]


# --- the key set ------------------------------------------------------------------------------


def _key_set(h: GGUFHeader, own: oracle.Ownership) -> Iterator[Mutant]:
    for kv in h.kvs.values():
        if kv.key == "general.alignment":
            continue
        target = f"metadata.{kv.key}"
        kvs = {k: v for k, v in h.kvs.items() if k != kv.key}
        yield Mutant("artifact", target, "delete key", own.missing(kv.key), lambda k=kvs: rebuild(h, kvs=k))
        renamed = {(k if k != kv.key else kv.key + "_"): (v if k != kv.key else v._replace(key=kv.key + "_"))
                   for k, v in h.kvs.items()}
        yield Mutant("artifact", target, "rename key", own.missing(kv.key) or own.extra(kv.key + "_"),
                     lambda k=renamed: rebuild(h, kvs=k))
    first = next(iter(h.kvs.values()))
    dup = dict(h.kvs)
    dup["\0duplicate"] = first
    yield Mutant("artifact", f"metadata.{first.key}", "duplicate key",
                 Expect.of(Code.CONTAINER_DUPLICATE_KEY, f"kv[{len(h.kvs)}].key"),
                 lambda: rebuild(h, kvs=dup))
    extra = dict(h.kvs)
    extra[EXTRA_KEY] = KV(EXTRA_KEY, T.UINT32, 1, 0, 0, 0)
    yield Mutant("artifact", f"metadata.{EXTRA_KEY}", "extra key", own.extra(EXTRA_KEY),
                 lambda: rebuild(h, kvs=extra))
    empty = dict(h.kvs)
    empty["\0empty"] = KV("", T.UINT32, 1, 0, 0, 0)
    yield Mutant("artifact", "metadata.<empty>", "empty key",
                 Expect.of(Code.CONTAINER_KEY, f"kv[{len(h.kvs)}].key"), lambda: rebuild(h, kvs=empty))


# --- tensors ----------------------------------------------------------------------------------


def _replace_tensor(h: GGUFHeader, index: int, **changes) -> list[TensorInfo]:
    tensors = list(h.tensors)
    tensors[index] = tensors[index]._replace(**changes)
    return tensors


def _tensor_mutants(h: GGUFHeader, raw: bytes, index: int, t: TensorInfo, own: oracle.Ownership,
                    plan: ArtifactPlan, moves: oracle.ShiftedLayout) -> Iterator[Mutant]:
    target = f"tensors.{t.name}"
    excluded = own.excluded(t.name)
    missing = Expect.of(Code.TENSOR_MISSING, target)
    yield Mutant("artifact", target, "rename", missing,
                 lambda: rebuild(h, tensors=_replace_tensor(h, index, name=t.name + "_")))
    yield Mutant("artifact", target, "delete", missing,
                 lambda: rebuild(h, tensors=[x for i, x in enumerate(h.tensors) if i != index]))
    if excluded:
        return
    shapes = []
    if len(t.dims) < 4:
        shapes.append(("rank +1", t.dims + (1,)))
    shapes.append(("rank -1", t.dims[:-1]))
    for j, d in enumerate(t.dims):
        shapes.append((f"dim[{j}] +1", t.dims[:j] + (d + 1,) + t.dims[j + 1:]))
        shapes.append((f"dim[{j}] -1", t.dims[:j] + (d - 1,) + t.dims[j + 1:]))
    for j in range(len(t.dims) - 1):
        swapped = t.dims[:j] + (t.dims[j + 1], t.dims[j]) + t.dims[j + 2:]
        shapes.append((f"swap dims {j},{j + 1}", swapped))
    for op, dims in shapes:
        if dims == t.dims:
            yield Mutant("artifact", target, op, None, equivalent=f"{op} of equal dims {list(t.dims)} changes nothing")
            continue
        yield Mutant("artifact", target, op, _shape_expect(h, t, dims, t.ggml_type, own),
                     lambda d=dims: rebuild(h, tensors=_replace_tensor(h, index, dims=d)))
    other = CODEC_SWAP.get(t.ggml_type.name)
    if other:
        gtype = GGML_TYPES_BY_NAME[other]
        expect = oracle.tensor_geometry(t.dims, gtype, t.offset, h.data_offset, h.file_size, t.name) or Expect.of(
            Code.TENSOR_CODEC, f"{target}.codec")
        yield Mutant("artifact", target, f"codec {t.ggml_type.name}->{other}", expect,
                     lambda g=gtype: rebuild(h, tensors=_replace_tensor(h, index, ggml_type=g)))
    yield Mutant("artifact", target, "unknown ggml type",
                 Expect.of(Code.CONTAINER_TENSOR_TYPE, f"{target}.type"),
                 lambda: patch(h, raw, t.type_offset, struct.pack("<I", 4242)))
    if h.alignment > 1:
        yield Mutant("artifact", target, "offset +1", Expect.of(Code.CONTAINER_OFFSET, f"{target}.offset"),
                     lambda: rebuild(h, tensors=_replace_tensor(h, index, offset=t.offset + 1)))
    starts = moves.starts
    following = bisect.bisect_right(starts, t.start + h.alignment)  # the first start past the shifted one
    room = (starts[following] if following < len(starts) else h.file_size) - t.start - h.alignment
    expect = (Expect.of(Code.CONTAINER_EXTENT, f"{target}.offset") if t.end + h.alignment > h.file_size
              else _headers_short(plan, t, room) or moves.moved(index, h.alignment))
    yield Mutant("artifact", target, "offset +alignment", expect,
                 lambda: rebuild(h, tensors=_replace_tensor(h, index, offset=t.offset + h.alignment)))
    if t.ggml_type.row_header:
        yield _header_short(h, t, plan)


def _header_short(h: GGUFHeader, t: TensorInfo, plan: ArtifactPlan) -> Mutant:
    """The tensor sized by its blocks alone, as gguf-py's writer sized it (Note [Row headers] in
    charter.formats.ggml_types): every later extent, and the end of the file, move back by the
    aligned bytes of the headers the tensor's reservation lacks."""
    target, a = f"tensors.{t.name}", h.alignment
    rows = math.prod(t.dims) // t.dims[0]
    shrink = align_up(t.nbytes, a) - align_up(t.nbytes - rows * t.ggml_type.row_header, a)
    op = "a row header short"
    if not shrink:
        return Mutant("artifact", target, op, None, equivalent="the alignment padding holds every row's header")
    if not any(x.offset > t.offset for x in h.tensors):
        expect = Expect.of(Code.CONTAINER_EXTENT, f"{target}.offset")
    else:  # without the codec's header in the contract, the overlap is the layout stage's
        spans = [(x.name, x.start - (shrink if x.offset > t.offset else 0), x.end - (shrink if x.offset > t.offset
                  else 0)) for x in h.tensors]
        expect = _headers_short(plan, t, align_up(t.nbytes, a) - shrink) or oracle.layout(
            spans, h.data_offset, h.file_size - shrink, value_of(plan.alignment), plan.layout.policy())
    moved = [x._replace(offset=x.offset - shrink) if x.offset > t.offset else x for x in h.tensors]
    return Mutant("artifact", target, op, expect, lambda: (rebuild(h, tensors=moved)[0], h.file_size - shrink))


def _headers_short(plan: ArtifactPlan, t: TensorInfo, room: int) -> Expect | None:
    """The codec stage's finding when the next extent starts `room` bytes after `t`: its rows have
    their blocks but not all their headers (Note [Row headers] in charter.formats.ggml_types)."""
    header = next((c.header for c in plan.codecs if c.name == t.ggml_type.name), 0)
    rows = math.prod(t.dims) // t.dims[0]
    if header and t.nbytes - rows * header <= room < t.nbytes:
        return Expect.of(Code.CODEC_ROW_HEADER, f"codecs.{t.ggml_type.name}.header")
    return None


def _shape_expect(h: GGUFHeader, t: TensorInfo, dims: tuple, gtype, own: oracle.Ownership) -> Expect:
    found = oracle.tensor_geometry(dims, gtype, t.offset, h.data_offset, h.file_size, t.name)
    if found:
        return found
    if own.logits and own.logits[0] == t.name and own.logits[1] < len(dims) and own.logits[1] < len(t.dims) \
            and dims[own.logits[1]] != t.dims[own.logits[1]]:
        return Expect.of(Code.TOKENIZER_LOGITS_ROWS, "tokenizer.logits_rows")
    if len(dims) != len(t.dims):
        return Expect.of(Code.TENSOR_RANK, f"tensors.{t.name}.rank")
    j = next(i for i, (a, b) in enumerate(zip(dims, t.dims)) if a != b)
    return Expect.of(Code.TENSOR_SHAPE, f"tensors.{t.name}.shape[{j}]")




def _tensor_set(h: GGUFHeader, own: oracle.Ownership) -> Iterator[Mutant]:
    first = h.tensors[0] if h.tensors else None
    if first is not None:
        yield Mutant("artifact", f"tensors.{first.name}", "duplicate",
                     Expect.of(Code.CONTAINER_TENSOR_NAME, f"tensors[{len(h.tensors)}].name"),
                     lambda: rebuild(h, tensors=list(h.tensors) + [first]))
    f32 = GGML_TYPES_BY_NAME["F32"]
    extra = TensorInfo(EXTRA_TENSOR, (8,), f32, 0, 32, 0, h.data_offset)
    # Its extent overlays the data section; a file with (almost) none grows to hold it.
    yield Mutant("artifact", f"tensors.{EXTRA_TENSOR}", "extra tensor",
                 Expect.of(Code.TENSOR_UNEXPECTED, f"tensors.{EXTRA_TENSOR}"),
                 lambda: _holding(rebuild(h, tensors=list(h.tensors) + [extra]), extra.nbytes))
    last_end = max((t.offset + t.nbytes for t in h.tensors), default=0)  # relative to the data offset
    tail = -(-last_end // h.alignment) * h.alignment
    for name, patterns in own.exclusions:
        # A well-formed extra extent after the last one: nothing but the exclusion may reject it.
        smuggled = patterns[0].replace("*", "0").replace("?", "0")
        info = TensorInfo(smuggled, (8,), f32, tail, 32, 0, h.data_offset)
        yield Mutant("artifact", f"tensors.{smuggled}", f"smuggle excluded {name}",
                     Expect.of(Code.POLICY_EXCLUSION, f"exclusions.{name}"),
                     lambda i=info: _holding(rebuild(h, tensors=list(h.tensors) + [i]), tail + 32))
    long_name = "t" * 64
    yield Mutant("artifact", "tensors.<64-byte name>", "over-long name",
                 Expect.of(Code.CONTAINER_TENSOR_NAME, f"tensors[{len(h.tensors)}].name"),
                 lambda: rebuild(h, tensors=list(h.tensors) + [TensorInfo(long_name, (8,), f32, 0, 32, 0, 0)]))


def _holding(built: tuple[bytes, int], data_len: int) -> tuple[bytes, int]:
    """A rebuilt file grown, if need be, to hold `data_len` bytes after its data offset (the end of
    the serialized header)."""
    blob, size = built
    return blob, max(size, len(blob) + data_len)


def _boundary(h: GGUFHeader, plan: ArtifactPlan) -> Iterator[Mutant]:
    """Padded logits (AFN-005): physical rows and tokenizer ids are two facts; swapping one for the
    other must fail where each is stated."""
    t = plan.tokenizer
    ids, rows = (value_of(t.ids), value_of(t.logits_rows)) if t else (None, None)
    if ids is None or rows is None or ids == rows:
        return
    index = {x.name: i for i, x in enumerate(h.tensors)}
    if t.logits_tensor in index:
        info = h.tensors[index[t.logits_tensor]]
        dims = info.dims[:t.logits_axis] + (ids,) + info.dims[t.logits_axis + 1:]
        yield Mutant("artifact", f"tensors.{info.name}", f"logits rows {rows} -> tokenizer ids {ids}",
                     Expect.of(Code.TOKENIZER_LOGITS_ROWS, "tokenizer.logits_rows"),
                     lambda: rebuild(h, tensors=_replace_tensor(h, index[t.logits_tensor], dims=dims)))
    tokens = h.kvs.get(t.tokens_key) if t.tokens_key else None
    if tokens is not None and isinstance(tokens.value, GGUFArray) and tokens.value.count == ids:
        def padded():
            items = tokens.value.items()
            items += [f"<pad{i}>" for i in range(rows - ids)]
            return rebuild(h, kvs=_replace_kv(h, tokens, value=GGUFArray.from_items(tokens.value.elem_type, items)))

        yield Mutant("artifact", f"metadata.{t.tokens_key}", f"tokenizer ids {ids} -> logits rows {rows}",
                     Expect.of(Code.TOKENIZER_ARRAY_LENGTH, f"tokenizer.{t.tokens_key}.length"), padded)


def _layout_mutants(h: GGUFHeader, plan: ArtifactPlan) -> Iterator[Mutant]:
    ordered = sorted(range(len(h.tensors)), key=lambda i: h.tensors[i].start)
    if len(ordered) >= 2:
        a, b = ordered[0], ordered[1]
        ta, tb = h.tensors[a], h.tensors[b]
        spans = [(x.name, ta.start if i == b else x.start, (ta.start + tb.nbytes) if i == b else x.end)
                 for i, x in enumerate(h.tensors)]
        yield Mutant("artifact", f"tensors.{tb.name}", "alias neighbour offset",
                     oracle.layout(spans, h.data_offset, h.file_size, value_of(plan.alignment), plan.layout.policy()),
                     lambda: rebuild(h, tensors=_replace_tensor(h, b, offset=ta.offset)))
    last = h.tensors[ordered[-1]] if ordered else None
    if last is not None:
        past = -(-(h.file_size - h.data_offset) // h.alignment) * h.alignment
        yield Mutant("artifact", f"tensors.{last.name}", "extent past end of file",
                     Expect.of(Code.CONTAINER_EXTENT, f"tensors.{last.name}.offset"),
                     lambda: rebuild(h, tensors=_replace_tensor(h, ordered[-1], offset=past)))
    if h.file_size > h.data_offset:  # else nothing follows the header to cut (a tensor-less file)
        yield Mutant("artifact", "file", "truncate data by 1 byte",
                     Expect.of(Code.CONTAINER_EXTENT, f"tensors.{last.name}.offset") if last is not None
                     and last.end == h.file_size else oracle.layout(
                         [(x.name, x.start, x.end) for x in h.tensors], h.data_offset, h.file_size - 1,
                         value_of(plan.alignment), plan.layout.policy()),
                     lambda: (rebuild(h)[0], h.file_size - 1))
    yield Mutant("artifact", "file", "append trailing bytes",
                 oracle.layout([(x.name, x.start, x.end) for x in h.tensors], h.data_offset,
                               h.file_size + h.alignment, value_of(plan.alignment), plan.layout.policy()),
                 lambda: (rebuild(h)[0], h.file_size + h.alignment))
