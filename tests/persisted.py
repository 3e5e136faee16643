"""Test inputs that pinned tools compute from pinned files, kept on disk between test processes.

gguf.GGUFReader takes seconds over SmolLM2's 49,152-token vocabulary, and the tensor-less GGUFs are
written from that file. Neither depends on the code under test when it is computed by an unmutated
run, so a pytest process need not compute it again: the code-mutation gate runs pytest once per
mutant (a forked process each, nothing inherited from the run that collected coverage), and without
this every reader mutant paid those seconds before its first assertion.

The key is the input file's identity (resolved path, size, modification time) and a version the
caller bumps when what it computes changes."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "charter-tests"


def file_key(path: Path, version: str) -> str:
    st = Path(path).stat()
    where = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]
    return f"{version}-{st.st_size}-{st.st_mtime_ns}-{where}"


def _publish(write: Callable[[Path], None], final: Path) -> None:
    """Write next to `final` and rename: a reader sees the whole file or none."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=final.name + ".")
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, final)
    finally:
        Path(tmp).unlink(missing_ok=True)


def value(kind: str, key: str, compute: Callable[[], T]) -> T:
    """compute(), or what an earlier process stored for (kind, key)."""
    path = CACHE / kind / f"{key}.pickle"
    try:
        return pickle.loads(path.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError):
        result = compute()
        _publish(lambda tmp: tmp.write_bytes(pickle.dumps(result)), path)
        return result


def file(kind: str, key: str, name: str, write: Callable[[Path], None]) -> Path:
    """The file `write(path)` writes, written once for (kind, key)."""
    path = CACHE / kind / key / name
    if not path.is_file():
        _publish(write, path)
    return path
