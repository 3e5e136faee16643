"""GGUF files of every k-quant and i-quant, Q8_K and Q1_0, written by gguf's GGUFWriter from real
SmolLM2 bytes (re-encoded or quantized blocks: tests/values/test_crosscheck.py `_blocks`), frozen by `charter freeze` and given
`values: {default: finite}`: admitted with --verify-payload, and a NaN in the last block's last
scale field of each is rejected with its tensor, block, field and byte, by both engines."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFWriter

from charter.formats.ggml_types import GGML_TYPES_BY_NAME
from charter.formats.gguf import read_gguf
from charter.formats.values import GGML_VALUE_FIELDS
from tests.admission.conftest import admit, assert_admitted
from tests.frozen import freeze
from tests.values.test_crosscheck import _blocks, payload  # noqa: F401  (the real SmolLM2 tensors)

CODECS = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S",
          "IQ1_M", "IQ4_NL", "IQ4_XS", "Q4_0", "Q5_0", "Q5_1", "TQ1_0", "TQ2_0", "MXFP4", "BF16", "F16",
          "Q8_K", "Q1_0")  # the last two quantized from real weights by ggml's reference rule (test_crosscheck)


@pytest.fixture(autouse=True)
def _checkers_at_o0(monkeypatch):
    """The C++ checkers these files compile run at -O0: the verdict matters here, not the speed
    (an -O2 compile of the value scanner costs over 10 s; tests/values/test_bounds.py and the
    other `--engine cpp` admissions compile theirs at -O2, as charter admit does)."""
    from charter.engines import library

    monkeypatch.setattr(library, "OPTIMIZED", library.FLAGS)


@pytest.fixture(scope="module")
def quants_file(tmp_path_factory, payload):  # noqa: F811
    folder = tmp_path_factory.mktemp("kquants")
    path = folder / "quants.gguf"
    w = GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    for codec in CODECS:
        t = GGML_TYPES_BY_NAME[codec]
        rows = 4
        n_blocks = rows * max(1, 256 // t.block_size)
        blocks = _blocks(payload, codec, n_blocks)
        w.add_tensor(f"{codec.lower()}.weight", blocks.reshape(rows, -1), raw_dtype=GGMLQuantizationType[codec])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    contract = freeze(path, folder / "specs", "quants")
    text = contract.read_text("utf-8")
    assert "values:" not in text
    contract.write_text(text + "values:\n  default: finite\n", "utf-8")
    return path, contract


@pytest.mark.parametrize("engine", ("python", "cpp"))
def test_every_codec_file_is_admitted(capsys, quants_file, engine):
    path, contract = quants_file
    assert_admitted(admit(capsys, path, str(contract), "--verify-payload", "--engine", engine))


@pytest.mark.parametrize("engine", ("python", "cpp"))
@pytest.mark.parametrize("codec", CODECS)
def test_a_nan_in_the_last_scale_is_rejected(capsys, tmp_path, quants_file, codec, engine):
    path, contract = quants_file
    copy = tmp_path / "quants.gguf"
    copy.write_bytes(path.read_bytes())
    t = next(t for t in read_gguf(copy).tensors if t.name == f"{codec.lower()}.weight")
    field = GGML_VALUE_FIELDS[codec][-1]
    blocks = t.nbytes // t.ggml_type.block_bytes
    offset = t.data_start + t.offset + (blocks - 1) * t.ggml_type.block_bytes + field.offset
    data = bytearray(copy.read_bytes())
    if field.kind == "iq1m":
        words = struct.unpack_from("<4H", data, offset)
        struct.pack_into("<4H", data, offset, *((w & 0x0FFF) | ((0x7E00 >> (4 * k)) & 0xF) << 12
                                                for k, w in enumerate(words)))
    elif field.kind == "e8m0":
        data[offset] = 0xFF
    elif field.kind == "f32":  # Q8_K's d
        struct.pack_into("<I", data, offset, 0x7FC00000)
    else:
        struct.pack_into("<H", data, offset, 0x7E00 if field.kind == "f16" else 0x7FC0)
    copy.write_bytes(bytes(data))
    name = f"values.{t.name}[{blocks - 1}]" if field.name == "value" else \
        f"values.{t.name}.blocks[{blocks - 1}].{field.name}"
    run = admit(capsys, copy, str(contract), "--verify-payload", "--engine", engine)
    assert run.code == 1, (run.out, run.err)
    d = run.report["diagnostic"]
    assert (d["stage"], d["code"], d["field"], d["offset"]) == ("payload", "PAYLOAD_VALUE", name, offset), d
    line = d["location"]["line"]
    assert contract.read_text("utf-8").splitlines()[line - 1].strip() == "default: finite"
