"""The Python engine: the generated Python checker (a module of literals), run stage by stage by
charter.admission.runtime over the view the strict Python readers build."""

from __future__ import annotations

import os
from types import ModuleType

from charter.admission.report import AdmissionReport
from charter.admission.runtime import Context, Rejected, admit as run_checker
from charter.admission.view import read_view
from charter.diagnostics import ADMISSION_STAGES, Stage
from charter.engines.options import Options
from charter.engines.verdict import Verdict


def admit(path: str | os.PathLike, checker: ModuleType, options: Options = Options()) -> AdmissionReport:
    """The Python checker `checker` over the file at `path`."""
    return run_checker(os.fspath(path), checker, verify_payload=options.verify_payload,
                       require_status=options.status, max_header_bytes=options.max_header_bytes)


def run(path: str | os.PathLike, checker: ModuleType, options: Options = Options()) -> Verdict:
    return Verdict.of_report(admit(path, checker, options))


def payload(path: str, checker: ModuleType, options: Options, *, native_values: bool = False,
            **identity: str) -> AdmissionReport:
    """The payload stage alone, after another engine admitted the header: the other stages are
    reported passed. `identity`: the report's contract, spec, format and status; `native_values`:
    the value rules run in C++ (charter/values.hpp), as for the C++ engine."""
    out = AdmissionReport(artifact=path, **identity)
    for s in ADMISSION_STAGES:
        if s is not Stage.PAYLOAD:
            out.record(s.value, "passed")
    check = dict(checker.STAGES)[Stage.PAYLOAD.value]
    try:
        check(Context(read_view(path, checker.FORMAT, options.max_header_bytes), path, options.status,
                      native_values=native_values))
    except Rejected as r:
        out.reject(Stage.PAYLOAD.value, r.diagnostic)
        return out.finish()
    out.record(Stage.PAYLOAD.value, "passed")
    return out.finish()
