"""The bytes a rebuilt GGUF header shares with the conforming one at either end (Note [Shared records]).

Note [Shared records]
~~~~~~~~~~~~~~~~~~~~~
A mutation battery's header mutant is the conforming header rebuilt with a record or a count
changed (charter.mutation.gguf_ops.rebuild), and the records it kept are the conforming header's
own objects. A kv pair's bytes are made from its record alone, a tensor info's from its record,
and the padding is zeros: records that are the very objects the conforming header has, in the
same places counted from the start (or from the end), are the same bytes there, provided the
conforming header's bytes are that header serialized (compared once). So the leading and
trailing runs of shared records (the version and counts compared by value) bound the edit of the
conforming header that the mutant is (charter.edits), which then compares only the bytes between
(a 5.3 MB header's key: 270 -> about 50 us). Only for headers of SHARED_FROM bytes or more: a
smaller header is compared whole faster than its records are walked (1,000 tensors: 54 KB).
"""

from __future__ import annotations

from charter.formats.gguf import GGUFHeader, record_lengths, serialized
from charter.memo import changed_at

SHARED_FROM = 1 << 20  # the smallest header whose records are walked (smaller ones are compared whole)
_PREAMBLE = ((4, "version"), (8, "tensor_count"), (8, "kv_count"))  # after the magic, in file order
_LAST: list[tuple | None] = [None]  # (bytes, header, padding) of the last header rebuilt
_BASE: list[tuple | None] = [None]  # (header, its bytes, (its pairs' and infos' lengths, padding) or None)


def rebuilt(header: GGUFHeader) -> bytes:
    """`header` serialized, kept as the last header rebuilt until shared_bytes asks about it."""
    blob, padding = serialized(header)
    _LAST[0] = (blob, header, padding)
    return blob


def shared_bytes(base: GGUFHeader, base_raw: bytes, blob: bytes) -> tuple[int, int]:
    """How many bytes `blob` shares with `base_raw` (the bytes of `base`, the conforming header)
    at its start and at its end, at least (Note [Shared records]); (0, 0) unless `blob` is the
    last header `rebuilt` made, not asked about since, and `base_raw` is SHARED_FROM bytes or more."""
    last, _LAST[0] = _LAST[0], None  # asked once (the key's): the header's memory serves the next
    if last is None or last[0] is not blob or len(base_raw) < SHARED_FROM:
        return 0, 0
    kept = _BASE[0]
    if kept is None or kept[0] is not base or kept[1] is not base_raw:
        again, padding = serialized(base)
        kept = _BASE[0] = (base, base_raw, (*record_lengths(base), padding) if again == base_raw else None)
    if kept[2] is None:
        return 0, 0
    made, padding = last[1], last[2]
    kv_lengths, info_lengths, base_padding = kept[2]
    equal = [(size, getattr(made, f) == getattr(base, f)) for size, f in _PREAMBLE]
    kvs, base_kvs, infos, base_infos = list(made.kvs.values()), list(base.kvs.values()), made.tensors, base.tensors
    # from the start: the magic, the fields, the pairs, the tensor infos, the padding, while each is base's
    start, whole = 4 + _leading(equal), all(e for _, e in equal)
    for records, base_records, lengths in (kvs, base_kvs, kv_lengths), (infos, base_infos, info_lengths):
        if whole:
            n = _same_objects(records, base_records)
            start += sum(lengths[:n])
            whole = n == len(records) == len(base_records)
    start += min(padding, base_padding) if whole else 0
    # from the end: the padding, the tensor infos, the pairs, the fields
    end, whole = min(padding, base_padding), padding == base_padding
    for records, base_records, lengths in (infos, base_infos, info_lengths), (kvs, base_kvs, kv_lengths):
        if whole:
            n = _same_objects(records[::-1], base_records[::-1])
            end += sum(lengths[len(lengths) - n:])
            whole = n == len(records) == len(base_records)
    return start, end + (_leading(equal[::-1]) if whole else 0)


def _leading(fields: list[tuple[int, bool]]) -> int:
    """The bytes of the leading fields (size, equal) that are equal."""
    total = 0
    for size, equal in fields:
        if not equal:
            break
        total += size
    return total


def _same_objects(records, base_records) -> int:
    """How many leading records are `base_records`' own objects (compared in C: a table of 1,000)."""
    return next(iter(changed_at(records, base_records)), min(len(records), len(base_records)))
