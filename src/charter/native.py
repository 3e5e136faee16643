"""Python glue for charter._native: admission with the generated C++ checkers.

`admit_cpp` returns the same AdmissionReport as charter.admission.runtime.admit. The C++ checker
never opens the file: it works over a span of the header plus the file size (docs/native.md,
"C++ admission"). The span passed here is the file mapped read-only (mmap), limited to what the
strict reader may ever look at -- the first min(file size, max header bytes) bytes -- so the
checker touches only the pages of the header, as the Python reader does. A caller that holds
only a prefix of the file (a stream, a network range) uses `admit_header`: it reads a prefix,
and when the checker reports `needs_more` (the span ended before the file did), it reads up to
the offset the checker asked for and runs again. The verdict never depends on the span's length:
the only diagnostic that could is the one that asks for more.

Embedded stores (docs/stores.md) keep their manifests in the data section. For a contract with
stores, the checker is also given (absolute offset, bytes) regions (Note [Store regions] in
native/include/charter/stores.hpp): this module computes them from the header's tensor extents and
the store facts the checker was compiled with (`store_reads`), exactly the reads the Python stage
makes, and reads them with the reader the Python engine uses (the file with pread, or a caller's
`read_at(offset, length)`, such as the mutation battery's overlay of a mutant's patches). They are
read only when the checker reaches the stores stage: a first run without regions either rejects
before that stage (its verdict cannot depend on them) or stops there, and then runs again with them.

A contract's `config` binds a companion file beside the artifact (config.json). The checker never
opens it either: `file_verdict` reads it beside the artifact (`read_companion`) and passes its
bytes, or why they could not be read, and the checker parses and compares them
(native/include/charter/companion.hpp).

Payload verification reads tensor bytes; the C++ engine does not (it is CPU-only and header-only).
With verify_payload=True the payload stage runs with the Python runtime after the C++ stages
admitted the header, over the view the Python reader builds; the report says which engine ran it.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from pathlib import Path

from charter.admission.report import AdmissionReport, DiagnosticModel
from charter.diagnostics import ADMISSION_STAGES, Stage
from charter.formats.sniff import SNIFF_BYTES

MAX_GGUF_HEADER_BYTES = 64 * 2**20
SAFETENSORS_MAX_HEADER = 100_000_000


class NativeUnavailable(RuntimeError):
    """charter._native is not built, or has no checker for the contract, or it is stale."""


def _module():
    try:
        from charter import _native
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise NativeUnavailable(f"charter._native is not built ({exc}); reinstall charter (pip install -e .)") from exc
    return _native


def available() -> bool:
    """Whether charter._native is importable (it is built by `pip install`)."""
    try:
        _module()
    except NativeUnavailable:
        return False
    return True


def contracts() -> list[str]:
    return list(_module().contracts()) if available() else []


def checker_info(contract_id: str) -> dict:
    """charter._native.info of a compiled-in checker (by contract id) or a loaded one (by key)."""
    native = _module()
    try:
        return native.info(contract_id)
    except KeyError:
        raise NativeUnavailable(f"charter._native has no C++ checker for {contract_id!r} (is generated/cpp/"
                                f"{contract_id}.hpp committed, and the module rebuilt?)") from None


def load_library(path: str | os.PathLike) -> list[str]:
    """Load a checker library (charter.codegen.cpp.library; Note [Checker libraries] in
    native/include/charter/registry.hpp) into charter._native: its keys, which `verdict` and the
    functions below accept in place of a contract id."""
    try:
        return list(_module().load_library(os.fspath(path)))
    except RuntimeError as exc:
        raise NativeUnavailable(str(exc)) from exc


def require_current(contract_id: str, inputs: dict[str, str]) -> None:
    """Refuse a compiled checker generated from other contract bytes than `inputs` (spec -> sha256)."""
    compiled = checker_info(contract_id)["inputs"]
    if dict(compiled) != dict(inputs):
        raise NativeUnavailable(f"the C++ checker of {contract_id!r} was generated from other contract bytes than "
                                "these: regenerate (charter generate) and rebuild (pip install -e .)")


# --- companion files (charter/companion.hpp) -------------------------------------------------------

def read_companion(artifact: str | os.PathLike, file: str) -> bytes | str:
    """The companion `file` beside `artifact`, as the C++ checker takes it: the bytes the Python
    engine reads (charter.admission.runtime.read_companion: at most one byte over the limit), or
    why they could not be read (strerror, as Context._companion reports it)."""
    from charter.admission.runtime import read_companion as read

    try:
        return read(Path(artifact).parent / file)
    except OSError as exc:
        return exc.strerror or str(exc)


# --- store regions (Note [Store regions] in native/include/charter/stores.hpp) ----------------------

ReadAt = Callable[[int, int], bytes]  # (absolute offset, length) -> bytes; fewer at the end of the file


def store_facts(contract_id: str) -> list[dict]:
    """The embedded stores the C++ checker of `contract_id` was generated with: name, kind, tensor,
    fields [(field, value)], components [(name, ne0, ne1)], head_rows [value]."""
    return list(checker_info(contract_id)["stores"])


def _fits(start: int, length: int, extent: int) -> bool:
    """charter.admission.stores._bounded, as a predicate: the stage reads the table only if it fits."""
    from charter.admission.stores import MAX_TABLE_BYTES

    return length <= MAX_TABLE_BYTES and start + length <= extent


def store_reads(stores: list[dict], extents: dict[str, tuple[int, int]]) -> list[tuple[int, int]]:
    """(absolute offset, length) of every read the stores stage of charter.admission.stores can make
    over a header with these tensor extents ({name: (start, end)} of the first tensor of each name),
    in its order. A read the stage cannot reach (the extent is too short, or its size or a table's
    bounds already reject) is left out; the checker bounds every access by the regions anyway."""
    from charter.admission.stores import CHUNK
    from charter.stores import expertmajor as em
    from charter.stores import ple

    out: list[tuple[int, int]] = []
    for s in stores:
        if s["tensor"] not in extents:
            continue
        start, end = extents[s["tensor"]]
        extent = end - start
        want = dict(s["fields"])
        try:
            if s["kind"] == "expert-major-v2":
                if extent < em.MANIFEST.size:
                    continue
                out.append((start, em.MANIFEST.size))
                comps = [tuple(c) for c in s["components"]]
                g = em.geometry(want["layers"], want["experts"], comps, want["group_size"], want["group_bytes"],
                                want["record_alignment"])
                comp_len = em.COMPONENT.size * len(comps)
                if extent != g["size"] or not _fits(em.COMPONENT_TABLE, comp_len, extent):
                    continue
                out.append((start + em.COMPONENT_TABLE, comp_len))
                table_len = em.RECORD.size * g["record_count"]
                if _fits(g["table_offset"], table_len, extent):
                    out.append((start + g["table_offset"], table_len))
            else:
                if extent < ple.MANIFEST.size:
                    continue
                out.append((start, ple.MANIFEST.size))
                g = ple.geometry(want["logical_rows"], want["row_alignment"], want["width"], want["group_size"],
                                 want["group_bytes"], want["rows_per_page"], want["page_header_bytes"],
                                 want["page_alignment"])
                region = g["payload_offset"] - ple.PAGE_TABLE
                if extent != g["size"] or not _fits(ple.PAGE_TABLE, region, extent):
                    continue
                pos, stop = start + ple.PAGE_TABLE, start + ple.PAGE_TABLE + region
                while pos < stop:  # the stage's chunks, each read (and bounded) alone
                    n = min(CHUNK, stop - pos)
                    out.append((pos, n))
                    pos += n
                for page in sorted({0, g["page_count"] - 1}):
                    if page >= 0:
                        out.append((start + g["payload_offset"] + page * g["page_stride"], ple.PAGE.size))
        except (KeyError, TypeError, ZeroDivisionError):
            continue  # a contract the stage cannot evaluate: the checker says so (INTERNAL)
    return out


def store_regions(stores: list[dict], extents: dict[str, tuple[int, int]], read_at: ReadAt) -> list[tuple[int, bytes]]:
    """The regions of `store_reads`, read with `read_at` (short where the file ends)."""
    return [(offset, read_at(offset, length)) for offset, length in store_reads(stores, extents)]


def _file_reader(fd: int) -> ReadAt:
    """Context.read's default: pread of the file (short at its end)."""
    return lambda offset, length: os.pread(fd, length, offset)


# --- running -------------------------------------------------------------------------------------


def verdict(contract_id: str, header, file_size: int, *, require_status: str | None = None,
            max_header_bytes: int = MAX_GGUF_HEADER_BYTES, regions=None, companion=None) -> dict:
    """The C++ checker over a header span (bytes-like); for embedded stores, the regions read for
    them ([(absolute offset, bytes-like)]); for a contract's `config`, the companion file
    (`read_companion`): the dict of charter._native.admit_detail."""
    return _module().admit_detail(contract_id, header, int(file_size), require_status or "", max_header_bytes,
                                  regions, companion)


def verdict_reading(contract_id: str, header, file_size: int, read_at: ReadAt | None, *,
                    require_status: str | None = None, max_header_bytes: int = MAX_GGUF_HEADER_BYTES,
                    eager: bool = False, companion=None) -> dict:
    """`verdict`, with the store regions read through `read_at` when the checker reaches the stores
    stage (see the module docstring), or, `eager`, read before the one run (cheaper when the file
    is expected to pass: a whole file; the lazy way suits mutants that mostly fail earlier).
    Without `read_at`, the stores stage finds no bytes: the file reads as ending before each store
    manifest (STORE_GEOMETRY, field "file")."""
    info = checker_info(contract_id)
    stores = list(info["stores"])
    if not (eager and stores and read_at is not None):
        d = verdict(contract_id, header, file_size, require_status=require_status, max_header_bytes=max_header_bytes,
                    companion=companion)
        if d["admitted"] or d["stage"] != "stores" or read_at is None:
            return d
    extents = _module().tensor_extents(info["format"], header, int(file_size), [s["tensor"] for s in stores],
                                       max_header_bytes)
    regions = store_regions(stores, extents or {}, read_at)
    return verdict(contract_id, header, file_size, require_status=require_status, max_header_bytes=max_header_bytes,
                   regions=regions, companion=companion)


def admit_header(contract_id: str, read: Callable[[int], bytes], file_size: int, *, first: int = 1 << 20,
                 require_status: str | None = None, max_header_bytes: int = MAX_GGUF_HEADER_BYTES,
                 read_at: ReadAt | None = None, companion=None) -> dict:
    """Grow-and-retry over a reader of prefixes: `read(n)` returns the first n bytes of the file;
    `read_at(offset, length)` reads store regions (contracts with embedded stores); `companion`
    is the file a contract's `config` binds (`read_companion`)."""
    n = min(first, file_size)
    while True:
        d = verdict(contract_id, read(n), file_size, require_status=require_status,
                    max_header_bytes=max_header_bytes, companion=companion)
        if not d["needs_more"] or n >= file_size:
            break
        n = min(max(d["need"], 2 * n), file_size)
    if d["admitted"] or d["stage"] != "stores" or read_at is None:
        return d
    return verdict_reading(contract_id, read(n), file_size, read_at, require_status=require_status,
                           max_header_bytes=max_header_bytes, companion=companion)


def file_verdict(path: str | os.PathLike, contract_id: str, fmt: str, *, require_status: str | None = None,
                 max_header_bytes: int = MAX_GGUF_HEADER_BYTES) -> dict:
    """The C++ checker over the file at `path` (see the module docstring). GGUF: the file mapped
    read-only, limited to the first min(size, max_header_bytes) bytes. safetensors: the 8-byte
    length and, when it fits the file and the 100 MB cap, the header it announces, read as
    read_safetensors does (and at least the first bytes the format sniff reads). Store regions are read with pread, as Context.read reads them; the
    companion file of a contract's `config`, beside `path` (`read_companion`)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        return _unreadable(path, exc)
    file = checker_info(contract_id)["companion"]
    companion = read_companion(path, file) if file else None
    try:
        return _fd_verdict(fd, contract_id, fmt, require_status, max_header_bytes, companion)
    except _Unreadable as exc:
        return _unreadable(path, exc.__cause__)
    finally:
        os.close(fd)


class _Unreadable(Exception):
    pass


def _fd_verdict(fd: int, contract_id: str, fmt: str, require_status: str | None, max_header_bytes: int,
                companion) -> dict:
    read_at = _file_reader(fd)
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
        return verdict_reading(contract_id, head, size, read_at, require_status=require_status, eager=True,
                               companion=companion)
    if mm is None:
        return verdict(contract_id, b"", 0, require_status=require_status, max_header_bytes=max_header_bytes,
                       companion=companion)
    try:
        with memoryview(mm) as whole, whole[: min(size, max_header_bytes)] as span:
            return verdict_reading(contract_id, span, size, read_at, require_status=require_status,
                                   max_header_bytes=max_header_bytes, eager=True, companion=companion)
    finally:
        mm.close()


def _unreadable(path, exc: Exception) -> dict:
    return {"admitted": False, "needs_more": False, "need": 0, "stage": "container", "code": "CONTAINER_UNREADABLE",
            "code_stage": "container", "field": "file", "message": f"cannot read {os.fspath(path)!r}: {exc}",
            "expected": None, "actual": None, "location": None, "offset": 0}


def report_of(d: dict, *, artifact: str, contract: str, spec: str, fmt: str, status: str,
              payload: str = "skipped") -> AdmissionReport:
    """An AdmissionReport from a C++ verdict: stages before the failing one passed, payload as given."""
    report = AdmissionReport(artifact=artifact, contract=contract, spec=spec, format=fmt, status=status)
    if d["admitted"]:
        for s in ADMISSION_STAGES:
            report.record(s.value, payload if s is Stage.PAYLOAD else "passed")
        return report.finish()
    if d["code"] == "INTERNAL":
        raise NativeUnavailable(f"the C++ engine cannot evaluate {contract}: {d['message']}")
    for s in ADMISSION_STAGES:
        if s.value == d["stage"]:
            break
        report.record(s.value, "passed")
    report.record(d["stage"], "failed")
    report.diagnostic = DiagnosticModel(stage=d["code_stage"], code=d["code"], field=d["field"], message=d["message"],
                                        expected=d["expected"], actual=d["actual"], location=d["location"],
                                        offset=d["offset"])
    return report.finish()


def admit_cpp(path_or_bytes, contract_id: str, *, file_size: int | None = None, spec: str | None = None,
              fmt: str | None = None, status: str | None = None, require_status: str | None = None,
              verify_payload: bool = False, checker=None, read_at: ReadAt | None = None,
              companion=None) -> AdmissionReport:
    """Admit a file (path) or a header span (bytes-like, with `file_size`) with the C++ checker of
    `contract_id`: an AdmissionReport like charter.admission.runtime.admit's. A header span of a
    contract with embedded stores needs `read_at(offset, length)`, which reads the file's bytes
    (the store regions); one of a contract with `config`, the `companion` file's bytes (a path's is
    read beside it). With verify_payload (a path and the Python `checker` module needed), the
    payload stage runs in Python after the C++ stages admitted the header (see the module docstring)."""
    info = checker_info(contract_id)
    fmt = fmt or info["format"]
    spec = spec or info["spec"]
    status = status or info["status"]
    is_path = isinstance(path_or_bytes, (str, os.PathLike))
    if is_path:
        artifact = os.fspath(path_or_bytes)
        d = file_verdict(artifact, contract_id, fmt, require_status=require_status)
    else:
        if file_size is None:
            raise TypeError("admit_cpp over bytes needs file_size")
        if info["stores"] and read_at is None:
            raise TypeError(f"{contract_id} has embedded stores: admit_cpp over bytes needs read_at(offset, length)")
        artifact = "<bytes>"
        d = verdict_reading(contract_id, path_or_bytes, file_size, read_at, require_status=require_status,
                            companion=companion)
    if not (d["admitted"] and verify_payload):
        return report_of(d, artifact=artifact, contract=info["contract"], spec=spec, fmt=fmt, status=status)
    if checker is None or not is_path:
        raise NativeUnavailable("verify_payload streams the file with the Python runtime: pass the path and checker")
    return _python_payload(artifact, checker, require_status, spec=spec, format=fmt, status=status,
                           contract=info["contract"])


def _python_payload(path: str, checker, require_status, **report) -> AdmissionReport:
    """The payload stage of the Python checker, after the C++ stages passed."""
    from charter.admission.runtime import Context, Rejected
    from charter.admission.view import read_view

    out = AdmissionReport(artifact=path, **report)
    for s in ADMISSION_STAGES:
        if s is not Stage.PAYLOAD:
            out.record(s.value, "passed")
    check = dict(checker.STAGES)[Stage.PAYLOAD.value]
    try:
        check(Context(read_view(path, checker.FORMAT), path, require_status))
    except Rejected as r:
        out.reject(Stage.PAYLOAD.value, r.diagnostic)
        return out.finish()
    out.record(Stage.PAYLOAD.value, "passed")
    return out.finish()


# --- both engines --------------------------------------------------------------------------------


def disagreement(contract_id: str, header, file_size: int, require_status: str | None,
                 python: tuple, read_at: ReadAt | None = None, companion=None) -> str | None:
    """None if the C++ checker gives the same first diagnostic as the Python one, `python`: (stage,
    code, field), or (stage, code, field, offset) to compare the byte offset too; all None for an
    admission. Else what each engine said. Store regions are read through `read_at` (the reader the
    Python engine used). For `charter mutate --engine both` (differential verdicts on every
    artifact mutant)."""
    d = verdict_reading(contract_id, header, file_size, read_at, require_status=require_status, companion=companion)
    cpp = (None, None, None, None) if d["admitted"] else (d["code_stage"], d["code"], d["field"], d["offset"])
    cpp = cpp[: len(python)]
    if cpp == tuple(python):
        return None

    def show(v):
        if v[0] is None:
            return "admitted"
        return " ".join(str(x) for x in v[:3]) + (f" @{v[3]}" if len(v) > 3 else "")

    return f"engines disagree: python {show(python)} / c++ {show(cpp)}"
