"""Shards (Note [Shards]) and their merge (Note [Shards that merge]) on in-memory outcomes."""

from __future__ import annotations

import argparse
import random
import re

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


def test_more_shards_than_mutants_leaves_the_last_ones_empty():
    mutants = _mutants(10)
    assert sorted(assign(mutants, 10**12)) == list(range(10))  # no heap of 10**12 shards
    assert sorted(assign(mutants, 10)) == list(range(10)) and select(mutants, Shard(10, 11)) == []


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


# --- the real command: shards of a battery, merged; reruns from the cache ------------------------

TINY = "specs/artifacts/tiny-llama-gguf.yaml"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The conforming file of TINY, built once: a battery's identity includes its artifact's path."""
    from charter.conforming import build
    from charter.contract.contractset import load_set
    from tests.conftest import ROOT

    cs = load_set([ROOT / TINY], [ROOT / "specs"])
    return build(cs.artifacts["tiny-llama-gguf"], tmp_path_factory.mktemp("tiny") / "tiny.gguf")


def _mutate(capsys, tiny, *args: str) -> tuple[int, str]:
    from charter.cli import main

    code = main(["mutate", "--contract", TINY, "--artifact", str(tiny), "--only", "artifact", "-j", "1", "-q", *args])
    return code, capsys.readouterr().out


def test_shards_of_a_real_battery_merge_into_the_whole_runs_report(tmp_path, capsys, monkeypatch, tiny):
    from charter.cli import main

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    whole = tmp_path / "whole.json"
    assert _mutate(capsys, tiny, "--no-cache", "--report", str(whole))[0] == 0
    shards = [tmp_path / f"s{k}.json" for k in range(3)]
    for k, shard in enumerate(shards):
        code, out = _mutate(capsys, tiny, "--shard", f"{k}/3", "--no-cache", "--report", str(shard))
        assert code == 0, out
    merged, page = tmp_path / "merged.json", tmp_path / "merged.html"
    assert main(["mutate", "merge", *map(str, shards), "--report", str(merged), "--html", str(page)]) == 0
    assert merged.read_bytes() == whole.read_bytes()
    sizes = sorted(len(report.from_json(s.read_text())[0]) for s in shards)
    assert sum(sizes) == len(report.from_json(whole.read_text())[0]) and sizes[-1] - sizes[0] <= sizes[-1] // 3
    assert main(["mutate", "merge", str(shards[0]), str(shards[1]), "--report", str(tmp_path / "x.json")]) == 2
    assert "missing" in capsys.readouterr().err


def test_a_rerun_reuses_the_cache_and_writes_the_same_report(tmp_path, capsys, monkeypatch, tiny):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    code, out = _mutate(capsys, tiny, "--report", str(first))
    assert code == 0 and re.search(r"\b0 of (\d+) verdicts reused", out), out
    code, out = _mutate(capsys, tiny, "--report", str(second))
    total = int(re.search(r"of (\d+) verdicts reused", out)[1])
    reused = int(re.search(r"(\d+) of \d+ verdicts reused", out)[1])
    assert code == 0 and reused >= total * 0.95, out
    assert second.read_bytes() == first.read_bytes()
    code, out = _mutate(capsys, tiny, "--no-cache", "--report", str(second))
    assert code == 0 and f"0 of {total} verdicts reused" in out and second.read_bytes() == first.read_bytes()


def test_a_battery_that_is_not_sharded_refuses_shard(capsys):
    from charter.cli import main

    assert main(["mutate", "--contract", "specs/provenance/dequant-smollm2.yaml", "--shard", "0/2"]) == 2
    assert "--shard splits artifact and bundle batteries only" in capsys.readouterr().err
