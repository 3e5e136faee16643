"""What a mutation battery's GGUF parses share: the string arrays and tensor info tables the
reader's fast paths accepted before, and the memos of what is made of their records.

Note [Accepted string arrays]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Walking a string array costs a Python step per element (SmolLM2's 98,052 tokens and merges: about
15 ms), and the mutation battery parses a header per artifact mutant, each differing from the
conforming header in a few bytes. An `AcceptedStrings` given to `parse_gguf` remembers the bytes
of every string array the fast path accepted (length prefixes and text, from the first prefix to
the end of the last element) under its element count. An array whose count and bytes equal a
remembered one, and which ends within the readable header, is accepted without a walk: the walk
and the UTF-8 check read only those bytes, bounded by the same end, so they would accept it again
and find the same end. Everything else (another count, one changed byte, a shifted array cut by
the end) is walked as without the memo; the string-element limit is counted either way, and the
checked path never consults it. An array of scalars is kept too, under its element type and
count: its bytes are its value, so one that holds a kept array's bytes is that array, the same
object, and what is worked out of it by identity is found again (its digest, `_bytes_digest`: a
151,936-entry token type array costs 0.3 ms of sha256 per parse otherwise). Once the battery
says which header it read first (`based_on`), an array of a later header that lies outside that
header's edit of the first is the first one's, found by where it lies without comparing its
bytes (Note [One comparison per header] in charter.edits).

The tensor info table is kept the same way (1,000 records cost about 2.5 ms of Python steps):
the bytes of a table the fast loop read whole (no record went to the checked path), from its first
record to its last one's end, under its record count (a few counts), with its records and where
it started (a record is moved by how far from there a table starts; the battery reads the
conforming table first). Whether the loop accepts a record, and with which fields, depends on its
bytes, the readable end and the names seen before it, never on the table's count or the record's
index. So in a table of any count, the longest run of leading records (at most
that count) whose bytes are a kept table's first records' and which end within the readable
header (all of them, when nothing in the table changed) is those records moved to where the table
starts: the loop reads only those bytes, bounded by the same end, and the names it has seen
before each of them are the kept table's, which has no duplicate, so it would accept each again
with the same fields. The loop then reads the records after them as usual, with their names as
seen, and after each of the first few it reads, looks for the rest of a kept table: if the bytes
that follow are a kept table's last records', as many as the table still has to read (a record
deleted or added shifts the rest by one), ending within the readable header, and none of their
names is one the loop has seen, the loop would accept each of them again, so they are those
records moved to where they now start. Nothing is consulted without the fast paths (FAST_PATHS).

Note [Array marks]
~~~~~~~~~~~~~~~~~~
A battery's array mutants drop, add or edit one element of a 151,936-token vocabulary, and such
an array, equal to no kept one, was walked whole (about 7 ms). A walk that fills the memo records
where every MARK-th (1,024th) element starts (`marks`, kept with the bytes and on the GGUFArray).
An array of a later header is then read from the kept one that shares the most leading bytes with
it: its elements up to the last mark within those bytes are the kept array's (the same bytes,
bounded by the same end, walk the same way and were valid UTF-8); from there it is walked one
element at a time until the elements it has left are the kept array's from one of its marks on
(their bytes follow, within the readable end), and those are the kept array's too. At most
2 * MARK elements are walked, and only they are checked for UTF-8; without such a mark so soon,
or on an overrun, the whole array is walked as before. GGUFArray.offsets resumes its walk at the
last mark before each place it is asked for.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from itertools import repeat

from charter.edits import common_prefix, edit
from charter.formats import gguf
from charter.formats.gguf import _ARRAY_HEAD, _STRING, MARK
from charter.memo import BaseMemo


def _moved(records: list[tuple], shift: int) -> list[tuple]:
    """Tensor info records (`_read_tensor_infos`') with their file positions moved by `shift`, in a
    new list (the very records when they stay: a table read where it was read before)."""
    if not shift:
        return list(records)
    return [(name, dims, gtype, offset, nbytes, at + shift, off_at + shift)
            for name, dims, gtype, offset, nbytes, at, off_at in records]


class SeenAfter(dict):
    """The names of the tensor infos `_read_tensor_infos` has read, with where each starts, as its
    `seen`: the first `lo` records of an accepted table (`kept`, by its names' places; `out`, those
    records moved where they were read) and, held here, those read after them. A mutant's table is
    the kept one's but for a record: its leading records are not put in a dict one by one (half a
    table of 1,000 at each parse)."""

    __slots__ = ("_kept", "_lo", "_out")

    def __init__(self, kept: tuple | None, lo: int, out: list[tuple]) -> None:
        super().__init__()
        self._kept, self._lo, self._out = kept, lo, out

    def _place(self, name: str) -> int | None:
        """The place of `name` among the leading records, if it is one of theirs."""
        i = self._kept[5].get(name) if self._kept is not None else None
        return i if i is not None and i < self._lo else None

    def __contains__(self, name: object) -> bool:
        return self._place(name) is not None or dict.__contains__(self, name)

    def __getitem__(self, name: str) -> int:
        i = self._place(name)
        return self._out[i][5] if i is not None else dict.__getitem__(self, name)

    def disjoint(self, kept: tuple, j: int) -> bool:
        """No name here is one of the kept table `kept`'s from its record `j` on: each has its place
        there (a kept table names each tensor once) before `j`, or none."""
        places = kept[5]
        if not all(places.get(name, -1) < j for name in dict.keys(self)):  # those read after the leading ones
            return False
        if kept is self._kept and j >= self._lo:  # the leading records' places are theirs, before `lo`
            return True
        leading = itertools.islice(self._kept[3], self._lo) if self._kept is not None else ()
        return max(map(places.get, leading, repeat(-1)), default=-1) < j


class AcceptedStrings:
    """String arrays and tensor info tables the fast path accepted, by element count, for parses of
    headers that differ from one another in a few bytes (Note [Accepted string arrays]); and the
    memos of what is made from their records (Note [Finished records])."""

    __slots__ = ("_arrays", "_tables", "_memos", "_base", "_origins")

    PER_COUNT = 4  # arrays kept per element count: a header has a few string arrays, not many
    TABLES = 4  # tensor info tables kept, each of another record count
    MEMOS = 8  # memos kept, the least recently used forgotten first

    def __init__(self) -> None:
        self._arrays: dict[tuple[int, int], list[bytes]] = {}  # (element tag, count) -> kept bytes
        self._base: bytes | None = None  # the conforming header (based_on)
        self._origins: dict[int, tuple[tuple[int, int], bytes]] = {}  # its arrays: start -> (kind, bytes)
        # count -> (bytes, records where they were read, where each ends from the start, names, the
        # start, each name's place: an accepted table names each tensor once)
        self._tables: dict[int, tuple] = {}
        self._memos: dict[object, BaseMemo] = {}

    def memo(self, key, make: Callable[[], BaseMemo]) -> BaseMemo:
        """The memo kept under `key` for these parses, made if there is none."""
        memo = self._memos.pop(key, None)
        if memo is None:
            memo = make()
            while len(self._memos) >= self.MEMOS:
                del self._memos[next(iter(self._memos))]
        self._memos[key] = memo
        return memo

    def table(self, buf, start: int, count: int, end: int) -> tuple[list[tuple], int, "SeenAfter"]:
        """The most leading records, at most `count` tensor infos at `start` ending by `end`, that
        `_read_tensor_infos` would read as it read them in a table it accepted before (their bytes
        are that table's first records'), moved to `start`; where they stop; and their names, as
        `_read_tensor_infos` keeps those it has read (SeenAfter)."""
        best, best_stop = None, start
        with memoryview(buf) as view:
            for kept in self._candidates(count):
                raw, _, ends, _, _, _ = kept
                hi = min(count, bisect.bisect_right(ends, end - start))  # the records that end by `end`
                shared = common_prefix(raw, view[start:start + ends[hi - 1]], None, 0) if hi else 0
                lo = bisect.bisect_right(ends, shared, 0, hi)  # the most leading records with the kept bytes
                if lo > (best[1] if best else 0):
                    best, best_stop = (kept, lo), start + ends[lo - 1]
        if best is None:
            return [], start, SeenAfter(None, 0, [])
        (_, records, _, _, origin, _), lo = best
        out = _moved(records[:lo], start - origin)
        return out, best_stop, SeenAfter(best[0], lo, out)

    def add_table(self, buf, start: int, records: list[tuple], stop: int) -> None:
        """Remember a table the fast path accepted whole, from `start` to `stop`."""
        if len(records) not in self._tables and len(self._tables) < self.TABLES:
            names = [r[0] for r in records]
            self._tables[len(records)] = (bytes(buf[start:stop]), list(records), [r[6] + 8 - start for r in records],
                                          names, start, {name: i for i, name in enumerate(names)})

    def rest(self, buf, pos: int, count: int, k: int, end: int, seen: "SeenAfter") -> tuple[list[tuple], int] | None:
        """Records `k`.. of a table of `count`: the last `count - k` of a table accepted before,
        moved to `pos`, and where they stop, if `buf` holds their bytes there, ending by `end`, and
        no name in `seen` is one of theirs."""
        if not 0 < k <= count:
            return None
        for kept in self._candidates(count):
            raw, records, ends, _, origin, _ = kept
            j = len(records) - (count - k)  # the first of the kept records that would be record k
            if j < 1:
                continue
            at = ends[j - 1]
            if pos + len(raw) - at <= end and _holds(buf, pos, memoryview(raw)[at:]) and seen.disjoint(kept, j):
                return _moved(records[j:], pos - at - origin), pos + len(raw) - at
        return None

    def _candidates(self, count: int) -> list[tuple]:
        """The kept tables, the one of `count` records first: a table one record shorter or longer
        (a record deleted or added) shares its leading and its last records with another."""
        first = self._tables.get(count)
        return [first, *(t for c, t in self._tables.items() if c != count)] if first else list(self._tables.values())

    def based_on(self, base: bytes) -> None:
        """The header read first (the conforming one) is `base`: an array of a later header outside
        its edit of `base` is the one read there, found without comparing its bytes (Note [One
        comparison per header] in charter.edits). Only arrays whose bytes `base` holds where they
        were read count."""
        self._base = base
        self._origins = {start: kept for start, kept in self._origins.items()
                         if start >= 12 and base.startswith(kept[1], start)
                         and _ARRAY_HEAD.unpack_from(base, start - 12) == kept[0]}

    def find(self, buf, start: int, kind: tuple[int, int], end: int) -> tuple[bytes, tuple | None] | None:
        """The accepted bytes of an array of `kind` (element tag, count) that `buf` holds at `start`,
        ending by `end`, and their marks (Note [Array marks])."""
        if self._base is not None and buf is not self._base and type(buf) is bytes:
            e = edit(self._base, buf)
            for origin in start, start - e.body + e.base_body:  # before the edit, after it
                there = self._origins.get(origin)
                if there is not None and there[0] == kind and start + len(there[1]) <= end \
                        and e.held(start, len(there[1])) == origin:
                    return there[1], there[2]
        for raw, marks in self._arrays.get(kind, ()):
            if start + len(raw) <= end and _holds(buf, start, raw):
                return raw, marks
        return None

    def add(self, kind: tuple[int, int], raw: bytes, start: int, marks: list[int] | None = None) -> None:
        marks = tuple(marks) if marks else None
        kept = self._arrays.setdefault(kind, [])
        if len(kept) < self.PER_COUNT:
            kept.append((raw, marks))
        if self._base is None:
            self._origins[start] = (kind, raw, marks)

    def spliced(self, buf, start: int, count: int, end: int) -> tuple[int, int, int, list[int]] | None:
        """A string array of `count` elements at `start` that is an accepted one with a few elements
        changed, added or removed in one place (Note [Array marks]): (where it ends, where the
        elements walked start and end, the walked length prefixes with a high byte), or None."""
        with memoryview(buf) as view:  # the kept array that shares the most leading bytes with these
            best = max(((common_prefix(raw, view[start:min(end, start + len(raw))], None, 0), n, raw, marks)
                        for (tag, n), arrays in self._arrays.items() if tag == _STRING
                        for raw, marks in arrays if marks is not None), key=lambda c: c[0], default=(0, 0, b"", None))
        shared, n, raw, marks = best
        if marks is None:
            return None
        first = min(bisect.bisect_right(marks, shared) - 1, count // MARK)  # a mark within the shared bytes
        return _walk_to_tail(buf, start, count, end, raw, n, marks, first)


def _walk_to_tail(buf, start: int, count: int, end: int, raw: bytes, n: int, marks: tuple, first: int
                  ) -> tuple[int, int, int, list[int]] | None:
    """Walk `count` strings at `start` whose first `first * MARK` are those of `raw` (n elements,
    `marks`), until what is left is the rest of `raw` from one of its marks: at most 2 * MARK
    elements, in walks from one such mark to the next (Note [Array marks]); None if none is found
    so soon, or an element overruns `end`."""
    done, splits = first * MARK, []
    walked_from = p = start + marks[first]
    limit = min(count, done + 2 * MARK)
    while True:
        left = n - (count - done)  # the element of `raw` the rest would start at
        if left % MARK == 0 and 0 <= left // MARK < len(marks):
            tail = memoryview(raw)[marks[left // MARK]:]
            if p + len(tail) <= end and _holds(buf, p, tail):
                return p + len(tail), walked_from, p, splits
        if done >= limit:
            return (p, walked_from, p, splits) if done == count else None
        step = min(-left % MARK or MARK, limit - done)  # to where the rest starts at a mark of `raw`
        walked = gguf._walk_strings(buf, p, step, end)  # the reader's walk (tests count its calls there)
        if walked is None:
            return None
        p, more = walked
        splits += more
        done += step


def _holds(buf, at: int, raw) -> bool:
    """Whether `buf` holds the bytes `raw` at `at` (compared in place for bytes: no megabyte copy)."""
    if isinstance(buf, bytes):
        return buf.startswith(raw, at)
    with memoryview(buf) as view:
        return view[at:at + len(raw)].tobytes() == raw
