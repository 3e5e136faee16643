"""Note [Referenced search]: a search path is read by id, and what it finds is what a whole read
finds: the same contracts, plans and diagnostics, with only the referenced files parsed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from charter.contract import contractset
from charter.contract.contractset import load_set
from tests.conftest import ROOT

MODEL, ARTIFACT = "models/tiny-llama.yaml", "artifacts/tiny-llama-gguf.yaml"


@pytest.fixture
def tree(tmp_path) -> Path:
    """specs/ with the tiny-llama model and artifact, and unrelated contracts beside them."""
    specs = tmp_path / "specs"
    for rel in (MODEL, ARTIFACT, "models/smollm2-135m-instruct.yaml", "artifacts/smollm2-135m-instruct-q4_1.yaml"):
        (specs / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "specs" / rel, specs / rel)
    return specs


@pytest.fixture
def parsed(monkeypatch) -> list[str]:
    """The names of the files load_set parses, in order."""
    names: list[str] = []
    load = contractset.load_file

    def counting(path, display=None):
        names.append(Path(path).name)
        return load(path, display)

    monkeypatch.setattr(contractset, "load_file", counting)
    return names


def _same(a, b) -> None:
    assert sorted(a.contracts) == sorted(b.contracts)
    assert a.artifacts.keys() == b.artifacts.keys() and a.models.keys() == b.models.keys()
    assert [d.render() for d in a.diagnostics] == [d.render() for d in b.diagnostics]


def _both(tree: Path, parsed: list[str], rel: str = ARTIFACT):
    """(the set read by id, the set read whole, the files the first parsed)."""
    by_id = load_set([tree / rel], [tree])
    read = list(parsed)
    whole = load_set([tree / rel], [tree], whole_search=True)
    return by_id, whole, read


def test_only_the_referenced_model_is_parsed(tree, parsed):
    (tree / "models" / "broken.yaml").write_text("charter: 1\nkind: model\nid: broken\nstatus: nonsense\n", "utf-8")
    by_id, whole, read = _both(tree, parsed)
    assert read == ["tiny-llama-gguf.yaml", "tiny-llama.yaml"]
    assert sorted(by_id.contracts) == ["tiny-llama", "tiny-llama-gguf"] and by_id.ok
    assert whole.ok and by_id.artifacts["tiny-llama-gguf"] == whole.artifacts["tiny-llama-gguf"]


def test_a_model_declared_otherwise_is_found_by_reading_everything(tree, parsed):
    """An `id` that is not a plain top-level `id:` line (here a quoted key) is not guessed: the
    whole path is parsed, and the model is found all the same."""
    text = (tree / MODEL).read_text("utf-8")
    (tree / MODEL).write_text(text.replace("\nid: tiny-llama\n", "\n'id': tiny-llama\n"), "utf-8")
    by_id, whole, read = _both(tree, parsed)
    assert by_id.ok and "tiny-llama" in by_id.models
    assert sorted(read[1:]) == sorted(p.name for p in contractset.discover([tree]) if p.name != "tiny-llama-gguf.yaml")
    _same(by_id, whole)


@pytest.mark.parametrize("edit", ["dangling", "invalid", "duplicate"])
def test_what_goes_wrong_is_reported_as_a_whole_read_reports_it(tree, parsed, edit):
    if edit == "dangling":  # no file declares the model: REF_DANGLING, with the path's failures
        (tree / MODEL).unlink()
        (tree / "models" / "bad.yaml").write_text("charter: 1\nkind: model\nid: bad\nstatus: nonsense\n", "utf-8")
    elif edit == "invalid":  # the model's file is found but does not validate (Note [Root causes])
        text = (tree / MODEL).read_text("utf-8")
        (tree / MODEL).write_text(text.replace("status: structural", "status: nonsense"), "utf-8")
    else:  # two files declare the model: the whole read decides which, and says so
        shutil.copy(tree / MODEL, tree / "models" / "again.yaml")
    by_id, whole, _ = _both(tree, parsed)
    _same(by_id, whole)
    if edit != "duplicate":
        assert not by_id.ok


def test_regions_contracts_read_the_whole_path(parsed):
    """Their nodes call kernel contracts that they do not reference: every file is parsed."""
    spec = ROOT / "specs" / "regions" / "smollm2-135m-instruct-q4_1.yaml"
    cs = load_set([spec], [ROOT / "specs"])
    assert cs.ok and len(parsed) == len(contractset.discover([ROOT / "specs"]))
