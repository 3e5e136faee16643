"""Contract mutations: one leaf of the shipped SmolLM2 contract changed, the *unchanged* real file
admitted with the checker rendered from the mutated contract. It must be rejected at the stage that
owns the leaf, located at the mutated line of the mutated contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT

from .conftest import (
    SMOLLM2_CONTRACT,
    admit,
    assert_admitted,
    assert_rejected,
    contract_tree,
    edited,
    edited_line,
)

CASES = [
    # (id, old text, new text, stage, code, field, fact the location must point at)
    ("alignment-64", "alignment: 32", "alignment: 64",
     "container", "CONTAINER_ALIGNMENT", "container.alignment", "alignment: 64"),
    ("version-2", "version: 3", "version: 2",
     "container", "CONTAINER_VERSION", "container.version", "version: 2"),
    ("architecture", "general.architecture:", "general.architecture: mistral",
     "identity", "IDENTITY_ARCHITECTURE", "identity.general.architecture", "mistral"),
    ("size-label", "general.size_label:", "general.size_label: 360M",
     "identity", "IDENTITY_MISMATCH", "identity.general.size_label", "360M"),
    ("type-uint64", "llama.block_count: {type: uint32", "llama.block_count: {type: uint64",
     "metadata", "METADATA_TYPE", "metadata.llama.block_count", "llama.block_count"),
    ("value-expr+1", "llama.block_count: {type: uint32, value: layers}",
     "llama.block_count: {type: uint32, value: layers + 1}",
     "metadata", "METADATA_VALUE", "metadata.llama.block_count", "layers + 1"),
    ("float-value", "llama.rope.freq_base: {type: float32, value: rope_theta}",
     "llama.rope.freq_base: {type: float32, value: rope_theta + 1}",
     "metadata", "METADATA_VALUE", "metadata.llama.rope.freq_base", "rope_theta + 1"),
    ("bool-value", "tokenizer.ggml.add_bos_token: {type: bool, value: false}",
     "tokenizer.ggml.add_bos_token: {type: bool, value: true}",
     "tokenizer", "TOKENIZER_VALUE", "tokenizer.tokenizer.ggml.add_bos_token", "add_bos_token"),
    ("tokens-digest-bit", "sha256: e3f79317b457a91937391f6e0ee99d97ba2a3adae02bc26db8f59710ddb27ffe",
     "sha256: e3f79317b457a91937391f6e0ee99d97ba2a3adae02bc26db8f59710ddb27ffd",
     "tokenizer", "TOKENIZER_ARRAY_DIGEST", "tokenizer.tokenizer.ggml.tokens.sha256", "tokenizer.ggml.tokens"),
    ("merges-length", "length: 48900", "length: 48899",
     "tokenizer", "TOKENIZER_ARRAY_LENGTH", "tokenizer.tokenizer.ggml.merges.length", "tokenizer.ggml.merges"),
    ("special-binding", "tokenizer.ggml.bos_token_id: bos", "tokenizer.ggml.bos_token_id: eos",
     "tokenizer", "TOKENIZER_SPECIAL_ID", "tokenizer.special.eos", "tokenizer.ggml.bos_token_id: eos"),
    ("tensor-shape", "role: attn_k, shape: [hidden, kv_width]", "role: attn_k, shape: [hidden, q_width]",
     "tensors", "TENSOR_SHAPE", "tensors.blk.0.attn_k.weight.shape[1]", "attn_k"),
    ("tensor-codec", "role: ffn_down, shape: [ffn, hidden], codec: Q4_1",
     "role: ffn_down, shape: [ffn, hidden], codec: Q8_0",
     "tensors", "TENSOR_CODEC", "tensors.blk.0.ffn_down.weight.codec", "ffn_down"),
    ("tensor-repeat", "\"blk.{i}.attn_norm.weight\", repeat: {i: layers}",
     "\"blk.{i}.attn_norm.weight\", repeat: {i: layers + 1}",
     "tensors", "TENSOR_MISSING", "tensors.blk.30.attn_norm.weight", "attn_norm"),
    ("codec-bytes-21", "Q4_1: {block: 32, bytes: 20}", "Q4_1: {block: 32, bytes: 21}",
     "codec", "CODEC_SIZE", "codecs.Q4_1.bytes", "Q4_1: {block: 32, bytes: 21}"),
    ("codec-block-256", "Q4_1: {block: 32, bytes: 20}", "Q4_1: {block: 256, bytes: 160}",
     "codec", "CODEC_BLOCK", "codecs.Q4_1.block", "Q4_1: {block: 256"),  # 576 % 256 != 0
    ("codec-block-64", "Q4_1: {block: 32, bytes: 20}", "Q4_1: {block: 64, bytes: 20}",
     "codec", "CODEC_SIZE", "codecs.Q4_1.bytes", "Q4_1: {block: 64"),  # divides 576, halves the size
    ("payload-digest-bit", "file_sha256: b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
     "file_sha256: b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db52",
     "payload", "PAYLOAD_FILE_DIGEST", "payload.file_sha256", "file_sha256"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_contract_mutation_rejects_the_real_file(capsys, tmp_path, smollm2_path, case):
    _, old, new, stage, code, field, fact = case
    text = edited_line(SMOLLM2_CONTRACT, old, new) if old.endswith(":") else edited(SMOLLM2_CONTRACT, old, new)
    spec = contract_tree(tmp_path, text)
    extra = ("--verify-payload",) if stage == "payload" else ()
    d = assert_rejected(admit(capsys, smollm2_path, spec, *extra), stage, code, field, fact=fact, root=tmp_path)
    assert Path(d["location"]["file"]) in (tmp_path / "specs/artifacts/mutant.yaml",
                                           tmp_path / "specs/models/smollm2-135m-instruct.yaml")


def test_unmutated_copy_of_the_contract_admits(capsys, tmp_path, smollm2_path):
    """The harness itself: the copied tree with no edit renders a checker that admits."""
    spec = contract_tree(tmp_path, (ROOT / SMOLLM2_CONTRACT).read_text("utf-8"))
    run = admit(capsys, smollm2_path, spec, "--verify-payload")
    assert_admitted(run)


def test_model_constant_mutation_rejects_at_the_owning_stage(capsys, tmp_path, smollm2_path):
    """A model leaf (ffn 1536 -> 1535) flows through expressions into the artifact's metadata value,
    the first fact that uses it; the location is the artifact fact that stated the expression."""
    spec = contract_tree(tmp_path, (ROOT / SMOLLM2_CONTRACT).read_text("utf-8"))
    model = tmp_path / "specs" / "models" / "smollm2-135m-instruct.yaml"
    model.write_text(model.read_text().replace("ffn: 1536", "ffn: 1535"))
    assert_rejected(admit(capsys, smollm2_path, spec), "metadata", "METADATA_VALUE",
                    "metadata.llama.feed_forward_length", fact="llama.feed_forward_length", root=tmp_path)


def test_model_identity_flows_into_the_artifact_identity(capsys, tmp_path, smollm2_path):
    """The artifact binds general.architecture to `{model.architecture}`: changing the model's
    architecture leaf rejects the unchanged file at identity, located at the artifact's binding."""
    spec = contract_tree(tmp_path, (ROOT / SMOLLM2_CONTRACT).read_text("utf-8"))
    model = tmp_path / "specs" / "models" / "smollm2-135m-instruct.yaml"
    assert model.read_text().count("\narchitecture: llama\n") == 1
    model.write_text(model.read_text().replace("\narchitecture: llama\n", "\narchitecture: mistral\n"))
    d = assert_rejected(admit(capsys, smollm2_path, spec), "identity", "IDENTITY_ARCHITECTURE",
                        "identity.general.architecture", fact="general.architecture:", root=tmp_path)
    assert d["expected"] == "'mistral'" and d["actual"] == "'llama'"


def test_invalid_mutated_contract_is_a_usage_error(capsys, tmp_path, smollm2_path):
    """A mutation the contract language itself rejects never reaches admission: exit 2."""
    spec = contract_tree(tmp_path, edited(SMOLLM2_CONTRACT, "alignment: 32", "alignment: 48"))
    run = admit(capsys, smollm2_path, spec, json_out=False)
    assert run.code == 2
    assert "specs/artifacts/mutant.yaml:" in run.out and "power of two" in run.out
