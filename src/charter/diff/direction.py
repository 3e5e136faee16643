"""Which way a set of changed checks moves: added, removed, narrowed, widened, or replaced.

charter.mutation.expect.added_and_removed says which checks changed (Note [Diff by checks] in
charter.diff.classify); this module only orders them. A check that is gone with no check of the
same kind and subject in its place was removed; one that is new with none it replaces was added.
A replaced check is narrowed or widened where its kind has a subset order the diff knows (stop
ids, the metadata key policy, the excluded patterns); any other replacement changed its literals,
and whether NEW rejects everything OLD rejects is not known from the checks alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from charter.contract import checks
from charter.contract.checks import Check


class Move(str, Enum):
    ADDED = "added"
    REMOVED = "removed"
    NARROWED = "narrowed"
    WIDENED = "widened"
    CHANGED = "changed"


@dataclass(frozen=True)
class Moves:
    """The changed checks of one leaf on one artifact contract, each with how it moved."""

    items: tuple[tuple[Move, Check], ...] = field(default=())

    def has(self, move: Move) -> bool:
        return any(m is move for m, _ in self.items)


def moves(added: list[Check], removed: list[Check]) -> Moves:
    """`added` and `removed` as charter.mutation.expect.added_and_removed compares them."""
    by_subject = {_subject(c): c for c in removed}
    out: list[tuple[Move, Check]] = []
    paired: set[int] = set()
    for c in added:
        previous = by_subject.get(_subject(c))
        if previous is None:
            out.append((Move.ADDED, c))
        else:
            paired.add(id(previous))
            out.append((_order(previous, c), c))
    out.extend((Move.REMOVED, c) for c in removed if id(c) not in paired)
    return Moves(tuple(out))


def describe(c: Check) -> str:
    """A check as `charter mutate --trace` names it: `check_STAGE: ctx.METHOD(SUBJECT)`."""
    subject = _subject(c)
    return f"check_{c.stage.value}: ctx.{c.method}({subject[2]!r})" if len(subject) == 3 \
        else f"check_{c.stage.value}: ctx.{c.method}('table')"


def _subject(c: Check) -> tuple:
    """A check's kind and what it is about: two checks with one subject are one check, replaced."""
    for name in ("key", "name", "tensor", "file"):
        if hasattr(c, name) and not isinstance(c, checks.SpecialId):
            return type(c), c.stage, getattr(c, name)
    if isinstance(c, checks.SpecialId):
        return type(c), c.stage, c.name
    return type(c), c.stage


def _order(old: Check, new: Check) -> Move:
    """How a replaced check moved, where its kind has an order; CHANGED otherwise."""
    match old, new:
        case checks.StopId(), checks.StopId():
            return _sets(set(old.ids), set(new.ids), wider_is_more=True)
        case checks.Exclude(), checks.Exclude():
            return _sets(set(old.patterns), set(new.patterns), wider_is_more=True)
        case checks.MetaKeySet(), checks.MetaKeySet() if old.pinned == new.pinned:
            before, after = {k for k, _ in old.forbidden}, {k for k, _ in new.forbidden}
            parts = {_sets(before, after, wider_is_more=False)} if before != after else set()
            if old.extra != new.extra:
                parts.add(Move.WIDENED if new.extra == "allow" else Move.NARROWED)
            return parts.pop() if len(parts) == 1 else Move.CHANGED
    return Move.CHANGED


def _sets(old: set, new: set, wider_is_more: bool) -> Move:
    """A set that grew admits more when `wider_is_more` (stop ids), less otherwise (forbidden keys)."""
    if old == new:
        return Move.CHANGED  # the same members in another order, or another location
    if old <= new:
        return Move.WIDENED if wider_is_more else Move.NARROWED
    if new <= old:
        return Move.NARROWED if wider_is_more else Move.WIDENED
    return Move.CHANGED
