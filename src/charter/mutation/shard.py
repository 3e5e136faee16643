"""`--shard K/N`: which mutants one of N machines runs.

Note [Shards]
~~~~~~~~~~~~~
K is 0-based (`0/4` … `3/4`), as cargo-mutants' `--shard k/n`, so a CI matrix `shard: [0, 1, 2, 3]`
passes its index as it is. A mutant belongs to a shard by its identity alone, never by its position:

* mutants are grouped by `Mutant.id` (side:target:operator). Ids are unique in today's batteries;
  if two mutants ever share one, the group goes to one shard, so no shard ever holds "the second
  mutant called X", a name that reordering the contract would give to another mutant;
* groups are dealt longest-first (LPT): by expected cost, highest first, ties broken by the
  sha256 of the id, each to the shard with the least cost so far (ties: the lowest index). The
  result depends on the set of ids and their costs only, so reordering the contract (or the
  operators' output) moves no mutant to another shard, and every shard computes the same dealing
  without talking to the others;
* the cost model (`cost`) is coarse and measured once: an artifact mutant whose expected rejection
  is at the payload stage streams the data section and costs about 3 header-only mutants; a
  declared equivalent is not run and costs a tenth of one. Dealing by cost keeps the slowest shard
  within one payload mutant of the mean, where dealing by hash alone leaves it to chance. The
  bundle battery's mutants (charter.mutation.bundle_ops) are dealt by the same model: they carry
  no `make` (their BundleMutant runs them) and are not run when declared equivalent.

A shard's report lists its outcomes in battery order and records, under `shard`, the positions
they hold in the whole battery (charter.mutation.merge puts them back).
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
from typing import NamedTuple

from charter.diagnostics import Stage
from charter.mutation.mutant import Mutant


class Shard(NamedTuple):
    index: int  # 0-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_arg(text: str) -> Shard:
    """--shard K/N: 0 <= K < N."""
    k, sep, n = text.partition("/")
    try:
        shard = Shard(int(k), int(n))
    except ValueError:
        shard = None
    if not sep or shard is None:
        raise argparse.ArgumentTypeError(f"expected K/N (K from 0 to N-1, as in 0/4), got {text!r}")
    if shard.count < 1 or not 0 <= shard.index < shard.count:
        raise argparse.ArgumentTypeError(f"expected 0 <= K < N (shards are numbered from 0), got {text!r}")
    return shard


def cost(m: Mutant) -> int:
    """Expected cost in tenths of a header-only mutant (Note [Shards])."""
    if m.make is None and m.equivalent is not None:
        return 1
    if m.side == "artifact" and m.expect is not None and m.expect.stage is Stage.PAYLOAD:
        return 30
    return 10


def assign(mutants: list[Mutant], count: int) -> list[int]:
    """The shard of every mutant, by Note [Shards]."""
    groups: dict[str, list[int]] = {}
    for i, m in enumerate(mutants):
        groups.setdefault(m.id, []).append(i)
    order = sorted(groups, key=lambda g: (-sum(cost(mutants[i]) for i in groups[g]),
                                          hashlib.sha256(g.encode()).digest()))
    # A heap of (load, shard): the least loaded, then the lowest index. Every group lands on a shard
    # whose load is still 0 while there is one, so shards past the number of groups stay empty.
    least = [(0, k) for k in range(min(count, len(groups)))]
    out = [0] * len(mutants)
    for g in order:
        load, k = least[0]
        heapq.heapreplace(least, (load + sum(cost(mutants[i]) for i in groups[g]), k))
        for i in groups[g]:
            out[i] = k
    return out


def select(mutants: list[Mutant], shard: Shard | None) -> list[int]:
    """Positions of the mutants `shard` runs, in battery order (all of them without a shard)."""
    if shard is None:
        return list(range(len(mutants)))
    return [i for i, k in enumerate(assign(mutants, shard.count)) if k == shard.index]


def shard_meta(shard: Shard, mutants: list, positions: list[int]) -> dict:
    """The `shard` key of a shard run's meta (Note [Shards that merge])."""
    return {"index": shard.index, "count": shard.count, "total": len(mutants), "positions": positions}
