"""Where a header differs from the conforming one (Note [One comparison per header]).

Note [One comparison per header]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A mutation battery's artifact mutant is a whole header (the conforming one rebuilt with one
change), and three readers of it asked, each with a memcmp of the whole header, what the
conforming header already answered: the verdict cache's key (the edit of the conforming header
it is), the facts it changes (whether it is the conforming header at all), and the parse (whether
each string array's bytes are one it has read before). A 5.3 MB header with a 151,936-token
vocabulary and as many merges paid about 0.5 ms a mutant for the three. `edit` compares once:
the bodies (each header without its trailing zero bytes, the alignment padding a longer or
shorter header ends in) share their first `prefix` bytes and, of what is left, their last
`suffix` bytes. Every byte of the data outside its middle is the conforming header's byte at
the same place, counted from the start in the prefix and from the end of the body in the suffix
(`held`). The last pair of bytes objects compared is kept, by identity: the key, the facts and the
parse of one mutant ask about the same header.

A header that gains or loses a record also changes a count at its start (GGUF's tensor and
key-value counts, bytes 8 to 24), so its prefix ends there and its middle spans everything up
to the record (a deleted tensor: 5 MB to hash for the key, and no string array held). So the
middle starts with at most GAP bytes of its own (`gap`) if the bytes after them are the base's
at the same places, for as long as they are (`run`), before the rest of the middle (looked for in
a middle of WORTH bytes or more: a shorter one is hashed faster). And the bytes a caller knows
the two share at either end (`shared`: a header rebuilt from the conforming header's own
records, Note [Shared records] in charter.mutation.shared_records) are not compared: only those
between are. Each shortcut finds the edit that comparing every byte finds, sooner.

The last pair is let go when its mutant is done (`forget`, charter.mutation.cache): held, the
5 MB header kept the allocator from serving the next mutant's header from its memory (0.06 s over
a battery of 2,000 mutants).
"""

from __future__ import annotations

from typing import NamedTuple

_RUN = 1 << 20  # pragma: no mutate -- cost only: bytes compared at once; _matched finds the longest match with any
GAP = 16  # the most bytes of its own a middle may start with before a run in place (a count field: 8)
_PROBE = 64  # bytes after a gap that must be the base's for a run to be looked for
WORTH = 1 << 16  # the shortest middle a run is looked for in


class Edit(NamedTuple):
    """`data` as an edit of `base`: their bodies share `prefix` bytes at the start and then
    `suffix` at the end; the middle between starts with `gap` bytes of its own and then `run`
    bytes that are the base's at the same places; `body` and `base_body` are the bodies' lengths,
    `zeros` and `base_zeros` the trailing zero bytes cut from each."""

    prefix: int
    gap: int
    run: int
    suffix: int
    body: int
    zeros: int
    base_body: int
    base_zeros: int

    @property
    def unchanged(self) -> bool:
        """Whether `data` is `base`, byte for byte."""
        return self.prefix == self.body == self.base_body and self.zeros == self.base_zeros

    def held(self, start: int, length: int) -> int | None:
        """Where in `base` the `length` bytes of `data` at `start` are, if they are outside the
        middle's own bytes: at the same place in the prefix or the run, as far from the body's end
        in the suffix."""
        if start + length <= self.prefix:
            return start
        if start >= self.prefix + self.gap and start + length <= self.prefix + self.gap + self.run:
            return start
        if start >= self.body - self.suffix and start + length <= self.body:
            return start - self.body + self.base_body
        return None


def edit(base: bytes, data, shared: tuple[int, int] = (0, 0)) -> Edit:
    """`data` as an edit of `base` (Note [One comparison per header]); the last pair's, if asked again.
    `shared`: bytes the two are known to share at their start and at their end (the caller's word,
    from how `data` was made: Note [Shared records] in charter.mutation.shared_records), not
    compared again."""
    last = _LAST[0]
    if last is not None and last[0] is base and last[1] is data:
        return last[2]
    base_zeros = trailing_zeros(base)
    base_body = len(base) - base_zeros
    if data is base:
        found = Edit(base_body, 0, 0, 0, base_body, base_zeros, base_body, base_zeros)
    else:
        zeros = trailing_zeros(data)
        body = len(data) - zeros
        view = memoryview(data)[:body]
        # in the bodies: a shared end past both paddings (which then are as long) less the zeros
        tail = max(0, shared[1] - zeros)
        prefix, suffix = edit_of(base, view, base_body, shared[0], tail)
        gap, run = _in_place(base, view, prefix, min(body, base_body) - suffix)
        found = Edit(prefix, gap, run, suffix, body, zeros, base_body, base_zeros)
    if type(data) is bytes and type(base) is bytes:  # immutable: the same object has the same bytes
        _LAST[0] = (base, data, found)  # the pair kept alive with it: no other object takes their ids
    return found


_LAST: list[tuple | None] = [None]  # (base, data, their Edit): the last pair compared


def forget() -> None:
    """Let the last pair go: its header's memory serves the next one."""
    _LAST[0] = None


def _in_place(base: bytes, view: memoryview, start: int, stop: int) -> tuple[int, int]:
    """(gap, run): the fewest bytes from `start` (at most GAP) after which `view` holds the base's
    bytes at the same places, and for how long, up to `stop`; (0, 0) if no run starts so soon, or
    the middle is under WORTH bytes (hashed faster than looked through)."""
    if stop - start < WORTH:
        return 0, 0
    for gap in range(min(GAP, stop - start - 1)):  # a gap of 1 to GAP bytes, before a run of one at least
        gap += 1
        at = start + gap
        probe = min(at + _PROBE, stop)
        if base.startswith(view[at:probe], at):
            return gap, _matched(lambda i, n: base.startswith(view[at + i:at + i + n], at + i), stop - at, probe - at)
    return 0, 0


def edit_of(base: bytes, data, base_end: int, p_from: int, s_from: int) -> tuple[int, int]:
    """(p, s), each as large as can be: `data` is `base[:p] + middle + base[base_end - s:base_end]`,
    with p + s at most the shorter length; `p_from` and `s_from` bytes are known to match at each
    end, and not compared."""
    view = memoryview(data)
    end_d = len(view)
    most = min(base_end, end_d)
    p = common_prefix(base, view, most, p_from)
    s = _matched(lambda at, n: base.startswith(view[end_d - at - n:][:n], base_end - at - n), most - p, s_from)
    return p, s


def common_prefix(base: bytes, view: memoryview, most: int | None, known: int) -> int:
    """How many leading bytes of `view` are `base`'s (at most `most`, if given; `known` of them are)."""
    most = min(len(view), len(base)) if most is None else most
    return _matched(lambda at, n: base.startswith(view[at:at + n], at), most, known)


def _matched(equal, most: int, known: int) -> int:
    """The largest k <= most such that equal(0, k), where equal(at, n) says the n bytes from `at`
    on match, and equal(0, known) is known: whole runs while they match, then halving the run
    that does not."""
    at, step = min(known, most), _RUN
    for _ in range(most // _RUN + 2 * _RUN.bit_length() + 2):  # pragma: no mutate -- cost only: more rounds than the search takes (a run per _RUN bytes, two per halving at most)
        if not step or at >= most:  # pragma: no mutate -- cost only: past either a round compares nothing and changes nothing
            break
        n = min(step, most - at)
        if equal(at, n):
            at += n
        else:
            step = n // 2
    return at


def trailing_zeros(data) -> int:
    """How many zero bytes `data` ends with (windows doubling from its end: time proportional to them)."""
    view, n, zeros = memoryview(data), 64, 0  # pragma: no mutate -- cost only: the first window's size
    for _ in range(len(view).bit_length() + 1):  # pragma: no mutate -- cost only: more windows than it takes to cover `data`
        tail = view[max(0, len(view) - n):].tobytes()
        zeros = len(tail) - len(tail.rstrip(b"\0"))
        if zeros < len(tail) or len(tail) == len(view):  # pragma: no mutate -- cost only: a larger window ends in as many zeros
            break
        n *= 2  # pragma: no mutate -- cost only: how fast the window grows
    return zeros
