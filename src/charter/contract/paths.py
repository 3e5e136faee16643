"""Files a contract names: how a contract file is named in diagnostics, generated code and the
manifest, and the artifact file it pins. The standard library alone, so `charter admit` can name a
contract and find its artifact without loading the contract models."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple


def display_path(path: Path) -> str:
    """How a spec is named in diagnostics and generated code: relative to the project root (the
    parent of the enclosing `specs/` directory), so the name does not depend on where charter runs;
    outside a `specs/` tree, relative to the working directory."""
    resolved = Path(path).resolve()
    root = project_root(resolved)
    if root is not None:
        return resolved.relative_to(root).as_posix()
    try:
        return Path(os.path.relpath(resolved)).as_posix()
    except ValueError:
        return resolved.as_posix()


def project_root(path: Path) -> Path | None:
    """The parent of the `specs/` directory that encloses `path` (resolved), if one does: the
    directory display paths are relative to."""
    for parent in Path(path).resolve().parents:
        if parent.name == "specs":
            return parent.parent
    return None


class PinnedSource(NamedTuple):
    """The contract's `source`: the file it was made from (charter.admission.locate finds it)."""

    package: str | None
    path: str
    sha256: str
    size: int | None
