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
in C, when there are more than a few); a table a few rows shorter or longer keeps the last one's
values for the rows it shares at its head and at its tail. A table whose objects are mostly seen once, where a
neighbour's are not (the records a mutant's header moved), is mapped by a BaseMemo instead: the
first table's values where the very object sits at the same position, nothing else kept.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress, count, repeat
from operator import is_not, itemgetter
from typing import Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V")

_MISS = (None, None)
FEW = 16  # positions where a table differs from the last, beyond which its values are looked up in C
_OBJECT, _VALUE = itemgetter(0), itemgetter(1)


def changed_at(objs, others) -> list[int]:
    """The positions, within the shorter of the two, where `objs` and `others` hold different
    objects, as a mutant's table is compared with the one it was made from: by charter._native,
    which compares the pointers (1 us for 1,000 rows, where the mapped `is_not` below takes 26, and
    a battery compares a dozen tables per mutant), else in Python: short tables too, in as little
    time, and a one-off admission never compares a long one (it would import the module for it);
    nor a table with itself."""
    if objs is others:
        return []
    if len(objs) < _NATIVE_FROM or len(others) < _NATIVE_FROM:
        return _python_changed_at(objs, others)
    return _CHANGED_AT[0](objs, others)


def _python_changed_at(objs, others) -> list[int]:
    return list(compress(count(), map(is_not, objs, others)))


def _first_changed_at(objs, others) -> list[int]:
    """changed_at's first call picks its implementation: importing charter._native costs an
    admission that never compares tables (every one-off admission) a few milliseconds."""
    try:
        from charter._native import changed_at as native
    except ImportError:  # pragma: no cover - depends on the install
        native = _python_changed_at
    _CHANGED_AT[0] = native
    return native(objs, others)


_CHANGED_AT = [_first_changed_at]
_NATIVE_FROM = 64  # rows: below, the Python walk takes 2 us at most


def shared_ends(objs, others) -> tuple[int, int, int]:
    """How many objects `objs` and `others` share at their heads and then at their tails (the two
    not overlapping), and how many of `objs` lie between."""
    shortest = min(len(objs), len(others))
    head = next(iter(changed_at(objs, others)), shortest)
    tail = next(iter(changed_at(objs[::-1], others[::-1])), shortest)
    tail = min(tail, shortest - head)
    return head, tail, len(objs) - head - tail


class IdMemo(Generic[T, V]):
    """`make(obj)`, once per object (Note [Identity memo])."""

    __slots__ = ("_make", "_bound", "_kept", "_last")

    def __init__(self, make: Callable[[T], V], bound: int = 1 << 18) -> None:
        self._make, self._bound = make, bound
        self._kept: dict[int, tuple[T, V]] = {}
        self._last: tuple[tuple[T, ...], tuple[V, ...]] = ((), ())  # the last table `each` was given, its values

    def __call__(self, obj: T) -> V:
        kept = self._kept.get(id(obj))
        if kept is None or kept[0] is not obj:
            if len(self._kept) >= self._bound:
                self._kept.clear()
            kept = self._kept[id(obj)] = (obj, self._make(obj))
        return kept[1]

    def each(self, objs: tuple[T, ...] | list[T]) -> tuple[V, ...]:
        """`tuple(self(o) for o in objs)`: the last table's values where it holds the same object,
        the kept values looked up in C elsewhere (Note [Identity memo]). A tuple, so the very last
        one serves a table asked for again, and no caller copies it to keep it."""
        last_objs, last_values = self._last
        differ = changed_at(objs, last_objs) if len(objs) == len(last_objs) else None
        if differ is not None and not differ:
            values = last_values
        elif differ is not None and len(differ) <= FEW:
            changed = list(last_values)
            for i in differ:
                changed[i] = self(objs[i])
            values = tuple(changed)
        elif differ is None and last_objs and abs(len(objs) - len(last_objs)) <= FEW and \
                (between := shared_ends(objs, last_objs))[2] <= FEW:  # rows dropped or added in one place
            head, tail, _ = between
            values = (*last_values[:head], *map(self, objs[head:len(objs) - tail]),
                      *last_values[len(last_values) - tail:])
        else:
            kept = list(map(self._kept.get, map(id, objs), repeat(_MISS)))
            for i in compress(count(), map(is_not, objs, map(_OBJECT, kept))):  # new, or another at that id
                kept[i] = (objs[i], self(objs[i]))
            values = tuple(map(_VALUE, kept))
        self._last = (tuple(objs), values)
        return values

    def clear(self) -> None:
        self._kept.clear()
        self._last = ((), ())


class BaseMemo(Generic[T, V]):
    """`make(objs)`, a value per object made in order, reusing the values of the first table it
    was given (its base) where `objs` holds the base's very object at the same position (Note
    [Identity memo]); nothing else is kept. `make` takes a list: a table of objects seen once is
    made in one call, not one per object."""

    __slots__ = ("_make", "_base")

    def __init__(self, make: Callable[[list[T]], list[V]]) -> None:
        self._make = make
        self._base: tuple[list[T], list[V]] | None = None  # the objects are kept: their ids stay theirs

    def map(self, objs: list[T] | tuple[T, ...]) -> list[V]:
        if self._base is None:
            values = self._make(list(objs))
            self._base = (list(objs), values)
            return values.copy()
        base_objs, base_values = self._base
        shared = min(len(objs), len(base_objs))
        differ = changed_at(objs, base_objs)  # within the base's length
        if differ and len(differ) == shared - differ[0]:  # a tail moved (a record added, deleted or grown)
            return base_values[:differ[0]] + self._make(list(objs[differ[0]:]))
        values = base_values[:shared]
        for i, value in zip(differ, self._make([objs[i] for i in differ])):
            values[i] = value
        return values + self._make(list(objs[shared:]))
