"""Which facts of the conforming artifact an artifact mutant changes, in the vocabulary of
charter.contract.checks.reads (Note [Verdict cache] in charter.mutation.cache).

The mutant's header is parsed by charter's own reader and its facts compared with the
conforming file's: whatever a check can read of a parsed header is one of these facts, so a
fact left equal is read as the conforming file's. A mutant the reader refuses changes
EVERYTHING; one that differs from the conforming file at all also changes ("file",).

Most mutant headers hold the conforming view's very tensor entries but at a position or two
(Note [Finished records] in charter.formats.gguf): when the data start, the file size and the
tensor count are the conforming ones and the entries at those positions keep their names, every
tensor fact is compared at those positions alone (a shared entry holds equal facts), the others
as always (_moved_entries).
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter, eq, ne, sub
from typing import NamedTuple

from charter.admission.view import ArtifactView, parse_view
from charter.contract.checks import EVERYTHING, Fact
from charter.diagnostics import CharterError
from charter.edits import edit
from charter.formats.gguf import GGUFArray
from charter.memo import IdMemo, changed_at

FILE: Fact = ("file",)
UNREAD = object()  # changed(): no parsed view at hand
_ABSENT = object()


class Facts(NamedTuple):
    """A parsed header's facts and their values; the tensors' (("tensor", name): shape and codec,
    as many as the header has tensors) as columns in file order, compared in C."""

    general: dict[Fact, object]
    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    codecs: tuple[str, ...]
    view: ArtifactView  # what they were read from

    def tensor_facts(self) -> dict[str, tuple]:
        """(shape, codec) by name, of the first tensor of a name, as the checks find it."""
        return dict(zip(reversed(self.names), zip(reversed(self.shapes), reversed(self.codecs))))


def facts_of(view: ArtifactView, buf, modulus: int, held: frozenset[str] | None = None) -> Facts:
    """Each fact of a parsed header and its value; `modulus`: the conforming file's alignment,
    the only way the layout stage reads the data offset; `held`: the conforming file's keys
    (None: this is it), as the key set check reads them (charter.contract.checks.reads)."""
    d = view.data_offset
    tensors = view.tensors
    names = tuple(map(_NAME, tensors))
    out = _header_facts(view, buf, frozenset(view.meta) if held is None else held)
    out[("tensor-list",)] = names
    starts, ends = (tuple(map(sub, map(f, tensors), repeat(d))) for f in (_START, _END))
    out[("extents",)] = (starts, ends, view.file_size - d, d % modulus)
    return Facts(out, names, tuple(map(_SHAPE, tensors)), tuple(map(_CODEC, tensors)), view)


def _header_facts(view: ArtifactView, buf, held: frozenset[str]) -> dict[Fact, object]:
    """The facts that are not the tensors' (_TENSOR_FACTS)."""
    out: dict[Fact, object] = {
        ("format",): view.format, ("version",): view.version, ("alignment",): view.alignment,
        ("header_aligned",): view.header_len_aligned, ("keys",): tuple(k for k in view.meta if k not in held),
    }
    out.update((("meta", key), record) for key, record in _records(view, buf).items())
    return out


_TENSOR_FACTS = frozenset({("tensor-list",), ("extents",)})  # and each ("tensor", name)


_NAME, _START, _END, _SHAPE, _CODEC = (attrgetter(f) for f in ("name", "start", "end", "shape", "codec"))
_SHAPE_AND_CODEC = attrgetter("shape", "codec")


def _records(view: ArtifactView, buf) -> dict[str, object]:
    """Each metadata key's type and value, exactly as stored: a float's bits, an array's elements."""
    if view.format != "gguf":
        return dict(view.header.metadata or {})  # safetensors: strings
    out = {}
    for key, kv in view.header.kvs.items():
        v = kv.value
        out[key] = ((kv.type, v.elem_type, v.count, v.raw) if isinstance(v, GGUFArray)
                    else bytes(buf[kv.value_offset - 4:kv.end]))  # the type tag, then the value
    return out


def changed(conforming: Facts, raw_header: bytes, file_size: int, fmt: str, accepted, modulus: int,
            made: tuple, view: ArtifactView | None | object = UNREAD) -> frozenset[Fact]:
    """The facts the file `made` (a mutant's header, size and data patches) changes; `view`: its
    header as the admission run parsed it (None: the reader refused it), else parsed here."""
    buf, size = made[0], made[1]
    patches = made[2] if len(made) > 2 else {}
    if size == file_size and (buf is raw_header or edit(raw_header, buf).unchanged):  # compared once per header
        return frozenset({FILE}) if patches else frozenset()
    if view is UNREAD:
        try:
            view = parse_view(buf, size, fmt, accepted)
        except CharterError:
            view = None
    if view is None:
        return EVERYTHING
    moved = _moved_entries(conforming, view)
    was = conforming.general
    if moved is None:
        mutant = facts_of(view, buf, modulus, _held(conforming))
        return frozenset({FILE, *_differing(was, mutant.general, was.keys() | mutant.general.keys()),
                          *zip(repeat("tensor"), _changed_tensors(conforming, mutant))})
    now = _header_facts(view, buf, _held(conforming))
    mine, theirs = moved
    extents = any(map(ne, map(_START, mine), map(_START, theirs))) or any(map(ne, map(_END, mine), map(_END, theirs)))
    tensors = compress(map(_NAME, mine), map(ne, map(_SHAPE_AND_CODEC, mine), map(_SHAPE_AND_CODEC, theirs)))
    return frozenset({FILE, *_differing(was, now, (was.keys() - _TENSOR_FACTS) | now.keys()),
                      *([("extents",)] if extents else []), *zip(repeat("tensor"), tensors)})


def _differing(was: dict, now: dict, facts) -> list[Fact]:
    return [f for f in facts if was.get(f, _ABSENT) != now.get(f, _ABSENT)]


def _moved_entries(conforming: Facts, view: ArtifactView) -> tuple[list, list] | None:
    """The tensor entries of `view` that are not the conforming view's, and the conforming ones at
    their positions, if it has as many, the same data start and file size, each of those keeps its
    name, and the conforming names are distinct (so the tensor facts compare by position, as in
    _changed_tensors); else None."""
    theirs, mine = conforming.view.tensors, view.tensors
    if len(mine) != len(theirs) or view.data_offset != conforming.view.data_offset \
            or view.file_size != conforming.view.file_size or not _distinct(conforming):
        return None
    at = changed_at(mine, theirs)
    if not all(map(eq, map(_NAME, map(mine.__getitem__, at)), map(_NAME, map(theirs.__getitem__, at)))):
        return None  # a renamed tensor: found at the first entry that differs, most often
    return list(map(mine.__getitem__, at)), list(map(theirs.__getitem__, at))


def _changed_tensors(conforming: Facts, mutant: Facts) -> set[str]:
    """The names whose tensor fact differs: by position when both files name the same tensors in
    the same order, once each (the first of a name is then the only one), else name by name."""
    names = conforming.names
    if mutant.names == names and _distinct(conforming):
        return {*compress(names, map(ne, mutant.shapes, conforming.shapes)),
                *compress(names, map(ne, mutant.codecs, conforming.codecs))}
    return {name for name, _ in _tensor_facts(conforming).items() ^ mutant.tensor_facts().items()}


_held = IdMemo(lambda conforming: frozenset(f[1] for f in conforming.general if f[0] == "meta"), bound=1)
_distinct = IdMemo(lambda conforming: len(set(conforming.names)) == len(conforming.names), bound=1)
_tensor_facts = IdMemo(Facts.tensor_facts, bound=1)  # the conforming file's, once per battery


def touches(reads: frozenset[Fact], facts: frozenset[Fact]) -> bool:
    """Whether a check reading `reads` reads one of `facts` (a fact is every fact it prefixes)."""
    return any(r[:len(f)] == f or f[:len(r)] == r for r in reads for f in facts)
