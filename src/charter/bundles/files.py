"""The files stage: the bundle folder holds exactly the contract's files, each a regular file of
its size (and, but for weight files, its digest), before any of them is opened as a container.

Note [Bundle paths]
~~~~~~~~~~~~~~~~~~~
A contract names files by relative '/'-separated paths without '.' or '..' segments (the schema
refuses the rest). On disk, as onnx.checker treats a model's external data: the path, with every
symbolic link along it followed, must stay inside the bundle folder (the real path of the folder
is the boundary, so a Hugging Face cache snapshot whose files link to ../../blobs is refused: copy
it with `hf download --local-dir`); what it names must be a regular file, judged by lstat/stat
alone, so a FIFO or a device is refused without being opened. The folder walk that finds unlisted
files never follows a link: a link is an entry like any file. The walk is bounded (MAX_ENTRIES,
MAX_DEPTH), so a hostile folder costs at most that. Only after all this are files opened, one by
one, by their real path with O_NOFOLLOW|O_NONBLOCK.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from charter.admission.runtime import Rejected
from charter.bundles.plan import BundlePlan, FilePlan
from charter.diagnostics import Code, Diagnostic, Location

MAX_ENTRIES = 100_000  # directory entries one bundle folder may hold (the walk's bound)
MAX_DEPTH = 32
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class BundleRejected(Rejected):
    """A bundle-level rejection, with the bundle file it is about (None: the bundle as a whole)."""

    def __init__(self, diagnostic: Diagnostic, file: str | None) -> None:
        super().__init__(diagnostic)
        self.file = file


def reject(code: Code, field: str, message: str, at: Location | None, expected: object = None,
           actual: object = None, file: str | None = None) -> BundleRejected:
    return BundleRejected(Diagnostic(code, field, message, None if expected is None else str(expected),
                                     None if actual is None else str(actual), at), file)


def check_files(root: Path, plan: BundlePlan) -> None:
    """Every listed file present, inside the folder, regular and of its size; no unlisted file
    (extra_files: reject); the digest of every listed file that is not a weight file."""
    boundary = Path(os.path.realpath(root))
    for f in plan.files:
        _check_one(root, boundary, f)
    if plan.extra_files.value == "reject":
        listed = {f.path for f in plan.files}
        for entry in walk(root):
            if entry not in listed:
                raise reject(Code.BUNDLE_FILE_UNEXPECTED, f"files.{entry}", f"{entry} is in the bundle folder but "
                             "not in the contract (extra_files: reject)", plan.extra_files.at, "absent", "present", entry)
    for f in plan.files:
        if f.sha256 is not None and f.role != "weights":
            actual = digest_of(root, f)
            if actual != f.sha256:
                raise reject(Code.BUNDLE_FILE_DIGEST, f"files.{f.path}.sha256",
                             f"{f.path} has sha256 {actual}, expected {f.sha256}", f.sha256_at, f.sha256, actual, f.path)


def _check_one(root: Path, boundary: Path, f: FilePlan) -> None:
    path = root / f.path
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise reject(Code.BUNDLE_FILE_MISSING, f"files.{f.path}", f"{f.path} ({f.role}) is missing", f.at,
                     "present", "missing", f.path) from None
    except OSError as exc:
        raise reject(Code.BUNDLE_FILE_MISSING, f"files.{f.path}", f"{f.path} cannot be read: {exc.strerror}",
                     f.at, "present", "unreadable", f.path) from None
    real = Path(os.path.realpath(path))
    if real != boundary and boundary not in real.parents:
        raise reject(Code.BUNDLE_FILE_ESCAPES, f"files.{f.path}", f"{f.path} resolves to {real}, outside the "
                     f"bundle folder {boundary} (a symbolic link leaves it)", f.at, "inside", "outside", f.path)
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except OSError as exc:
            raise reject(Code.BUNDLE_FILE_MISSING, f"files.{f.path}", f"{f.path} is a link to nothing "
                         f"({exc.strerror})", f.at, "present", "missing", f.path) from None
    if not stat.S_ISREG(st.st_mode):
        what = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise reject(Code.BUNDLE_FILE_KIND, f"files.{f.path}", f"{f.path} is {what}, not a regular file", f.at,
                     "regular file", what, f.path)
    if f.size is not None and st.st_size != f.size:
        raise reject(Code.BUNDLE_FILE_SIZE, f"files.{f.path}.size", f"{f.path} is {st.st_size} bytes, expected "
                     f"{f.size}", f.size_at, f.size, st.st_size, f.path)


def walk(root: Path) -> list[str]:
    """Every non-directory entry under `root` as a bundle path, sorted; links are not followed.
    Bounded by MAX_ENTRIES and MAX_DEPTH (BUNDLE_LIMIT beyond them)."""
    found: list[str] = []
    seen = 0
    stack: list[tuple[Path, str, int]] = [(root, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > MAX_ENTRIES:
                        raise reject(Code.BUNDLE_LIMIT, "files", f"the bundle folder holds more than {MAX_ENTRIES} "
                                     "entries", None, f"at most {MAX_ENTRIES}", "more")
                    name = prefix + entry.name
                    if entry.is_dir(follow_symlinks=False):
                        if depth + 1 > MAX_DEPTH:
                            raise reject(Code.BUNDLE_LIMIT, f"files.{name}", f"{name} is nested more than "
                                         f"{MAX_DEPTH} folders deep", None, f"at most {MAX_DEPTH}", "deeper")
                        stack.append((Path(entry.path), name + "/", depth + 1))
                    else:
                        found.append(name)
        except OSError as exc:
            raise reject(Code.BUNDLE_FILE_KIND, f"files.{prefix or '.'}", f"{prefix or 'the bundle folder'} cannot "
                         f"be listed: {exc.strerror}", None, "a readable folder", "unreadable") from None
    return sorted(found)


def open_regular(path: Path) -> int:
    """A listed file's descriptor: its last component never a link followed after the check
    (O_NOFOLLOW), never a FIFO waited on (O_NONBLOCK); the caller closes it."""
    fd = os.open(os.path.realpath(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(0, "not a regular file")
    return fd


def digest_of(root: Path, f: FilePlan) -> str:
    """The sha256 of a listed file, or BUNDLE_FILE_MISSING when it cannot be read after all."""
    try:
        return file_sha256(root / f.path)
    except OSError as exc:
        raise reject(Code.BUNDLE_FILE_MISSING, f"files.{f.path}", f"{f.path} cannot be read: {exc.strerror}",
                     f.at, "present", "unreadable", f.path) from None


def file_sha256(path: Path) -> str:
    with os.fdopen(open_regular(path), "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
