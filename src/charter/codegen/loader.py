"""Pick the checker `charter admit` runs: the committed one only if provably current.

The committed file under generated/ is used only when the manifest says it was generated from
exactly these contract bytes and templates by this charter version, and the file still has the
bytes the manifest recorded. Otherwise the checker is rendered from the contracts into a cache
and that copy runs: a stale checker can never run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType

from charter import __version__, atomic
from charter.codegen.driver import MANIFEST, render_python_checker, sha256_text, template_hashes
from charter.spec.contractset import ContractSet


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "charter" / __version__


def load_checker(cs: ContractSet, contract_id: str, generated: Path) -> tuple[ModuleType, str]:
    """Return (module, origin) where origin says which file ran and why."""
    plan = cs.artifacts[contract_id]
    output = render_python_checker(cs, plan)
    committed = generated / output.path
    if _manifest_vouches(generated, output.path, output.inputs, committed):
        return _import(committed), f"committed {committed}"
    target = cache_dir() / f"{Path(output.path).stem}-{sha256_text(output.text)[:16]}.py"
    atomic.write_text(target, output.text)
    reason = "no committed checker" if not committed.exists() else "committed checker is stale"
    return _import(target), f"rendered from the contract into {target} ({reason})"


def _manifest_vouches(generated: Path, rel: str, inputs: dict[str, str], committed: Path) -> bool:
    try:
        manifest = json.loads((generated / MANIFEST).read_text("utf-8"))
        entry = manifest["outputs"][rel]
        on_disk = hashlib.sha256(committed.read_bytes()).hexdigest()
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return (manifest.get("charter") == __version__ and manifest.get("templates") == template_hashes()
            and entry.get("inputs") == inputs and entry.get("sha256") == on_disk)


def _import(path: Path) -> ModuleType:
    name = f"charter_checker_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
