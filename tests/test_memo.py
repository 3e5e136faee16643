"""charter.memo.IdMemo (Note [Identity memo]): a value per object, never another object's."""

from __future__ import annotations

from charter.memo import IdMemo


def test_a_value_is_made_once_per_object():
    made = []
    memo = IdMemo(lambda o: made.append(o) or len(o))
    a, b = ("x",), ("y", "z")
    assert [memo(a), memo(b), memo(a)] == [1, 2, 1] and made == [a, b]
    assert memo.each([b, a, ("w", "v", "u")]) == [2, 1, 3] and len(made) == 3


def test_an_entry_at_an_id_serves_only_its_own_object():
    memo = IdMemo(len)
    a, b = ("x",), ("y", "z")
    memo._kept[id(b)] = (a, 99)  # another object's entry at b's id (its id reused)
    assert memo(b) == 2 and memo.each([b]) == [2]
    memo._kept[id(a)] = (b, 99)
    assert memo.each([a]) == [1] and memo(a) == 1


def test_past_its_bound_it_forgets_everything():
    memo = IdMemo(len, bound=2)
    objs = [("a",), ("b", "b"), ("c", "c", "c")]
    assert memo.each(objs) == [1, 2, 3] and len(memo._kept) == 1
    memo.clear()
    assert not memo._kept


def test_a_table_like_the_last_reuses_its_values_by_position():
    made = []
    memo = IdMemo(lambda o: made.append(o) or o[0])
    rows = [(i,) for i in range(5)]
    assert memo.each(rows) == [0, 1, 2, 3, 4] and len(made) == 5
    neighbour = [*rows[:2], (20,), *rows[3:]]
    got = memo.each(neighbour)
    assert got == [0, 1, 20, 3, 4] and made[5:] == [(20,)]
    got.append("a caller's own list")  # the values kept for the next table are not the caller's
    swapped = [rows[1], rows[0], *neighbour[2:]]
    assert memo.each(swapped) == [1, 0, 20, 3, 4] and len(made) == 6  # other positions: the kept values
    assert memo.each(rows[:4]) == [0, 1, 2, 3] and len(made) == 6  # another length: the kept values
    memo.clear()
    assert memo.each(rows) == [0, 1, 2, 3, 4] and len(made) == 11


def test_a_table_unlike_the_last_is_looked_up_whole():
    made = []
    memo = IdMemo(lambda o: made.append(o) or o[0])
    rows = [(i,) for i in range(40)]
    assert memo.each(rows) == list(range(40))
    assert memo.each(rows[::-1]) == list(range(40))[::-1] and len(made) == 40  # every position differs
    shifted = [("new",), *rows[:-1]]
    assert memo.each(shifted) == ["new", *range(39)] and len(made) == 41
