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
    native = _module()
    if contract_id not in native.contracts():
        raise NativeUnavailable(f"charter._native has no C++ checker for {contract_id!r} (is generated/cpp/"
                                f"{contract_id}.hpp committed, and the module rebuilt?)")
    return native.info(contract_id)


def require_current(contract_id: str, inputs: dict[str, str]) -> None:
    """Refuse a compiled checker generated from other contract bytes than `inputs` (spec -> sha256)."""
    compiled = checker_info(contract_id)["inputs"]
    if dict(compiled) != dict(inputs):
        raise NativeUnavailable(f"the C++ checker of {contract_id!r} was generated from other contract bytes than "
                                "these: regenerate (charter generate) and rebuild (pip install -e .)")


def unsupported(plan) -> str | None:
    """Why the C++ engine cannot admit against this plan (None if it can): embedded stores and a
    companion config are read from outside the header span a C++ checker is given."""
    if getattr(plan, "stores", ()):
        return f"{plan.id} has embedded stores, which the C++ engine does not read (use --engine python)"
    if getattr(plan, "config_file", None) is not None:
        return f"{plan.id} checks a companion {plan.config_file}, which the C++ engine does not read"
    return None


# --- running -------------------------------------------------------------------------------------


def verdict(contract_id: str, header, file_size: int, *, require_status: str | None = None,
            max_header_bytes: int = MAX_GGUF_HEADER_BYTES) -> dict:
    """The C++ checker over a header span (bytes-like): the dict of charter._native.admit_detail."""
    return _module().admit_detail(contract_id, header, int(file_size), require_status or "", max_header_bytes)


def admit_header(contract_id: str, read: Callable[[int], bytes], file_size: int, *, first: int = 1 << 20,
                 require_status: str | None = None, max_header_bytes: int = MAX_GGUF_HEADER_BYTES) -> dict:
    """Grow-and-retry over a reader of prefixes: `read(n)` returns the first n bytes of the file."""
    n = min(first, file_size)
    while True:
        d = verdict(contract_id, read(n), file_size, require_status=require_status,
                    max_header_bytes=max_header_bytes)
        if not d["needs_more"] or n >= file_size:
            return d
        n = min(max(d["need"], 2 * n), file_size)


def file_verdict(path: str | os.PathLike, contract_id: str, fmt: str, *, require_status: str | None = None,
                 max_header_bytes: int = MAX_GGUF_HEADER_BYTES) -> dict:
    """The C++ checker over the file at `path` (see the module docstring). GGUF: the file mapped
    read-only, limited to the first min(size, max_header_bytes) bytes. safetensors: the 8-byte
    length and, when it fits the file and the 100 MB cap, the header it announces, read as
    read_safetensors does."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        return _unreadable(path, exc)
    try:
        size = os.fstat(fd).st_size
        if fmt != "gguf":
            head = os.pread(fd, 8, 0)
            if len(head) == 8:
                n = int.from_bytes(head, "little")
                if n <= SAFETENSORS_MAX_HEADER and 8 + n <= size:
                    head = os.pread(fd, 8 + n, 0)
            return verdict(contract_id, head, size, require_status=require_status)
        if size == 0:
            return verdict(contract_id, b"", 0, require_status=require_status, max_header_bytes=max_header_bytes)
        mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        return _unreadable(path, exc)
    finally:
        os.close(fd)
    try:
        with memoryview(mm) as whole, whole[: min(size, max_header_bytes)] as span:
            return verdict(contract_id, span, size, require_status=require_status, max_header_bytes=max_header_bytes)
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
              verify_payload: bool = False, checker=None) -> AdmissionReport:
    """Admit a file (path) or a header span (bytes-like, with `file_size`) with the C++ checker of
    `contract_id`: an AdmissionReport like charter.admission.runtime.admit's. With verify_payload
    (a path and the Python `checker` module needed), the payload stage runs in Python after the
    C++ stages admitted the header (see the module docstring)."""
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
        artifact = "<bytes>"
        d = verdict(contract_id, path_or_bytes, file_size, require_status=require_status)
    if not (d["admitted"] and verify_payload):
        return report_of(d, artifact=artifact, contract=contract_id, spec=spec, fmt=fmt, status=status)
    if checker is None or not is_path:
        raise NativeUnavailable("verify_payload streams the file with the Python runtime: pass the path and checker")
    return _python_payload(artifact, checker, require_status, spec=spec, format=fmt, status=status,
                           contract=contract_id)


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
                 python: tuple[str | None, str | None, str | None]) -> str | None:
    """None if the C++ checker gives the same first diagnostic (stage, code, field) as the Python
    one, `python` (None, None, None for an admission); else what each engine said. For
    `charter mutate --engine both` (differential verdicts on every artifact mutant)."""
    d = verdict(contract_id, header, file_size, require_status=require_status)
    cpp = (None, None, None) if d["admitted"] else (d["code_stage"], d["code"], d["field"])
    if cpp == tuple(python):
        return None

    def show(v):
        return "admitted" if v[0] is None else " ".join(str(x) for x in v)

    return f"engines disagree: python {show(python)} / c++ {show(cpp)}"
