"""The two versions a diff compares: two paths, or a git revision of paths against the work tree.

Note [Diff from a git revision]: `--against REF PATH...` reads OLD from git, never from a checkout:
the blobs under each PATH and under its search trees (charter.console.search_paths: the enclosing
specs/ tree, where the models an artifact names are) at REF are listed with `git ls-tree` and read
with one `git cat-file --batch` into a temporary folder laid out as the repository is, and OLD is
loaded from there exactly as NEW is loaded from the work tree. A PATH that REF does not have is an
empty OLD (every contract under it is added). Anything git refuses (not a repository, an unknown
revision) is one line and exit 2, never a traceback.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path



class SourceError(Exception):
    """A version cannot be read (git refuses, a path is missing): the message says why."""


@dataclass
class Version:
    """One side: the paths whose contracts are diffed and where their references are looked up."""

    label: str  # as the user named it: a path, or REF
    paths: list[str]
    search: list[str]
    roots: list[Path]  # what each contract's file name is taken relative to (pairs a renamed id)


def version_of(paths: list[str], search: list[str] | None, label: str | None = None) -> Version:
    from charter.console import search_paths

    for p in paths:
        if not Path(p).exists():
            raise SourceError(f"{p}: no such file or directory")
    roots = [Path(p).resolve() if Path(p).is_dir() else Path(p).resolve().parent for p in paths]
    return Version(label or " ".join(paths), list(paths), search_paths(paths, search), roots)


def relative_names(version: Version, cs) -> dict[str, str]:
    """contract id -> its file relative to the path it was found under."""
    out = {}
    for cid in cs.primary:
        path = cs.contracts[cid].path
        if path is None:
            continue
        resolved = path.resolve()
        for root in version.roots:
            if resolved.is_relative_to(root):
                out[cid] = resolved.relative_to(root).as_posix()
                break
    return out


def _git(top: Path | None, *args: str, data: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=top, input=data, capture_output=True, check=False)
    except OSError as exc:
        raise SourceError(f"cannot run git: {exc.strerror}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SourceError(f"git {args[0]}: {message[-1] if message else f'exit {done.returncode}'}")
    return done.stdout


def from_git(ref: str, paths: list[str], search: list[str] | None, folder: Path) -> tuple[Version, Version]:
    """(OLD at `ref`, NEW in the work tree) of `paths`; OLD's files are written below `folder`
    (Note [Diff from a git revision])."""
    new = version_of(paths, search)
    top = Path(_git(None, "rev-parse", "--show-toplevel").decode().strip())
    if ref.startswith("-"):
        raise SourceError(f"{ref!r} is not a git revision")
    try:
        commit = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}").decode().strip()
    except SourceError:
        raise SourceError(f"{ref!r} is not a commit of the repository at {top}") from None
    wanted = sorted({_inside(top, p) for p in [*new.paths, *new.search]})
    listing = _git(top, "ls-tree", "-r", "-z", "--full-tree", commit, "--", *wanted)
    blobs = []
    for entry in filter(None, listing.split(b"\0")):
        meta, _, name = entry.partition(b"\t")
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000":
            blobs.append((sha, name.decode("utf-8", "surrogateescape")))
    if blobs:
        _write_blobs(top, blobs, folder)
    old_paths = [str(folder / _inside(top, p)) for p in new.paths]
    old_search = [str(folder / _inside(top, p)) for p in new.search]
    roots = [folder / _inside(top, str(r)) for r in new.roots]
    return Version(ref, old_paths, old_search, roots), new


def _inside(top: Path, path: str) -> str:
    """`path` relative to the repository's top folder (it must lie inside)."""
    resolved = Path(os.path.abspath(path)).resolve()
    if not resolved.is_relative_to(top.resolve()):
        raise SourceError(f"{path}: outside the git repository at {top}")
    return resolved.relative_to(top.resolve()).as_posix() or "."


def _write_blobs(top: Path, blobs: list[tuple[bytes, str]], folder: Path) -> None:
    """Every blob, read by one `git cat-file --batch`, at its path below `folder`."""
    out = _git(top, "cat-file", "--batch", data=b"".join(sha + b"\n" for sha, _ in blobs))
    at = 0
    for _, name in blobs:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        body = out[header_end + 1:header_end + 1 + size]
        at = header_end + 1 + size + 1
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)


def empty_folder() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="charter-diff-")

