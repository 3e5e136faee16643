"""Files a contract names: how a contract file is named in diagnostics, generated code and the
manifest, and the artifact file it pins. The standard library alone, so `charter admit` can name a
contract and find its artifact without loading the contract models."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple


def display_path(path: Path) -> str:
    """How a spec is named in generated code, receipts and the manifest (its *name*): relative to
    the project root (Note [Spec names and shown paths]), so the name does not depend on where
    charter runs; outside a specs tree, relative to the working directory."""
    resolved = Path(path).resolve()
    root = project_root(resolved)
    if root is not None:
        return resolved.relative_to(root).as_posix()
    try:
        return Path(os.path.relpath(resolved)).as_posix()
    except ValueError:
        return resolved.as_posix()


def project_root(path: Path) -> Path | None:
    """The root that encloses `path` (resolved), if one does: the directory of the pyproject.toml
    whose `[tool.charter] specs` folder holds it, else the parent of an enclosing `specs/` folder."""
    from charter.config import active

    parents = Path(path).resolve().parents
    config = active()
    if config.root is not None and Path(config.specs).resolve() in parents:
        return config.root.resolve()
    for parent in parents:
        if parent.name == "specs":
            return parent.parent
    return None


def specs_tree(path: Path) -> Path | None:
    """The specs folder that encloses `path` (resolved) or is `path`: the configured one, else the
    nearest folder named `specs`."""
    from charter.config import active

    resolved = Path(path).resolve()
    config = active()
    specs = Path(config.specs).resolve()
    if config.root is not None and (specs == resolved or specs in resolved.parents):
        return specs
    return next((d for d in [resolved, *resolved.parents] if d.name == "specs" and d.is_dir()), None)


# Note [Spec names and shown paths]: a contract location carries the spec's *name*, relative to
# its project root (or to the working directory outside a specs tree): generated checkers state it
# as a literal, so it cannot depend on where charter runs. What a user reads is a *shown* path:
# charter.console resolves the name against the root of the command's own inputs and prints it
# relative to the working directory when it lies below it, else absolute (ruff's rule, so that the
# path always opens from where the user stands, and a pre-commit hook's or an editor's click works).


def resolve_name(name: str, anchors: list[str | Path]) -> Path:
    """The file a spec name (or any file name a diagnostic cites) stands for, given the paths the
    command was given: the first of their project roots that holds it, else the working directory."""
    if os.path.isabs(name):
        return Path(name)
    roots: list[Path] = []
    for anchor in anchors:  # the root as the user spells it (through a symlinked specs/), then resolved
        for root in (_lexical_root(anchor), project_root(Path(anchor) / "x")):  # the anchor may be specs/
            if root is not None and root not in roots:
                roots.append(root)
    for root in roots:
        if (root / name).exists():
            return root / name
    return Path(os.path.abspath(name))


def _lexical_root(anchor: str | Path) -> Path | None:
    """The project root above `anchor` without resolving symlinks: `work/specs -> /elsewhere/specs`
    is shown as `specs/...` from `work/`, as the user named it."""
    from charter.config import active

    config = active()
    absolute = Path(os.path.abspath(anchor))
    for folder in (absolute, *absolute.parents):
        if config.root is not None and str(folder) == config.specs:
            return config.root
        if folder.name == "specs":
            return folder.parent
    return None


def shown(path: str | Path) -> str:
    """`path` as the user reads it: relative to the working directory below it, else absolute."""
    absolute = os.path.normpath(os.path.abspath(path))
    cwd = os.getcwd()
    if absolute == cwd:
        return "."
    prefix = cwd if cwd.endswith(os.sep) else cwd + os.sep
    if absolute.startswith(prefix):
        return Path(absolute[len(prefix):]).as_posix()
    return Path(absolute).as_posix()


class PinnedSource(NamedTuple):
    """The contract's `source`: the file it was made from (charter.admission.locate finds it)."""

    package: str | None
    path: str
    sha256: str
    size: int | None
