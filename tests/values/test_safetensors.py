"""The value policy over a safetensors file (written by the safetensors package, frozen by
`charter freeze`): its F32 tensors are checked element by element, a BF16 NaN too."""

from __future__ import annotations

import json
import struct

import numpy as np
from safetensors.numpy import save_file

from charter.formats.safetensors import read_safetensors
from tests.admission.conftest import admit, assert_admitted
from tests.frozen import freeze, write_safetensors


def _rejected(run, field: str, offset: int, actual: str) -> None:
    assert run.code == 1, (run.out, run.err)
    d = run.report["diagnostic"]
    assert (d["stage"], d["code"], d["field"], d["offset"], d["actual"]) == \
        ("payload", "PAYLOAD_VALUE", field, offset, actual), d


def test_a_nan_in_a_safetensors_tensor(capsys, tmp_path):
    weights = write_safetensors(tmp_path / "model", hidden=16)
    contract = freeze(weights, tmp_path / "specs", "st-values")
    contract.write_text(contract.read_text("utf-8") + "values:\n  default: finite\n", "utf-8")
    capsys.readouterr()  # what freeze printed
    assert_admitted(admit(capsys, weights, str(contract), "--verify-payload"))
    h = read_safetensors(str(weights))
    t = next(t for t in h.tensors if t.name == "model.layers.2.mlp.up_proj.weight")
    offset = h.data_offset + t.begin + 4 * 100
    data = bytearray(weights.read_bytes())
    data[offset:offset + 4] = struct.pack("<I", 0x7F800001)
    weights.write_bytes(bytes(data))
    _rejected(admit(capsys, weights, str(contract), "--verify-payload"),
              "values.model.layers.2.mlp.up_proj.weight[100]", offset, "sNaN (f32 0x7f800001)")


def test_bf16_elements(capsys, tmp_path):
    folder = tmp_path / "bf16"
    folder.mkdir()
    bits = (np.random.default_rng(0).standard_normal(64).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    path = folder / "model.safetensors"
    save_file({"w": bits.reshape(8, 8)}, str(path))
    raw = bytearray(path.read_bytes())
    header_len = struct.unpack_from("<Q", raw)[0]
    header = json.loads(raw[8:8 + header_len])
    header["w"]["dtype"] = "BF16"  # the same bytes, stated as bfloat16 (numpy has no bf16 to save)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (header_len - len(text))
    raw[8:8 + header_len] = text
    path.write_bytes(bytes(raw))
    contract = freeze(path, tmp_path / "specs", "bf16-values")
    contract.write_text(contract.read_text("utf-8") + "values:\n  default: finite\n", "utf-8")
    capsys.readouterr()  # what freeze printed
    assert_admitted(admit(capsys, path, str(contract), "--verify-payload"))
    offset = 8 + header_len + 2 * 63
    raw[offset:offset + 2] = struct.pack("<H", 0xFF80)
    path.write_bytes(bytes(raw))
    _rejected(admit(capsys, path, str(contract), "--verify-payload"), "values.w[63]", offset, "-Inf (bf16 0xff80)")
