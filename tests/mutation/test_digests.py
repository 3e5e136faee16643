"""A mutant header's key digest: an edit of the conforming header, found by memcmp runs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from charter import edits
from charter.mutation import digests
from charter.edits import edit_of, trailing_zeros
from charter.mutation.digests import edited, sha256


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


_bytes = st.binary(max_size=80).map(lambda b: bytes(x % 3 for x in b))  # few symbols: long matches


@given(base=_bytes, data=_bytes, run=st.sampled_from([1, 2, 8, 1 << 16]))
def test_the_edit_is_the_longest_prefix_then_suffix(base, data, run):
    old = edits._RUN
    edits._RUN = run
    try:
        p, s = edit_of(base, data)
    finally:
        edits._RUN = old
    assert (p, s) == _by_byte(base, data)
    assert base[:p] + data[p:len(data) - s] + base[len(base) - s:] == data


@given(base=_bytes, at=st.integers(0, 80), cut=st.integers(0, 4), put=st.binary(max_size=4))
def test_an_edit_of_a_base_is_found_back(base, at, cut, put):
    at = min(at, len(base))
    data = base[:at] + put + base[at + cut:]
    p, s = edit_of(base, data)
    assert base[:p] + data[p:len(data) - s] + base[len(base) - s:] == data
    assert len(data) - s - p <= len(put)


_edit = st.tuples(st.integers(0, 80), st.integers(0, 4), st.binary(max_size=4).map(lambda b: bytes(x % 2 for x in b)))


def _apply(base: bytes, edit) -> bytes:
    at, cut, put = edit
    at = min(at, len(base))
    return base[:at] + put + base[at + cut:]


@given(base=_bytes.map(lambda b: b + bytes(len(b) % 5)), one=_edit, other=_edit,
       zeros=st.tuples(st.integers(0, 70), st.integers(0, 70)))
def test_two_files_have_one_digest_only_if_they_are_one_file(base, one, other, zeros):
    """Padding included: the files end in any number of zero bytes (past a 64-byte window too)."""
    a, b = _apply(base, one) + bytes(zeros[0]), _apply(base, other) + bytes(zeros[1])
    assert (edited(base, a) == edited(base, b)) == (a == b)


@given(data=st.binary(max_size=300).map(lambda b: bytes(x % 2 for x in b)))
def test_trailing_zeros_counts_them(data):
    assert trailing_zeros(data) == len(data) - len(data.rstrip(b"\0"))


def test_equal_digests_are_equal_files_for_one_base():
    base = bytes(range(200)) * 50
    one = base[:5000] + b"\x01\x02" + base[5002:]
    other = base[:5000] + b"\x01\x03" + base[5002:]
    longer = base[:5000] + b"\x01\x02\x00" + base[5002:]
    assert len({edited(base, d) for d in (base, one, other, longer, bytearray(one))}) == 4
    assert edited(base, one) == edited(base, bytearray(one))
    nothing = sha256(b"")
    assert edited(base, base) == f"{len(base)}+{nothing}+0+{nothing}+0+0"
    padded = base + bytes(40)
    assert edited(padded, padded[:-8]) == f"{len(base)}+{nothing}+0+{nothing}+0+32"


@given(base=_bytes.map(lambda b: b + bytes(len(b) % 5)))
def test_the_base_itself_has_the_digest_of_its_copy(base):
    """A value mutant's header is the conforming one, the very object: its digest is found without
    comparing it with itself, and is the one a copy of it gets by comparison."""
    copy = bytearray(base)
    assert edited(base, base) == edited(base, copy)


def test_a_remembered_file_digest_asks_for_no_pass(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"abc")
    assert digests.file_content(path, tmp_path / "cache", lambda: "sha256:streamed") == "sha256:streamed"
    assert digests.file_content(path, tmp_path / "cache", lambda: None) == "sha256:streamed"  # remembered
    assert digests.file_content(path, tmp_path / "other", lambda: None) == \
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # hashed: none streamed


@given(base=_bytes.map(lambda b: b + bytes(len(b) % 5)), one=_edit, zeros=st.integers(0, 70))
def test_an_edit_holds_the_base_bytes_it_says(base, one, zeros):
    """charter.edits: outside the middle, each byte of the data is the base's at the place `held`
    names; `unchanged` only for the very bytes."""
    data = _apply(base, one) + bytes(zeros)
    worth, edits.WORTH = edits.WORTH, 0  # a run looked for in any middle, however short
    try:
        edits.forget()
        e = edits.edit(base, data)
    finally:
        edits.WORTH = worth
    assert e.unchanged == (data == base)
    for start in range(len(data) + 1):
        for length in range(len(data) - start + 1):
            at = e.held(start, length)
            if at is not None:
                assert data[start:start + length] == base[at:at + length], (start, length, at)
    assert e.held(0, e.prefix) == 0
    if e.suffix:
        assert e.held(e.body - e.suffix, e.suffix) == e.base_body - e.suffix


def test_the_last_pair_is_compared_once(monkeypatch):
    base = bytes(range(200)) * 50
    data = base[:5000] + b"\x01" + base[5001:]
    first = edits.edit(base, data)
    monkeypatch.setattr(edits, "edit_of", lambda *a: pytest.fail("compared again"))
    assert edits.edit(base, data) is first and edited(base, data).startswith("5000+")
    with pytest.raises(pytest.fail.Exception):
        edits.edit(base, bytes(bytearray(data)))  # another object: compared


def test_a_count_changed_before_a_deleted_record_leaves_the_bytes_between_in_place():
    """A header that loses a record changes a count near its start: the bytes between are held in
    place, and the key hashes the count's byte and what the deletion moved, not the bytes between."""
    base = b"GGUF" + (3).to_bytes(8, "little") + bytes(range(256)) * 400 + b"record" + b"tail" * 50
    data = b"GGUF" + (2).to_bytes(8, "little") + bytes(range(256)) * 400 + b"tail" * 50
    e = edits.edit(base, data)
    assert (e.prefix, e.gap) == (4, 1) and e.run >= 256 * 400 + 7 - 64
    assert e.held(12, 256 * 400) == 12 and e.held(4, 1) is None
    assert e.body - e.suffix - (e.prefix + e.gap + e.run) < 64


def test_shared_records_bound_the_edit_that_comparing_finds(smollm2_path):
    """Note [Shared records]: for every header mutant of SmolLM2's battery, the ends its kept
    records share with the conforming header are shared bytes, and the edit found from them is
    the one comparing every byte finds."""
    from charter.contract.contractset import load_set
    from charter.formats.gguf import shared_ends
    from charter.mutation.run import all_mutants, load_battery
    from tests.mutation.test_incremental import ROOT, SMOLLM2

    b = load_battery(load_set([SMOLLM2], [ROOT / "specs"]), "smollm2-135m-instruct-q4_1", smollm2_path)
    base, told = b.raw_header, 0
    for m in all_mutants(b, "artifact"):
        if m.make is None:
            continue
        data = m.make()[0]
        start, end = shared_ends(b.view.header, base, data)
        assert data[:start] == base[:start] and (not end or data[-end:] == base[-end:]), m.id
        told += start + end > 0
        edits.forget()
        compared = edits.edit(base, data)
        edits.forget()
        assert edits.edit(base, data, (start, end)) == compared, m.id
    assert told > 400  # most of them are rebuilt from the conforming records (445 of them)
    assert shared_ends(b.view.header, base, bytes(bytearray(base))) == (0, 0)  # not the last one made
