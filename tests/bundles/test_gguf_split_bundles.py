"""The real SmolLM2 GGUF split into a gguf-split set, frozen and admitted as one bundle: the set's
metadata on its first split, its split keys owned by the shards stage, its battery N/N."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from charter.bundles.admit import admit_bundle
from charter.cli import main
from charter.conforming.gguf_split import split_gguf
from charter.contract.contractset import load_set
from charter.contract.yamldump import dump
from charter.engines import choose
from charter.formats.gguf import GGUFValueType
from charter.mutation import report
from charter.mutation.bundle_run import bundle_battery, run_bundle
from tests.conftest import ROOT, smollm2_gguf

from .conftest import linked_copy, replace
from .test_gguf_split import kv_edit, rewrite

NAMES = [f"smollm2-{n:05d}-of-00003.gguf" for n in (1, 2, 3)]


@pytest.fixture(scope="module")
def frozen(tmp_path_factory) -> tuple[Path, Path]:
    """(the split set's folder, its frozen bundle contract)."""
    base = tmp_path_factory.mktemp("gguf-set")
    split_gguf(smollm2_gguf(), base / "set", max_tensors=100, prefix="smollm2")
    assert main(["freeze", str(base / "set"), "--id", "sm", "-o", str(base / "out")]) == 0
    return base / "set", base / "out" / "bundles" / "sm.yaml"


def admit(folder: Path, contract: Path, verify_payload: bool = False):
    cs = load_set([contract], [contract.parent.parent])
    assert not cs.diagnostics, [d.render() for d in cs.diagnostics]
    plan = next(iter(cs.bundles.values()))
    return admit_bundle(folder, plan, choose.python_checker(cs, plan.artifact.id, ROOT / "generated").module,
                        verify_payload=verify_payload)


def test_the_split_set_is_frozen_into_one_artifact_contract_and_admitted(frozen):
    folder, contract = frozen
    report_ = admit(folder, contract, verify_payload=True)
    assert report_.admitted and report_.weight_files == 3, report_.render()
    artifact = yaml.safe_load((contract.parent.parent / "artifacts" / "sm-gguf.yaml").read_text())
    assert not any(k.startswith("split.") for k in artifact["metadata"]["keys"])  # owned by the shards stage
    bundle = yaml.safe_load(contract.read_text())
    assert [len(v) for v in bundle["weights"]["shards"].values()] == [100, 100, 72]


def _repinned(contract: Path, folder: Path, target: Path) -> Path:
    data = yaml.safe_load(contract.read_text())
    for path, f in data["files"].items():
        f["size"] = (folder / path).stat().st_size
        f["sha256"] = hashlib.sha256((folder / path).read_bytes()).hexdigest()
    target.parent.mkdir(exist_ok=True)
    target.write_text(dump(data))
    return target


@pytest.mark.parametrize("index, key, vtype, value, code", [
    (1, "split.no", None, 2, "SPLIT_NUMBER"),
    (2, "split.count", None, 4, "SPLIT_COUNT"),
    (0, "split.tensors.count", None, 271, "SPLIT_TENSOR_COUNT"),
    (1, "split.no", GGUFValueType.UINT32, None, "SPLIT_KEY_TYPE"),
])
def test_a_split_key_that_lies(frozen, tmp_path, index, key, vtype, value, code):
    folder, contract = frozen
    copy = linked_copy(folder, tmp_path / "set")
    member = folder / NAMES[index]
    edited = rewrite(member, tmp_path / "x.gguf", kvs=kv_edit(member, key, vtype, value))
    replace(copy / NAMES[index], edited.read_bytes())
    bundle = _repinned(contract, copy, contract.parent.parent / "bundles" / f"lie-{tmp_path.name}.yaml")
    try:
        r = admit(copy, bundle)
    finally:
        bundle.unlink()
    assert not r.admitted and (r.diagnostic.stage, r.diagnostic.code) == ("shards", code), r.render()
    assert r.file == NAMES[index] or code == "SPLIT_TENSOR_COUNT"


def test_a_later_split_reads_the_sets_metadata(frozen, tmp_path):
    """The first split owns the metadata: an identity edit there is an identity rejection."""
    folder, contract = frozen
    copy = linked_copy(folder, tmp_path / "set")
    member = folder / NAMES[0]
    edited = rewrite(member, tmp_path / "x.gguf", kvs=kv_edit(member, "general.architecture", value="lhama"))
    replace(copy / NAMES[0], edited.read_bytes())
    bundle = _repinned(contract, copy, contract.parent.parent / "bundles" / f"arch-{tmp_path.name}.yaml")
    try:
        r = admit(copy, bundle)
    finally:
        bundle.unlink()
    assert not r.admitted and (r.diagnostic.stage, r.file) == ("identity", NAMES[0]), r.render()


@pytest.mark.slow  # the negative tests above run by default; this is every mutant, each engine
@pytest.mark.parametrize("engine", ["python", "both"])
def test_the_split_set_battery_rejects_every_mutant(frozen, engine):
    """Both engines: the frozen contract's C++ checker is compiled into a cached library (slow), and
    the later splits skip the header stages there too."""
    from charter.engines.vouched import cache_dir

    folder, contract = frozen
    cs = load_set([contract], [contract.parent.parent])
    bundle_id = next(iter(cs.bundles))
    checker = choose.python_checker(cs, cs.bundles[bundle_id].artifact.id, ROOT / "generated").module
    key = choose.cpp_checker(cs, cs.bundles[bundle_id].artifact, cache_dir() / "checkers").key \
        if engine == "both" else None
    outcomes = run_bundle(cs, bundle_id, folder, checker, bundle_battery(cs, bundle_id, folder), cpp_key=key)
    summary = report.summary(outcomes)
    assert summary["passed"] and summary["rejected"] == summary["mutants"] > 250, report.failures(outcomes)
    assert summary["errors"] == 0


def _with_exclusion(contract: Path, target: Path, source_count: int) -> Path:
    """The frozen set's contracts copied to `target` with an exclusion whose count the set states in
    its metadata (llama.block_count, on the first split only): a later split's policy stage must
    read the set's metadata, not its own."""
    import shutil

    shutil.copytree(contract.parent.parent, target)
    artifact = target / "artifacts" / "sm-gguf.yaml"
    data = yaml.safe_load(artifact.read_text())
    data["exclusions"] = [{"name": "none", "source_count": source_count, "count_key": "llama.block_count",
                           "patterns": ["mtp.*"], "reason": "a count the set states once, on its first split"}]
    artifact.write_text(dump(data))
    return target / "bundles" / contract.name


@pytest.mark.parametrize("engine", ["python", pytest.param("cpp", marks=pytest.mark.slow)])  # cpp: 2 -O2 compiles
def test_a_later_splits_exclusion_counts_are_the_sets(frozen, tmp_path, capsys, engine):
    folder, contract = frozen
    good = _with_exclusion(contract, tmp_path / "good", 30)
    code = main(["admit", str(folder), "--contract", str(good), "--engine", engine])
    assert code == 0, capsys.readouterr().out
    capsys.readouterr()
    bad = _with_exclusion(contract, tmp_path / "bad", 31)
    assert main(["admit", str(folder), "--contract", str(bad), "--engine", engine, "--json"]) == 1
    report_ = __import__("json").loads(capsys.readouterr().out)["result"]
    d = report_["diagnostic"]
    assert (report_["file"], d["stage"], d["code"], d["field"]) == (NAMES[0], "policy", "POLICY_EXCLUSION",
                                                                    "exclusions.none.source_count")
