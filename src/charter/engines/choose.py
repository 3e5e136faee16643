"""Which checker an engine runs: a committed or compiled-in one only if provably current, else one
rendered from the contracts into a cache.

Note [Choosing a checker]
~~~~~~~~~~~~~~~~~~~~~~~~~
Python engine: the committed file under generated/ runs only when the manifest says it was
generated from exactly these contract bytes and templates by this charter version, and the file
still has the bytes the manifest recorded. That is decided from the digests of the contracts,
without rendering. Otherwise the checker is rendered from the contracts into the cache, in a file
named by the digest of its text, and that copy runs.

C++ engine: the checker compiled into charter._native runs only when it was generated from these
contract bytes (the inputs it records). Otherwise a checker library holding the checker's key (the
digest of its rendering) runs: one loaded in this process already, else one built into the cache
(charter.engines.library) and loaded.

Either way a stale checker can never run, and a cached one is found by a digest of what it is.
`charter admit` first asks the manifest alone (Note [Vouched checker] in charter.engines.vouched),
which finds the same committed checker without loading the contracts, and comes here otherwise.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from charter import atomic
from charter.codegen.common.inputs import checker_inputs
from charter.codegen.common.manifest import python_checker_path, sha256_text
from charter.codegen.driver import render_python_checker
from charter.engines import cpp, library
from charter.engines.vouched import cache_dir, import_checker, output_vouched, read_manifest
from charter.contract.contractset import ContractSet
from charter.contract.plan import ArtifactPlan


class PythonChecker(NamedTuple):
    module: ModuleType
    origin: str  # which file runs, and why


class CppChecker(NamedTuple):
    key: str  # the contract id in charter._native, or a checker library's key
    origin: str  # where the checker was compiled, and why
    library: Path | None = None  # the checker library this process loaded it from, if it did


def python_checker(cs: ContractSet, contract_id: str, generated: Path) -> PythonChecker:
    """The Python checker of `contract_id` (Note [Choosing a checker])."""
    plan = cs.artifacts[contract_id]
    rel = python_checker_path(plan.id)
    committed = generated / rel
    manifest = read_manifest(generated)
    if manifest is not None and output_vouched(manifest, generated, rel, checker_inputs(cs, plan)):
        return PythonChecker(import_checker(committed), f"committed {committed}")
    rendered = render_python_checker(cs, plan)
    target = cache_dir() / f"{Path(rel).stem}-{sha256_text(rendered.text)[:16]}.py"
    atomic.write_text(target, rendered.text)
    reason = "no committed checker" if not committed.exists() else "committed checker is stale"
    return PythonChecker(import_checker(target), f"rendered from the contract into {target} ({reason})")


def compiled_in(cs: ContractSet, plan: ArtifactPlan) -> bool:
    """Whether charter._native holds a C++ checker of `plan` generated from these contract bytes."""
    try:
        cpp.require_current(plan.id, checker_inputs(cs, plan))
    except cpp.EngineUnavailable:
        return False  # not compiled in, compiled from other contract bytes, or no module
    return True


def cpp_checker(cs: ContractSet, plan: ArtifactPlan, cache: Path) -> CppChecker:
    """The C++ checker of `plan` as its contracts are now (Note [Choosing a checker]); raises
    cpp.EngineUnavailable (library.LibraryError when it cannot be compiled)."""
    if compiled_in(cs, plan):
        return CppChecker(plan.id, "c++ (charter._native)")
    key = library.checker_key(plan)
    if _loaded(key):  # a library holding it is loaded already (the key digests this very rendering)
        return CppChecker(key, "c++ (a checker library loaded into charter._native)")
    built = library.build_checkers({key: plan}, cache, flags=library.OPTIMIZED)
    cpp.load_library(built)
    return CppChecker(key, f"c++ (compiled into {built}: charter._native holds no current checker of {plan.id})", built)


def _loaded(key: str) -> bool:
    try:
        cpp.info(key)
    except cpp.EngineUnavailable:
        return False
    return True
