"""Where a mutated fact must be rejected, predicted from the contract plan and the format rules.

The predictions are written from the rules of Note [Ordered admission] and the container formats,
not by running a checker: the battery compares them with what the generated checker does.
"""

from __future__ import annotations

import bisect
import fnmatch
from dataclasses import dataclass

from charter.diagnostics import Code, Finding, Stage, code_for
from charter.formats.ggml_types import GGMLType
from charter.mutation.mutant import Expect
from charter.contract.plan import ArtifactPlan

ANY_CONTAINER = Expect(Stage.CONTAINER)


@dataclass(frozen=True)
class Ownership:
    """Which stage owns each metadata key's value, from the plan."""

    identity: frozenset[str]
    metadata_owned: dict  # key -> MetaCheck
    special: dict  # key -> special name
    stops: frozenset[str]
    stop_ids: tuple[int, ...]
    tokens_key: str | None
    logits: tuple[str, int] | None
    extra_keys: str
    exclusions: tuple[tuple[str, tuple[str, ...]], ...]
    pinned: frozenset[str]

    @classmethod
    def of(cls, plan: ArtifactPlan) -> "Ownership":
        t = plan.tokenizer
        return cls(
            identity=frozenset(m.key for m in plan.identity),
            metadata_owned={m.key: m for m in plan.metadata},
            special={s.key: s.name for s in t.special} if t else {},
            stops=frozenset(s.key for s in t.stop_keys) if t else frozenset(),
            stop_ids=t.stop_ids if t else (),
            tokens_key=t.tokens_key if t else None,
            logits=(t.logits_tensor, t.logits_axis) if t and t.logits_tensor else None,
            extra_keys=plan.extra_keys.value,
            exclusions=tuple((e.name, e.patterns) for e in plan.exclusions),
            pinned=frozenset(m.key for m in plan.identity + plan.metadata),
        )

    def value_change(self, key: str, new_value: object) -> Expect | None:
        """A scalar value changed; None when nothing pins it (with extra_keys: allow)."""
        if key in self.identity:
            code = Code.IDENTITY_ARCHITECTURE if key.endswith(".architecture") else Code.IDENTITY_MISMATCH
            return Expect.of(code, f"identity.{key}")
        fact = self.metadata_owned.get(key)
        if fact is None:
            return None
        stage = fact.stage
        if key in self.special:
            return Expect.of(Code.TOKENIZER_SPECIAL_ID, f"tokenizer.special.{self.special[key]}")
        if key in self.stops:
            if new_value in self.stop_ids:
                return None
            return Expect.of(Code.TOKENIZER_STOP_ID, f"tokenizer.stop.{key}")
        if fact.sha256 is not None:
            return Expect.of(code_for(stage, Finding.DIGEST), f"{stage}.{key}.sha256")
        return Expect.of(code_for(stage, Finding.VALUE), f"{stage}.{key}")

    def missing(self, key: str) -> Expect | None:
        if key in self.identity:
            return Expect.of(Code.IDENTITY_MISSING, f"identity.{key}")
        if key in self.pinned:
            return Expect.of(Code.METADATA_MISSING, f"metadata.{key}")
        return None

    def extra(self, key: str) -> Expect | None:
        return Expect.of(Code.METADATA_UNEXPECTED, f"metadata.{key}") if self.extra_keys == "reject" else None

    def excluded(self, name: str) -> str | None:
        for exclusion, patterns in self.exclusions:
            if any(fnmatch.fnmatchcase(name, p) for p in patterns):
                return exclusion
        return None


def row_ends(plan: ArtifactPlan) -> list[str]:
    """The first and the last tensor of every contract row, each name once, in row order: where
    tensor operators run (a `{i}` pattern states one fact for every index; its first and last
    members exercise it). One pass over the plan's tensors, not one per row."""
    members: dict[tuple, list[str]] = {}  # a row's (location, role) -> its tensors' names, in plan order
    for t in plan.tensors:
        members.setdefault((t.location, t.role), []).append(t.name)
    ends: dict[str, None] = {}
    for row in plan.tensor_rows.value:
        names = members.get((row.location, row.role), [])
        ends.update(dict.fromkeys(names[:1] + names[-1:]))
    return list(ends)


def tensor_geometry(dims: tuple[int, ...], gtype: GGMLType, offset: int, data_offset: int, file_size: int,
                    name: str) -> Expect | None:
    """What the GGUF reader rejects about one tensor record, in the order it reads it."""
    if not 1 <= len(dims) <= 4:
        return Expect.of(Code.CONTAINER_TENSOR_RANK, f"tensors.{name}.n_dims")
    if any(d < 1 for d in dims):
        return Expect.of(Code.CONTAINER_TENSOR_DIM, f"tensors.{name}.dims")
    if dims[0] % gtype.block_size:
        return Expect.of(Code.CONTAINER_TENSOR_BLOCK, f"tensors.{name}.dims")
    n = 1
    for d in dims:
        n *= d
    if data_offset + offset + gtype.nbytes(n, dims[0]) > file_size:
        return Expect.of(Code.CONTAINER_EXTENT, f"tensors.{name}.offset")
    return None


def layout(spans: list[tuple[str, int, int]], data_offset: int, file_size: int, alignment: int | None,
           policy: dict) -> Expect | None:
    """The first layout rule a set of extents breaks (spans in header order: name, start, end)."""
    if alignment:
        for name, start, _ in spans:
            if (start - data_offset) % alignment:
                return _broken(Code.LAYOUT_ALIGNMENT, name)
    if policy["sorted"]:
        for (_, prev, _), (name, start, _) in zip(spans, spans[1:]):
            if start < prev:
                return _broken(Code.LAYOUT_ORDER, name)
    ordered = sorted(spans, key=lambda s: (s[1], s[2]))
    for (_, _, prev_end), (name, start, _) in zip(ordered, ordered[1:]):
        if start < prev_end:
            return _broken(Code.LAYOUT_OVERLAP, name)
    step = alignment or 1
    if policy["packed"]:
        cursor = data_offset
        for name, start, end in ordered:
            if not _packed_after(cursor, start, data_offset, step):
                return _broken(Code.LAYOUT_GAP, name)
            cursor = end
    return _trailing(ordered[-1][2] if ordered else data_offset, file_size, step, policy)


def _broken(code: Code, name: str) -> Expect:
    return Expect.of(code, f"tensors.{name}.offset")


def _packed_after(cursor: int, start: int, data_offset: int, step: int) -> bool:
    """Whether an extent starting at `start` is where packing puts the one after `cursor` (the
    previous extent's end, or the data section's start, where the first may also start unaligned)."""
    return start == -(-cursor // step) * step or (cursor == data_offset and start == cursor)


def _trailing(end: int, file_size: int, step: int, policy: dict) -> Expect | None:
    """What the trailing rule says of a file whose last extent ends at `end`."""
    if (policy["trailing"] == "reject" and file_size != end) or (
            policy["trailing"] == "alignment" and file_size > -(-end // step) * step):
        return Expect.of(Code.LAYOUT_TRAILING, "layout.trailing")
    return None


class ShiftedLayout:
    """`layout` of a header's extents with one of them moved later (a tensor's "offset
    +alignment" mutant), worked out from the extents next to it where the header's own extents
    break no rule: then only the moved one can break alignment, order, overlap or packing, the
    first break is beside it or where it was, and the last extent is it or the last of the others.
    Sorting every extent again per mutant made generation quadratic in the tensor count (0.65 s at
    1,000 tensors, 3.4 s at 3,000). A header that breaks a rule itself is judged by `layout`, and
    so is a packed layout where the extent now at the moved one's place is still where packing puts
    it (an unaligned first extent can be)."""

    def __init__(self, spans: list[tuple[str, int, int]], data_offset: int, file_size: int,
                 alignment: int | None, policy: dict) -> None:
        self.spans, self.args = spans, (data_offset, file_size, alignment, policy)
        self.keys = sorted((start, end, i) for i, (_, start, end) in enumerate(spans))  # extent order, stable
        self.starts = [key[0] for key in self.keys]
        self.place = {key[2]: r for r, key in enumerate(self.keys)}
        self.valid = layout(spans, *self.args) is None

    def moved(self, index: int, shift: int) -> Expect | None:
        """layout() of the extents with extent `index` `shift` > 0 bytes later."""
        name, start, end = self.spans[index]
        data_offset, file_size, alignment, policy = self.args
        if not self.valid or shift <= 0:
            return self._whole(index, shift)
        new = (start + shift, end + shift, index)
        if alignment and (new[0] - data_offset) % alignment:
            return _broken(Code.LAYOUT_ALIGNMENT, name)
        if policy["sorted"] and index + 1 < len(self.spans) and self.spans[index + 1][1] < new[0]:
            return _broken(Code.LAYOUT_ORDER, self.spans[index + 1][0])
        was, others = self.place[index], len(self.keys) - 1
        at = bisect.bisect_left(self.keys, new) - 1  # its place among the others (its own key sorts before)

        def other(r: int) -> tuple[int, int, int]:
            """The r-th of the other extents in extent order."""
            return self.keys[r if r < was else r + 1]

        if at > 0 and new[0] < other(at - 1)[1]:
            return _broken(Code.LAYOUT_OVERLAP, name)
        if at < others and other(at)[0] < new[1]:
            return _broken(Code.LAYOUT_OVERLAP, self.spans[other(at)[2]][0])
        step = alignment or 1
        if policy["packed"]:  # everything before where it was is packed as before
            first, cursor = (new if at == was else other(was)), (other(was - 1)[1] if was else data_offset)
            if _packed_after(cursor, first[0], data_offset, step):
                return self._whole(index, shift)
            return _broken(Code.LAYOUT_GAP, self.spans[first[2]][0])
        last = new[1] if at == others else other(others - 1)[1]
        return _trailing(last, file_size, step, policy)

    def _whole(self, index: int, shift: int) -> Expect | None:
        name, start, end = self.spans[index]
        spans = self.spans.copy()
        spans[index] = (name, start + shift, end + shift)
        return layout(spans, *self.args)
