"""Facts of the contract language that every layer shares, stated once.

The resolver, both runtimes' Python side, the generators, the readers' writers and the battery
all compare statuses, range-check integers, align offsets and expand tensor name templates; each
of those rules lives here, so two layers cannot disagree on it. (The battery's *predictions* stay
its own code: only these definitions are shared.) Importing this module costs nothing: no
pydantic, no numpy.
"""

from __future__ import annotations

from collections.abc import Iterable

# Support statuses, weakest claim first (docs/contracts.md#status).
STATUSES: tuple[str, ...] = ("structural", "pinned-not-supported", "supported")

# Every fixed-width integer type of the contract language (GGUF's and safetensors'): name -> (min, max).
INT_RANGES: dict[str, tuple[int, int]] = {
    f"{sign}int{bits}": ((0, 2**bits - 1) if sign else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1))
    for bits in (8, 16, 32, 64)
    for sign in ("u", "")
}


def meets(status: str, required: str | None) -> bool:
    """Whether a contract of `status` satisfies `--require-status required` (none: anything does)."""
    return not required or STATUSES.index(status) >= STATUSES.index(required)


def align_up(n: int, alignment: int) -> int:
    """The least multiple of `alignment` (> 0) that is >= n."""
    return -(-n // alignment) * alignment


def expand(template: str, repeat: Iterable[tuple[str, int | Iterable[int]]]) -> list[str]:
    """The names a tensor template stands for: each (placeholder, count) replaces `{placeholder}`
    with 0..count-1, or with the listed indices (the layers of one kind), in order."""
    names = [template]
    for placeholder, count in repeat or ():
        token = "{" + placeholder + "}"
        indices = range(count) if isinstance(count, int) else count
        names = [n.replace(token, str(i)) for n in names for i in indices]
    return names
