"""The two engines side by side: the Python checker and the generated C++ checker on the same bytes,
each giving a charter.engines.Verdict."""

from __future__ import annotations

from charter.admission.runtime import admit_view
from charter.admission.view import parse_view
from charter.diagnostics import CharterError, Stage
from charter.engines import Options, Verdict
from charter.engines import cpp
from charter.formats.gguf import parse_gguf
from charter.formats.safetensors import parse_safetensors


def python_verdict(checker, fmt: str, buf, size: int, require_status: str | None, path: str = "<mutant>") -> Verdict:
    try:
        view = parse_view(buf, size, fmt)
    except CharterError as exc:
        return Verdict.rejected(Stage.CONTAINER, exc.diagnostics[0])
    return Verdict.of_report(admit_view(view, path, checker, require_status=require_status))


def cpp_verdict(native, contract_id: str, buf, size: int, require_status: str | None) -> Verdict:
    return cpp.run(contract_id, buf, size, Options(require_status=require_status))


def python_read(fmt: str, buf, size: int, max_header_bytes: int | None = None) -> Verdict:
    try:
        if fmt == "gguf":
            kw = {} if max_header_bytes is None else {"max_header_bytes": max_header_bytes}
            parse_gguf(buf, size, **kw)
        else:
            parse_safetensors(buf, size)
    except CharterError as exc:
        return Verdict.rejected(Stage.CONTAINER, exc.diagnostics[0])
    return Verdict()


def cpp_read(native, fmt: str, buf, size: int, max_header_bytes: int | None = None) -> Verdict:
    args = (fmt, buf, size) if max_header_bytes is None else (fmt, buf, size, max_header_bytes)
    return cpp.verdict_of(native.read(*args))
