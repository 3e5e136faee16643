"""generated/manifest.json: what every generated file was made from, read without rendering.

The manifest records, per output, the sha256 of each input spec, of the templates and of the
output itself. Reading it needs neither Jinja2 nor the contract models, so `charter admit` can tell
a current committed checker from a stale one at the cost of a few digests
(Note [Choosing a checker] in charter.engines.choose).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from charter.codegen.common.names import module_name

MANIFEST = "manifest.json"
TEMPLATE_PACKAGES = ("charter.codegen.python", "charter.codegen.labels", "charter.codegen.bindings",
                     "charter.codegen.metal", "charter.codegen.cpp", "charter.codegen.textcases",
                     "charter.codegen.regions")
_CODEGEN = Path(__file__).resolve().parents[1]  # charter/codegen: each package's templates/ by path,
# so that hashing them imports none of the packages (whose modules pull in Jinja2 and the models)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def template_hashes() -> dict[str, str]:
    """sha256 of every template file, keyed `package/name`, so a template edit marks outputs stale."""
    out = {}
    for package in TEMPLATE_PACKAGES:
        folder = _CODEGEN / package.rpartition(".")[2] / "templates"
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".jinja"):
                out[f"{package}/{entry.name}"] = hashlib.sha256(entry.read_bytes()).hexdigest()
    return out


def python_checker_path(contract_id: str) -> str:
    """The committed Python checker of a contract, relative to the generated/ directory."""
    return f"python/{module_name(contract_id)}.py"
