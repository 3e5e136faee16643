"""Note [Accepted string arrays]: a parse that shares string arrays with earlier parses reads every
header exactly as a parse without them, accepting or rejecting with the same diagnostic."""

from __future__ import annotations

import struct

import pytest

from charter.diagnostics import CharterError
from charter.formats.accepted_strings import AcceptedStrings
from charter.formats.gguf import parse_gguf


@pytest.fixture(scope="module")
def header(smollm2_path) -> tuple[bytes, int]:
    plain = parse_gguf(smollm2_path.read_bytes()[:2_000_000], smollm2_path.stat().st_size)
    with open(smollm2_path, "rb") as f:
        return f.read(plain.data_offset), smollm2_path.stat().st_size


def _outcome(buf: bytes, size: int, accepted: AcceptedStrings | None):
    try:
        h = parse_gguf(buf, size, accepted=accepted)
    except CharterError as exc:
        return "rejected", [d.to_json() for d in exc.diagnostics]
    arrays = {k: kv.value.raw for k, kv in h.kvs.items() if hasattr(kv.value, "raw")}  # not in the repr
    return "read", repr(h), arrays


def _tokens(buf: bytes) -> int:
    """The offset of tokenizer.ggml.tokens's first length prefix."""
    key = b"tokenizer.ggml.tokens"
    return buf.index(key) + len(key) + 4 + 12


def _variants(buf: bytes) -> dict[str, bytes]:
    first = _tokens(buf)
    n = struct.unpack_from("<Q", buf, first)[0]
    text = first + 8
    return {
        "unchanged": buf,
        "invalid UTF-8 in a token": buf[:text] + b"\xff" + buf[text + 1:],
        "another token byte": buf[:text] + bytes([buf[text] ^ 1]) + buf[text + 1:],
        "a longer first token": buf[:first] + struct.pack("<Q", n + 1) + buf[first + 8:],
        "a huge first token": buf[:first] + struct.pack("<Q", 1 << 40) + buf[first + 8:],
        "the header cut inside the tokens": buf[:text + 4096],
        "the arrays shifted by a longer name": buf.replace(b"general.architecture", b"general.architecturee", 1)
                                              .replace(struct.pack("<Q", 20) + b"general.architecturee",
                                                       struct.pack("<Q", 21) + b"general.architecturee", 1),
    }


@pytest.mark.parametrize("name", ["unchanged", "invalid UTF-8 in a token", "another token byte",
                                  "a longer first token", "a huge first token", "the header cut inside the tokens",
                                  "the arrays shifted by a longer name"])
def test_shared_arrays_read_as_without_them(header, name):
    buf, size = header
    variant = _variants(buf)[name]
    # the file as long as before, cut where the bytes end, and shorter than the bytes held
    _reads_as_without_the_memo(buf, size, variant, (size, len(variant), _tokens(buf) + 8 * 49_152 + 4096))


def _reads_as_without_the_memo(buf, size: int, variant, file_sizes) -> None:
    """`variant`, at each file size, reads as the plain reader reads it, after the conforming
    header `buf` was read with the memo (which remembers its arrays and table)."""
    accepted = AcceptedStrings()
    assert _outcome(buf, size, accepted)[0] == "read"
    for file_size in file_sizes:
        assert _outcome(variant, file_size, accepted) == _outcome(variant, file_size, None)


def test_an_accepted_array_is_not_walked_again(header, monkeypatch):
    from charter.formats import gguf

    buf, size = header
    accepted = AcceptedStrings()
    parse_gguf(buf, size, accepted=accepted)
    plain = _outcome(buf, size, None)
    walks = []
    monkeypatch.setattr(gguf, "_walk_strings", lambda *a: walks.append(a) or None)
    assert _outcome(buf, size, accepted) == plain
    assert walks == []


def test_the_string_limit_counts_accepted_arrays(header):
    buf, size = header
    accepted = AcceptedStrings()
    parse_gguf(buf, size, accepted=accepted)
    with pytest.raises(CharterError) as without:
        parse_gguf(buf, size, max_string_elements=50_000)
    with pytest.raises(CharterError) as with_memo:
        parse_gguf(buf, size, max_string_elements=50_000, accepted=accepted)
    assert [d.to_json() for d in with_memo.value.diagnostics] == [d.to_json() for d in without.value.diagnostics]


def _token_texts(buf: bytes) -> tuple[int, int, list[int]]:
    """The tokens array's count offset, its first element's offset and where each element starts."""
    first = _tokens(buf)
    n = struct.unpack_from("<Q", buf, first - 8)[0]
    starts, p = [], first
    for _ in range(n):
        starts.append(p)
        p += 8 + struct.unpack_from("<Q", buf, p)[0]
    return first - 8, first, starts + [p]


def _token_edit(buf: bytes, at: int, cut: int, put: list[bytes]) -> bytes:
    """`buf` with `cut` tokens from index `at` replaced by `put` (the count and the header's
    tensor count fields kept consistent: only the array changes)."""
    count_at, _, starts = _token_texts(buf)
    n = len(starts) - 1
    new = b"".join(struct.pack("<Q", len(t)) + t for t in put)
    out = buf[:starts[at]] + new + buf[starts[at + cut]:]
    return out[:count_at] + struct.pack("<Q", n - cut + len(put)) + out[count_at + 8:]


_SPLICES = {
    "the last token dropped": lambda buf, n: _token_edit(buf, n - 1, 1, []),
    "a token added at the end": lambda buf, n: _token_edit(buf, n, 0, [b"new"]),
    "a middle token made longer": lambda buf, n: _token_edit(buf, n // 2, 1, [b"x" * 300]),
    "a middle token made invalid UTF-8": lambda buf, n: _token_edit(buf, n // 2, 1, [b"\xff\xfe"]),
    "two tokens inserted after the first": lambda buf, n: _token_edit(buf, 1, 0, [b"a", "é".encode()]),
    "the first two thousand tokens dropped": lambda buf, n: _token_edit(buf, 0, 2000, []),
    "a token dropped on a mark": lambda buf, n: _token_edit(buf, 3 * 1024, 1, []),
    "a long run of tokens replaced": lambda buf, n: _token_edit(buf, 100, 3000, [b"y"] * 3000),
}


@pytest.mark.parametrize("name", list(_SPLICES))
def test_a_spliced_string_array_reads_as_without_the_memo(header, name):
    """Note [Array marks]: an array that is a kept one with elements changed in one place is read
    from the kept one's marks, as the walk would read it, at every readable end."""
    buf, size = header
    n = len(_token_texts(buf)[2]) - 1
    variant = _SPLICES[name](buf, n)
    _reads_as_without_the_memo(buf, size, variant, (size, len(variant), _tokens(buf) + 8 * n + 4096))


def test_a_spliced_array_walks_only_near_its_change(header, monkeypatch):
    from charter.formats import gguf

    buf, size = header
    n = len(_token_texts(buf)[2]) - 1
    accepted = AcceptedStrings()
    parse_gguf(buf, size, accepted=accepted)
    variant = _SPLICES["a middle token made longer"](buf, n)
    plain = _outcome(variant, size, None)
    walks, walk = [], gguf._walk_strings
    monkeypatch.setattr(gguf, "_walk_strings",
                        lambda buf, start, count, *a: walks.append(count) or walk(buf, start, count, *a))
    assert _outcome(variant, size, accepted) == plain
    assert walks and sum(walks) <= 2 * gguf.MARK  # from the mark before the change to the one after, never whole


def test_marks_give_the_offsets_a_walk_gives(header):
    buf, size = header
    marked = parse_gguf(buf, size, accepted=AcceptedStrings()).kvs["tokenizer.ggml.tokens"].value
    plain = parse_gguf(buf, size).kvs["tokenizer.ggml.tokens"].value
    assert marked.marks and plain.marks is None and marked == plain
    asked = [0, 1, 1023, 1024, 1025, 5000, plain.count - 1, plain.count, plain.count + 5]
    assert marked.offsets(asked) == plain.offsets(asked)


def _token_types(buf: bytes) -> int:
    """The offset of tokenizer.ggml.token_type's first element."""
    key = b"tokenizer.ggml.token_type"
    return buf.index(key) + len(key) + 4 + 12


@pytest.mark.parametrize("name", ["another token type", "the header cut inside the token types"])
def test_shared_scalar_arrays_read_as_without_them(header, name):
    buf, size = header
    at = _token_types(buf) + 4 * 1000
    variant = {"another token type": buf[:at] + struct.pack("<i", 7) + buf[at + 4:],
               "the header cut inside the token types": buf[:at]}[name]
    _reads_as_without_the_memo(buf, size, variant, (size, len(variant)))


def test_an_accepted_scalar_array_is_the_kept_one(header):
    """Its bytes are its value: a parse that finds them again hands back the same object, whose
    digest (kept by identity) is not worked out again."""
    buf, size = header
    accepted = AcceptedStrings()
    first = parse_gguf(buf, size, accepted=accepted).kvs["tokenizer.ggml.token_type"].value
    again = parse_gguf(bytes(buf), size, accepted=accepted).kvs["tokenizer.ggml.token_type"].value
    assert again.raw is first.raw and first.items()[:3] == [3, 3, 3]
    at = _token_types(buf)
    other = parse_gguf(buf[:at] + struct.pack("<i", 1) + buf[at + 4:], size, accepted=accepted)
    assert other.kvs["tokenizer.ggml.token_type"].value.items()[:3] == [1, 3, 3]


def test_a_bool_array_like_a_kept_one_is_checked():
    from tests.mutmut.gguf_bytes import gguf, kv, u32, u64

    accepted = AcceptedStrings()
    kept = gguf([kv("a", 9, u32(7) + u64(3) + b"\x00\x01\x01")])
    assert parse_gguf(kept, len(kept), accepted=accepted).kvs["a"].value.items() == [False, True, True]
    bad = gguf([kv("a", 9, u32(7) + u64(3) + b"\x00\x01\x02")])
    assert _outcome(bad, len(bad), accepted) == _outcome(bad, len(bad), None)
    assert _outcome(bad, len(bad), None)[0] == "rejected"


def _table_variants(buf: bytes, size: int) -> dict[str, bytes]:
    """Headers whose tensor info table differs from the conforming one's in one way each."""
    h = parse_gguf(buf, size)
    first, second = h.tensors[0], h.tensors[1]
    middle, last = h.tensors[len(h.tensors) // 2], h.tensors[-1]
    twin = next(t for t in h.tensors[:len(h.tensors) // 2] if len(t.name) == len(middle.name))
    later = next(t for t in h.tensors[len(h.tensors) // 2 + 1:] if len(t.name) == len(middle.name))
    after = h.tensors[len(h.tensors) // 2 + 1]
    dim = first.dims_offset
    name = first.info_offset + 8
    last_offset = last.n_dims_offset + 4 + 8 * len(last.dims) + 4
    new_last = buf[:last_offset] + struct.pack("<Q", last.offset + 32) + buf[last_offset + 8:]
    return {
        "unchanged": buf,
        "a middle and the last record changed": new_last[:middle.dims_offset]
                                                + struct.pack("<Q", middle.dims[0] + 32) + new_last[middle.dims_offset + 8:],
        "another dim": buf[:dim] + struct.pack("<Q", first.dims[0] + 1) + buf[dim + 8:],
        "another name byte": buf[:name] + bytes([buf[name] ^ 1]) + buf[name + 1:],
        "invalid UTF-8 in a name": buf[:name] + b"\xff" + buf[name + 1:],
        "another codec": buf[:first.dims_offset + 8 * len(first.dims)] + struct.pack("<I", 0)
                         + buf[first.dims_offset + 8 * len(first.dims) + 4:],
        "an unknown codec": buf[:first.dims_offset + 8 * len(first.dims)] + struct.pack("<I", 4)
                            + buf[first.dims_offset + 8 * len(first.dims) + 4:],
        "a duplicate name": buf[:second.info_offset] + struct.pack("<Q", len(first.name)) + first.name.encode()
                            + buf[second.n_dims_offset:] if len(first.name) == len(second.name) else buf[:-1],
        "the header cut inside the table": buf[:h.tensors[len(h.tensors) // 2].info_offset],
        "another dim of a middle record": buf[:middle.dims_offset] + struct.pack("<Q", middle.dims[0] + 32)
                                          + buf[middle.dims_offset + 8:],
        "a middle record named as an earlier one": buf[:middle.info_offset + 8] + twin.name.encode()
                                                   + buf[middle.n_dims_offset:],
        "a middle record named as a later one": buf[:middle.info_offset + 8] + later.name.encode()
                                                + buf[middle.n_dims_offset:],
        "another offset of the last record": new_last,
        "the table shifted by a longer name": _variants(buf)["the arrays shifted by a longer name"],
        "the table shifted back by a shorter name": buf.replace(struct.pack("<Q", 20) + b"general.architecture",
                                                                struct.pack("<Q", 19) + b"general.architectur", 1),
        "a middle record deleted": _records(buf, len(h.tensors) - 1, (middle.info_offset, _end(h, middle)), b""),
        "the first record deleted": _records(buf, len(h.tensors) - 1, (first.info_offset, second.info_offset), b""),
        "the last record deleted": _records(buf, len(h.tensors) - 1, (last.info_offset, last_offset + 8), b""),
        "a record added after the middle": _records(buf, len(h.tensors) + 1, (_end(h, middle),) * 2,
                                                    _renamed(buf[middle.info_offset:_end(h, middle)])),
        "a record added at the end": _records(buf, len(h.tensors) + 1, (last_offset + 8,) * 2,
                                              _renamed(buf[middle.info_offset:_end(h, middle)])),
        "a record added, named as the next": _records(buf, len(h.tensors) + 1, (middle.info_offset,) * 2,
                                                      buf[middle.info_offset:_end(h, middle)]),
        "a middle record named as the next one": buf[:middle.info_offset] + struct.pack("<Q", len(after.name))
                                                 + after.name.encode() + buf[middle.n_dims_offset:],
        "a new record and a copy of the second after the second": _records(
            buf, len(h.tensors) + 2, (second.info_offset + (_end(h, second) - second.info_offset),) * 2,
            _renamed(buf[middle.info_offset:_end(h, middle)]) + buf[second.info_offset:_end(h, second)]),
        "a record deleted, the next named as it": _records(
            buf, len(h.tensors) - 1, (middle.info_offset, _end(h, h.tensors[len(h.tensors) // 2 + 1])),
            buf[middle.info_offset:_end(h, middle)]),
    }


def _end(h, t) -> int:
    """Where the record of tensor `t` (not the last) ends: where the next starts."""
    return h.tensors[h.tensors.index(t) + 1].info_offset


def _renamed(record: bytes) -> bytes:
    """The record with the first byte of its name changed (a name no other record has)."""
    return record[:8] + bytes([record[8] ^ 0x20]) + record[9:]


def _records(buf: bytes, count: int, span: tuple[int, int], new: bytes) -> bytes:
    """`buf` with the bytes of `span` replaced by `new` and the tensor count set to `count`."""
    out = buf[:span[0]] + new + buf[span[1]:]
    return out[:8] + struct.pack("<Q", count) + out[16:]


@pytest.mark.parametrize("name", ["unchanged", "a middle and the last record changed", "another dim", "another name byte", "invalid UTF-8 in a name",
                                  "another codec", "an unknown codec", "a duplicate name",
                                  "the header cut inside the table", "another dim of a middle record",
                                  "a middle record named as an earlier one", "a middle record named as a later one",
                                  "another offset of the last record",
                                  "the table shifted by a longer name",
                                  "the table shifted back by a shorter name", "a middle record deleted",
                                  "the first record deleted", "the last record deleted",
                                  "a record added after the middle", "a record added at the end",
                                  "a record added, named as the next", "a record deleted, the next named as it",
                                  "a middle record named as the next one",
                                  "a new record and a copy of the second after the second"])
def test_a_shared_tensor_table_reads_as_without_it(header, name):
    """An accepted tensor info table is reused only where the loop would read the same records."""
    buf, size = header
    variant = _table_variants(buf, size)[name]
    cut = parse_gguf(buf, size).tensors[-1].info_offset  # a file that ends inside the table
    _reads_as_without_the_memo(buf, size, variant, (size, len(variant), cut))


@pytest.mark.parametrize("added", ["a new name", "the name of a record after it"])
def test_a_table_read_from_two_kept_tables_reads_as_without_them(header, added):
    """Records found in one kept table (the conforming one, of N records) and the rest in another
    (one that gained a record X, of N + 1, read whole and kept): a table of N + 2 that gained a
    record after X as well reads as without the memo, its new record's name a new one or a
    duplicate of a record after it (in both kept tables' tails)."""
    buf, size = header
    size += 1 << 16  # room for the data of a longer header
    h = parse_gguf(buf, size)
    n, third = len(h.tensors), h.tensors[len(h.tensors) // 3]
    with_x = _records(buf, n + 1, (third.info_offset,) * 2, _renamed(buf[third.info_offset:_end(h, third)]))
    h_x = parse_gguf(with_x, size)
    later = h_x.tensors[2 * n // 3]
    record = with_x[later.info_offset:_end(h_x, later)]
    name = h_x.tensors[2 * n // 3 + 5].name.encode()
    y = _renamed(record) if added == "a new name" else \
        struct.pack("<Q", len(name)) + name + record[8 + len(later.name.encode()):]
    variant = _records(with_x, n + 2, (later.info_offset,) * 2, y)
    accepted = AcceptedStrings()
    for read in buf, with_x:
        assert _outcome(read, size, accepted)[0] == "read"
    assert _outcome(variant, size, accepted) == _outcome(variant, size, None)
    assert (_outcome(variant, size, None)[0] == "rejected") is (added != "a new name")


def test_an_accepted_table_is_not_read_again(header, monkeypatch):
    from charter.formats import gguf

    buf, size = header
    accepted = AcceptedStrings()
    parse_gguf(buf, size, accepted=accepted)
    plain = _outcome(buf, size, None)
    monkeypatch.setattr(gguf, "_TAIL_READERS", {})  # the loop would send every record to the checked path
    monkeypatch.setattr(gguf, "_read_tensor_info", lambda *a: pytest.fail("a record was read again"))
    assert _outcome(buf, size, accepted) == plain


@pytest.mark.parametrize("name, changed", [("another offset of the last record", -1),
                                           ("another dim of a middle record", "middle"),
                                           ("a middle record deleted", "middle"),
                                           ("a record added after the middle", "after the middle")])
def test_only_a_changed_record_is_read_again(header, monkeypatch, name, changed):
    from charter.formats import gguf

    buf, size = header
    accepted = AcceptedStrings()
    parse_gguf(buf, size, accepted=accepted)
    variant = _table_variants(buf, size)[name]
    plain = _outcome(variant, size, None)
    count = len(parse_gguf(buf, size).tensors)
    index = {"middle": count // 2, "after the middle": count // 2 + 1, -1: count - 1}[changed]
    read = []
    checked = gguf._read_tensor_info
    monkeypatch.setattr(gguf, "_TAIL_READERS", {})  # every record the loop reads goes to the checked path
    monkeypatch.setattr(gguf, "_read_tensor_info", lambda cur, i, seen: read.append(i) or checked(cur, i, seen))
    assert _outcome(variant, size, accepted) == plain
    assert read == [index]


@pytest.mark.parametrize("name, changed", [("unchanged", []), ("another dim of a middle record", ["middle"]),
                                           ("another offset of the last record", ["last"])])
def test_only_a_changed_record_is_finished_again(header, monkeypatch, name, changed):
    """Note [Finished records]: under the conforming file size, alignment and data start, the
    records the fast path hands back unchanged keep the conforming table's tensor infos."""
    from charter.formats import gguf

    buf, size = header
    finished = []
    real = gguf._finish_records
    monkeypatch.setattr(gguf, "_finish_records", lambda *a: finished.extend(r[0] for r in a[-1]) or real(*a))
    accepted = AcceptedStrings()
    conforming = parse_gguf(buf, size, accepted=accepted)
    assert finished == [t.name for t in conforming.tensors]
    variant = _table_variants(buf, size)[name]
    plain = _outcome(variant, size, None)
    finished.clear()
    assert _outcome(variant, size, accepted) == plain  # the last record moved ends past the file
    names = {"middle": conforming.tensors[len(conforming.tensors) // 2].name, "last": conforming.tensors[-1].name}
    assert finished == [names[c] for c in changed]
    if plain[0] == "read":
        h = parse_gguf(variant, size, accepted=accepted)
        assert all(a is b for a, b in zip(h.tensors, conforming.tensors) if a.name not in finished)


def test_the_memos_of_the_last_few_keys_are_kept():
    from charter.memo import BaseMemo

    accepted = AcceptedStrings()
    kept = [accepted.memo(k, lambda: BaseMemo(list)) for k in range(AcceptedStrings.MEMOS)]
    assert accepted.memo(0, lambda: pytest.fail("made again")) is kept[0]  # now the most recently used
    accepted.memo("another", lambda: BaseMemo(list))  # the least recently used (1) is forgotten
    assert accepted.memo(0, lambda: pytest.fail("made again")) is kept[0]
    assert accepted.memo(2, lambda: pytest.fail("made again")) is kept[2]
    assert accepted.memo(1, lambda: BaseMemo(list)) is not kept[1]
