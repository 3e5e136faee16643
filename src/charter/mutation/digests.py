"""What a battery ran on, as digests: the report's meta (so `merge` can refuse shards of different
runs) and the pieces of the verdict cache's keys (charter.mutation.cache)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import charter
from charter import __version__
from charter.edits import edit


def sha256(data: bytes | str) -> str:
    return "sha256:" + hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def edited(base: bytes, data, shared: tuple[int, int] = (0, 0)) -> str:
    """A digest of `data` that determines it for a fixed `base`, in time proportional to what
    changed and a memcmp of the rest (charter.edits, compared once per header): its trailing zero
    bytes counted, then what precedes them as an edit of what precedes `base`'s (the lengths, the
    gap's and the middle's bytes). The zeros first: a header that grows or shrinks ends in less or
    more alignment padding, and an edit with them would span every byte from the change to the
    end. `shared`: charter.edits.edit's."""
    e = edit(base, data, shared)
    view, rest = memoryview(data), e.prefix + e.gap + e.run
    gap, middle = view[e.prefix:e.prefix + e.gap].tobytes(), view[rest:e.body - e.suffix].tobytes()
    return f"{e.prefix}+{sha256(gap)}+{e.run}+{sha256(middle)}+{e.suffix}+{e.zeros}"


def contract_files(sources: list[str]) -> str:
    """The contract files the battery read (their text, in any order)."""
    return sha256("\n".join(sorted(sha256(s) for s in sources)))


def mutant_ids(ids: list[str]) -> str:
    """The whole battery's mutants, in battery order: two runs with another side (`--only`) or
    another operator set differ here."""
    return sha256("\n".join(ids))


@lru_cache(maxsize=None)
def charter_sources() -> str:
    """charter's own code and templates. The version alone does not change when an editable
    install's code does; a verdict computed by other code is not reused (Note [Verdict cache])."""
    root = Path(charter.__file__).parent
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                       and p.suffix not in (".pyc", ".so")):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()


def meta_digests(sources: list[str], raw_header: bytes, size: int, checker_text: str, ids: list[str],
                 engine: str) -> dict:
    """The `digests` a battery report's meta carries (Note [Shards that merge])."""
    return {"contract": contract_files(sources), "artifact_header": sha256(raw_header), "artifact_size": size,
            "checker": sha256(checker_text), "charter": __version__, "charter_sources": charter_sources(),
            "mutants": mutant_ids(ids), "engine": engine}


def bundle_digests(sources: list[str], folder: Path, ids: list[str], engine: str) -> dict:
    """The `digests` of a bundle battery's report: its model folder by every file's path and size,
    and by the bytes of each file of at most 1 MiB (the companions; weight files by their size, as
    an artifact battery records its artifact's header and size)."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        size = path.stat().st_size
        h.update(f"{path.relative_to(folder).as_posix()}\0{size}\0".encode())
        if size <= 1 << 20:
            h.update(path.read_bytes())
    return {"contract": contract_files(sources), "folder": "sha256:" + h.hexdigest(), "charter": __version__,
            "charter_sources": charter_sources(), "mutants": mutant_ids(ids), "engine": engine}


def file_content(path: Path, cache: Path, streamed: Callable[[], str | None] | None = None) -> str:
    """sha256 of a whole file, remembered under `cache` by the file's identity (device, inode,
    size, mtime and ctime in ns), so a 100 MB checkpoint is read once per version of it (as git's
    index trusts a file's stat). `streamed()`, asked only when none is remembered: the digest of
    a pass over the whole file the caller makes anyway (a battery's verified prefixes), or None."""
    st = os.stat(path)
    ident = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{os.path.abspath(path)}"
    memo = cache / "files" / (hashlib.sha256(ident.encode()).hexdigest()[:32] + ".json")
    try:
        known = json.loads(memo.read_text("utf-8"))
        if known.get("identity") == ident:
            return known["sha256"]
    except (OSError, ValueError, AttributeError):
        pass
    digest = streamed() if streamed is not None else None
    if digest is None:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        digest = "sha256:" + h.hexdigest()
    from charter import atomic

    try:
        atomic.write_text(memo, json.dumps({"identity": ident, "sha256": digest}) + "\n")
    except OSError:
        pass  # a read-only cache costs a re-read next time, nothing else
    return digest


@lru_cache(maxsize=None)
def native_sources() -> str:
    """charter._native and the C++ runtime headers the battery's checker libraries compile against:
    with both engines a verdict also says the C++ checker agreed, which other native code may not."""
    from charter import _native
    from charter.engines.library import include_dir

    h = hashlib.sha256(Path(_native.__file__).read_bytes())
    for path in sorted((include_dir() / "charter").glob("*.hpp")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()
