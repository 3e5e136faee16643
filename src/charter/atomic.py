"""Atomic, write-if-changed file output: a run that dies mid-write leaves the old file intact."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replacing(path: str | Path):
    """A file opened for writing next to `path`: fsynced and renamed over `path` when the block
    ends, removed (and `path` untouched) when it raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temp_beside(path)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_bytes(path: str | Path, data: bytes) -> bool:
    """Write `data` to `path` through a temp file + rename; return False when already identical."""
    path = Path(path)
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    with replacing(path) as f:
        f.write(data)
    return True


def write_many(files: dict[Path, bytes]) -> list[Path]:
    """Write several files that belong together: every temporary file is written and synced before
    the first rename, so an interruption while writing leaves every previous output intact.
    Returns the paths that changed."""
    changed = {}
    for path, data in files.items():
        path = Path(path)
        try:
            if path.read_bytes() == data:
                continue
        except OSError:
            pass
        changed[path] = data
    temps: dict[Path, str] = {}
    try:
        for path, data in changed.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = _temp_beside(path)
            temps[path] = tmp
            os.fchmod(fd, 0o666 & ~_umask())
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        for path, tmp in temps.items():
            os.replace(tmp, path)
    except BaseException:
        for tmp in temps.values():
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    return list(changed)


def write_text(path: str | Path, text: str) -> bool:
    """Text is written as UTF-8 with LF line endings, exactly as given."""
    return write_bytes(path, text.encode("utf-8"))


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temporary file in `path`'s directory (so the rename is atomic), open for writing."""
    import tempfile  # here, not at the top: it pulls in shutil, bz2, lzma and random, which `admit` never needs

    return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
