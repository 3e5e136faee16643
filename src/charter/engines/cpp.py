"""The C++ engine: the generated C++ checkers compiled into charter._native, or into a checker
library loaded into it (charter.engines.library), giving the same Verdict as the Python engine.

The C++ checker never opens the file: it works over a span of the header plus the file size
(docs/native.md, "C++ admission"). For a file (`run_file`), the span is the file mapped read-only
(mmap), limited to what the strict reader may ever look at -- the first min(file size, max header
bytes) bytes -- so the checker touches only the pages of the header, as the Python reader does. A
caller that holds only a prefix of the file (a stream, a network range) uses `run_prefixes`: it
reads a prefix, and when the checker reports `needs_more` (the span ended before the header did),
it reads up to the offset the checker asked for and runs again. The verdict never depends on the
span's length: the only diagnostic that could is the one that asks for more.

Embedded stores (docs/stores.md) keep their manifests in the data section. The checker asks the
caller for each read its stores stage makes, through `read_at(offset, length)` (Note [Store
regions] in native/include/charter/stores.hpp): the file with pread, or a caller's reader, such as
the mutation battery's overlay of a mutant's patches. Which regions are read is stated by the
stages alone, never planned here.

A contract's `config` binds a companion file beside the artifact (config.json). The checker never
opens it either: `run_file` reads it beside the artifact (`read_companion`) and passes its bytes,
or why they could not be read, and the checker parses and compares them
(native/include/charter/companion.hpp).

Payload verification reads tensor bytes; the C++ engine does not (it is CPU-only and header-only).
With Options.verify_payload, `admit` runs the payload stage with the Python engine after the C++
stages admitted the header, over the view the Python reader builds; the value policy's blocks are
scanned there by the C++ runtime (charter/values.hpp through charter._native.first_bad_value),
Python streaming and hashing the bytes.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

from charter.admission.report import AdmissionReport, DiagnosticModel
from charter.diagnostics import ADMISSION_STAGES, Stage
from charter.engines.options import Companion, EngineUnavailable, Options  # callers catch cpp.EngineUnavailable
from charter.engines.verdict import Verdict
from charter.formats.safetensors import MAX_HEADER_BYTES as SAFETENSORS_MAX_HEADER
from charter.formats.sniff import SNIFF_BYTES

ReadAt = Callable[[int, int], bytes]  # (absolute offset, length) -> bytes; fewer at the end of the file


def _module():
    try:
        from charter import _native
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise EngineUnavailable(f"charter._native is not built ({exc}); reinstall charter (pip install -e .)") from exc
    return _native


def load_module_file(path: str | os.PathLike):
    """Load the extension at `path` as charter._native (a build other than the installed one, or
    the installed build for a copy of the sources that has none: the code-mutation gate)."""
    import importlib.util
    import sys

    import charter

    spec = importlib.util.spec_from_file_location("charter._native", os.fspath(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["charter._native"] = module
    charter._native = module
    return module


def available() -> bool:
    """Whether charter._native is importable (it is built by `pip install`)."""
    try:
        _module()
    except EngineUnavailable:
        return False
    return True


def contracts() -> list[str]:
    """Contract ids of the checkers compiled into charter._native."""
    return list(_module().contracts()) if available() else []


@dataclass(frozen=True)
class CheckerInfo:
    """What a compiled checker was generated from (rt::CheckerEntry of charter/registry.hpp)."""

    key: str  # its contract id in charter._native, or a checker library's key
    contract: str
    model: str
    spec: str
    format: str
    status: str
    companion: str | None  # the file its `config` binds beside the artifact
    inputs: dict[str, str]  # spec display path -> sha256 of the bytes it was generated from
    stores: tuple[dict, ...]  # its store facts: name, kind, tensor, fields, components, head_rows


def info(key: str) -> CheckerInfo:
    """The checker compiled in under a contract id, or loaded under a library key."""
    try:
        d = _module().info(key)
    except KeyError:
        raise EngineUnavailable(f"charter._native has no C++ checker for {key!r} (is generated/cpp/{key}.hpp "
                                "committed, and the module rebuilt?)") from None
    return CheckerInfo(key, d["contract"], d["model"], d["spec"], d["format"], d["status"], d["companion"],
                       dict(d["inputs"]), tuple(d["stores"]))


def load_library(path: str | os.PathLike) -> list[str]:
    """Load a checker library (Note [Checker libraries] in native/include/charter/registry.hpp)
    into charter._native: its keys, which every function here accepts in place of a contract id."""
    try:
        return list(_module().load_library(os.fspath(path)))
    except RuntimeError as exc:
        raise EngineUnavailable(str(exc)) from exc


def require_current(key: str, inputs: dict[str, str]) -> None:
    """Refuse a compiled checker generated from other contract bytes than `inputs` (spec -> sha256)."""
    if info(key).inputs != dict(inputs):
        raise EngineUnavailable(f"the C++ checker of {key!r} was generated from other contract bytes than these: "
                                "regenerate (charter generate) and rebuild (pip install -e .)")


def read_companion(artifact: str | os.PathLike, file: str) -> Companion:
    """The companion `file` beside `artifact`, as the C++ checker takes it: the bytes the Python
    engine reads (charter.admission.runtime.read_companion: at most one byte over the limit), or
    why they could not be read (strerror, as Context._companion reports it)."""
    from charter.admission.runtime import read_companion as read

    try:
        return read(Path(artifact).parent / file)
    except OSError as exc:
        return exc.strerror or str(exc)


# --- running -------------------------------------------------------------------------------------


def run(key: str, header, file_size: int, options: Options = Options(), *, read_at: ReadAt | None = None,
        regions=None, reference=None) -> Verdict:
    """The C++ checker over a header span (bytes-like) of a file of `file_size` bytes. Store reads
    are served from `regions` ([(absolute offset, bytes-like)] read up front) or asked of
    `read_at`; with neither, the file reads as ending before each store manifest
    (STORE_GEOMETRY, field "file"). `reference`: a header parsed once (`reference`), which
    changes how fast, never what, the checker says."""
    return verdict_of(_detail(key, header, file_size, options, read_at, regions, reference))


def reference(fmt: str, header, file_size: int, options: Options = Options()):
    """The header parsed once, its values hashed, for many `run`s over it or over headers that
    share most of its values (Note [Reference header] in native/include/charter/reference.hpp);
    None if the reader rejects it."""
    return _module().reference(fmt, header, int(file_size), options.max_header_bytes)


def _detail(key: str, header, file_size: int, options: Options, read_at: ReadAt | None, regions=None,
            reference=None) -> dict:
    """charter._native.admit_detail: what the checker said, needs_more included."""
    share = {} if options.only is None and not options.owned_keys and not options.skip else {
        "only": None if options.only is None else sorted(options.only), "owned_keys": sorted(options.owned_keys),
        "skip": list(options.skip)}
    return _module().admit_detail(key, header, int(file_size), options.status or "", options.max_header_bytes,
                                  regions, options.companion, read_at, reference=reference, **share)


def verdict_of(d: dict) -> Verdict:
    """The Verdict of what charter._native says (admit_detail, read); INTERNAL is no verdict."""
    if d["admitted"]:
        return Verdict(tuple(s for s in ADMISSION_STAGES if s is not Stage.PAYLOAD))
    if d["code"] == "INTERNAL":
        raise EngineUnavailable(f"the C++ engine cannot evaluate this contract: {d['message']}")
    failed = Stage(d["stage"])
    passed = ADMISSION_STAGES[:ADMISSION_STAGES.index(failed)]
    return Verdict.rejected(failed, DiagnosticModel(
        stage=d["code_stage"], code=d["code"], field=d["field"], message=d["message"], expected=d["expected"],
        actual=d["actual"], location=d["location"], offset=d["offset"]), passed)


def run_prefixes(key: str, read: Callable[[int], bytes], file_size: int, options: Options = Options(), *,
                 first: int = 1 << 20, read_at: ReadAt | None = None) -> Verdict:
    """Grow-and-retry over a reader of prefixes: `read(n)` returns the first n bytes of the file;
    `read_at(offset, length)` reads store regions (contracts with embedded stores)."""
    n = min(first, file_size)
    while True:
        d = _detail(key, read(n), file_size, options, read_at)
        if not d["needs_more"] or n >= file_size:
            return verdict_of(d)
        n = min(max(d["need"], 2 * n), file_size)


def run_file(path: str | os.PathLike, key: str, options: Options = Options()) -> Verdict:
    """The C++ checker over the file at `path` (see the module docstring). GGUF: the file mapped
    read-only, limited to the first min(size, max_header_bytes) bytes. safetensors: the 8-byte
    length and, when it fits the file and the 100 MB cap, the header it announces, read as
    read_safetensors does (and at least the first bytes the format sniff reads). Store regions are
    read with pread, as Context.read reads them; the companion file of a contract's `config`,
    beside `path` (`read_companion`)."""
    checker = info(key)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        return _unreadable(path, exc)
    options = replace(options, companion=read_companion(path, checker.companion) if checker.companion else None)
    try:
        return _run_fd(fd, key, checker.format, options)
    except _Unreadable as exc:
        return _unreadable(path, exc.__cause__)
    finally:
        os.close(fd)


class _Unreadable(Exception):
    pass


def _run_fd(fd: int, key: str, fmt: str, options: Options) -> Verdict:
    def read_at(offset: int, length: int) -> bytes:  # Context.read's default: pread, short at the end
        return os.pread(fd, length, offset)

    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, SNIFF_BYTES, 0) if fmt != "gguf" else b""  # at least the format sniff's window
        if len(head) >= 8:
            n = int.from_bytes(head[:8], "little")
            if n <= SAFETENSORS_MAX_HEADER and len(head) < 8 + n <= size:
                head = os.pread(fd, 8 + n, 0)
        mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if fmt == "gguf" and size else None
    except (OSError, ValueError) as exc:
        raise _Unreadable() from exc
    if fmt != "gguf":
        return run(key, head, size, options, read_at=read_at)
    if mm is None:
        return run(key, b"", 0, options)
    try:
        with memoryview(mm) as whole, whole[: min(size, options.max_header_bytes)] as span:
            return run(key, span, size, options, read_at=read_at)
    finally:
        mm.close()


def _unreadable(path, exc: Exception) -> Verdict:
    return Verdict.rejected(Stage.CONTAINER, DiagnosticModel(
        stage="container", code="CONTAINER_UNREADABLE", field="file", message=f"cannot read {os.fspath(path)!r}: {exc}",
        expected=None, actual=None, location=None, offset=0))


def admit(artifact: str | os.PathLike | bytes, key: str, options: Options = Options(), *,
          file_size: int | None = None, read_at: ReadAt | None = None,
          checker: ModuleType | None = None) -> AdmissionReport:
    """Admit a file (a path) or a header span (bytes-like, with `file_size`) with the C++ checker
    `key`: an AdmissionReport like the Python engine's. A header span of a contract with embedded
    stores needs `read_at(offset, length)`, which reads the file's bytes; one of a contract with
    `config`, Options.companion (a path's is read beside it). With Options.verify_payload (a path
    and the Python `checker` module needed), the payload stage runs in Python after the C++ stages
    admitted the header (see the module docstring)."""
    found = info(key)
    is_path = isinstance(artifact, (str, os.PathLike))
    if is_path:
        name = os.fspath(artifact)
        verdict = run_file(name, key, options)
    else:
        if file_size is None:
            raise TypeError("admitting bytes with the C++ engine needs file_size")
        if found.stores and read_at is None:
            raise TypeError(f"{found.contract} has embedded stores: admitting bytes needs read_at(offset, length)")
        name = "<bytes>"
        verdict = run(key, artifact, file_size, options, read_at=read_at)
    identity = dict(contract=found.contract, spec=found.spec, format=found.format, status=found.status)
    if not (verdict.admitted and options.verify_payload):
        return verdict.report(artifact=name, **identity)
    if checker is None or not is_path:
        raise EngineUnavailable("verify_payload streams the file with the Python engine: pass the path and checker")
    from charter.engines import python

    return python.payload(name, checker, options, native_values=True, **identity)
