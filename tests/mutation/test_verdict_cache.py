"""The verdict cache after a one-leaf contract edit (Note [Verdict cache] in charter.mutation.cache):
the rerun's report equals a full run's byte for byte, an edit no check reads reruns almost nothing,
and an edit of a checked stage reruns at least every artifact mutant that stage or a later one
judged (a cache that reused those would be wrong, whatever the report said)."""

from __future__ import annotations

import re
import shutil

import pytest

from charter.diagnostics import ADMISSION_STAGES, Stage
from charter.mutation import report, value_ops
from tests.conftest import ROOT

ARTIFACT = "artifacts/tiny-llama-gguf.yaml"
PART = ("--shard", "0/8")  # both sides, 1/8 of them: the whole battery takes 17 s


@pytest.fixture
def specs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    copy = tmp_path / "specs"
    shutil.copytree(ROOT / "specs", copy, ignore=shutil.ignore_patterns("bundles", "regions", "text", "provenance"))
    return copy


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from charter.conforming import build
    from charter.contract.contractset import load_set

    cs = load_set([ROOT / "specs" / ARTIFACT], [ROOT / "specs"])
    return build(cs.artifacts["tiny-llama-gguf"], tmp_path_factory.mktemp("tiny") / "tiny.gguf")


def _battery(capsys, specs, tiny, out, *args: str) -> int:
    """How many mutants the battery ran (the others reused); its report is written to `out`."""
    from charter.cli import main

    code = main(["mutate", "--contract", str(specs / ARTIFACT), "--artifact", str(tiny), "-j", "1", "-q",
                 "--report", str(out), *args])
    text = capsys.readouterr().out
    assert code == 0, text
    return int(re.search(r"verdicts reused from the cache, (\d+) run", text)[1])


def _edit(path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), "utf-8")


def test_an_unchecked_leaf_reruns_almost_nothing(specs, tiny, tmp_path, capsys):
    everything = _battery(capsys, specs, tiny, tmp_path / "first.json", *PART)
    _edit(specs / "models" / "tiny-llama.yaml", "  license: apache-2.0\n", "  license: Apache-2.0\n")
    ran = _battery(capsys, specs, tiny, tmp_path / "rerun.json", *PART)
    assert _battery(capsys, specs, tiny, tmp_path / "full.json", "--no-cache", *PART) == everything
    assert (tmp_path / "rerun.json").read_bytes() == (tmp_path / "full.json").read_bytes()
    assert ran <= everything * 0.05, (ran, everything)


def test_an_edit_of_a_checked_stage_reruns_what_that_stage_judged(specs, tiny, tmp_path, capsys):
    """`extra_keys: allow` also changes contract mutants' verdicts (a dropped key is no longer
    rejected): reused, they would make the reports differ."""
    _battery(capsys, specs, tiny, tmp_path / "first.json", *PART)
    _edit(specs / ARTIFACT, "  extra_keys: reject\n", "  extra_keys: allow\n")  # the metadata stage
    ran = _battery(capsys, specs, tiny, tmp_path / "rerun.json", *PART)
    _battery(capsys, specs, tiny, tmp_path / "full.json", "--no-cache", *PART)
    assert (tmp_path / "rerun.json").read_bytes() == (tmp_path / "full.json").read_bytes()
    before_metadata = {s.value for s in ADMISSION_STAGES[:ADMISSION_STAGES.index(Stage.METADATA)]}
    outcomes, _ = report.from_json((tmp_path / "full.json").read_text("utf-8"))
    judged_later = [o for o in outcomes if o.mutant.side == "artifact" and not value_ops.is_value_mutant(o.mutant)
                    and o.mutant.operator != "unchanged" and o.stage not in before_metadata]
    assert len(judged_later) > 20 and ran >= len(judged_later), (ran, len(judged_later))


def test_an_unedited_rerun_makes_no_mutant(specs, tiny, tmp_path, capsys, monkeypatch):
    """Note [Verdict cache], "Unchanged reruns": the run's keys are remembered."""
    from charter.mutation import cache

    everything = _battery(capsys, specs, tiny, tmp_path / "first.json", *PART)
    monkeypatch.setattr(cache, "_made", lambda *a: pytest.fail("made an artifact mutant"))
    monkeypatch.setattr(cache.run, "contract_step", lambda *a: pytest.fail("resolved a contract mutant"))
    assert _battery(capsys, specs, tiny, tmp_path / "again.json", *PART) < everything * 0.05
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "first.json").read_bytes()
