"""A bundle's resolved plan and checkers, kept in the cache with a receipt of what they were made from.

Note [Vouched bundle]
~~~~~~~~~~~~~~~~~~~~~
Admitting a bundle from its contracts costs more than admitting it: the bundle, artifact and model
contracts are parsed (a 131-shard source lists each of its 1,658 tensors in its placement), the
pydantic models are built and validated, the plan is resolved, the checker is found or rendered.
The outcome is a function of the bytes of the contract files the load read, the search path that
found them, charter's version and its templates (and of where the user stands: locations are
printed relative to the current directory). So, as for one file (Note [Vouched checker] in
charter.engines.vouched), the first admission leaves a receipt: the absolute path and sha256 of
every contract file the load read, the search path, the version, the templates, the Python
checker's file and digest, the pickled BundlePlan's file and digest, and for `--engine cpp` the C++
checker (a checker library's key, file and digest, or a checker compiled into charter._native with
the contract inputs it must have been generated from), and the bundle contract's display path. The next admission of the same bundle
contract, with every one of those bytes unchanged, runs from the receipt: no YAML, no pydantic, no
resolution. Anything else (a changed or vanished file, another search path, version or templates,
a digest that does not match) is no vouching, and the full path runs and writes a new receipt.

The pickle is charter's own, written to charter's cache next to the Python checkers it imports, and
read only when its sha256 is the receipt's: it is trusted exactly as those checkers are.

What a receipt cannot see, as for one file: a new contract file elsewhere on the search path that
would now make an id ambiguous (`charter check` owns that across a tree).
"""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from charter import __version__, atomic
from charter.bundles.plan import BundlePlan
from charter.codegen.common.manifest import template_hashes
from charter.contract.paths import display_path
from charter.engines.vouched import cache_dir, file_sha256, import_checker, receipt_path, resolved_paths


class VouchedBundle(NamedTuple):
    plan: BundlePlan
    checker: ModuleType
    origin: str
    cpp: dict | None  # {"key", "library", "sha256"} or {"key", "inputs"} (compiled into charter._native)


def write_bundle_receipt(contract: Path, files: list[Path], search: list[str], plan: BundlePlan,
                         checker: Path, cpp: dict | None = None) -> None:
    """Record that `plan` and `checker` (and the C++ checker `cpp`) came from the contract files
    `files`, found with `search`, for the bundle contract `contract`."""
    blob = pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)
    digest = hashlib.sha256(blob).hexdigest()
    plan_file = cache_dir() / "bundle-plans" / f"{digest[:32]}.pickle"
    atomic.write_bytes(plan_file, blob)
    receipt = {"charter": __version__, "templates": template_hashes(), "spec": display_path(contract),
               "search": resolved_paths(search),
               "files": {str(f.resolve()): file_sha256(f) for f in files},
               "plan": str(plan_file), "plan_sha256": digest,
               "checker": str(checker), "checker_sha256": file_sha256(checker), "cpp": cpp}
    atomic.write_text(bundle_receipt_path(contract), json.dumps(receipt, indent=2, sort_keys=True) + "\n")


def vouched_bundle(contract: Path, search: list[str], engine: str) -> VouchedBundle | None:
    """The plan and checkers of the bundle contract `contract` when its receipt vouches for every
    byte they were made from (Note [Vouched bundle]); None: take the full path. With engine "cpp",
    also None when the receipt names no C++ checker."""
    try:
        receipt = json.loads(bundle_receipt_path(contract).read_text("utf-8"))
        files, checker, plan_file = receipt["files"], Path(receipt["checker"]), Path(receipt["plan"])
        current = (receipt["charter"] == __version__ and receipt["templates"] == template_hashes()
                   and receipt["spec"] == display_path(contract) and str(contract.resolve()) in files and receipt["search"] == resolved_paths(search)
                   and all(file_sha256(Path(path)) == sha for path, sha in files.items())
                   and file_sha256(checker) == receipt["checker_sha256"])
        blob = plan_file.read_bytes() if current else b""
        cpp = receipt["cpp"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not current or hashlib.sha256(blob).hexdigest() != receipt["plan_sha256"]:
        return None
    if engine == "cpp" and not isinstance(cpp, dict):
        return None
    plan = pickle.loads(blob)
    return VouchedBundle(plan, import_checker(checker), f"cached {checker} (the bundle's receipt vouches for "
                                                        f"{contract})", cpp if engine == "cpp" else None)


def bundle_receipt_path(contract: Path) -> Path:
    return receipt_path(contract, "bundle-receipts")
