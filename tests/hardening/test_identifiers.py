"""Generated identities are injective and compile (Note [Generated identifiers], charter.codegen.common.names).

* Two ids of one set that become one identifier (`c18-x`, `c18_x`) are refused at `charter check`
  with ID_COLLISION naming both files; `generate` and `generate --check` refuse them too, and the
  driver refuses two outputs at one path even when handed such a set.
* An id that is a reserved word of a target (`std`, `int`, `class`, `charter`, `checkers`, ...)
  gives a C++ checker that compiles and a Python checker that imports and admits.
"""

from __future__ import annotations

import importlib
import keyword
import subprocess
import sys
from pathlib import Path

import pytest

from charter.toolchain import compiler
from charter.cli import main
from charter.console import search_paths
from charter.codegen.driver import generate, render_all
from charter.codegen.common.names import RESERVED, identifier, module_name
from charter.contract.contractset import load_set
from tests.conftest import ROOT
from tests.hardening import corpus

INCLUDE = ROOT / "native" / "include"
RESERVED_IDS = ["std", "int", "class", "charter", "checkers", "rt", "errno", "linux", "type", "match", "kernel",
                "admit", "labels", "import", "and"]


def write_set(root: Path, ids: list[str]) -> Path:
    """A specs/ tree: the hostile corpus's model and one GGUF artifact contract per id."""
    specs = root / "specs"
    (specs / "models").mkdir(parents=True)
    (specs / "artifacts").mkdir(parents=True)
    (specs / "models" / "hostile.yaml").write_text(corpus.MODEL_YAML, "utf-8")
    for cid in ids:
        (specs / "artifacts" / f"{cid}.yaml").write_text(corpus._gguf_contract(cid, "reject"), "utf-8")
    return specs


# --- the policy -----------------------------------------------------------------------------------


def test_every_reserved_word_is_escaped():
    for word in RESERVED:
        out = identifier(word)
        assert out not in RESERVED and out.isidentifier() and "__" not in out, (word, out)


def test_reserved_words_cover_every_python_keyword():
    """Spelled out (generated code must not depend on the interpreter), but never fewer than the
    running Python's keywords and soft keywords."""
    assert set(keyword.kwlist) | set(keyword.softkwlist) <= RESERVED


def test_reserved_words_cover_the_native_module(native):
    """A kernel bound as one of charter._native's own names would replace it."""
    from charter.codegen.bindings import kernel_contracts

    cs = load_set([ROOT / "specs"])
    bindings = {identifier(lc.id) for lc in kernel_contracts(cs)}
    own = {name for name in dir(native) if not name.startswith("_")} - bindings
    assert own <= RESERVED, own - RESERVED


@pytest.mark.parametrize("cid,expected", [("c18-x", "c18_x"), ("c18_x", "c18_x"), ("c18.x", "c18_x"),
                                          ("a--b", "a_b"), ("a-", "a"), ("9x", "c_9x"), ("std", "std_"),
                                          ("smollm2-135m-instruct-q4_1", "smollm2_135m_instruct_q4_1")])
def test_module_names(cid, expected):
    assert module_name(cid) == identifier(cid) == expected


@pytest.mark.parametrize("target", ["bindings", "cpp", "labels", "metal"])
def test_all_targets_share_the_policy(target):
    assert importlib.import_module(f"charter.codegen.{target}.build").identifier is identifier


# --- collisions -----------------------------------------------------------------------------------


def test_colliding_ids_are_refused_naming_both_files(tmp_path, capsys):
    specs = write_set(tmp_path, ["c18-x", "c18_x"])
    capsys.readouterr()
    assert main(["check", str(specs)]) == 2
    out = capsys.readouterr().out
    assert "ID_COLLISION" in out
    assert "c18_x.yaml:3:5" in out and "c18-x.yaml:3:5" in out, out


@pytest.mark.parametrize("check", [False, True])
def test_generate_refuses_colliding_ids(tmp_path, capsys, check):
    specs = write_set(tmp_path, ["c18-x", "c18_x"])
    out = tmp_path / "generated"
    capsys.readouterr()
    code = main(["generate", str(specs), "-o", str(out), *(["--check"] if check else [])])
    assert code == 2 and "ID_COLLISION" in capsys.readouterr().out
    assert not out.exists()


def test_the_driver_refuses_two_outputs_at_one_path(tmp_path):
    """Even handed a set with a collision (its diagnostics ignored), nothing is written and
    `--check` cannot say "up to date"."""
    specs = write_set(tmp_path, ["c18-x", "c18_x"])
    cs = load_set([specs])
    assert [d.code.value for d in cs.diagnostics] == ["ID_COLLISION"]
    assert sorted(cs.artifacts) == ["c18-x", "c18_x"]
    with pytest.raises(ValueError, match="both generate python/c18_x.py"):
        render_all(cs)
    for check in (True, False):
        with pytest.raises(ValueError):
            generate(cs, tmp_path / "out", check=check)
    assert not (tmp_path / "out").exists()


def test_ids_that_collide_only_across_kinds_are_refused(tmp_path, capsys):
    specs = write_set(tmp_path, ["hostile-a"])
    text = corpus.MODEL_YAML.replace("id: hostile", "id: hostile_a")
    (specs / "models" / "hostile_a.yaml").write_text(text, "utf-8")
    capsys.readouterr()
    assert main(["check", str(specs)]) == 2
    assert "ID_COLLISION" in capsys.readouterr().out


def test_the_shipped_contracts_have_distinct_identifiers():
    cs = load_set([ROOT / "specs"])
    assert not cs.diagnostics
    names = [identifier(i) for i in cs.contracts]
    assert len(set(names)) == len(names)


# --- reserved words -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reserved(tmp_path_factory):
    root = tmp_path_factory.mktemp("reserved")
    specs = write_set(root, RESERVED_IDS)
    cs = load_set([specs], search_paths([str(specs)], None))
    assert not cs.diagnostics, [d.render() for d in cs.diagnostics]
    out = root / "generated"
    generate(cs, out)
    return root, specs, out


@pytest.mark.slow  # compiles every checker of the reserved ids
def test_checkers_of_reserved_ids_compile_in_one_translation_unit(reserved):
    """Every header in one translation unit, as charter._native includes them: no id hides `std`
    or `charter`, no two share a namespace."""
    root, _, out = reserved
    headers = sorted((out / "cpp").glob("*.hpp"))
    assert len(headers) == len(RESERVED_IDS)
    unit = root / "all.cpp"
    unit.write_text("".join(f'#include "{h}"\n' for h in headers)
                    + "#define CHARTER_REGISTER_CHECKER(ns) static_assert(sizeof(&ns::admit) > 0);\n", "utf-8")
    proc = subprocess.run([compiler(), "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", f"-I{INCLUDE}", str(unit)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    namespaces = {h.read_text("utf-8").split("namespace charter::checkers::")[1].split()[0] for h in headers}
    assert namespaces == {identifier(i) for i in RESERVED_IDS}


def test_python_checkers_of_reserved_ids_import_and_admit(reserved, tmp_path, monkeypatch, capsys):
    root, specs, out = reserved
    monkeypatch.syspath_prepend(str(out / "python"))
    for cid in RESERVED_IDS:
        module = importlib.import_module(module_name(cid))
        assert module.CONTRACT_ID == cid
        sys.modules.pop(module_name(cid))
    artifact = tmp_path / "base.gguf"
    artifact.write_bytes(corpus.base_gguf())
    for cid in ("std", "class", "charter"):
        capsys.readouterr()
        code = main(["admit", str(artifact), "--contract", str(specs / "artifacts" / f"{cid}.yaml"),
                     "--generated", str(out), "-v"])
        captured = capsys.readouterr()
        assert code == 0, captured
        assert "checker: committed" in captured.err, captured.err
