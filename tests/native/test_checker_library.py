"""Checker libraries (charter.engines.library; Note [Checker libraries] in
native/include/charter/registry.hpp): the C++ checkers of mutated contracts, compiled at run time
and loaded into charter._native, so that `--engine both` compares contract mutants too."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from charter.engines import cpp, library
from charter.mutation.mutant import Verdict
from charter.mutation.run import all_mutants, finish_cpp, prepare_cpp, run_mutant, run_seen

from tests.conftest import session_folder

from tests.conftest import need_checker

from .conftest import ROOT, SMOLLM2, load_battery_for


@pytest.fixture(scope="module")
def smollm2(native, tmp_path_factory):
    cid, b = load_battery_for(SMOLLM2, tmp_path_factory.mktemp("battery"))
    need_checker(native, cid)
    return cid, b


@pytest.fixture(scope="module")
def smollm2_library(smollm2, tmp_path_factory):
    """(cache folder, library) of the SmolLM2 checker alone, built once for the tests below, in a
    folder the session's xdist workers share (the build is locked and cached by its digest)."""
    _, b = smollm2
    cache = session_folder(tmp_path_factory, "smollm2-library")
    return cache, library.build_checkers({library.checker_key(b.plan): b.plan}, cache)


def test_a_library_checker_gives_the_compiled_in_verdict(native, smollm2, smollm2_library):
    cid, b = smollm2
    key = library.checker_key(b.plan)
    assert key.startswith("sha256:") and f"namespace charter::checkers::k_{key[7:39]} {{" in library.checker_source(b.plan)
    assert cpp.load_library(smollm2_library[1]) == [key]
    assert cpp.info(key).contract == cid
    for header in (b.raw_header, b.raw_header[:200] + b"\xff" + b.raw_header[201:]):
        assert cpp.run(key, header, b.view.file_size) == cpp.run(cid, header, b.view.file_size)


def test_builds_are_cached_and_whole(smollm2, smollm2_library, monkeypatch):
    _, b = smollm2
    cache, first = smollm2_library
    plans = {library.checker_key(b.plan): b.plan}
    monkeypatch.setattr(library, "_compile", lambda *a, **k: pytest.fail("a cached build compiled again"))
    monkeypatch.setattr(library, "checker_source", lambda *a: pytest.fail("a cached build rendered a checker"))
    assert library.build_checkers(plans, cache) == first
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".")) == [first.name]


@pytest.mark.slow  # compiles the runtime headers before the error
def test_a_compile_error_names_the_command_and_leaves_nothing(smollm2, tmp_path, monkeypatch):
    _, b = smollm2
    monkeypatch.setattr(library, "checker_source", lambda *a: "this is not C++\n")
    with pytest.raises(library.LibraryError, match=r"(?s)failed \(1\).*error"):
        library.build_checkers({library.checker_key(b.plan): b.plan}, tmp_path)
    assert [p for p in tmp_path.iterdir() if not p.name.startswith(".")] == []


def test_no_compiler_is_a_clear_error(smollm2, tmp_path, monkeypatch):
    _, b = smollm2
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    with pytest.raises(library.LibraryError, match=r"no C\+\+17 compiler: /nonexistent/c\+\+ is not on PATH \(set CXX\)"):
        library.build_checkers({library.checker_key(b.plan): b.plan}, tmp_path)


def _shared_object(tmp_path: Path, name: str, source: str) -> Path:
    (tmp_path / f"{name}.cpp").write_text(source)
    out = tmp_path / f"{name}.so"
    subprocess.run([library.compiler(), "-std=c++17", "-shared", "-fPIC", f"-I{ROOT / 'native' / 'include'}",
                    str(tmp_path / f"{name}.cpp"), "-o", str(out)], check=True, capture_output=True)
    return out


def test_load_refuses_what_is_not_a_checker_library(native, tmp_path):
    with pytest.raises(cpp.EngineUnavailable, match="cannot load checker library"):
        cpp.load_library(tmp_path / "missing.so")
    plain = _shared_object(tmp_path, "plain", "extern \"C\" int nothing() { return 0; }\n")
    with pytest.raises(cpp.EngineUnavailable, match="is not a checker library: it has no symbol charter_checker_library"):
        cpp.load_library(plain)


@pytest.mark.slow  # three libraries compiled against the runtime headers
@pytest.mark.parametrize("change", ["s.version += 1", "s.report_size += 8", "s.compiler = \"another compiler\""])
def test_load_refuses_another_abi_or_compiler(native, tmp_path, change):
    foreign = _shared_object(tmp_path, "foreign", f"""
#include "charter/registry.hpp"
extern "C" const charter::rt::CheckerEntry* charter_checker_library(charter::rt::LibraryStamp* stamp, std::size_t* n) {{
  charter::rt::LibraryStamp s = charter::rt::library_stamp();
  {change};
  *stamp = s;
  *n = 0;
  return nullptr;
}}
""")
    with pytest.raises(cpp.EngineUnavailable, match="does not match charter._native .* rebuild it"):
        cpp.load_library(foreign)


@pytest.mark.slow  # a checker library of the mutants
def test_a_cpp_generator_that_drops_a_check_fails_the_contract_battery(native, smollm2, tmp_path, monkeypatch):
    """The point of the library: a C++ rendering that ignores a contract fact is caught on the
    contract mutants of that fact, where the Python checker rejects and the C++ one admits."""
    import charter.codegen.cpp.build as cpp_build

    rendered = cpp_build._statement

    def drops_special_ids(check, tables):
        return "(void)0;" if check.method == "special_id" else rendered(check, tables)

    monkeypatch.setattr(cpp_build, "_statement", drops_special_ids)
    b = type(smollm2[1])(**{**smollm2[1].__dict__, "engines": "both"})  # the C++ is rendered by prepare_cpp
    mutants = [m for m in all_mutants(b, "contract") if m.target == "model:tokenizer.special.bos"]
    seen = [run_seen(b, m, defer_cpp=True) for m in mutants]  # the C++ half left for later, as `charter mutate`
    pending = {id(m): s.pending.key for m, s in zip(mutants, seen) if s.pending}
    assert prepare_cpp(b, mutants, tmp_path / "cache") > 0
    outcomes = [run_mutant(b, m) for m in mutants]
    caught = [o for o in outcomes if o.verdict is Verdict.ERROR]
    assert caught, [(o.verdict, o.detail) for o in outcomes]
    for o in caught:
        assert "engines disagree: python tokenizer TOKENIZER_SPECIAL_ID tokenizer.special.bos" in o.detail
        assert o.detail.endswith("/ c++ admitted")
    assert pending == {k: v for k, v in b.cpp_key_of.items() if k in pending}  # the keys prepare_cpp built
    assert [s.outcome if s.pending is None else finish_cpp(b, m, s.outcome, s.pending)
            for m, s in zip(mutants, seen)] == outcomes


def test_a_contract_mutant_without_a_built_checker_is_an_error(native, smollm2):
    _, b = smollm2
    b2 = type(b)(**{**b.__dict__, "engines": "both", "cpp_keys": frozenset()})
    m = next(m for m in all_mutants(b2, "contract") if m.target == "model:tokenizer.special.bos" and m.operator == "+1")
    outcome = run_mutant(b2, m)
    assert outcome.verdict is Verdict.ERROR
    assert "no C++ checker was built for this mutated contract" in outcome.detail
    seen = run_seen(b2, m, defer_cpp=True)
    assert seen.outcome.verdict is Verdict.KILLED and seen.pending is not None
    assert finish_cpp(b2, m, seen.outcome, seen.pending) == outcome


def test_mutate_engine_both_without_a_compiler_exits_2(native, tensorless_gguf, tmp_path, monkeypatch, capsys):
    """A contract that charter._native holds no checker of (a frozen one), so that even its artifact
    side needs a compiled checker: `charter mutate --engine both` says why it cannot, exit 2."""
    from charter.cli import main

    assert main(["freeze", str(tensorless_gguf), "--id", "no-compiler", "-o", str(tmp_path)]) == 0
    capsys.readouterr()
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    assert main(["mutate", "--contract", str(tmp_path / "artifacts" / "no-compiler.yaml"), "--artifact",
                 str(tensorless_gguf), "--engine", "both", "--only", "artifact", "-j", "1"]) == 2
    err = capsys.readouterr().err
    assert "charter: cannot build the C++ checkers of this battery: no C++17 compiler" in err
    assert "Traceback" not in err
