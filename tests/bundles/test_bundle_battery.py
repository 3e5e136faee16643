"""The bundle battery: N/N over the real MiniLM folders, and it fails when a bundle check is gone."""

from __future__ import annotations

import pytest

from charter.cli import main
from charter.contract.contractset import load_set
from charter.engines import choose
from charter.mutation import report
from charter.mutation.bundle_run import bundle_battery, run_bundle
from tests.conftest import ROOT

from .conftest import CONTRACTS


def _battery(folder, contract, only=None, companions=None, engine="python", jobs=1):
    """The battery; `companions`: only the companion mutants of these files (the full battery is
    make battery's: every companion edit of tokenizer.json costs a parse)."""
    cs = load_set([contract], [ROOT / "specs"])
    bundle_id = next(iter(cs.bundles))
    checker = choose.python_checker(cs, cs.bundles[bundle_id].artifact.id, ROOT / "generated").module
    cpp_key = None
    if engine == "both":
        from charter.engines.vouched import cache_dir

        cpp_key = choose.cpp_checker(cs, cs.bundles[bundle_id].artifact, cache_dir() / "checkers").key
    return run_bundle(cs, bundle_id, folder, checker, bundle_battery(cs, bundle_id, folder, only, companions),
                      cpp_key=cpp_key, jobs=jobs)


@pytest.mark.parametrize("shards", [1, pytest.param(2, marks=pytest.mark.slow)])  # 5 shards, whole: make battery
def test_the_battery_rejects_every_mutant(minilm_folders, shards):
    outcomes = _battery(minilm_folders[shards], CONTRACTS[shards], companions=("1_Pooling/config.json",))
    summary = report.summary(outcomes)
    assert summary["passed"] and summary["rejected"] == summary["mutants"] > 40, report.failures(outcomes)
    stages = {o.stage for o in outcomes if o.stage}
    assert {"files", "companions", "payload", "spec"} <= stages and ("shards" in stages) == (shards > 1)


def test_workers_give_the_outcomes_of_one_process(minilm_folders):
    serial = _battery(minilm_folders[2], CONTRACTS[2], only="artifact", companions=())
    forked = _battery(minilm_folders[2], CONTRACTS[2], only="artifact", companions=(), jobs=2)
    assert [(o.mutant.id, o.verdict, o.stage, o.code, o.field) for o in forked] == \
        [(o.mutant.id, o.verdict, o.stage, o.code, o.field) for o in serial] and len(serial) > 40


def test_both_engines_agree_on_every_mutant(minilm_folders):
    """Each weight file's stages by the C++ checker of charter._native, over its share of the bundle."""
    outcomes = _battery(minilm_folders[2], CONTRACTS[2], companions=("1_Pooling/config.json",), engine="both")
    summary = report.summary(outcomes)
    assert summary["passed"] and summary["errors"] == 0, report.failures(outcomes)


def test_a_missing_check_leaves_survivors(minilm_folders, monkeypatch):
    """The battery can fail: with the shards stage gone, every placement mutant survives."""
    monkeypatch.setattr("charter.bundles.admit.check_shards", lambda *a: None)
    outcomes = _battery(minilm_folders[2], CONTRACTS[2], only="contract", companions=())
    survivors = [o for o in outcomes if o.verdict.value == "survived"]
    assert survivors and all(o.mutant.target.startswith("weights.") for o in survivors)


def test_mutate_runs_the_bundle_battery_from_the_command_line(minilm_folders, capsys):
    assert main(["mutate", "--contract", str(CONTRACTS[1]), "-q"]) == 2
    assert "--artifact FOLDER" in capsys.readouterr().err


@pytest.mark.slow  # the whole battery, companion edits of tokenizer.json included (make battery: 5 shards)
def test_mutate_runs_the_whole_bundle_battery(minilm_folders, capsys):
    assert main(["mutate", "--contract", str(CONTRACTS[1]), "--artifact", str(minilm_folders[1]), "-q"]) == 0
    assert "mutations rejected (" in capsys.readouterr().out


def _mutate_contract_side(folder, *args: str) -> int:
    return main(["mutate", "--contract", str(CONTRACTS[1]), "--artifact", str(folder), "--only", "contract",
                 "-j", "1", "-q", *args])


def test_a_shard_of_the_bundle_battery_runs_the_mutants_select_deals_it(minilm_folders, tmp_path):
    """One shard of the contract side (a third of its cost; the whole merge identity is the slow
    test below, and tests/mutation/test_shard.py's for artifact batteries): the mutants
    charter.mutation.shard.select deals it, all killed, and its report names no temporary file
    (a mutated contract's diagnostics once did, so shards could not merge byte for byte)."""
    from charter.mutation.shard import Shard, select

    out = tmp_path / "s1.json"
    assert _mutate_contract_side(minilm_folders[1], "--shard", "1/3", "--report", str(out)) == 0
    outcomes, meta = report.from_json(out.read_text())
    dealt = [m for m in bundle_battery(load_set([CONTRACTS[1]], [ROOT / "specs"]), "all-minilm-l6-v2",
                                       minilm_folders[1], "contract")]
    picked = [dealt[i].mutant.id for i in select([bm.mutant for bm in dealt], Shard(1, 3))]
    assert sorted(o.mutant.id for o in outcomes) == sorted(picked) and len(picked) > 50
    assert meta["shard"]["positions"] == select([bm.mutant for bm in dealt], Shard(1, 3))
    assert report.summary(outcomes)["passed"], report.failures(outcomes)
    assert "<mutated " in out.read_text() and "charter-bundle-battery-" not in out.read_text()


@pytest.mark.slow  # the contract side three times over (about 15 s of CPU)
def test_shards_of_the_bundle_battery_merge_into_the_whole_runs_report(minilm_folders, tmp_path, capsys):
    """The contract side (its mutated contracts' diagnostics included, which once named a temporary
    file): two shards, dealt by charter.mutation.shard, merge into the whole run's bytes."""
    def mutate(*args: str) -> int:
        return _mutate_contract_side(minilm_folders[1], *args)

    whole, shards = tmp_path / "whole.json", [tmp_path / f"s{k}.json" for k in range(2)]
    assert mutate("--report", str(whole)) == 0
    for k, shard in enumerate(shards):
        assert mutate("--shard", f"{k}/2", "--report", str(shard)) == 0
    merged = tmp_path / "merged.json"
    assert main(["mutate", "merge", *map(str, shards), "--report", str(merged)]) == 0
    assert merged.read_bytes() == whole.read_bytes()
    sizes = [len(report.from_json(s.read_text())[0]) for s in shards]
    assert min(sizes) > 100 and sum(sizes) == len(report.from_json(whole.read_text())[0])
    assert "<mutated " in whole.read_text() and "charter-bundle-battery-" not in whole.read_text()
    capsys.readouterr()
    assert main(["mutate", "merge", str(shards[0]), "--report", str(tmp_path / "x.json")]) == 2
    assert "shard 1/2 missing" in capsys.readouterr().err
