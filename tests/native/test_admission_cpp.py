"""charter.engines.cpp: the C++ engine admits the real SmolLM2 checkpoint, reports like the Python
engine, retries on a short span, refuses a stale checker, and shares the readers' tables."""

from __future__ import annotations

import pytest

from charter.admission.runtime import admit
from charter.engines import Options, Verdict, disagreement
from charter.engines import cpp as engine
from charter.formats.ggml_types import GGML_TYPES
from charter.formats.safetensors import DTYPE_BITS
from charter.mutation.run import all_mutants

from tests.conftest import need_checker

from .conftest import ROOT, SMOLLM2, TINY_ST, load_battery_for


@pytest.fixture(scope="module")
def smollm2(native, tmp_path_factory):
    cid, b = load_battery_for(SMOLLM2, tmp_path_factory.mktemp("smollm2"))
    need_checker(native, cid)
    return cid, b


def _key(report):
    d = report.diagnostic
    stages = [(s.stage, s.result) for s in report.stages]
    if d is None:
        return report.admitted, stages
    return report.admitted, stages, d.stage, d.code, d.field, d.offset, d.location


def test_real_smollm2_is_admitted(smollm2):
    cid, b = smollm2
    report = engine.admit(b.artifact_path, cid)
    assert report.admitted, report.render()
    assert _key(report) == _key(admit(str(b.artifact_path), b.checker))
    assert [s.result for s in report.stages].count("passed") == 9


def test_reports_match_python(smollm2):
    """Beyond (stage, code, field, offset): stage outcomes and the contract location agree too."""
    cid, b = smollm2
    from charter.admission.runtime import admit_view
    from charter.admission.view import parse_view
    from charter.diagnostics import CharterError

    checked = 0
    for m in all_mutants(b, "artifact")[:200]:
        if m.make is None:
            continue
        made = m.make()
        buf, size = made[0], made[1]
        if len(made) > 2 and made[2]:
            continue  # bytes patched outside the header (store manifests): not a header mutant
        cpp = engine.admit(buf, cid, Options(require_status=b.require_status), file_size=size)
        try:
            view = parse_view(buf, size, "gguf")
        except CharterError:
            assert cpp.diagnostic.stage == "container"
            continue
        py = admit_view(view, "<bytes>", b.checker, require_status=b.require_status)
        assert _key(cpp) == _key(py), m.id
        checked += 1
    assert checked > 100


def test_require_status(smollm2):
    cid, b = smollm2
    report = engine.admit(b.artifact_path, cid, Options(require_status="supported"))
    assert (report.diagnostic.stage, report.diagnostic.code, report.diagnostic.field) == ("policy", "POLICY_STATUS",
                                                                                         "status")


def test_grow_and_retry_gives_the_full_verdict(smollm2, native):
    cid, b = smollm2
    data = b.artifact_path.read_bytes()[: 4 << 20]
    reads = []

    def read(n: int) -> bytes:
        reads.append(n)
        return data[:n]

    verdict = engine.run_prefixes(cid, read, b.view.file_size, first=4096)
    assert verdict.admitted and len(reads) > 1 and reads[-1] >= b.view.data_offset - 64
    short = native.admit_detail(cid, data[:4096], b.view.file_size)
    assert short["needs_more"] and short["code"] == "CONTAINER_TRUNCATED"


def test_safetensors_admitted(native, tmp_path):
    cid, b = load_battery_for(TINY_ST, tmp_path)
    need_checker(native, cid)
    report = engine.admit(b.artifact_path, cid)
    assert report.admitted and _key(report) == _key(admit(str(b.artifact_path), b.checker))


def test_unreadable_file(native, tmp_path):
    ids = native.contracts()
    assert ids, "charter._native holds no C++ checker: run make install"
    report = engine.admit(tmp_path / "missing.gguf", ids[0])
    assert (report.diagnostic.code, report.diagnostic.field) == ("CONTAINER_UNREADABLE", "file")


def test_compiled_checkers_are_current(native, contract_set):
    """A compiled checker names the contract bytes it came from; charter refuses a stale one."""
    from charter.codegen.common.inputs import checker_inputs

    ids = native.contracts()
    assert ids, "charter._native holds no C++ checker: run make install"
    for cid in ids:
        assert cid in contract_set.artifacts
        engine.require_current(cid, checker_inputs(contract_set, contract_set.artifacts[cid]))
    with pytest.raises(engine.EngineUnavailable):
        engine.require_current(ids[0], {"specs/x.yaml": "0" * 64})


def test_contracts_are_the_committed_headers(native):
    committed = sorted(p.stem for p in (ROOT / "generated" / "cpp").glob("*.hpp"))
    assert committed, "no generated/cpp/<id>.hpp is committed"
    assert sorted(native.contracts()) == committed


def test_reader_tables_match_python(native):
    assert [(t.id, t.name, t.block_size, t.block_bytes, t.row_header) for t in GGML_TYPES.values()] == \
        [tuple(row) for row in native.ggml_types()]
    assert dict(native.safetensors_dtypes()) == DTYPE_BITS


def test_internal_is_not_a_verdict():
    """A check the C++ engine cannot evaluate is refused, never reported."""
    d = {"admitted": False, "code": "INTERNAL", "message": "the geometry of store \"x\" is out of range",
         "stage": "stores"}
    with pytest.raises(engine.EngineUnavailable, match="cannot evaluate this contract: the geometry"):
        engine.verdict_of(d)


def test_payload_runs_in_python_after_cpp(tmp_path, native):
    cid, b = load_battery_for(TINY_ST, tmp_path)
    need_checker(native, cid)
    report = engine.admit(b.artifact_path, cid, Options(verify_payload=True), checker=b.checker)
    assert report.admitted and [s.result for s in report.stages].count("passed") == 10
    data = bytearray(b.artifact_path.read_bytes())
    data[-1] ^= 0xFF  # a payload byte: the header still admits, the payload digest (if pinned) or nothing
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(bytes(data))
    assert engine.admit(bad, cid).admitted


def test_disagreement(smollm2):
    cid, b = smollm2
    cpp = engine.run(cid, b.raw_header, b.view.file_size)
    assert cpp.admitted and disagreement(Verdict(), cpp) is None
    missing = Verdict.of_report(admit(str(b.artifact_path), b.checker, require_status="supported"))
    assert disagreement(missing, cpp, offsets=False) == ("engines disagree: python policy POLICY_STATUS status / "
                                                         "c++ admitted")
    said = disagreement(missing, cpp)
    assert said == f"engines disagree: python policy POLICY_STATUS status @{missing.diagnostic.offset} / c++ admitted"
