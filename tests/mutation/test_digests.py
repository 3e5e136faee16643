"""A mutant header's key digest: an edit of the conforming header (charter.edits, whose own tests are
tests/mutmut/test_edits.py), and the remembered file digests."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from charter import edits
from charter.mutation import digests
from charter.mutation.digests import edited, sha256
from tests.mutmut.test_edits import _apply, _bytes, _edit


@given(base=_bytes.map(lambda b: b + bytes(len(b) % 5)), one=_edit, other=_edit,
       zeros=st.tuples(st.integers(0, 70), st.integers(0, 70)))
def test_two_files_have_one_digest_only_if_they_are_one_file(base, one, other, zeros):
    """Padding included: the files end in any number of zero bytes (past a 64-byte window too)."""
    a, b = _apply(base, one) + bytes(zeros[0]), _apply(base, other) + bytes(zeros[1])
    assert (edited(base, a) == edited(base, b)) == (a == b)


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


def test_shared_records_bound_the_edit_that_comparing_finds(smollm2_path):
    """Note [Shared records]: for every header mutant of SmolLM2's battery, the ends its kept
    records share with the conforming header are shared bytes, and the edit found from them is
    the one comparing every byte finds."""
    from charter.contract.contractset import load_set
    from charter.mutation.run import all_mutants, load_battery
    from charter.mutation.shared_records import shared_bytes
    from tests.mutation.test_incremental import ROOT, SMOLLM2

    b = load_battery(load_set([SMOLLM2], [ROOT / "specs"]), "smollm2-135m-instruct-q4_1", smollm2_path)
    base, told = b.raw_header, 0
    for m in all_mutants(b, "artifact"):
        if m.make is None:
            continue
        data = m.make()[0]
        start, end = shared_bytes(b.view.header, base, data)
        assert data[:start] == base[:start] and (not end or data[-end:] == base[-end:]), m.id
        told += start + end > 0
        edits.forget()
        compared = edits.edit(base, data)
        edits.forget()
        assert edits.edit(base, data, (start, end)) == compared, m.id
    assert told > 400  # most of them are rebuilt from the conforming records (445 of them)
    assert shared_bytes(b.view.header, base, bytes(bytearray(base))) == (0, 0)  # not the last one made
