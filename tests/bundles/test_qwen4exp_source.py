"""The Qwen4Exp source set (specs/bundles/qwen4exp-source.yaml over the artifact contract
qwen4exp-source-safetensors): the design notes' counts hold, the shipped bundle is what
tools/qwen4exp_source.py writes, and the sparse folder built from the contract is admitted by both
engines and rejected where a fact of the set is broken."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from charter.cli import main
from charter.conforming.bundles import build_bundle, index_text
from charter.contract.contractset import load_set
from tests.conftest import ROOT

from .conftest import linked_copy, replace
from .test_minilm_bundles import rejected

SPECS = ROOT / "specs"
BUNDLE = SPECS / "bundles" / "qwen4exp-source.yaml"
TOTAL = 359_999_963_128  # the notes' indexed source bytes


@pytest.fixture(scope="module")
def source_set():
    cs = load_set([BUNDLE], [SPECS])
    assert not cs.diagnostics, [d.render() for d in cs.diagnostics]
    return cs


@pytest.fixture(scope="module")
def source_folder(source_set, tmp_path_factory):
    return build_bundle(source_set.bundles["qwen4exp-source"], tmp_path_factory.mktemp("qwen4exp") / "source")


def _admit(cs, folder):
    from charter.bundles.admit import admit_bundle
    from charter.engines import choose

    plan = cs.bundles["qwen4exp-source"]
    return admit_bundle(folder, plan, choose.python_checker(cs, plan.artifact.id, ROOT / "generated").module)


def test_the_notes_counts(source_set):
    plan = source_set.bundles["qwen4exp-source"]
    constants = source_set.models["qwen4exp"].constants
    roles = [t.role for t in plan.artifact.tensors]
    classes = {c: sum(r.startswith(c + "_") for r in roles) for c in ("ple", "vision", "mtp")}
    assert len(roles) == constants["source_tensors"] == 1658
    assert (classes["ple"], classes["vision"], classes["mtp"]) == (constants["ple_tensors"], constants["vision_tensors"],
                                                                   constants["mtp_tensors"]) == (137, 333, 31)
    assert len(roles) - classes["vision"] - classes["mtp"] == constants["base_tensors"]
    assert len(plan.weights) == 131
    assert plan.index_metadata["total_size"].value == TOTAL


def test_the_shipped_bundle_is_what_the_tool_writes():
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "qwen4exp_source.py"), "--check"], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_built_folder_is_admitted_by_both_engines(source_set, source_folder, capsys):
    assert sum(p.stat().st_size for p in source_folder.glob("*.safetensors")) > TOTAL  # headers + payload
    assert sum(p.stat().st_blocks for p in source_folder.iterdir()) * 512 < 64 << 20  # sparse: holes
    index = json.loads((source_folder / "model.safetensors.index.json").read_text())
    assert index["metadata"] == {"total_size": TOTAL} and len(index["weight_map"]) == 1658
    assert _admit(source_set, source_folder).admitted
    assert main(["admit", str(source_folder), "--contract", str(BUNDLE), "--engine", "cpp"]) == 0, capsys.readouterr()


def test_an_index_entry_naming_another_shard(source_set, source_folder, tmp_path):
    plan = source_set.bundles["qwen4exp-source"]
    folder = linked_copy(source_folder, tmp_path / "f")
    moved = next(n for n in plan.placement if ".mlp.experts.1." in n)
    index = json.loads(index_text(plan))
    index["weight_map"][moved] = "model-00001-of-00131.safetensors"
    replace(folder / "model.safetensors.index.json", json.dumps(index, indent=2).encode())
    d = rejected(_admit(source_set, folder), "shards", "SHARD_INDEX_STALE", "model.safetensors.index.json")
    assert d.field == f"weights.index.weight_map.{moved}" and d.actual == "model-00001-of-00131.safetensors"


def test_total_size_is_the_notes(source_set, source_folder, tmp_path):
    folder = linked_copy(source_folder, tmp_path / "f")
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["metadata"]["total_size"] = TOTAL - 1
    replace(folder / "model.safetensors.index.json", json.dumps(index, indent=2).encode())
    d = rejected(_admit(source_set, folder), "shards", "SHARD_INDEX_METADATA", "model.safetensors.index.json")
    assert (d.expected, d.actual) == (str(TOTAL), str(TOTAL - 1))  # the contract states the notes' figure


def test_the_text_configs_vocab_size_is_the_models_logits_rows(source_set, source_folder):
    """A multimodal config.json states the embedding rows in text_config (the padded-logits rule)."""
    import dataclasses

    from charter.bundles.files import BundleRejected
    from charter.bundles.special_ids import check_special_ids
    from charter.contract.plan import Located

    plan = source_set.bundles["qwen4exp-source"]
    documents = {"config.json": json.loads((source_folder / "config.json").read_text())}
    assert documents["config.json"]["text_config"]["vocab_size"] == plan.logits_rows.value == 248320
    check_special_ids(plan, documents, {})
    with pytest.raises(BundleRejected) as r:
        check_special_ids(dataclasses.replace(plan, logits_rows=Located(248321, None)), documents, {})
    d = r.value.diagnostic
    assert (d.code.value, d.field, d.expected, d.actual) == ("TOKENIZER_LOGITS_ROWS", "tokenizer.logits_rows",
                                                             "248321", "248320")
