"""The committed checker of a contract file, when generated/manifest.json vouches for its bytes.

Note [Vouched checker]
~~~~~~~~~~~~~~~~~~~~~~
The manifest records, for each committed Python checker, the sha256 of the two contract files it
was generated from (the artifact contract and its model, by display path), of every template and
of the checker file itself, and charter's version. When the contract file named on the command line
has the recorded bytes, its model has too, and the templates, version and checker file all match,
that checker is exactly what rendering the contracts again would give: it runs without parsing
YAML, building the contract models or rendering anything (the cost of a few digests). Anything
else (another version, an edited contract or model, a contract outside the manifest, a model
contract, an unreadable file) is no vouching at all, and the caller takes the full path:
load_set, then Note [Choosing a checker] in charter.engines.choose, which renders a current
checker. So the fast path changes only the cost, never the checker that runs.

The manifest speaks for the default search path only (the enclosing specs/ tree it was generated
from): with `--search`, the model found could be another file, so only a receipt can vouch.

A checker `charter admit` rendered into the cache (a contract outside generated/, or an edited
one) leaves a receipt of the same facts: the absolute paths and digests of the two contract files
it was rendered from, the search path that found the model, the templates, the version and the
checker file's digest, and for `--engine cpp` the key of its C++ checker and the digest of the
checker library that holds it. The next admission of that contract file, unchanged, with the same
search path, runs the cached checkers on the receipt's word, the same way (the key digests the C++
rendering, itself a function of the same contract bytes, templates and version).

What it does not re-check is what `charter check` owns across a tree: a second file declaring the
model's id is an `ID_DUPLICATE` there; here the model is the file the checker was generated from.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from charter import __version__, atomic
from charter.codegen.common.manifest import MANIFEST, template_hashes
from charter.contract.paths import display_path, project_root


def cache_dir() -> Path:
    """charter's cache for this version: rendered Python checkers, their receipts under receipts/,
    and checker libraries under checkers/."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "charter" / __version__


class Vouched(NamedTuple):
    module: ModuleType  # the committed or cached Python checker
    inputs: dict[str, str]  # spec display path -> sha256: what it was generated from
    origin: str  # which file runs, and why
    library: tuple[str, Path] | None = None  # a receipt's C++ checker: its key, the library holding it


def read_manifest(generated: Path) -> dict | None:
    """The manifest when it is charter's own for this version and these templates, else None."""
    try:
        manifest = json.loads((generated / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("charter") != __version__ \
            or manifest.get("templates") != template_hashes() or not isinstance(manifest.get("outputs"), dict):
        return None
    return manifest


def output_vouched(manifest: dict, generated: Path, rel: str, inputs: dict[str, str]) -> bool:
    """Whether the committed output `rel` was generated from exactly `inputs` and still has the
    bytes the manifest recorded."""
    entry = manifest["outputs"].get(rel)
    return isinstance(entry, dict) and entry.get("inputs") == inputs \
        and entry.get("sha256") == file_sha256(generated / rel)


def vouched_checker(contract: Path, generated: Path, search: list[str], explicit_search: bool = False) -> Vouched | None:
    """The committed Python checker of the artifact contract at `contract` if the manifest vouches
    for it (not with an explicit search path), else a cached one if its receipt for this search path
    does (Note [Vouched checker]); None means: take the full path."""
    committed = None if explicit_search else committed_checker(contract, generated)
    return committed or cached_checker(contract, search)


def committed_checker(contract: Path, generated: Path) -> Vouched | None:
    manifest = read_manifest(generated)
    digest = file_sha256(contract)
    if manifest is None or digest is None:
        return None
    spec = display_path(contract)
    root = project_root(contract) or Path.cwd()
    for rel, entry in sorted(manifest["outputs"].items()):
        inputs = entry.get("inputs") if isinstance(entry, dict) else None
        # checkers are python/<module>.py; python/labels/ and python/regions/ hold other generated code
        if not rel.startswith("python/") or "/" in rel[len("python/"):] or not isinstance(inputs, dict) \
                or inputs.get(spec) != digest:
            continue
        if all(file_sha256(root / path) == sha for path, sha in inputs.items()) \
                and output_vouched(manifest, generated, rel, inputs):
            module = import_checker(generated / rel)
            if module.SPEC == spec:  # its artifact contract, not its model
                return Vouched(module, inputs, f"committed {generated / rel} (the manifest vouches for {spec})")
    return None


def write_receipt(contract: Path, model: Path, inputs: dict[str, str], checker: Path, search: list[str],
                  library: tuple[str, Path] | None = None) -> None:
    """Record that `checker` (and the C++ checker `library`: key, library file) was made from the
    contract files `contract` and `model` with the digests `inputs` (display path -> sha256,
    artifact contract first), the model found on `search`."""
    (spec, spec_sha), (_, model_sha) = inputs.items()
    receipt = {"charter": __version__, "templates": template_hashes(), "spec": spec, "inputs": inputs,
               "search": resolved_paths(search),
               "files": {str(contract.resolve()): spec_sha, str(model.resolve()): model_sha},
               "checker": str(checker), "checker_sha256": file_sha256(checker)}
    if library is not None:
        receipt["cpp"] = {"key": library[0], "library": str(library[1]), "sha256": file_sha256(library[1])}
    atomic.write_text(receipt_path(contract), json.dumps(receipt, indent=2, sort_keys=True) + "\n")


def cached_checker(contract: Path, search: list[str]) -> Vouched | None:
    """The cached checker of `contract` when its receipt vouches for every byte it was made from,
    found with this search path."""
    try:
        receipt = json.loads(receipt_path(contract).read_text("utf-8"))
        files, checker, inputs = receipt["files"], Path(receipt["checker"]), receipt["inputs"]
        current = (receipt["charter"] == __version__ and receipt["templates"] == template_hashes()
                   and receipt["spec"] == display_path(contract) and str(contract.resolve()) in files
                   and receipt["search"] == resolved_paths(search)
                   and all(file_sha256(Path(path)) == sha for path, sha in files.items())
                   and file_sha256(checker) == receipt["checker_sha256"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not current:
        return None
    module = import_checker(checker)
    return Vouched(module, dict(inputs), f"cached {checker} (its receipt vouches for {receipt['spec']})",
                   vouched_library(receipt.get("cpp")))


def vouched_library(cpp: object) -> tuple[str, Path] | None:
    """A receipt's C++ checker ({"key", "library", "sha256"}) as (key, library file) when the file
    still has the recorded digest, else None."""
    if isinstance(cpp, dict) and file_sha256(Path(str(cpp.get("library")))) == cpp.get("sha256"):
        return str(cpp["key"]), Path(cpp["library"])
    return None


def resolved_paths(search: list[str]) -> list[str]:
    return [str(Path(d).resolve()) for d in search]


def receipt_path(contract: Path, folder: str = "receipts") -> Path:
    """Where the receipt of the contract file `contract` is kept (one per resolved path), under the
    cache's `folder` (bundle contracts keep theirs apart: charter.bundles.vouched)."""
    key = hashlib.sha256(str(contract.resolve()).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return cache_dir() / folder / f"{key}.json"


def import_checker(path: Path) -> ModuleType:
    """A checker module from its file, under a name of its own (two checkers never share one)."""
    name = f"charter_checker_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
