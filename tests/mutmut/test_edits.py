"""charter.edits (Note [One comparison per header]): the edit of a base that a header is, found by
memcmp runs, with the places it holds the base's bytes; what a caller knows the two share, the
last pair kept and a run in place after a changed count only make it sooner, never other. In the
code-mutation gate's selection (tests/mutmut): each edit is compared whole."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from charter import edits
from charter.edits import Edit, common_prefix, edit_of, trailing_zeros

_bytes = st.binary(max_size=80).map(lambda b: bytes(x % 3 for x in b))  # few symbols: long matches
_edit = st.tuples(st.integers(0, 80), st.integers(0, 4), st.binary(max_size=4).map(lambda b: bytes(x % 2 for x in b)))


def _apply(base: bytes, edit) -> bytes:
    at, cut, put = edit
    at = min(at, len(base))
    return base[:at] + put + base[at + cut:]


def _by_byte(base: bytes, data: bytes) -> tuple[int, int]:
    """The common prefix, then the common suffix of what is left, one byte at a time."""
    most = min(len(base), len(data))
    p = 0
    while p < most and base[p] == data[p]:
        p += 1
    s = 0
    while s < most - p and base[-1 - s] == data[-1 - s]:
        s += 1
    return p, s


def _fresh(base: bytes, data, shared=(0, 0), worth: int | None = None) -> Edit:
    """edit() of a pair not kept, with runs looked for in middles of `worth` bytes or more."""
    old = edits.WORTH
    edits.WORTH = old if worth is None else worth
    try:
        edits.forget()
        return edits.edit(base, data, shared)
    finally:
        edits.WORTH = old
        edits.forget()


@given(base=_bytes, data=_bytes, run=st.sampled_from([1, 2, 8, 1 << 16]))
def test_the_edit_is_the_longest_prefix_then_suffix(base, data, run):
    old = edits._RUN
    edits._RUN = run
    try:
        p, s = edit_of(base, data, len(base), 0, 0)
    finally:
        edits._RUN = old
    assert (p, s) == _by_byte(base, data)
    assert base[:p] + data[p:len(data) - s] + base[len(base) - s:] == data


@given(base=_bytes, at=st.integers(0, 80), cut=st.integers(0, 4), put=st.binary(max_size=4))
def test_an_edit_of_a_base_is_found_back(base, at, cut, put):
    at = min(at, len(base))
    data = base[:at] + put + base[at + cut:]
    p, s = edit_of(base, data, len(base), 0, 0)
    assert base[:p] + data[p:len(data) - s] + base[len(base) - s:] == data
    assert len(data) - s - p <= len(put)


@given(data=st.binary(max_size=300).map(lambda b: bytes(x % 2 for x in b)))
def test_trailing_zeros_counts_them(data):
    assert trailing_zeros(data) == len(data) - len(data.rstrip(b"\0"))


@given(base=_bytes.map(lambda b: b + bytes(len(b) % 5)), one=_edit, zeros=st.integers(0, 70))
def test_an_edit_holds_the_base_bytes_it_says(base, one, zeros):
    """Outside the middle, each byte of the data is the base's at the place `held` names;
    `unchanged` only for the very bytes; the bodies' prefix and suffix are the longest."""
    data = _apply(base, one) + bytes(zeros)
    e = _fresh(base, data, worth=0)  # a run looked for in any middle, however short
    assert e.unchanged == (data == base)
    assert (e.zeros, e.base_zeros) == (trailing_zeros(data), trailing_zeros(base))
    assert (e.body, e.base_body) == (len(data) - e.zeros, len(base) - e.base_zeros)
    assert (e.prefix, e.suffix) == _by_byte(base[:e.base_body], data[:e.body])
    assert e.prefix + e.gap + e.run + e.suffix <= e.body
    for start in range(len(data) + 1):  # every byte, and every stretch up to where a region ends
        for length in {1, 2, e.prefix - start, e.prefix + e.gap + e.run - start, e.body - start}:
            at = e.held(start, length) if length >= 0 else None
            if at is not None:
                assert data[start:start + length] == base[at:at + length], (start, length, at)
    assert e.held(0, e.prefix) == 0
    if e.run:
        assert e.held(e.prefix + e.gap, e.run) == e.prefix + e.gap
    if e.suffix:
        assert e.held(e.body - e.suffix, e.suffix) == e.base_body - e.suffix


@given(base=_bytes.map(lambda b: b + bytes(len(b) % 5)), one=_edit, zeros=st.integers(0, 70),
       known=st.tuples(st.floats(0, 1), st.floats(0, 1)))
def test_what_is_known_shared_changes_nothing_but_the_work(base, one, zeros, known):
    """`shared`: any lower bounds of the bytes shared at each end give the edit comparing finds."""
    data = _apply(base, one) + bytes(zeros)
    whole = _by_byte(base, data)
    shared = (int(whole[0] * known[0]), int(whole[1] * known[1]))
    assert _fresh(base, data, shared, worth=0) == _fresh(base, data, worth=0)


def test_the_base_itself_is_its_whole_prefix():
    base = b"GGUF" + bytes(range(1, 200)) + bytes(30)
    assert _fresh(base, base) == Edit(203, 0, 0, 0, 203, 30, 203, 30)
    assert _fresh(base, base).unchanged and not _fresh(base, base + b"\0").unchanged
    assert not _fresh(base, base[:-1] + b"\1").unchanged


def test_the_last_pair_is_compared_once(monkeypatch):
    base = bytes(range(200)) * 50
    data = base[:5000] + b"\x01" + base[5001:]
    edits.forget()
    first = edits.edit(base, data)
    monkeypatch.setattr(edits, "edit_of", lambda *a: pytest.fail("compared again"))
    assert edits.edit(base, data) is first
    with pytest.raises(pytest.fail.Exception):
        edits.edit(base, bytes(bytearray(data)))  # another object: compared
    edits.forget()
    with pytest.raises(pytest.fail.Exception):
        edits.edit(base, data)  # let go: compared again


def test_a_mutable_pair_is_not_kept(monkeypatch):
    base = bytes(range(200)) * 50
    data = bytearray(base)
    data[7] ^= 1
    edits.forget()
    assert edits.edit(base, data).prefix == 7
    data[7] ^= 1
    assert edits.edit(base, data).unchanged


def test_a_count_changed_before_a_deleted_record_leaves_the_bytes_between_in_place():
    """A header that loses a record changes a count near its start: the bytes between are held in
    place, and only the count's byte and what the deletion moved are the middle's own."""
    base = b"GGUF" + (3).to_bytes(8, "little") + bytes(range(256)) * 400 + b"record" + b"tail" * 50
    data = b"GGUF" + (2).to_bytes(8, "little") + bytes(range(256)) * 400 + b"tail" * 50
    e = _fresh(base, data)
    assert (e.prefix, e.gap, e.run) == (4, 1, 7 + 256 * 400)
    assert e.held(12, 256 * 400) == 12 and e.held(4, 1) is None and e.held(5, 7 + 256 * 400) == 5
    assert e.body - e.suffix == e.prefix + e.gap + e.run + 0
    assert _fresh(base, data, worth=len(data)).run == 0  # a middle under WORTH: hashed, not looked through


def test_a_run_starts_after_the_fewest_bytes_of_its_own():
    base = bytes(range(256)) * 400
    data = base[:100] + b"\xff\xff\xff" + base[103:200] + b"!" + base[201:]
    e = _fresh(base, data, worth=0)
    assert (e.prefix, e.gap, e.run) == (100, 3, 97) and e.suffix == len(base) - 201
    far = base[:100] + bytes(20) + base[120:]  # more than GAP bytes of its own: no run
    assert _fresh(base, far, worth=0)[:3] == (100, 0, 0)


def test_common_prefix_is_bounded_by_both_and_by_most():
    base = bytes(range(100))
    assert common_prefix(base, memoryview(base[:40] + b"x"), None, 0) == 40
    assert common_prefix(base, memoryview(base + b"more"), None, 0) == 100  # at most the shorter
    assert common_prefix(base, memoryview(base[:60]), None, 0) == 60
    assert common_prefix(base, memoryview(base), 30, 0) == 30 == common_prefix(base, memoryview(base), 30, 10)
    assert common_prefix(base, memoryview(b""), None, 0) == 0 == common_prefix(b"abc", memoryview(b"xbc"), None, 0)
    assert common_prefix(base, memoryview(base[:40] + b"x"), None, 39) == 40  # known: compared from there


def test_edit_of_reaches_both_starts():
    assert edit_of(b"abc", b"xabc", 3, 0, 0) == (0, 3) and edit_of(b"xabc", b"abc", 4, 0, 0) == (0, 3)
    assert edit_of(b"abcabc", b"abc", 6, 0, 0) == (3, 0) and edit_of(b"abc", b"abcabc", 3, 0, 0) == (3, 0)
    assert edit_of(b"abcd", b"abXd", 3, 0, 0) == (2, 0)  # the base's end


def test_a_known_shared_end_counts_the_zeros_both_end_in():
    """`shared` is in whole bytes, the suffix in bodies: equal padding is cut from what is known."""
    base = bytes(range(1, 200)) * 30 + bytes(16)
    data = base[:100] + b"\0" + base[101:]
    whole = _by_byte(base, data)
    for known in (0, 16, 17, 100, whole[1]):
        assert _fresh(base, data, (100, known)) == _fresh(base, data), known
    assert _fresh(base, data).suffix == whole[1] - 16
    shorter = base[:100] + b"\0" + base[101:-4]  # other padding: nothing known of the bodies' ends
    assert _fresh(base, shorter, (100, 12)) == _fresh(base, shorter)


def test_trailing_zeros_past_every_window():
    assert [trailing_zeros(b"\1" + bytes(n)) for n in (0, 63, 64, 65, 100, 300)] == [0, 63, 64, 65, 100, 300]
    assert trailing_zeros(bytes(200)) == 200 and trailing_zeros(b"") == 0


def test_a_short_middle_is_hashed_not_looked_through():
    """Under WORTH bytes no run is looked for, even where one is there."""
    base = bytes(range(256)) * 1000
    data = bytearray(base)
    data[100_000] ^= 1
    data[100_071] ^= 1
    data = bytes(data)
    assert _fresh(base, data)[:4] == (100_000, 0, 0, len(base) - 100_072)
    assert _fresh(base, data, worth=0)[:4] == (100_000, 1, 70, len(base) - 100_072)
    assert _fresh(base, data, worth=72)[:3] == (100_000, 1, 70) and _fresh(base, data, worth=73)[:3] == (100_000, 0, 0)


def test_a_run_is_looked_for_after_at_most_gap_bytes():
    base = bytes(range(256)) * 400
    for own, found in (1, True), (15, True), (16, True), (17, False):
        data = base[:1000] + bytes(b ^ 0xFF for b in base[1000:1000 + own]) + base[1000 + own:5000] + b"!" + base[5001:]
        e = _fresh(base, data, worth=0)
        assert e[:3] == ((1000, own, 4000 - own) if found else (1000, 0, 0)), own


def test_a_run_may_end_where_the_bases_middle_does():
    """A byte added after the change: the middle's own bytes reach past the base's, and the bytes
    of the base's middle kept in place are a run, up to its last one (never past it)."""
    head, tail = bytes(range(256)) * 40, bytes(range(255, 0, -1)) * 40  # no trailing zero
    base = head + b"ABCD" + tail
    for middle, want in (b"QBCDE", (1, 3)), (b"QRSDE", (3, 1)), (b"QRSXE", (0, 0)):
        e = _fresh(base, head + middle + tail, worth=0)
        assert (e.prefix, e.suffix) == (len(head), len(tail)) and (e.gap, e.run) == want, middle


def test_a_run_is_kept_only_if_its_first_probe_bytes_are_the_bases():
    base = bytes(range(256)) * 400
    for equal, found in (64, True), (63, False):
        data = bytearray(base)
        data[1000] ^= 1
        data[1001 + equal] ^= 1
        data[5000] ^= 1
        e = _fresh(base, bytes(data), worth=0)
        assert e[:3] == ((1000, 1, equal) if found else (1000, 0, 0)), equal


def test_runs_are_looked_for_from_a_middle_of_worth_bytes():
    base = bytes(range(256)) * 1000
    for size, found in (edits.WORTH, True), (edits.WORTH - 1, False):
        data = bytearray(base)
        data[1000] ^= 1
        data[1000 + size - 1] ^= 1  # the middle: [1000, 1000 + size)
        e = _fresh(base, bytes(data))
        assert (e.prefix, e.body - e.suffix) == (1000, 1000 + size)
        assert e[1:3] == ((1, size - 2) if found else (0, 0)), size


def test_a_run_in_place_stops_where_the_middle_does():
    """Periodic bytes after an insertion match in place past the middle's end: the run is cut
    there, so the gap, run, middle and suffix never overlap."""
    base = b"HHHHHA" + b"aba" * 45 + b"T"
    data = base[:5] + b"B" + base[6:103] + b"bb" + base[103:]
    e = _fresh(base, data, worth=0)
    assert e == Edit(5, 1, 97, 39, 144, 0, 142, 0)
    assert e.prefix + e.gap + e.run + e.suffix <= e.body


def test_nothing_known_claims_nothing():
    """Known shared ends of (0, 0), or under the zeros both end in, claim no byte of the bodies."""
    assert _fresh(b"abc", b"abd")[:4] == (2, 0, 0, 0)
    assert _fresh(b"abc" + bytes(4), b"abd" + bytes(4), (2, 4))[:4] == (2, 0, 0, 0)
    assert _fresh(b"abc" + bytes(4), b"abd" + bytes(4), (2, 3))[:4] == (2, 0, 0, 0)
