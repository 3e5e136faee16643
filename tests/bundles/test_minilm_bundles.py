"""The real MiniLM folder and its huggingface_hub shardings as bundles: admitted as shipped, frozen
into contracts that admit them, and every cross-file fault rejected at its stage, code and file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
import yaml

from charter.bundles.admit import admit_bundle
from charter.cli import main
from charter.contract.contractset import load_set
from charter.engines import choose
from tests.conftest import ROOT

from .conftest import CONTRACTS, linked_copy, replace, repinned

SPECS = ROOT / "specs"


def admit(folder: Path, contract: Path, verify_payload: bool = False):
    cs = load_set([contract], [SPECS])
    assert not cs.diagnostics, [d.render() for d in cs.diagnostics]
    plan = next(iter(cs.bundles.values()))
    checker = choose.python_checker(cs, plan.artifact.id, ROOT / "generated").module
    return admit_bundle(folder, plan, checker, verify_payload=verify_payload)


def rejected(report, stage: str, code: str, file: str | None):
    assert not report.admitted, "admitted"
    d = report.diagnostic
    assert (d.stage, d.code, report.file) == (stage, code, file), report.render()
    return d


@pytest.mark.parametrize("shards", [1, 2, 5])
def test_shipped_bundles_admit_their_folders(minilm_folders, shards):
    report = admit(minilm_folders[shards], CONTRACTS[shards], verify_payload=True)
    assert report.admitted, report.render()
    assert [s.result for s in report.stages] == ["passed"] * 13
    assert report.weight_files == shards


def test_cli_admits_a_folder_with_a_report_of_the_published_schema(minilm_folders, capsys):
    code = main(["admit", str(minilm_folders[5]), "--contract", str(CONTRACTS[5]), "--json"])
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out)["result"]
    jsonschema.validate(report, json.loads((ROOT / "schemas" / "bundle-report.schema.json").read_text()))
    assert report["admitted"] and report["weight_files"] == 5


def test_freeze_writes_one_model_and_one_artifact_contract_for_every_sharding(minilm_folders, tmp_path, capsys):
    texts = {}
    for shards, folder in minilm_folders.items():
        out = tmp_path / f"out{shards}"
        assert main(["freeze", str(folder), "--id", "m", "-o", str(out)]) == 0
        assert main(["admit", str(folder), "--contract", str(out / "bundles" / "m.yaml")]) == 0
        texts[shards] = (out / "artifacts" / "m-safetensors.yaml").read_text()
    capsys.readouterr()
    assert texts[1] == texts[2] == texts[5]  # the inventory is stated once, whatever the sharding
    shipped = (SPECS / "artifacts" / "all-minilm-l6-v2-safetensors.yaml").read_text()
    # The shipped value policy (finite floats, the bound on embeddings.position_ids) is written by
    # hand: freeze states what the header says, never a policy over the values.
    head, policy = shipped.split("\nvalues:\n")
    assert "\n" not in policy.strip("\n").replace("\n  ", "  ")  # the policy is the last section
    assert _facts(texts[1]) == _facts(head.replace("all-minilm-l6-v2-", "m-") + "\n")


def _facts(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("#")]


# --- the files stage ---------------------------------------------------------------------------


def test_a_missing_companion(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[1], tmp_path / "f")
    (folder / "tokenizer.json").unlink()
    d = rejected(admit(folder, CONTRACTS[1]), "files", "BUNDLE_FILE_MISSING", "tokenizer.json")
    assert d.field == "files.tokenizer.json" and d.location.startswith("specs/bundles/all-minilm-l6-v2.yaml:")


def test_a_dropped_shard(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[5], tmp_path / "f")
    (folder / "model-00003-of-00005.safetensors").unlink()
    rejected(admit(folder, CONTRACTS[5]), "files", "BUNDLE_FILE_MISSING", "model-00003-of-00005.safetensors")


def test_a_renamed_shard(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    os.rename(folder / "model-00002-of-00002.safetensors", folder / "model-00002-of-00003.safetensors")
    rejected(admit(folder, CONTRACTS[2]), "files", "BUNDLE_FILE_MISSING", "model-00002-of-00002.safetensors")


def test_swapped_shards(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    a, b = folder / "model-00001-of-00002.safetensors", folder / "model-00002-of-00002.safetensors"
    os.rename(a, folder / "x")
    os.rename(b, a)
    os.rename(folder / "x", b)
    rejected(admit(folder, CONTRACTS[2]), "files", "BUNDLE_FILE_SIZE", "model-00001-of-00002.safetensors")


def test_an_unlisted_file(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[1], tmp_path / "f")
    (folder / "2_Dense").mkdir()
    (folder / "2_Dense" / "config.json").write_text("{}")
    rejected(admit(folder, CONTRACTS[1]), "files", "BUNDLE_FILE_UNEXPECTED", "2_Dense/config.json")


def test_extra_files_allowed_by_policy(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[1], tmp_path / "f")
    (folder / "README.md").write_text("notes")
    contract = repinned(CONTRACTS[1], folder, tmp_path / "b.yaml", lambda d: d.update(extra_files="allow"))
    assert admit(folder, contract).admitted


def test_a_link_that_leaves_the_folder(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[1], tmp_path / "f")
    (tmp_path / "outside.json").write_bytes((folder / "config.json").read_bytes())
    (folder / "config.json").unlink()
    (folder / "config.json").symlink_to("../outside.json")
    rejected(admit(folder, CONTRACTS[1]), "files", "BUNDLE_FILE_ESCAPES", "config.json")


def test_a_link_inside_the_folder_is_followed(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[1], tmp_path / "f")
    os.rename(folder / "config.json", folder / "1_Pooling" / "real-config.json")
    (folder / "config.json").symlink_to("1_Pooling/real-config.json")
    # the link's target is an entry of its own that the contract does not list
    rejected(admit(folder, CONTRACTS[1]), "files", "BUNDLE_FILE_UNEXPECTED", "1_Pooling/real-config.json")


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_not_a_regular_file_is_refused_without_opening(minilm_folders, tmp_path, kind):
    folder = linked_copy(minilm_folders[1], tmp_path / "f")
    (folder / "tokenizer_config.json").unlink()
    if kind == "fifo":
        os.mkfifo(folder / "tokenizer_config.json")  # opening it for reading would block
    else:
        (folder / "tokenizer_config.json").mkdir()
    d = rejected(admit(folder, CONTRACTS[1]), "files", "BUNDLE_FILE_KIND", "tokenizer_config.json")
    assert d.actual == ("a FIFO" if kind == "fifo" else "a directory")


def test_a_companion_is_bound_key_by_key(minilm_folders, tmp_path):
    """Formatting is not a fact of JSON; every key and its exact type is."""
    folder = linked_copy(minilm_folders[1], tmp_path / "f")
    data = json.loads((folder / "config.json").read_bytes())
    replace(folder / "config.json", json.dumps(data, indent=4).encode())
    assert admit(folder, CONTRACTS[1]).admitted
    for edit, code, key in [(("hidden_act", "relu"), "COMPANION_VALUE", "hidden_act"),
                            (("hidden_size", 384.0), "COMPANION_TYPE", "hidden_size"),
                            (("use_bidirectional_attention", True), "COMPANION_UNEXPECTED", "use_bidirectional_attention")]:
        replace(folder / "config.json", json.dumps({**data, edit[0]: edit[1]}).encode())
        d = rejected(admit(folder, CONTRACTS[1]), "companions", code, "config.json")
        assert d.field == f'companions.config.json["{key}"]'
    replace(folder / "config.json", b'{"hidden_size": 384, "hidden_size": 384}')
    rejected(admit(folder, CONTRACTS[1]), "companions", "COMPANION_JSON", "config.json")


def test_config_dims_are_the_model_constants(minilm_folders, tmp_path):
    """config.json's hidden_size is the model constant the tensor shapes use: one fact, two files."""
    text = CONTRACTS[1].read_text()
    assert "      hidden_size:\n        type: int\n        value: hidden_size\n" in text


def test_a_weight_file_digest_is_a_payload_fact(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    shard = folder / "model-00002-of-00002.safetensors"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1
    replace(shard, bytes(data))
    assert admit(folder, CONTRACTS[2]).admitted  # header-only: the payload is not read
    rejected(admit(folder, CONTRACTS[2], verify_payload=True), "payload", "PAYLOAD_FILE_DIGEST",
             "model-00002-of-00002.safetensors")


@pytest.mark.parametrize("engine", ("python", "cpp"))
def test_a_position_id_out_of_bounds_is_found_before_the_digest(minilm_folders, tmp_path, monkeypatch, engine):
    """The weight file's value policy runs before the bundle's digest of it (the more precise
    finding), with the C++ engine's scanner for --engine cpp."""
    import struct

    from charter.formats.safetensors import read_safetensors

    folder = linked_copy(minilm_folders[5], tmp_path / "f")
    shard = next(name for name in sorted(os.listdir(folder)) if name.endswith(".safetensors")
                 and any(t.name == "embeddings.position_ids" for t in read_safetensors(str(folder / name)).tensors))
    h = read_safetensors(str(folder / shard))
    t = next(t for t in h.tensors if t.name == "embeddings.position_ids")
    data = bytearray((folder / shard).read_bytes())
    offset = h.data_offset + t.begin + 8 * 511
    data[offset:offset + 8] = struct.pack("<q", 512)
    replace(folder / shard, bytes(data))
    cs = load_set([CONTRACTS[5]], [SPECS])
    plan = next(iter(cs.bundles.values()))
    checker = choose.python_checker(cs, plan.artifact.id, ROOT / "generated").module
    key = choose.cpp_checker(cs, plan.artifact, tmp_path / "cache").key if engine == "cpp" else None
    from charter import _native

    scans = []
    real = _native.first_out_of_bounds
    monkeypatch.setattr(_native, "first_out_of_bounds", lambda *a: scans.append(a[1]) or real(*a))
    report = admit_bundle(folder, plan, checker, verify_payload=True, cpp_key=key)
    assert scans == (["i64"] if engine == "cpp" else [])
    d = rejected(report, "payload", "PAYLOAD_BOUND", shard)
    assert (d.field, d.offset, d.expected, d.actual) == ("values.embeddings.position_ids[511]", offset, "<= 511", "512")


# --- the shards stage --------------------------------------------------------------------------


def _shard(folder: Path, name: str) -> dict:
    from safetensors.numpy import load_file

    return load_file(folder / name)


def _save(folder: Path, name: str, tensors: dict) -> None:
    from safetensors.numpy import save_file

    (folder / name).unlink()
    save_file(tensors, folder / name, metadata={"format": "pt"})


def _index(folder: Path) -> dict:
    return json.loads((folder / "model.safetensors.index.json").read_text())


def _write_index(folder: Path, index: dict) -> None:
    replace(folder / "model.safetensors.index.json", json.dumps(index, indent=2).encode())


S1, S2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"


def test_a_stale_unindexed_tensor(minilm_folders, tmp_path):
    """vllm#54230: a tensor in a shard that the index does not list."""
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    tensors = _shard(folder, S2)
    tensors["encoder.layer.9.output.dense.weight"] = next(iter(tensors.values()))
    _save(folder, S2, tensors)
    contract = repinned(CONTRACTS[2], folder, tmp_path / "b.yaml")
    d = rejected(admit(folder, contract), "shards", "SHARD_UNINDEXED", S2)
    assert d.field == "tensors.encoder.layer.9.output.dense.weight"


def test_a_tensor_in_two_shards(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    first = _shard(folder, S1)
    tensors = _shard(folder, S2)
    name = next(iter(first))
    tensors[name] = first[name]
    _save(folder, S2, tensors)
    contract = repinned(CONTRACTS[2], folder, tmp_path / "b.yaml")
    d = rejected(admit(folder, contract), "shards", "SHARD_DUPLICATE", S2)
    assert d.field == f"tensors.{name}"


def test_an_index_entry_naming_the_wrong_shard(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    index = _index(folder)
    name = next(n for n, s in index["weight_map"].items() if s == S2)
    index["weight_map"][name] = S1
    _write_index(folder, index)
    contract = repinned(CONTRACTS[2], folder, tmp_path / "b.yaml")
    d = rejected(admit(folder, contract), "shards", "SHARD_INDEX_STALE", "model.safetensors.index.json")
    assert d.field == f"weights.index.weight_map.{name}" and (d.expected, d.actual) == (S2, S1)


def test_an_index_entry_for_a_tensor_no_shard_holds(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    index = _index(folder)
    index["weight_map"]["no.such.weight"] = S1
    _write_index(folder, index)
    contract = repinned(CONTRACTS[2], folder, tmp_path / "b.yaml")
    d = rejected(admit(folder, contract), "shards", "SHARD_INDEX_STALE", "model.safetensors.index.json")
    assert (d.expected, d.actual) == ("absent", S1)  # where the shards hold it; where the index says


@pytest.mark.parametrize("delta", [1, -1])
def test_total_size_off_by_one(minilm_folders, tmp_path, delta):
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    index = _index(folder)
    index["metadata"]["total_size"] += delta
    _write_index(folder, index)
    contract = repinned(CONTRACTS[2], folder, tmp_path / "b.yaml")
    rejected(admit(folder, contract), "shards", "SHARD_INDEX_METADATA", "model.safetensors.index.json")

    def agree(data):
        data["weights"]["index_metadata"]["total_size"] += delta

    contract = repinned(CONTRACTS[2], folder, tmp_path / "c.yaml", agree)  # contract and index agree, wrongly
    d = rejected(admit(folder, contract), "shards", "SHARD_TOTAL_SIZE", "model.safetensors.index.json")
    assert d.expected == str(index["metadata"]["total_size"] - delta)


def test_a_tensor_moved_to_another_shard_with_its_index_entry(minilm_folders, tmp_path):
    """Index and shards agree; the contract's placement is the fact that breaks."""
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    first, second = _shard(folder, S1), _shard(folder, S2)
    name = next(iter(second))
    first[name] = second.pop(name)
    _save(folder, S1, first)
    _save(folder, S2, second)
    index = _index(folder)
    index["weight_map"][name] = S1
    _write_index(folder, index)
    contract = repinned(CONTRACTS[2], folder, tmp_path / "b.yaml")
    d = rejected(admit(folder, contract), "shards", "SHARD_PLACEMENT", S1)
    assert (d.expected, d.actual) == (S2, S1)
    assert Path(d.location.rsplit(":", 2)[0]).resolve() == tmp_path / "b.yaml"  # the placement fact


def test_a_tensor_missing_from_every_shard(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    second = _shard(folder, S2)
    name = next(iter(second))
    del second[name]
    _save(folder, S2, second)
    index = _index(folder)
    del index["weight_map"][name]
    index["metadata"]["total_size"] = sum(a.nbytes for s in (S1,) for a in _shard(folder, s).values()) + \
        sum(a.nbytes for a in second.values())

    def pin_total(data):
        data["weights"]["index_metadata"]["total_size"] = index["metadata"]["total_size"]

    _write_index(folder, index)
    contract = repinned(CONTRACTS[2], folder, tmp_path / "b.yaml", pin_total)
    d = rejected(admit(folder, contract), "tensors", "TENSOR_MISSING", S2)
    assert d.field == f"tensors.{name}"


@pytest.mark.parametrize("text, why", [
    (b'{"metadata": {"total_size": 1}, "weight_map": {}, "weight_map": {}}', "duplicate key"),
    (b'{"metadata": {"total_size": NaN}, "weight_map": {}}', "NaN is not JSON"),
    (b'[]', "exactly 'metadata' and 'weight_map'"),
    (b'{"metadata": {}, "weight_map": {}, "extra": 1}', "exactly 'metadata' and 'weight_map'"),
    (b'{"metadata": {}, "weight_map": {"a": 1}}', "not a file name"),
    (b'{"metadata": {}, "weight_map": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "not valid JSON"),
    (b'\xff{}', "not valid JSON"),
])
def test_a_malformed_index(minilm_folders, tmp_path, text, why):
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    replace(folder / "model.safetensors.index.json", text)
    contract = repinned(CONTRACTS[2], folder, tmp_path / "b.yaml")
    d = rejected(admit(folder, contract), "shards", "SHARD_INDEX", "model.safetensors.index.json")
    assert why in d.message


def test_a_malformed_shard_gets_its_container_diagnostic(minilm_folders, tmp_path):
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    replace(folder / S2, (folder / S2).read_bytes()[:1000])
    contract = repinned(CONTRACTS[2], folder, tmp_path / "b.yaml")
    report = admit(folder, contract)
    assert not report.admitted and (report.diagnostic.stage, report.file) == ("container", S2), report.render()
    assert report.diagnostic.code.startswith("CONTAINER_")


# --- contracts and commands ---------------------------------------------------------------------


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["files"].update({"../up.json": {"role": "other", "size": 1}}), "'..' segment"),
    (lambda d: d["files"].update({"/abs.json": {"role": "other", "size": 1}}), "pattern"),
    (lambda d: d["files"].update({"a//b.json": {"role": "other", "size": 1}}), "pattern"),
    (lambda d: d["weights"]["shards"][S2].append(d["weights"]["shards"][S1][0]), "placed in both"),
    (lambda d: d["weights"]["shards"][S2].append("no.such.tensor"), "not in the inventory"),
    (lambda d: d["weights"]["shards"][S2].pop(), "placed in no weight file"),
    (lambda d: d["files"].update({"model-00003-of-00002.safetensors": {"role": "weights", "size": 1}}) or
     d["weights"]["shards"].update({"model-00003-of-00002.safetensors": []}), "PREFIX-00001-of-00003.EXT"),
    (lambda d: d["files"]["config.json"].update(role="index"), "weights.index does not name it"),
])
def test_invalid_bundle_contracts(tmp_path, capsys, edit, message):
    data = yaml.safe_load(CONTRACTS[2].read_text())
    edit(data)
    from charter.contract.yamldump import dump

    (tmp_path / "b.yaml").write_text(dump(data))
    assert main(["check", "--search", "specs", str(tmp_path / "b.yaml")]) == 2
    assert message in capsys.readouterr().out


def test_freeze_refuses_a_folder_that_contradicts_itself(minilm_folders, tmp_path, capsys):
    folder = linked_copy(minilm_folders[2], tmp_path / "f")
    tensors = _shard(folder, S2)
    tensors["stale.weight"] = next(iter(tensors.values()))
    _save(folder, S2, tensors)
    assert main(["freeze", str(folder), "--id", "m", "-o", str(tmp_path / "out")]) == 1
    out, err = capsys.readouterr()
    assert "SHARD_UNINDEXED" in out + err and "Traceback" not in out + err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("shards", [1, 5])
def test_the_cpp_engine_admits_the_folders(minilm_folders, capsys, shards):
    from charter.bundles.vouched import bundle_receipt_path

    bundle_receipt_path(CONTRACTS[shards]).unlink(missing_ok=True)  # the contracts, not an earlier run's receipt
    assert main(["admit", str(minilm_folders[shards]), "--contract", str(CONTRACTS[shards]), "--engine", "cpp",
                 "-v"]) == 0
    assert "weight files: c++ (charter._native)" in capsys.readouterr().err


def test_a_bundle_needs_a_folder(minilm_folders, capsys):
    assert main(["admit", str(minilm_folders[1] / "model.safetensors"), "--contract", str(CONTRACTS[1])]) == 2
    assert "is a bundle contract: name the bundle folder" in capsys.readouterr().err


def test_a_folder_that_cannot_be_listed(minilm_folders, tmp_path, monkeypatch):
    """As root every folder can be listed; a refusal is simulated where the walk asks for it."""
    from charter.bundles import files

    folder = linked_copy(minilm_folders[1], tmp_path / "f")
    cs = load_set([CONTRACTS[1]], [SPECS])
    plan = next(iter(cs.bundles.values()))
    checker = choose.python_checker(cs, plan.artifact.id, ROOT / "generated").module

    def refused(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files.os, "scandir", refused)
    d = rejected(admit_bundle(folder, plan, checker), "files", "BUNDLE_FILE_KIND", None)
    assert "the bundle folder cannot be listed: Permission denied" in d.message


def test_freeze_refuses_a_fifo_in_the_folder(minilm_folders, tmp_path, capsys):
    folder = linked_copy(minilm_folders[1], tmp_path / "f")
    os.mkfifo(folder / "notes.txt")  # never opened for reading: that would block
    assert main(["freeze", str(folder), "--id", "m", "-o", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert "notes.txt: not a regular file" in err and "Traceback" not in out + err
    assert not (tmp_path / "out").exists()
