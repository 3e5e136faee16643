"""`charter freeze --values` (charter.freeze.values): the frozen contract states the value policy
its file meets, `default: finite` with the tensors it cannot hold to it named as exceptions, and
admits its file with --verify-payload; a NaN written afterwards into a checked tensor is rejected
as the value it is, before the pinned digest."""

from __future__ import annotations

import struct

import numpy as np
import yaml
from gguf import GGMLQuantizationType, GGUFWriter

from charter.cli import main
from charter.formats.gguf import read_gguf
from tests.admission.conftest import admit, assert_admitted


def _freeze(capsys, artifact, out, *extra) -> int:
    code = main(["freeze", str(artifact), "--id", "v", "-o", str(out), *extra])
    capsys.readouterr()
    return code


def test_the_real_smollm2_is_finite(capsys, tmp_path, smollm2_path):
    assert _freeze(capsys, smollm2_path, tmp_path, "--values") == 0
    contract = tmp_path / "artifacts" / "v.yaml"
    assert yaml.safe_load(contract.read_text())["values"] == {"default": "finite"}
    assert_admitted(admit(capsys, smollm2_path, str(contract), "--verify-payload"))


def test_tensors_that_cannot_be_finite_are_named_exceptions(capsys, tmp_path):
    path = tmp_path / "mixed.gguf"
    w = GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    w.add_tensor("norm.weight", np.ones(32, np.float32))
    w.add_tensor("bad[0]", np.array([1.0, np.nan, 2.0, 3.0] * 8, np.float32))
    w.add_tensor("q", np.zeros((1, 40), np.uint8), raw_dtype=GGMLQuantizationType.Q8_1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    assert _freeze(capsys, path, tmp_path / "specs", "--values") == 0
    contract = tmp_path / "specs" / "artifacts" / "v.yaml"
    policy = yaml.safe_load(contract.read_text())["values"]
    assert policy["default"] == "finite"
    assert {k: v["tensors"] for k, v in policy["exceptions"].items()} == {"no_value_rule": ["q"],
                                                                          "not_finite": ["bad[[]0]"]}
    assert_admitted(admit(capsys, path, str(contract), "--verify-payload"))
    t = next(t for t in read_gguf(str(path)).tensors if t.name == "norm.weight")
    offset = t.data_start + t.offset + 4 * 31
    data = bytearray(path.read_bytes())
    data[offset:offset + 4] = struct.pack("<I", 0x7F800000)
    path.write_bytes(bytes(data))
    d = admit(capsys, path, str(contract), "--verify-payload").report["diagnostic"]
    assert (d["code"], d["field"], d["offset"]) == ("PAYLOAD_VALUE", "values.norm.weight[31]", offset), d


def test_a_folder_is_refused(capsys, tmp_path):
    (tmp_path / "folder").mkdir()
    assert _freeze(capsys, tmp_path / "folder", tmp_path / "out", "--values") == 2


def test_an_empty_tensor_name_that_would_be_excepted_is_refused(capsys, tmp_path):
    from safetensors.numpy import save_file

    path = tmp_path / "model.safetensors"
    save_file({"": np.array([np.inf], np.float32), "w": np.ones(2, np.float32)}, str(path))
    assert _freeze(capsys, path, tmp_path / "specs", "--values") == 2
    assert not (tmp_path / "specs").exists()
