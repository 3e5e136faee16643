"""The Qwen4Exp text profile: a full-size sparse artifact admitted from its header and manifests."""

from __future__ import annotations

import os

import pytest

from charter.admission.runtime import admit
from charter.engines.choose import python_checker
from charter.conforming.stores import build_sparse, qwen4exp_overrides
from charter.contract.contractset import load_set
from charter.formats.stores import expertmajor, ple
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "artifacts" / "qwen4exp-text.yaml"


@pytest.fixture(scope="module")
def contracts():
    cs = load_set([SPEC], [ROOT / "specs"])
    assert cs.ok, cs.diagnostics
    return cs


@pytest.fixture(scope="module")
def sparse(contracts, tmp_path_factory):
    path = tmp_path_factory.mktemp("qwen4exp") / "qwen4exp.gguf"
    build_sparse(contracts.artifacts["qwen4exp-text"], path, overrides=qwen4exp_overrides())
    yield path
    path.unlink()


def test_full_size_sparse_artifact_is_admitted(contracts, sparse):
    st = os.stat(sparse)
    assert st.st_size > 120 * 10**9  # the full apparent size (about 129 GB)
    assert st.st_blocks * 512 < 64 * 2**20  # but only the header and store manifests on disk
    checker, _ = python_checker(contracts, "qwen4exp-text", ROOT / "generated")
    report = admit(str(sparse), checker, require_status="structural")
    assert report.admitted, report.diagnostic
    assert [s.result for s in report.stages if s.stage == "stores"] == ["passed"]


def test_store_geometry_matches_the_notes(contracts):
    plan = contracts.artifacts["qwen4exp-text"]
    em_plan = next(s for s in plan.stores if s.kind == "expert-major-v2")
    fields = {f: v for f, v, _ in em_plan.fields}
    assert (fields["version"], fields["family"], fields["layers"], fields["experts"], fields["experts_used"]) == (
        2, 4, 48, 512, 10)
    comps = [(n, ne0, ne1) for n, ne0, ne1, _ in em_plan.components]
    assert comps == [("gate", 2560, 640), ("up", 2560, 640), ("down", 640, 2560)]
    g = expertmajor.geometry(48, 512, comps, 64, 36, 4096)
    assert g["record_count"] == 24576 and 640 // 64 == 10
    pl = next(s for s in plan.stores if s.kind == "ple-rows-v1")
    f = {k: v for k, v, _ in pl.fields}
    g = ple.geometry(f["logical_rows"], f["row_alignment"], f["width"], f["group_size"], f["group_bytes"],
                     f["rows_per_page"], f["page_header_bytes"], f["page_alignment"])
    assert (f["logical_rows"], g["padded_rows"], g["padded_rows"] - f["logical_rows"]) == (320001446, 320001536, 90)
    assert sum(v for v, _ in pl.head_rows) == 320001446 and len(pl.head_rows) == 16


def test_a_manifest_field_edit_is_rejected_at_the_stores_stage(contracts, sparse):
    """One store field changed in place (a real file edit, restored afterwards)."""
    from charter.formats.gguf import read_gguf

    checker, _ = python_checker(contracts, "qwen4exp-text", ROOT / "generated")
    store = next(t for t in read_gguf(sparse).tensors if t.name == "expert_major.store")
    at = store.start + expertmajor.MANIFEST.offset_of("layers")
    with open(sparse, "r+b") as f:
        original = os.pread(f.fileno(), 4, at)
        os.pwrite(f.fileno(), (2**31).to_bytes(4, "little"), at)
    try:
        report = admit(str(sparse), checker)
        assert report.diagnostic.stage == "stores"
        assert report.diagnostic.code == "STORE_MANIFEST"
        assert report.diagnostic.field == "stores.expert_major.manifest.layers"
        assert report.diagnostic.offset == at
    finally:
        with open(sparse, "r+b") as f:
            os.pwrite(f.fileno(), original, at)
