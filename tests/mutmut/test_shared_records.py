"""charter.mutation.shared_records (Note [Shared records]): the bytes a header rebuilt from the
conforming header's own records shares with it at either end, counted record by record, exactly;
and none unless the header is the last one rebuilt, the conforming bytes are its header
serialized, and they are SHARED_FROM bytes or more. In the code-mutation gate's selection
(tests/mutmut): each case states the ends it expects."""

from __future__ import annotations

import functools

from charter.formats.gguf import GGUFValueType, parse_gguf, serialize_gguf_header
from charter.mutation import shared_records
from charter.mutation.gguf_ops import rebuild
from charter.mutation.shared_records import shared_bytes
from tests.mutmut.gguf_bytes import gguf, gstr, kv, tinfo, u32, u64

T = GGUFValueType
_MAGIC, _FIELDS = 4, 20  # the magic; then the version (4) and the two counts (8 each)
_TENSORS = 3  # F32 tensors of 8 elements, 32 bytes each at offsets 0, 32, 64
SHARED_FROM = 1 << 20  # Note [Shared records]: headers of 1 MiB or more (stated here, not read from the module)


@functools.lru_cache(maxsize=None)
def _conforming(records_end: int):
    """A header whose records end at `records_end` (a string array of 16-byte elements and a filler
    string take it there), its bytes serialized, its pairs' and tensor infos' lengths."""
    def pairs(filler: int) -> list[bytes]:
        strings = b"".join(gstr(f"t{i:07d}") for i in range(count))
        return [kv("general.architecture", T.STRING, gstr("llama")),
                kv("tokenizer.ggml.tokens", T.ARRAY, u32(T.STRING) + u64(count) + strings),
                kv("general.filler", T.STRING, gstr("x" * filler)),
                kv("llama.block_count", T.UINT32, u32(2))]

    infos = [tinfo(f"blk.{i}.weight", [8], 0, 32 * i) for i in range(_TENSORS)]
    count = (records_end - 400) // 16
    short = len(gguf(pairs(0), infos))
    head = gguf(pairs(records_end - short), infos)
    assert len(head) == records_end
    data_start = -(-records_end // 32) * 32
    h = parse_gguf(head + bytes(data_start - records_end), data_start + 32 * _TENSORS)
    raw = serialize_gguf_header(h)
    kv_lengths = [k.end - k.offset for k in h.kvs.values()]
    info_lengths = [len(b) for b in infos]
    return h, raw, kv_lengths, info_lengths, data_start - records_end


def _big():
    return _conforming(SHARED_FROM + 1000)


def _renamed(name: str) -> str:
    """Another name of the same length: the record's bytes differ, the header's length does not."""
    return name[:-1] + "#"


def _with_pair(h, at: int) -> dict:
    """h's pairs with the one at `at` renamed (the others h's own objects)."""
    pairs = list(h.kvs.values())
    pairs[at] = pairs[at]._replace(key=_renamed(pairs[at].key))
    return {p.key: p for p in pairs}


def test_an_unchanged_rebuild_shares_every_byte_at_both_ends():
    h, raw, kvs, infos, padding = _big()
    blob, _ = rebuild(h)
    assert blob == raw
    assert shared_bytes(h, raw, blob) == (len(raw), len(raw) - _MAGIC)


def test_a_changed_pair_bounds_both_ends_at_its_record():
    h, raw, kvs, infos, padding = _big()
    for at in range(len(kvs)):
        blob, _ = rebuild(h, kvs=_with_pair(h, at))
        start, end = shared_bytes(h, raw, blob)
        assert start == _MAGIC + _FIELDS + sum(kvs[:at]), at
        assert end == padding + sum(infos) + sum(kvs[at + 1:]), at  # the fields lie before it
        assert blob[:start] == raw[:start] and blob[len(blob) - end:] == raw[len(raw) - end:]


def test_a_changed_tensor_info_bounds_both_ends_at_its_record():
    h, raw, kvs, infos, padding = _big()
    for at in range(_TENSORS):
        tensors = list(h.tensors)
        tensors[at] = tensors[at]._replace(name=_renamed(tensors[at].name))
        blob, _ = rebuild(h, tensors=tensors)
        assert shared_bytes(h, raw, blob) == (
            _MAGIC + _FIELDS + sum(kvs) + sum(infos[:at]),
            padding + sum(infos[at + 1:])), at


def test_a_changed_field_stops_the_records_from_its_side():
    h, raw, kvs, infos, padding = _big()
    records = sum(kvs) + sum(infos)
    blob, _ = rebuild(h, version=2)  # the first field: every record is shared from the end only
    assert shared_bytes(h, raw, blob) == (_MAGIC, padding + records + 16)
    blob, _ = rebuild(h, tensor_count=_TENSORS + 1)
    assert shared_bytes(h, raw, blob) == (_MAGIC + 4, padding + records + 8)
    blob, _ = rebuild(h, kv_count=len(kvs) + 1)
    assert shared_bytes(h, raw, blob) == (_MAGIC + 12, padding + records)


def test_a_dropped_record_shares_the_records_after_it_if_the_padding_is_the_same():
    h, raw, kvs, infos, padding = _big()
    pairs = [p for i, p in enumerate(h.kvs.values()) if i != 2]  # the filler: a count changes
    blob, _ = rebuild(h, kvs={p.key: p for p in pairs})
    made_padding = len(blob) - (len(raw) - padding - kvs[2])
    end = padding + sum(infos) + kvs[3] if made_padding == padding else min(padding, made_padding)
    assert shared_bytes(h, raw, blob) == (_MAGIC + 12, end)
    blob, _ = rebuild(h, tensors=list(h.tensors)[:-1])  # the last tensor info: nothing after it
    made_padding = len(blob) - (len(raw) - padding - infos[-1])
    assert shared_bytes(h, raw, blob) == (_MAGIC + 4, min(padding, made_padding))


def test_records_shared_from_the_end_need_the_same_padding():
    h, raw, kvs, infos, padding = _big()
    pairs = list(h.kvs.values())
    longer = {**{p.key: p for p in pairs[:2]}, "general.filler": pairs[2]._replace(value=pairs[2].value + "z"),
              pairs[3].key: pairs[3]}
    blob, _ = rebuild(h, kvs=longer)
    assert len(blob) == len(raw) and padding > 1  # a byte more in the pair, a byte less of padding
    assert shared_bytes(h, raw, blob) == (_MAGIC + _FIELDS + sum(kvs[:2]), padding - 1)


def test_nothing_is_known_but_of_the_last_header_rebuilt_asked_once():
    h, raw, kvs, infos, padding = _big()
    blob, _ = rebuild(h, kvs=_with_pair(h, 0))
    assert shared_bytes(h, raw, bytes(bytearray(blob))) == (0, 0)  # equal bytes, another object
    assert shared_bytes(h, raw, blob) == (0, 0)  # asked about already
    first, _ = rebuild(h, kvs=_with_pair(h, 0))
    rebuild(h, kvs=_with_pair(h, 1))
    assert shared_bytes(h, raw, first) == (0, 0)  # not the last one rebuilt


def test_conforming_bytes_that_are_not_its_header_serialized_share_nothing():
    h, raw, kvs, infos, padding = _big()
    other = raw[:-1] + b"\x01"  # a byte of padding that is not zero
    blob, _ = rebuild(h, kvs=_with_pair(h, 0))
    assert shared_bytes(h, other, blob) == (0, 0)
    blob, _ = rebuild(h, kvs=_with_pair(h, 0))
    assert shared_bytes(h, raw, blob) != (0, 0)  # the same header, its own bytes: known again
    blob, _ = rebuild(h, kvs=_with_pair(h, 0))
    assert shared_bytes(h, other, blob) == (0, 0)  # asked with other bytes again: not the kept answer


def test_another_conforming_header_is_compared_again():
    h, raw, kvs, infos, padding = _big()
    other, other_raw = _conforming(SHARED_FROM + 2000)[:2]
    blob, _ = rebuild(h, kvs=_with_pair(h, 0))
    assert shared_bytes(h, raw, blob) != (0, 0)
    blob, _ = rebuild(h, kvs=_with_pair(h, 0))
    assert shared_bytes(other, raw, blob) == (0, 0)  # raw is not `other` serialized


def test_headers_below_shared_from_bytes_are_compared_whole():
    for records_end, known in (SHARED_FROM - 32, False), (SHARED_FROM - 1, True), (SHARED_FROM, True):
        h, raw, *_ = _conforming(records_end)
        assert (len(raw) >= SHARED_FROM) is known
        blob, _ = rebuild(h, kvs=_with_pair(h, 0))
        assert (shared_bytes(h, raw, blob) != (0, 0)) is known, records_end


def test_the_conforming_header_is_serialized_once(monkeypatch):
    h, raw, kvs, infos, padding = _big()
    blob, _ = rebuild(h, kvs=_with_pair(h, 0))
    first = shared_bytes(h, raw, blob)
    serialized, again = shared_records.serialized, []
    monkeypatch.setattr(shared_records, "serialized", lambda header: again.append(header is h) or serialized(header))
    blob, _ = rebuild(h, kvs=_with_pair(h, 0))
    assert shared_bytes(h, raw, blob) == first
    assert again == [False]  # the mutant's own header, by rebuild; not the conforming one again
