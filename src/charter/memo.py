"""Values kept per object, by identity (Note [Identity memo]).

Note [Identity memo]
~~~~~~~~~~~~~~~~~~~~
A mutation battery meets the same immutable objects in thousands of mutants: the resolved tensor
rows of its contract (charter.contract.checks hands out one TensorFact per resolved row), the
records and string arrays of its parsed header. What is computed from one (its literal, its
bytes, its digest, the tensors it stands for) is kept under its id together with the object
itself: the memo keeps the object alive, so its id is never another object's, and an entry is used
only for the very object it was made from. Hashing by value would cost what the memo saves (a
row's dims, a 1.7 MB vocabulary). A memo holds at most `bound` entries and forgets them all at
once past it: a battery's working set is one contract and one header. A table asked for whole
(`each`) is compared with the last one asked for, position by position: a mutant's table is its
neighbour's but for a row or two, so only the rows at other positions are looked up (all of them,
in C, when there are more than a few).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress, count, repeat
from operator import is_not, itemgetter
from typing import Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V")

_MISS = (None, None)
_FEW = 16  # positions where a table differs from the last, beyond which its values are looked up in C
_OBJECT, _VALUE = itemgetter(0), itemgetter(1)


class IdMemo(Generic[T, V]):
    """`make(obj)`, once per object (Note [Identity memo])."""

    __slots__ = ("_make", "_bound", "_kept", "_last")

    def __init__(self, make: Callable[[T], V], bound: int = 1 << 18) -> None:
        self._make, self._bound = make, bound
        self._kept: dict[int, tuple[T, V]] = {}
        self._last: tuple[tuple[T, ...], list[V]] = ((), [])  # the last table `each` was given, its values

    def __call__(self, obj: T) -> V:
        kept = self._kept.get(id(obj))
        if kept is None or kept[0] is not obj:
            if len(self._kept) >= self._bound:
                self._kept.clear()
            kept = self._kept[id(obj)] = (obj, self._make(obj))
        return kept[1]

    def each(self, objs: tuple[T, ...] | list[T]) -> list[V]:
        """`[self(o) for o in objs]`: the last table's values where it holds the same object, the
        kept values looked up in C elsewhere (Note [Identity memo])."""
        last_objs, last_values = self._last
        differ = list(compress(count(), map(is_not, objs, last_objs))) if len(objs) == len(last_objs) else None
        if differ is not None and len(differ) <= _FEW:
            values = last_values.copy()
            for i in differ:
                values[i] = self(objs[i])
        else:
            kept = list(map(self._kept.get, map(id, objs), repeat(_MISS)))
            for i in compress(count(), map(is_not, objs, map(_OBJECT, kept))):  # new, or another at that id
                kept[i] = (objs[i], self(objs[i]))
            values = list(map(_VALUE, kept))
        self._last = (tuple(objs), values)
        return values.copy()

    def clear(self) -> None:
        self._kept.clear()
        self._last = ((), [])
