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
"""

from __future__ import annotations

from typing import NamedTuple

_RUN = 1 << 16  # bytes compared at once before halving (memcmp in C; never a Python loop per byte)


class Edit(NamedTuple):
    """`data` as an edit of `base`: their bodies share `prefix` bytes at the start and then
    `suffix` at the end; `body` and `base_body` are the bodies' lengths, `zeros` and `base_zeros`
    the trailing zero bytes cut from each."""

    prefix: int
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
        middle: at the same place in the prefix, as far from the body's end in the suffix."""
        if start + length <= self.prefix:
            return start
        if start >= self.body - self.suffix and start + length <= self.body:
            return start - self.body + self.base_body
        return None


def edit(base: bytes, data) -> Edit:
    """`data` as an edit of `base` (Note [One comparison per header]); the last pair's, if asked again."""
    last = _LAST[0]
    if last is not None and last[0] is base and last[1] is data:
        return last[2]
    base_zeros = trailing_zeros(base)
    if data is base:
        found = Edit(len(base) - base_zeros, 0, len(base) - base_zeros, base_zeros, len(base) - base_zeros,
                     base_zeros)
    else:
        zeros = trailing_zeros(data)
        body = len(data) - zeros
        prefix, suffix = edit_of(base, memoryview(data)[:body], len(base) - base_zeros)
        found = Edit(prefix, suffix, body, zeros, len(base) - base_zeros, base_zeros)
    if type(data) is bytes and type(base) is bytes:  # immutable: the same object has the same bytes
        _LAST[0] = (base, data, found)  # the pair kept alive with it: no other object takes their ids
    return found


_LAST: list[tuple | None] = [None]  # (base, data, their Edit): the last pair compared


def forget() -> None:
    """Let the last pair go: its header's memory serves the next one."""
    _LAST[0] = None


def edit_of(base: bytes, data, base_end: int | None = None) -> tuple[int, int]:
    """(p, s), each as large as can be: `data` is `base[:p] + middle + base[base_end - s:base_end]`
    (all of `base` by default), with p + s at most the shorter length."""
    view = memoryview(data)
    end_b = len(base) if base_end is None else base_end
    end_d = len(view)
    most = min(end_b, end_d)
    p = _matched(lambda at, n: base.startswith(view[at:at + n], at, end_b), most)
    s = _matched(lambda at, n: base.endswith(view[end_d - at - n:end_d - at], 0, end_b - at), most - p)
    return p, s


def _matched(equal, most: int) -> int:
    """The largest k <= most such that equal(0, k), where equal(at, n) says the n bytes from `at`
    on match: whole runs while they match, then halving the run that does not."""
    at, step = 0, _RUN
    while step and at < most:
        n = min(step, most - at)
        if equal(at, n):
            at += n
        else:
            step = n // 2
    return at


def trailing_zeros(data) -> int:
    """How many zero bytes `data` ends with (windows doubling from its end: time proportional to them)."""
    view, n = memoryview(data), 64
    while True:
        tail = view[max(0, len(view) - n):].tobytes()
        zeros = len(tail) - len(tail.rstrip(b"\0"))
        if zeros < len(tail) or len(tail) == len(view):
            return zeros
        n *= 2
