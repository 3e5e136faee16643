"""Value mutants: a NaN, an infinity or a signalling NaN written into the payload of the
conforming artifact, where the contract's value policy checks it (Note [Value rules]).

Every tensor the policy checks gets mutants in its first block's first value field and its last
block's last value field (for a float tensor: its first and last element): two per tensor, the
four bad kinds rotating over the tensors of a codec so that each kind lands first and last in
every codec (a codec of fewer than four tensors gets all four kinds at both ends of each).
Each must be rejected at `payload` with PAYLOAD_VALUE and the field naming that tensor, block and
field, before any digest: the value is the more precise owner of its bytes. One acceptance
control per codec flips the lowest mantissa bit of a finite value: the policy admits it (finite
is not correct), so with a pinned digest the digest rejects it, and without one it is admitted.
The control is in the codec's last tensor in the file: a file digest sees it only at the end of
the file, and the payload stage streams from the changed tensor on (Note [Verified prefix]), so
a control there streams the least (a battery's cost per mutant stays that of its header, not of
its file: three controls near the start streamed about three times the file).

Every tensor a bound checks (Note [Value bounds]) gets, per bounded side, the value one past the
bound (min - 1, max + 1) in its first and its last element, each rejected at `payload` with
PAYLOAD_BOUND and the field naming that element; a side at the codec's own extreme has no value
one past it, and its mutants are declared equivalent, with that reason. Two acceptance controls
per bounded tensor write a value exactly at each bound (max into the first element, min into the
last, or the other end where that element holds the bound already): admitted by the bound,
rejected by a pinned digest.

The mutants are byte patches over the data section (`make()` returns the unchanged header, the
file size and the patches), read by the payload stage through the battery's overlay reader:
the 98 MB file is never copied. The tensors the policy checks are predicted here, from the
plan's rules, not by the runtime's own selection.
"""

from __future__ import annotations

import fnmatch
import struct
from collections import Counter
from collections.abc import Iterator

from charter.contract.plan import ArtifactPlan
from charter.diagnostics import Code
from charter.formats.ggml_types import GGML_TYPES_BY_NAME
from charter.formats.safetensors import DTYPE_BITS
from charter.formats.values import INTEGER_ELEMENTS, VALUE_FIELDS, IntegerElement, ValueField
from charter.mutation.mutant import Expect, Mutant

KINDS = ("NaN", "+Inf", "-Inf", "sNaN")
TARGET = "values."  # the target prefix of every value mutant: the battery admits them with the payload stage


def is_value_mutant(m: Mutant) -> bool:
    """A value mutant runs the payload stage, over the battery's overlay of its patched bytes."""
    return m.side == "artifact" and m.target.startswith(TARGET)
_BITS = {  # kind -> (f16, bf16, f32, f64) bit patterns
    "NaN": (0x7E00, 0x7FC0, 0x7FC00000, 0x7FF8000000000000),
    "+Inf": (0x7C00, 0x7F80, 0x7F800000, 0x7FF0000000000000),
    "-Inf": (0xFC00, 0xFF80, 0xFF800000, 0xFFF0000000000000),
    "sNaN": (0x7C01, 0x7F81, 0x7F800001, 0x7FF0000000000001),
}


def bad_bytes(kind: str, f: ValueField, original: bytes) -> bytes:
    """The bytes of a bad value of `kind` in field `f` (whose current bytes are `original`)."""
    f16, bf16, f32, f64 = _BITS[kind]
    match f.kind:
        case "f16":
            return struct.pack("<H", f16)
        case "bf16":
            return struct.pack("<H", bf16)
        case "f32":
            return struct.pack("<I", f32)
        case "f64":
            return struct.pack("<Q", f64)
        case "e8m0":
            return b"\xff"  # e8m0 has one bad encoding, whatever the kind
        case "iq1m":  # the f16 scale is the top nibble of each of the four uint16 words
            words = list(struct.unpack("<4H", original))
            return struct.pack("<4H", *((w & 0x0FFF) | ((f16 >> (4 * k)) & 0xF) << 12 for k, w in enumerate(words)))
    raise ValueError(f.kind)


def checked_tensors(plan: ArtifactPlan, tensors) -> Iterator[tuple]:
    """(tensor, codec's value fields, block bytes, rule) for every tensor the policy checks."""
    fields = VALUE_FIELDS[plan.format]
    for t in tensors:
        rule = next((r for r in plan.values if any(fnmatch.fnmatchcase(t.name, p) for p in r.patterns)), None)
        if rule is not None and rule.check and fields.get(t.codec):
            size = GGML_TYPES_BY_NAME[t.codec].block_bytes if plan.format == "gguf" else DTYPE_BITS[t.codec] // 8
            yield t, fields[t.codec], size, rule


def mutants(view, raw: bytes, plan: ArtifactPlan, read_at) -> Iterator[Mutant]:
    """`read_at(offset, length)`: the conforming artifact's bytes (for the iq1m words and the
    controls' finite values)."""
    checked = list(checked_tensors(plan, view.tensors))
    per_codec = Counter(t.codec for t, *_ in checked)
    seen: Counter = Counter()
    last = {t.codec: t for t, *_ in sorted(checked, key=lambda row: row[0].start)}  # codec -> where its control goes
    for t, fields, block_bytes, _ in checked:
        i = seen[t.codec]
        seen[t.codec] += 1
        blocks = (t.end - t.start) // block_bytes
        for position, block, f, kind in _positions(i, per_codec[t.codec], blocks, fields):
            offset = t.start + block * block_bytes + f.offset
            patch = bad_bytes(kind, f, read_at(offset, 8))
            field = f"values.{t.name}[{block}]" if f.name == "value" else f"values.{t.name}.blocks[{block}].{f.name}"
            yield Mutant("artifact", f"{TARGET}{t.name}.{position}.{f.name}", f"write {kind}",
                         Expect.of(Code.PAYLOAD_VALUE, field),
                         lambda o=offset, p=patch: (raw, view.file_size, {o: p}))
        if t is last[t.codec] and fields[0].kind in ("f16", "bf16", "f32", "f64"):
            yield _control(plan, view, raw, t, fields[0], read_at)
    for t, element, rule in bounded_tensors(plan, view.tensors):
        yield from _bound_mutants(plan, view, raw, t, element, rule, read_at)


def bounded_tensors(plan: ArtifactPlan, tensors) -> Iterator[tuple]:
    """(tensor, its integer element, its bound) for every tensor a bound of the policy checks."""
    integers = INTEGER_ELEMENTS[plan.format]
    for t in tensors:
        rule = next((r for r in plan.bounds if any(fnmatch.fnmatchcase(t.name, p) for p in r.patterns)), None)
        if rule is not None and t.codec in integers:
            yield t, integers[t.codec], rule


def _element(e: IntegerElement, value: int) -> bytes:
    return value.to_bytes(e.bytes, "little", signed=e.kind[0] == "i")


def _bound_mutants(plan: ArtifactPlan, view, raw: bytes, t, e: IntegerElement, rule, read_at) -> Iterator[Mutant]:
    n = (t.end - t.start) // e.bytes
    if n == 0:
        return  # no element: a bound holds vacuously, and no byte can break it
    for side, bound, past in (("min", rule.min, None if rule.min is None else rule.min - 1),
                              ("max", rule.max, None if rule.max is None else rule.max + 1)):
        if bound is None:
            continue
        for position, index in (("first", 0), ("last", n - 1)):
            target, op = f"{TARGET}{t.name}.{position}.{side}", f"write {side} {'-' if side == 'min' else '+'} 1"
            if not e.lo <= past <= e.hi:
                extreme = "least" if side == "min" else "greatest"
                yield Mutant("artifact", target, op, None,
                             equivalent=f"{side} {bound} is the {extreme} value of {t.codec}: no element lies past it")
                continue
            offset = t.start + index * e.bytes
            yield Mutant("artifact", target, op, Expect.of(Code.PAYLOAD_BOUND, f"values.{t.name}[{index}]"),
                         lambda o=offset, p=_element(e, past): (raw, view.file_size, {o: p}))
    ends = {"first": 0, "last": n - 1}
    held = {position: int.from_bytes(read_at(t.start + i * e.bytes, e.bytes), "little", signed=e.kind[0] == "i")
            for position, i in ends.items()}
    for side, bound, order in (("max", rule.max, ("first", "last")), ("min", rule.min, ("last", "first"))):
        position = next((p for p in order if bound is not None and held[p] != bound), None)
        if position is not None:  # the control changes a byte: an element that holds the bound already would not
            offset, patch = t.start + ends[position] * e.bytes, _element(e, bound)
            yield Mutant("artifact", f"{TARGET}{t.name}.{position}.{side}", f"write {side} {bound} (at the bound)",
                         _digest_expect(plan, t), lambda o=offset, p=patch: (raw, view.file_size, {o: p}))


def _digest_expect(plan: ArtifactPlan, t) -> Expect | None:
    """What a finite (or in-bounds) change of tensor `t`'s bytes meets: its digest or the file's
    when one is pinned, else admission."""
    if plan.payload is None:
        return None
    if any(d.tensor == t.name for d in plan.payload.tensors):
        return Expect.of(Code.PAYLOAD_DIGEST, f"payload.tensors.{t.name}")
    if plan.payload.file_sha256 is not None:
        return Expect.of(Code.PAYLOAD_FILE_DIGEST, "payload.file_sha256")
    return None


def _positions(i: int, of: int, blocks: int, fields: tuple[ValueField, ...]):
    """(position, block, field, kind) of the mutants of the i-th of `of` tensors of one codec: the
    kinds rotate over the codec's tensors, so every kind lands first and last in every codec;
    a codec with fewer than four tensors gets every kind at both ends of each."""
    kinds = [(KINDS[i % 4], KINDS[(i + 1) % 4])] if of >= 4 else list(zip(KINDS, KINDS))
    for first, last in kinds:
        yield "first", 0, fields[0], first
        yield "last", blocks - 1, fields[-1], last


def _control(plan: ArtifactPlan, view, raw: bytes, t, f: ValueField, read_at) -> Mutant:
    """The lowest mantissa bit of a finite value flipped: finite still, so only a digest sees it."""
    offset = t.start + f.offset
    original = read_at(offset, 1)
    patch = bytes([original[0] ^ 0x01])
    return Mutant("artifact", f"{TARGET}{t.name}.first.{f.name}", "flip mantissa bit (finite)", _digest_expect(plan, t),
                  lambda: (raw, view.file_size, {offset: patch}))
