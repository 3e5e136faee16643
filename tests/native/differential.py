"""The two engines side by side: the Python checker and the generated C++ checker on the same bytes."""

from __future__ import annotations

from dataclasses import dataclass

from charter.admission.runtime import admit_view
from charter.admission.view import parse_view
from charter.diagnostics import CharterError
from charter.formats.gguf import parse_gguf
from charter.formats.safetensors import parse_safetensors


@dataclass(frozen=True)
class Verdict:
    admitted: bool
    stage: str | None = None
    code: str | None = None
    field: str | None = None
    offset: int | None = None

    def __str__(self) -> str:
        if self.admitted:
            return "admitted"
        return f"{self.stage} {self.code} {self.field} @{self.offset}"


def python_verdict(checker, fmt: str, buf, size: int, require_status: str | None, path: str = "<mutant>") -> Verdict:
    try:
        view = parse_view(buf, size, fmt)
    except CharterError as exc:
        d = exc.diagnostics[0]
        return Verdict(False, d.stage.value, d.code.value, d.field, d.offset)
    report = admit_view(view, path, checker, require_status=require_status)
    d = report.diagnostic
    if d is None:
        return Verdict(True)
    return Verdict(False, d.stage, d.code, d.field, d.offset)


def cpp_verdict(native, contract_id: str, buf, size: int, require_status: str | None) -> Verdict:
    d = native.admit_detail(contract_id, buf, size, require_status or "")
    if d["admitted"]:
        return Verdict(True)
    return Verdict(False, d["code_stage"], d["code"], d["field"], d["offset"])


def python_read(fmt: str, buf, size: int, max_header_bytes: int | None = None) -> Verdict:
    try:
        if fmt == "gguf":
            kw = {} if max_header_bytes is None else {"max_header_bytes": max_header_bytes}
            parse_gguf(buf, size, **kw)
        else:
            parse_safetensors(buf, size)
    except CharterError as exc:
        d = exc.diagnostics[0]
        return Verdict(False, d.stage.value, d.code.value, d.field, d.offset)
    return Verdict(True)


def cpp_read(native, fmt: str, buf, size: int, max_header_bytes: int | None = None) -> Verdict:
    args = (fmt, buf, size) if max_header_bytes is None else (fmt, buf, size, max_header_bytes)
    d = native.read(*args)
    if d["admitted"]:
        return Verdict(True)
    return Verdict(False, d["code_stage"], d["code"], d["field"], d["offset"])
