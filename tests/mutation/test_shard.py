"""Shards (Note [Shards]) and their merge (Note [Shards that merge]) on in-memory outcomes."""

from __future__ import annotations

import argparse
import random

import pytest

from charter.diagnostics import Stage
from charter.mutation import report
from charter.mutation.merge import MergeError, merge
from charter.mutation.mutant import Expect, Mutant, Outcome, Verdict
from charter.mutation.shard import Shard, assign, select, shard_arg


def _mutants(n: int = 60) -> list[Mutant]:
    out = []
    for i in range(n):
        stage = Stage.PAYLOAD if i % 3 == 0 else Stage.METADATA
        out.append(Mutant("artifact", f"metadata.k{i}", "+1", Expect(stage), make=lambda: None))
    return out


def _outcomes(mutants):
    return [Outcome(Mutant(m.side, m.target, m.operator, m.expect), Verdict.KILLED, m.expect.stage.value)
            for m in mutants]


def test_shard_arg_is_zero_based():
    assert shard_arg("0/4") == Shard(0, 4) and shard_arg("3/4") == Shard(3, 4)
    for bad in ("4/4", "1", "a/b", "0/0", "-1/2"):
        with pytest.raises(argparse.ArgumentTypeError):
            shard_arg(bad)


def test_assignment_is_stable_under_reordering_and_balanced():
    mutants = _mutants()
    before = {m.id: k for m, k in zip(mutants, assign(mutants, 4))}
    shuffled = mutants[:]
    random.Random(1).shuffle(shuffled)
    assert {m.id: k for m, k in zip(shuffled, assign(shuffled, 4))} == before
    picked = sorted(i for k in range(4) for i in select(mutants, Shard(k, 4)))
    assert picked == list(range(len(mutants)))
    loads = [sum(30 if m.expect.stage is Stage.PAYLOAD else 10 for m, s in zip(mutants, assign(mutants, 4)) if s == k)
             for k in range(4)]
    assert max(loads) - min(loads) <= 30


def test_duplicate_ids_go_to_one_shard():
    mutants = _mutants(10) + _mutants(10)
    shards = assign(mutants, 3)
    assert all(shards[i] == shards[i + 10] for i in range(10))


def _shard_texts(mutants, count, meta):
    texts = {}
    outcomes = _outcomes(mutants)
    for k in range(count):
        positions = select(mutants, Shard(k, count))
        texts[f"s{k}.json"] = report.to_json([outcomes[i] for i in positions],
                                             {**meta, "shard": {"index": k, "count": count, "total": len(mutants),
                                                                "positions": positions}})
    return texts, outcomes


def test_merge_is_byte_identical_to_a_whole_run():
    from charter.mutation.digests import mutant_ids

    mutants = _mutants()
    meta = {"contract": "c", "digests": {"mutants": mutant_ids([m.id for m in mutants]), "checker": "x"}}
    texts, outcomes = _shard_texts(mutants, 4, meta)
    merged, merged_meta = merge(texts)
    assert report.to_json(merged, merged_meta) == report.to_json(outcomes, meta)
    assert report.render_html(merged, merged_meta) == report.render_html(outcomes, meta)


def test_merge_refuses_incomplete_overlapping_and_mismatched_sets():
    mutants = _mutants()
    meta = {"contract": "c", "digests": {"checker": "x"}}
    texts, _ = _shard_texts(mutants, 3, meta)
    with pytest.raises(MergeError, match="incomplete"):
        merge({k: v for k, v in texts.items() if k != "s1.json"})
    with pytest.raises(MergeError, match="both shard 0/3"):
        merge({**texts, "copy.json": texts["s0.json"]})
    other, _ = _shard_texts(mutants, 3, {"contract": "c", "digests": {"checker": "y"}})
    with pytest.raises(MergeError, match="checker"):
        merge({"s0.json": texts["s0.json"], "s1.json": other["s1.json"], "s2.json": texts["s2.json"]})
    with pytest.raises(MergeError, match="not a mutation-testing report of charter"):
        merge({"x.json": "[]"})


def test_from_json_inverts_to_json():
    outcomes = _outcomes(_mutants(5))
    text = report.to_json(outcomes, {"contract": "c"})
    assert report.from_json(text) == (outcomes, {"contract": "c"})
