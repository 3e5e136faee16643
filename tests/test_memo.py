"""charter.memo.IdMemo and BaseMemo (Note [Identity memo]): a value per object, never another object's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import charter.memo as memo_module
from charter.memo import BaseMemo, IdMemo, changed_at


def test_a_value_is_made_once_per_object():
    made = []
    memo = IdMemo(lambda o: made.append(o) or len(o))
    a, b = ("x",), ("y", "z")
    assert [memo(a), memo(b), memo(a)] == [1, 2, 1] and made == [a, b]
    assert list(memo.each([b, a, ("w", "v", "u")])) == [2, 1, 3] and len(made) == 3


def test_an_entry_at_an_id_serves_only_its_own_object():
    memo = IdMemo(len)
    a, b = ("x",), ("y", "z")
    memo._kept[id(b)] = (a, 99)  # another object's entry at b's id (its id reused)
    assert memo(b) == 2 and list(memo.each([b])) == [2]
    memo._kept[id(a)] = (b, 99)
    assert list(memo.each([a])) == [1] and memo(a) == 1


def test_past_its_bound_it_forgets_everything():
    memo = IdMemo(len, bound=2)
    objs = [("a",), ("b", "b"), ("c", "c", "c")]
    assert list(memo.each(objs)) == [1, 2, 3] and len(memo._kept) == 1
    memo.clear()
    assert not memo._kept


def test_a_table_like_the_last_reuses_its_values_by_position():
    made = []
    memo = IdMemo(lambda o: made.append(o) or o[0])
    rows = [(i,) for i in range(5)]
    assert list(memo.each(rows)) == [0, 1, 2, 3, 4] and len(made) == 5
    neighbour = [*rows[:2], (20,), *rows[3:]]
    got = memo.each(neighbour)
    assert got == (0, 1, 20, 3, 4) and made[5:] == [(20,)]
    assert memo.each(neighbour) is got  # the same table again: its very values, which no caller can change
    swapped = [rows[1], rows[0], *neighbour[2:]]
    assert list(memo.each(swapped)) == [1, 0, 20, 3, 4] and len(made) == 6  # other positions: the kept values
    assert list(memo.each(rows[:4])) == [0, 1, 2, 3] and len(made) == 6  # another length: the kept values
    memo.clear()
    assert list(memo.each(rows)) == [0, 1, 2, 3, 4] and len(made) == 11


def test_a_table_unlike_the_last_is_looked_up_whole():
    made = []
    memo = IdMemo(lambda o: made.append(o) or o[0])
    rows = [(i,) for i in range(40)]
    assert list(memo.each(rows)) == list(range(40))
    assert list(memo.each(rows[::-1])) == list(range(40))[::-1] and len(made) == 40  # every position differs
    shifted = [("new",), *rows[:-1]]
    assert list(memo.each(shifted)) == ["new", *range(39)] and len(made) == 41


def _base_memo():
    """A BaseMemo of each object's first element, and the lists it was asked to make."""
    calls = []

    def make(objs):
        calls.append(list(objs))
        for o in objs:
            if o[0] == "bad":
                raise ValueError(o)
        return [o[0] for o in objs]

    return BaseMemo(make), calls


def test_a_base_memo_makes_only_what_the_first_table_does_not_hold_there():
    memo, calls = _base_memo()
    rows = [(i,) for i in range(5)]
    got = memo.map(rows)
    assert got == [0, 1, 2, 3, 4] and calls == [rows]
    got.append("a caller's own list")  # the base's values are not the caller's
    assert memo.map(tuple(rows)) == [0, 1, 2, 3, 4] and calls[1:] == [[], []]
    calls.clear()
    assert memo.map([rows[0], (10,), rows[2], (30,), rows[4]]) == [0, 10, 2, 30, 4]
    assert calls == [[(10,), (30,)], []]  # the positions that differ, in one call, in order
    calls.clear()
    assert memo.map([rows[0], (1,), *rows[2:]]) == [0, 1, 2, 3, 4] and calls == [[(1,)], []]  # equal, not the same
    calls.clear()
    assert memo.map([rows[1], rows[0], *rows[2:]]) == [1, 0, 2, 3, 4] and calls == [[rows[1], rows[0]], []]
    calls.clear()
    assert memo.map(rows[:3]) == [0, 1, 2] and calls == [[], []]  # shorter
    calls.clear()
    assert memo.map([*rows, (5,), (6,)]) == [0, 1, 2, 3, 4, 5, 6] and calls == [[], [(5,), (6,)]]  # longer
    calls.clear()
    assert memo.map(rows) == [0, 1, 2, 3, 4] and calls == [[], []]  # the base stays the first table


def test_a_base_memo_makes_a_moved_tail_in_one_call():
    memo, calls = _base_memo()
    rows = [(i,) for i in range(5)]
    memo.map(rows)
    calls.clear()
    tail = [(12,), (13,), (14,), (15,)]
    assert memo.map([*rows[:2], *tail]) == [0, 1, 12, 13, 14, 15] and calls == [tail]  # one longer
    calls.clear()
    assert memo.map([*rows[:2], *tail[:2]]) == [0, 1, 12, 13] and calls == [tail[:2]]  # one shorter
    calls.clear()
    assert memo.map([rows[0], (11,), rows[2], *tail[1:]]) == [0, 11, 2, 13, 14, 15]
    assert calls == [[(11,), (13,), (14,)], [(15,)]]  # not a tail: position by position, then the rest


def test_a_base_memo_raises_for_the_first_object_that_fails():
    memo, calls = _base_memo()
    with pytest.raises(ValueError):
        memo.map([("bad", 0)])
    rows = [(i,) for i in range(4)]
    assert memo.map(rows) == [0, 1, 2, 3]  # a table that failed is no base
    with pytest.raises(ValueError, match="'bad', 1"):
        memo.map([rows[0], ("bad", 1), rows[2], ("bad", 2)])
    with pytest.raises(ValueError, match="'bad', 3"):
        memo.map([*rows, ("bad", 3), ("bad", 4)])
    assert memo.map(rows) == [0, 1, 2, 3]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=150), st.lists(st.integers(0, 5), max_size=150), st.booleans())
def test_the_native_changed_at_finds_what_python_finds(left, right, as_tuple):
    """Positions of different objects (equal ones among them: a value-equal object is another one)."""
    from charter import _native

    pool = [("row", i) for i in range(3)] + [("row", 0), ("row", 1), ("row", 2)]  # equal, not identical
    objs, others = [pool[i] for i in left], [pool[i] for i in right]
    if as_tuple:
        objs = tuple(objs)
    assert _native.changed_at(objs, others) == memo_module._python_changed_at(objs, others)
    assert changed_at(objs, others) == memo_module._python_changed_at(objs, others)


def test_changed_at_refuses_what_is_not_a_sequence():
    from charter import _native

    with pytest.raises(TypeError, match="compares two sequences"):
        _native.changed_at([1], 5)


@pytest.mark.parametrize("edit", ["drop", "add", "drop_first", "add_last", "drop_two"])
def test_a_table_with_rows_dropped_or_added_makes_only_the_new_ones(edit):
    made = []
    memo = IdMemo(lambda o: made.append(o) or o[0])
    rows = [(i,) for i in range(40)]
    memo.each(rows)
    new = ("new",)
    table = {"drop": rows[:7] + rows[8:], "add": [*rows[:7], new, *rows[7:]], "drop_first": rows[1:],
             "add_last": [*rows, new], "drop_two": rows[:3] + rows[5:]}[edit]
    made.clear()
    assert list(memo.each(table)) == [r[0] for r in table]
    assert made == ([new] if new in table else [])


def test_rows_shared_at_both_ends_are_not_counted_twice():
    """[a, b, a] after [a, a]: the head and the tail would both claim the middle a."""
    made = []
    memo = IdMemo(lambda o: made.append(o) or len(o))
    a, b = ("a",), ("b", "b")
    memo.each([a, a])
    assert list(memo.each([a, b, a])) == [1, 2, 1] and made == [a, b]
    assert list(memo.each([a, a])) == [1, 1]
    assert list(memo.each([a])) == [1] and list(memo.each([])) == [] and list(memo.each([b, a, b])) == [2, 1, 2]


def test_a_table_is_never_compared_with_itself():
    rows = [("row", i) for i in range(100)]
    assert changed_at(rows, rows) == [] and changed_at(rows, list(rows)) == []
