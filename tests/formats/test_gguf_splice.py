"""GGUFArray.spliced: the array from_items writes, its kept elements' bytes as held; offsets and
element: where items() finds each element, and what it decodes there."""

from __future__ import annotations

import pytest

from charter.formats.gguf import GGUFArray, parse_gguf
from charter.mutation.gguf_ops import _edit_element


@pytest.fixture(scope="module")
def arrays(smollm2_path) -> dict[str, GGUFArray]:
    h = parse_gguf(smollm2_path.read_bytes()[:2_000_000], smollm2_path.stat().st_size)
    return {k: kv.value for k, kv in h.kvs.items() if isinstance(kv.value, GGUFArray)}


def test_a_spliced_array_is_the_one_from_items_writes(arrays):
    assert {a.elem_type.name for a in arrays.values()} >= {"STRING", "INT32"}
    for key, arr in arrays.items():
        items = arr.items()
        n, i = len(items), len(items) // 2
        edited = _edit_element(arr.elem_type, items[i])
        for start, stop, new in [(n - 1, n, []), (n, n, items[-1:]), (i, i + 1, [edited]), (0, 1, [edited]),
                                 (0, 0, [edited]), (1, n - 1, []), (0, n, [])]:
            want = GGUFArray.from_items(arr.elem_type, items[:start] + new + items[stop:])
            at = arr.offsets([start, stop, n])  # more places than asked for: the walk goes on
            for got in arr.spliced(start, stop, new), arr.spliced(start, stop, new, at):
                assert (got.count, got.raw) == (want.count, want.raw), (key, start, stop)
    assert any(not s.isascii() for s in arrays["tokenizer.ggml.tokens"].items())  # UTF-8 of 2+ bytes


def test_offsets_are_where_items_decodes_each_element(arrays):
    for key, arr in arrays.items():
        items = arr.items()
        n = len(items)
        asked = [n + 3, n, n - 1, n // 2, 1, 1, 0]  # unsorted, repeated, past the end
        at = arr.offsets(asked)
        assert sorted(at) == sorted(set(asked)) and at[n + 3] == at[n] == len(arr.raw), key
        for i in {0, 1, n // 2, n - 1} & set(range(n)):
            assert arr.element(at[i]) == items[i], (key, i)
            assert GGUFArray.from_items(arr.elem_type, items[:i]).raw == arr.raw[:at[i]], (key, i)


def test_an_integer_array_as_another_type_is_the_one_from_items_writes(arrays):
    from charter.formats.gguf import GGUFValueType as T

    token_types = arrays["tokenizer.ggml.token_type"]
    for other in T.INT64, T.UINT32, T.INT8, T.UINT64:
        got = token_types.as_type(other)
        assert (got.elem_type, got.count, got.raw) == (other, token_types.count,
                                                       GGUFArray.from_items(other, token_types.items()).raw)


def test_integers_are_retyped_to_the_first_type_that_holds_them_all():
    from charter.formats.gguf import GGUFValueType as T
    from charter.mutation.gguf_ops import _retype_elements

    def retyped(t, items):
        return _retype_elements(GGUFArray.from_items(t, items))

    assert retyped(T.INT32, [1, 3, 3]) == [T.INT64]
    assert retyped(T.INT64, [1, 2**31]) == [T.UINT32]
    assert retyped(T.INT64, [-1, 2**31 - 1]) == [T.INT32]
    assert retyped(T.INT64, [-1, 2**31]) == []
    assert retyped(T.UINT64, [2**32]) == [T.INT64] and retyped(T.UINT64, [2**63]) == []
    assert retyped(T.INT32, []) == [T.INT64] and retyped(T.STRING, ["a"]) == []
