"""Note [Choosing a checker] in charter.engines.choose: a committed or compiled-in checker runs only
when provably current, and is then used without rendering anything; a stale one never runs (the
checker is rendered into the cache, in a file named by the digest of its text)."""

from __future__ import annotations

import hashlib
import shutil

import pytest

from charter.codegen.common.manifest import python_checker_path
from charter.codegen.driver import render_python_checker
from charter.engines import choose, cpp, library
from charter.contract.contractset import load_set
from tests.conftest import ROOT

from tests.conftest import need_checker

from .conftest import SMOLLM2, TINY_ST

CID = "smollm2-135m-instruct-q4_1"


def _no_rendering(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a current checker was rendered again")

    monkeypatch.setattr(choose, "render_python_checker", refuse)
    monkeypatch.setattr(library, "render_checker_text", refuse)


def _generated_copy(tmp_path):
    """generated/ with its manifest and the SmolLM2 Python checker, in a folder of the test's own."""
    out = tmp_path / "generated"
    rel = python_checker_path(CID)
    (out / rel).parent.mkdir(parents=True)
    shutil.copy(ROOT / "generated" / "manifest.json", out / "manifest.json")
    shutil.copy(ROOT / "generated" / rel, out / rel)
    return out, out / rel


def _edited_set(tmp_path):
    """The shipped contracts, the SmolLM2 artifact contract with one comment line more: the same
    facts from other contract bytes."""
    specs = tmp_path / "specs"
    shutil.copytree(ROOT / "specs", specs)
    spec = specs / "artifacts" / SMOLLM2.name
    spec.write_text(spec.read_text("utf-8") + "# edited\n", "utf-8")
    cs = load_set([spec], [specs])
    assert cs.ok, cs.diagnostics
    return cs


def test_a_current_committed_checker_runs_without_rendering(smollm2_set, cache, monkeypatch):
    _no_rendering(monkeypatch)
    module, origin = choose.python_checker(smollm2_set, CID, ROOT / "generated")
    assert origin == f"committed {ROOT / 'generated' / python_checker_path(CID)}"
    assert module.CONTRACT_ID == CID
    assert not cache.exists()


def test_a_changed_committed_file_is_stale_and_rendered(smollm2_set, cache, tmp_path):
    generated, committed = _generated_copy(tmp_path)
    assert choose.python_checker(smollm2_set, CID, generated).origin.startswith("committed ")
    committed.write_text(committed.read_text("utf-8") + "ADMIT_EVERYTHING = True\n", "utf-8")
    module, origin = choose.python_checker(smollm2_set, CID, generated)
    assert origin.endswith("(committed checker is stale)") and str(cache) in origin
    assert not hasattr(module, "ADMIT_EVERYTHING")
    committed.unlink()
    assert choose.python_checker(smollm2_set, CID, generated).origin.endswith("(no committed checker)")


def test_other_contract_bytes_make_the_committed_checker_stale(cache, tmp_path):
    cs = _edited_set(tmp_path)
    module, origin = choose.python_checker(cs, CID, ROOT / "generated")
    assert origin.endswith("(committed checker is stale)")
    assert cs.artifacts[CID].spec_sha256 in module.__loader__.get_data(module.__file__).decode()


def test_the_cache_is_keyed_by_the_digest_of_the_checker(smollm2_set, cache, tmp_path):
    nowhere = tmp_path / "no-generated"
    first = choose.python_checker(smollm2_set, CID, nowhere).module.__file__
    text = render_python_checker(smollm2_set, smollm2_set.artifacts[CID]).text
    stem = python_checker_path(CID).rsplit("/", 1)[1].removesuffix(".py")
    assert first == str(choose.cache_dir() / f"{stem}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.py")
    stamp = (cache / first).stat().st_mtime_ns
    assert choose.python_checker(smollm2_set, CID, nowhere).module.__file__ == first
    assert (cache / first).stat().st_mtime_ns == stamp  # the same text is not written again
    other = choose.python_checker(_edited_set(tmp_path), CID, nowhere).module.__file__
    assert other != first and sorted(p.name for p in choose.cache_dir().glob("*.py")) == sorted(
        [first.rsplit("/", 1)[1], other.rsplit("/", 1)[1]])


# --- the C++ engine ---------------------------------------------------------------------------------


def test_a_current_compiled_in_checker_runs_without_rendering_or_compiling(native, smollm2_set, cache, monkeypatch):
    need_checker(native, CID)
    _no_rendering(monkeypatch)
    monkeypatch.setattr(library, "build_checkers", lambda *a, **k: pytest.fail("compiled a checker"))
    assert choose.compiled_in(smollm2_set, smollm2_set.artifacts[CID])
    assert choose.cpp_checker(smollm2_set, smollm2_set.artifacts[CID], cache) == (CID, "c++ (charter._native)", None)


def test_a_stale_compiled_in_checker_is_compiled_from_the_contract(native, tmp_path, cache, monkeypatch):
    """tiny-llama-safetensors from other contract bytes: compiled into a library keyed by the
    digest of its rendering, which a second choice finds loaded instead of compiling again."""
    cid = "tiny-llama-safetensors"
    need_checker(native, cid)
    monkeypatch.setattr(library, "OPTIMIZED", library.FLAGS)  # what is chosen matters here, not how fast it runs
    specs = tmp_path / "specs"
    shutil.copytree(ROOT / "specs", specs)
    spec = specs / "artifacts" / TINY_ST.name
    spec.write_text(spec.read_text("utf-8") + "# edited\n", "utf-8")
    cs = load_set([spec], [specs])
    plan = cs.artifacts[cid]
    assert not choose.compiled_in(cs, plan)
    key, origin, built = choose.cpp_checker(cs, plan, cache / "checkers")
    assert key == library.checker_key(plan) and key != cid and built.parent == cache / "checkers"
    assert origin.startswith(f"c++ (compiled into {cache / 'checkers'}")
    assert cpp.info(key).inputs == {plan.spec_path: plan.spec_sha256} != cpp.info(cid).inputs
    monkeypatch.setattr(library, "build_checkers", lambda *a, **k: pytest.fail("compiled the checker again"))
    assert choose.cpp_checker(cs, plan, cache / "checkers") == (key, "c++ (a checker library loaded into "
                                                                     "charter._native)", None)
