"""The value policy on the real SmolLM2 GGUF: the file passes, and a NaN, an infinity or a
signalling NaN written into the first or the last block scale (Q8_0 `d`, Q4_1 `d` and `m`) or
into an F32 element is rejected at the payload stage with the tensor, the block, the field and
the file byte of the bad value, by both engines, even though the file digest is also pinned."""

from __future__ import annotations

import struct

import pytest

from tests.admission.conftest import (
    SMOLLM2_CONTRACT,
    admit,
    assert_admitted,
    assert_rejected,
    contract_tree,
    edited,
)

ENGINES = ("python", "cpp")
F16 = {"NaN": 0x7E00, "+Inf": 0x7C00, "-Inf": 0xFC00, "sNaN": 0x7C01}
F32 = {"NaN": 0x7FC00000, "+Inf": 0x7F800000, "-Inf": 0xFF800000, "sNaN": 0x7F800001}


def _tensor(header, name: str):
    return next(t for t in header.tensors if t.name == name)


@pytest.mark.parametrize("engine", ENGINES)
def test_real_smollm2_values_are_finite(capsys, smollm2_path, engine):
    report = assert_admitted(admit(capsys, smollm2_path, SMOLLM2_CONTRACT, "--verify-payload", "--engine", engine))
    assert {s["stage"]: s["result"] for s in report["stages"]}["payload"] == "passed"


SCALES = [
    # (tensor, codec block bytes, field, field offset in the block)
    ("token_embd.weight", 34, "d", 0),
    ("blk.0.attn_q.weight", 20, "d", 0),
    ("blk.29.ffn_down.weight", 20, "m", 2),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("where", ("first", "last"))
@pytest.mark.parametrize("kind", tuple(F16))
@pytest.mark.parametrize("tensor,block_bytes,field,field_offset", SCALES)
def test_bad_block_scale(capsys, smollm2_copy, smollm2_header, patched, tensor, block_bytes, field, field_offset,
                         kind, where, engine):
    t = _tensor(smollm2_header, tensor)
    blocks = t.nbytes // block_bytes
    block = 0 if where == "first" else blocks - 1
    offset = t.data_start + t.offset + block * block_bytes + field_offset
    patched.write(offset, struct.pack("<H", F16[kind]))
    run = admit(capsys, smollm2_copy, SMOLLM2_CONTRACT, "--verify-payload", "--engine", engine)
    d = assert_rejected(run, "payload", "PAYLOAD_VALUE", f"values.{tensor}.blocks[{block}].{field}",
                        fact="default: finite")
    assert d["offset"] == offset
    assert d["expected"] == "finite"
    assert d["actual"] == f"{kind} (f16 0x{F16[kind]:04x})"
    assert f"block {block} of" in d["message"] and f"field {field}" in d["message"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("where", ("first", "last"))
@pytest.mark.parametrize("kind", tuple(F32))
def test_bad_float_element(capsys, smollm2_copy, smollm2_header, patched, kind, where, engine):
    t = _tensor(smollm2_header, "blk.7.ffn_norm.weight")
    element = 0 if where == "first" else t.nbytes // 4 - 1
    offset = t.data_start + t.offset + 4 * element
    patched.write(offset, struct.pack("<I", F32[kind]))
    run = admit(capsys, smollm2_copy, SMOLLM2_CONTRACT, "--verify-payload", "--engine", engine)
    d = assert_rejected(run, "payload", "PAYLOAD_VALUE", f"values.blk.7.ffn_norm.weight[{element}]",
                        fact="default: finite")
    assert d["offset"] == offset and d["actual"] == f"{kind} (f32 0x{F32[kind]:08x})"


def test_first_bad_value_of_the_file_is_reported(capsys, smollm2_copy, smollm2_header, patched):
    """Two bad values: the one earlier in the file is the finding, and within a block `d` before `m`."""
    q = _tensor(smollm2_header, "blk.3.attn_k.weight")
    start = q.data_start + q.offset
    patched.write(start + 5 * 20 + 2, struct.pack("<H", F16["NaN"]))  # block 5, m
    patched.write(start + 5 * 20, struct.pack("<H", F16["+Inf"]))  # block 5, d
    patched.write(start + 9 * 20, struct.pack("<H", F16["NaN"]))  # block 9, d
    d = assert_rejected(admit(capsys, smollm2_copy, SMOLLM2_CONTRACT, "--verify-payload"), "payload",
                        "PAYLOAD_VALUE", "values.blk.3.attn_k.weight.blocks[5].d")
    assert d["offset"] == start + 100


def test_flipped_mantissa_bit_is_finite(capsys, tmp_path, smollm2_copy, smollm2_header, patched):
    """The acceptance control: a finite value changed is admitted by a policy without digests (finite
    is not correct), and rejected by the digest when it is pinned."""
    q = _tensor(smollm2_header, "blk.0.attn_q.weight")
    offset = q.data_start + q.offset
    with open(smollm2_copy, "rb") as f:
        f.seek(offset)
        (d_bits,) = struct.unpack("<H", f.read(2))
    patched.write(offset, struct.pack("<H", d_bits ^ 0x0001))
    assert_rejected(admit(capsys, smollm2_copy, SMOLLM2_CONTRACT, "--verify-payload"), "payload",
                    "PAYLOAD_FILE_DIGEST", "payload.file_sha256")
    text = edited(SMOLLM2_CONTRACT, "payload:\n  file_sha256: b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53\n",
                  "")
    contract = contract_tree(tmp_path, text)
    assert_admitted(admit(capsys, smollm2_copy, str(contract), "--verify-payload"))


def test_exception_leaves_a_tensor_unchecked(capsys, tmp_path, smollm2_copy, smollm2_header, patched):
    t = _tensor(smollm2_header, "output_norm.weight")
    patched.write(t.data_start + t.offset, struct.pack("<I", F32["NaN"]))
    text = edited(SMOLLM2_CONTRACT, "payload:\n  file_sha256: b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53\n", "")
    text = text.replace("  default: finite", "  default: finite\n  exceptions:\n    norm: {tensors: [output_norm.weight], "
                                             "reason: a test exception}")
    contract = contract_tree(tmp_path, text)
    assert_admitted(admit(capsys, smollm2_copy, str(contract), "--verify-payload"))
    # without the exception, the same file is rejected
    contract = contract_tree(tmp_path, text.replace("[output_norm.weight]", "[blk.0.attn_norm.weight]"), name="b.yaml")
    assert_rejected(admit(capsys, smollm2_copy, str(contract), "--verify-payload"), "payload", "PAYLOAD_VALUE",
                    "values.output_norm.weight[0]", fact="default: finite", root=tmp_path)


def test_header_only_admission_reads_no_values(capsys, smollm2_copy, smollm2_header, patched):
    t = _tensor(smollm2_header, "token_embd.weight")
    patched.write(t.data_start + t.offset, struct.pack("<H", F16["NaN"]))
    assert_admitted(admit(capsys, smollm2_copy, SMOLLM2_CONTRACT))


def test_a_bad_value_is_reported_before_a_pinned_tensor_digest(capsys, tmp_path, smollm2_copy, smollm2_header,
                                                                 smollm2_path, patched):
    """With the tensor's own digest pinned too, the bad value is the finding: it owns the bytes more precisely."""
    import hashlib

    t = _tensor(smollm2_header, "blk.0.attn_v.weight")
    start = t.data_start + t.offset
    with open(smollm2_path, "rb") as f:
        f.seek(start)
        digest = hashlib.sha256(f.read(t.nbytes)).hexdigest()
    text = edited(SMOLLM2_CONTRACT, "payload:\n", f"payload:\n  tensors:\n    blk.0.attn_v.weight: {digest}\n")
    contract = contract_tree(tmp_path, text)
    assert_admitted(admit(capsys, smollm2_copy, str(contract), "--verify-payload"))
    patched.write(start + 7 * 20 + 2, struct.pack("<H", F16["-Inf"]))
    d = assert_rejected(admit(capsys, smollm2_copy, str(contract), "--verify-payload"), "payload", "PAYLOAD_VALUE",
                        "values.blk.0.attn_v.weight.blocks[7].m", fact="default: finite", root=tmp_path)
    assert d["offset"] == start + 142 and d["actual"] == "-Inf (f16 0xfc00)"
