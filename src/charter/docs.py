"""Where the user documentation is: help texts name docs/ pages, which are installed with charter.

A wheel carries docs/*.md and schemas/*.json inside the package (CMakeLists.txt installs them as
charter/docs and charter/schemas); an editable install or a source checkout has them in the
repository. Help texts print the folder that exists, so a page they name can be opened.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def docs_folder() -> Path:
    """The installed docs/ folder (the repository's in a checkout)."""
    return _existing("docs")


def schemas_folder() -> Path:
    """The published JSON Schemas (the repository's schemas/ in a checkout)."""
    return _existing("schemas")


def _existing(name: str) -> Path:
    installed = _PACKAGE / name
    if installed.is_dir():
        return installed
    return _PACKAGE.parents[1] / name
