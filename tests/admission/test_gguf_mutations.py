"""Artifact mutations of the real SmolLM2 GGUF: one field changed, rejected at the stage that owns it.

Each case edits a sparse copy of the real file (real header, hole for the payload) in place at the
offset charter's reader reports, or re-serializes a modified header when the field changes size.
The expected stage follows Note [Ordered admission]: a fact fails at the cheapest stage that owns
it, so several cases assert an *earlier* stage than the field's name suggests, with the reason.
"""

from __future__ import annotations

import struct

import pytest

from charter.formats.gguf import KV, GGUFArray, GGUFValueType, read_gguf

from .conftest import (
    SMOLLM2_CONTRACT,
    admit,
    assert_admitted,
    assert_rejected,
    kv_changed,
    patch,
    patch_bytes,
    rewrite_header,
    tensor,
)

Q = "blk.0.attn_q.weight"


def test_unmodified_sparse_copy_is_admitted(capsys, sparse_copy, smollm2_path):
    """The baseline every case below departs from: a hole reads as zeros, header stages pass."""
    assert sparse_copy.stat().st_size == smollm2_path.stat().st_size
    assert sparse_copy.stat().st_blocks * 512 < 4 * 2**20
    assert_admitted(admit(capsys, sparse_copy))


def _string_element(arr: GGUFArray, index: int) -> tuple[int, bytes]:
    """(file offset, bytes) of string element `index` of a parsed string array."""
    pos = 0
    for _ in range(index):
        (n,) = struct.unpack_from("<Q", arr.raw, pos)
        pos += 8 + n
    (n,) = struct.unpack_from("<Q", arr.raw, pos)
    return arr.data_offset + pos + 8, arr.raw[pos + 8 : pos + 8 + n]


# --- container -----------------------------------------------------------------------------------


def test_version_2_is_a_contract_fact(capsys, sparse_copy, real_header):
    """GGUF v2 has the same layout, so the reader accepts it; the contract pins version 3."""
    patch(sparse_copy, real_header.VERSION_OFFSET, "<I", 2)
    assert_rejected(admit(capsys, sparse_copy), "container", "CONTAINER_VERSION", "container.version",
                    fact="version: 3")


def test_unsupported_version_is_rejected_by_the_reader(capsys, sparse_copy, real_header):
    patch(sparse_copy, real_header.VERSION_OFFSET, "<I", 4)
    assert_rejected(admit(capsys, sparse_copy), "container", "CONTAINER_VERSION", "header.version", located=False)


def test_general_alignment_key_is_owned_by_the_container(capsys, sparse_copy, real_header):
    """An added general.alignment = 16 keeps every offset valid; it is an unexpected key too, but
    the container stage owns alignment and runs first."""
    kvs = dict(real_header.kvs)
    kvs["general.alignment"] = KV("general.alignment", GGUFValueType.UINT32, 16, 0, 0, 0)
    rewrite_header(sparse_copy, real_header, kvs=kvs, kv_count=len(kvs), alignment=16)
    assert_rejected(admit(capsys, sparse_copy), "container", "CONTAINER_ALIGNMENT", "container.alignment",
                    fact="alignment: 32")


def test_misaligned_tensor_offset_is_rejected_by_the_reader(capsys, sparse_copy, real_header):
    t = tensor(real_header, Q)
    patch(sparse_copy, t.offset_offset, "<Q", t.offset + 1)
    assert_rejected(admit(capsys, sparse_copy), "container", "CONTAINER_OFFSET", f"tensors.{Q}.offset",
                    located=False)


def test_row_width_not_a_multiple_of_the_block_is_rejected_by_the_reader(capsys, sparse_copy, real_header):
    """ne[0] = 577 cannot be stored in Q4_1 blocks of 32 at all: the container owns it, before
    the tensors stage could compare the shape with the contract."""
    patch(sparse_copy, tensor(real_header, Q).dims_offset, "<Q", 577)
    assert_rejected(admit(capsys, sparse_copy), "container", "CONTAINER_TENSOR_BLOCK", f"tensors.{Q}.dims",
                    located=False)


# --- identity ------------------------------------------------------------------------------------


def test_wrong_architecture(capsys, sparse_copy, real_header):
    kv = real_header.kvs["general.architecture"]
    patch_bytes(sparse_copy, kv.value_offset + 8, b"llamb")
    d = assert_rejected(admit(capsys, sparse_copy), "identity", "IDENTITY_ARCHITECTURE",
                        "identity.general.architecture", fact="general.architecture:")
    assert d["actual"] == "'llamb'" and kv.offset <= d["offset"] < kv.end


def test_wrong_finetune_is_an_identity_mismatch(capsys, sparse_copy, real_header):
    kv = real_header.kvs["general.finetune"]
    patch_bytes(sparse_copy, kv.value_offset + 8, b"9")
    assert_rejected(admit(capsys, sparse_copy), "identity", "IDENTITY_MISMATCH", "identity.general.finetune",
                    fact="general.finetune")


# --- metadata ------------------------------------------------------------------------------------


def test_uint32_retyped_as_uint64(capsys, sparse_copy, real_header):
    """Same printed value (30), different type: a uint32 is not a uint64."""
    kvs = kv_changed(real_header, "llama.block_count", type=GGUFValueType.UINT64)
    rewrite_header(sparse_copy, real_header, kvs=kvs)
    d = assert_rejected(admit(capsys, sparse_copy), "metadata", "METADATA_TYPE", "metadata.llama.block_count",
                        fact="llama.block_count")
    assert (d["expected"], d["actual"]) == ("'uint32'", "'uint64'")


def test_value_off_by_one(capsys, sparse_copy, real_header):
    patch(sparse_copy, real_header.kvs["llama.block_count"].value_offset, "<I", 31)
    d = assert_rejected(admit(capsys, sparse_copy), "metadata", "METADATA_VALUE", "metadata.llama.block_count",
                        fact="llama.block_count")
    assert (d["expected"], d["actual"]) == ("30", "31")


def test_float32_value_one_ulp_off(capsys, sparse_copy, real_header):
    kv = real_header.kvs["llama.rope.freq_base"]
    (bits,) = struct.unpack("<I", struct.pack("<f", kv.value))
    patch(sparse_copy, kv.value_offset, "<I", bits + 1)
    assert_rejected(admit(capsys, sparse_copy), "metadata", "METADATA_VALUE", "metadata.llama.rope.freq_base",
                    fact="llama.rope.freq_base")


def test_extra_key(capsys, sparse_copy, real_header):
    kvs = dict(real_header.kvs)
    kvs["general.url"] = KV("general.url", GGUFValueType.STRING, "https://example.invalid", 0, 0, 0)
    rewrite_header(sparse_copy, real_header, kvs=kvs, kv_count=len(kvs))
    assert_rejected(admit(capsys, sparse_copy), "metadata", "METADATA_UNEXPECTED", "metadata.general.url",
                    fact="extra_keys: reject")


def test_missing_key(capsys, sparse_copy, real_header):
    kvs = {k: v for k, v in real_header.kvs.items() if k != "general.license"}
    rewrite_header(sparse_copy, real_header, kvs=kvs, kv_count=len(kvs))
    assert_rejected(admit(capsys, sparse_copy), "metadata", "METADATA_MISSING", "metadata.general.license",
                    fact="general.license")


def test_missing_identity_key_is_owned_by_identity(capsys, sparse_copy, real_header):
    kvs = {k: v for k, v in real_header.kvs.items() if k != "general.basename"}
    rewrite_header(sparse_copy, real_header, kvs=kvs, kv_count=len(kvs))
    assert_rejected(admit(capsys, sparse_copy), "identity", "IDENTITY_MISSING", "identity.general.basename",
                    fact="general.basename:")


def test_array_element_type_changed(capsys, sparse_copy, real_header):
    """token_type re-typed int32 -> uint32 with the very same bytes: the metadata stage owns types."""
    kv = real_header.kvs["tokenizer.ggml.token_type"]
    patch(sparse_copy, kv.value.offset, "<I", GGUFValueType.UINT32)
    assert_rejected(admit(capsys, sparse_copy), "metadata", "METADATA_TYPE",
                    "metadata.tokenizer.ggml.token_type.element", fact="tokenizer.ggml.token_type")


def test_metadata_array_value(capsys, sparse_copy, real_header):
    kv = real_header.kvs["general.languages"]
    at, text = _string_element(kv.value, 0)
    patch_bytes(sparse_copy, at, b"fr")
    d = assert_rejected(admit(capsys, sparse_copy), "metadata", "METADATA_VALUE",
                        "metadata.general.languages.values[0]", fact="general.languages")
    assert text == b"en" and d["actual"] == "'fr'"


def test_tokenizer_key_type_is_a_metadata_fact(capsys, sparse_copy, real_header):
    """bos_token_id re-tagged uint32 -> int32 (same 4 bytes): the tokenizer stage owns the value,
    but the metadata stage owns every key's type and runs first."""
    patch(sparse_copy, real_header.kvs["tokenizer.ggml.bos_token_id"].type_offset, "<I", GGUFValueType.INT32)
    assert_rejected(admit(capsys, sparse_copy), "metadata", "METADATA_TYPE", "metadata.tokenizer.ggml.bos_token_id",
                    fact="tokenizer.ggml.bos_token_id: {type: uint32}")


# --- tokenizer -----------------------------------------------------------------------------------


def test_bos_id_changed(capsys, sparse_copy, real_header):
    patch(sparse_copy, real_header.kvs["tokenizer.ggml.bos_token_id"].value_offset, "<I", 5)
    d = assert_rejected(admit(capsys, sparse_copy), "tokenizer", "TOKENIZER_SPECIAL_ID", "tokenizer.special.bos",
                        fact="tokenizer.ggml.bos_token_id: bos")
    assert (d["expected"], d["actual"]) == ("1", "5")


def test_one_token_string_edited(capsys, sparse_copy, real_header):
    arr = real_header.kvs["tokenizer.ggml.tokens"].value
    at, text = _string_element(arr, 1000)
    assert text.isascii() and len(text) > 1, text
    patch_bytes(sparse_copy, at, b"Z" if text[:1] != b"Z" else b"Y")
    assert_rejected(admit(capsys, sparse_copy), "tokenizer", "TOKENIZER_ARRAY_DIGEST",
                    "tokenizer.tokenizer.ggml.tokens.sha256", fact="tokenizer.ggml.tokens")


def test_one_token_type_edited(capsys, sparse_copy, real_header):
    arr = real_header.kvs["tokenizer.ggml.token_type"].value
    (old,) = struct.unpack_from("<i", arr.raw, 4 * 500)
    patch(sparse_copy, arr.data_offset + 4 * 500, "<i", old + 1)
    assert_rejected(admit(capsys, sparse_copy), "tokenizer", "TOKENIZER_ARRAY_DIGEST",
                    "tokenizer.tokenizer.ggml.token_type.sha256", fact="tokenizer.ggml.token_type")


def test_token_dropped(capsys, sparse_copy, real_header):
    kv = real_header.kvs["tokenizer.ggml.tokens"]
    items = kv.value.items()[:-1]
    kvs = kv_changed(real_header, kv.key, value=GGUFArray.from_items(GGUFValueType.STRING, items))
    rewrite_header(sparse_copy, real_header, kvs=kvs)
    d = assert_rejected(admit(capsys, sparse_copy), "tokenizer", "TOKENIZER_ARRAY_LENGTH",
                        "tokenizer.tokenizer.ggml.tokens.length", fact="tokenizer.ggml.tokens")
    assert (d["expected"], d["actual"]) == ("49152", "49151")


def test_chat_template_edited(capsys, sparse_copy, real_header):
    kv = real_header.kvs["tokenizer.chat_template"]
    first = kv.value.encode()[10:11]
    patch_bytes(sparse_copy, kv.value_offset + 8 + 10, b"#" if first != b"#" else b"%")
    assert_rejected(admit(capsys, sparse_copy), "tokenizer", "TOKENIZER_DIGEST",
                    "tokenizer.tokenizer.chat_template.sha256", fact="tokenizer.chat_template")


def test_tokenizer_string_value(capsys, sparse_copy, real_header):
    patch_bytes(sparse_copy, real_header.kvs["tokenizer.ggml.pre"].value_offset + 8, b"X")
    assert_rejected(admit(capsys, sparse_copy), "tokenizer", "TOKENIZER_VALUE", "tokenizer.tokenizer.ggml.pre",
                    fact="tokenizer.ggml.pre: {type: string, value: smollm}")


def test_embedding_rows_are_the_tokenizer_stage_logits_rows(capsys, sparse_copy, real_header):
    """token_embd is the tied output projection: its row count is the model's physical logits rows,
    a tokenizer fact checked before the tensors stage would see a shape mismatch. The diagnostic
    cites the artifact's binding of the logits tensor and axis (as special ids cite theirs)."""
    t = tensor(real_header, "token_embd.weight")
    patch(sparse_copy, t.dims_offset + 8, "<Q", t.dims[1] + 1)
    d = assert_rejected(admit(capsys, sparse_copy), "tokenizer", "TOKENIZER_LOGITS_ROWS", "tokenizer.logits_rows",
                        fact="logits: {tensor: token_embd.weight, axis: 1}")
    assert d["location"]["file"] == "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"


# --- tensors -------------------------------------------------------------------------------------


def test_tensor_renamed(capsys, sparse_copy, real_header):
    t = tensor(real_header, Q)
    patch_bytes(sparse_copy, t.info_offset + 8, b"blk.0.attn_x.weight")
    d = assert_rejected(admit(capsys, sparse_copy), "tensors", "TENSOR_MISSING", f"tensors.{Q}",
                        fact="blk.{i}.attn_q.weight")
    assert d["actual"] == "missing"


def test_tensor_dim_changed(capsys, sparse_copy, real_header):
    """ne[1] + 1 keeps the row width a whole number of blocks, so the reader accepts it (the
    extent now overlaps its neighbour, a layout fact that runs later): the tensors stage owns it."""
    t = tensor(real_header, Q)
    patch(sparse_copy, t.dims_offset + 8, "<Q", t.dims[1] + 1)
    d = assert_rejected(admit(capsys, sparse_copy), "tensors", "TENSOR_SHAPE", f"tensors.{Q}.shape[1]",
                        fact="blk.{i}.attn_q.weight")
    assert (d["expected"], d["actual"]) == ("576", "577")


def test_tensor_row_width_changed_by_a_whole_block(capsys, sparse_copy, real_header):
    t = tensor(real_header, Q)
    patch(sparse_copy, t.dims_offset, "<Q", t.dims[0] + 32)
    assert_rejected(admit(capsys, sparse_copy), "tensors", "TENSOR_SHAPE", f"tensors.{Q}.shape[0]",
                    fact="blk.{i}.attn_q.weight")


def test_tensor_rank_changed(capsys, sparse_copy, real_header):
    tensors = [t._replace(dims=t.dims + (1,)) if t.name == Q else t for t in real_header.tensors]
    rewrite_header(sparse_copy, real_header, tensors=tensors)
    assert_rejected(admit(capsys, sparse_copy), "tensors", "TENSOR_RANK", f"tensors.{Q}.rank",
                    fact="blk.{i}.attn_q.weight")


def test_tensor_codec_q4_1_to_q4_0(capsys, sparse_copy, real_header):
    """Q4_0 blocks are 18 bytes, not 20: the extent shrinks, leaving a gap the layout stage would
    see later; the tensors stage owns the codec."""
    patch(sparse_copy, tensor(real_header, Q).type_offset, "<I", 2)
    d = assert_rejected(admit(capsys, sparse_copy), "tensors", "TENSOR_CODEC", f"tensors.{Q}.codec",
                        fact="blk.{i}.attn_q.weight")
    assert (d["expected"], d["actual"]) == ("'Q4_1'", "'Q4_0'")


def test_unexpected_tensor(capsys, sparse_copy, real_header):
    """An extra tensor appended after the last extent (file grown to hold it)."""
    last = max(real_header.tensors, key=lambda t: t.end)
    extra = last._replace(name="rope_freqs.weight", dims=(32,),
                          ggml_type=tensor(real_header, "output_norm.weight").ggml_type,
                          offset=last.offset + last.nbytes, nbytes=128)
    rewrite_header(sparse_copy, real_header, tensors=real_header.tensors + [extra],
                   tensor_count=real_header.tensor_count + 1, grow=128)
    assert_rejected(admit(capsys, sparse_copy), "tensors", "TENSOR_UNEXPECTED", "tensors.rope_freqs.weight",
                    located=True)


# --- layout --------------------------------------------------------------------------------------


def _same_size_neighbours(header):
    """Two tensors adjacent in file order with the same size (blk.0.attn_output, blk.0.attn_q)."""
    a, b = tensor(header, "blk.0.attn_output.weight"), tensor(header, Q)
    assert a.nbytes == b.nbytes and a.end == b.start
    return a, b


def test_offsets_swapped(capsys, sparse_copy, real_header):
    a, b = _same_size_neighbours(real_header)
    patch(sparse_copy, a.offset_offset, "<Q", b.offset)
    patch(sparse_copy, b.offset_offset, "<Q", a.offset)
    assert_rejected(admit(capsys, sparse_copy), "layout", "LAYOUT_ORDER", f"tensors.{Q}.offset",
                    fact="sorted: true")


def test_offsets_overlapping(capsys, sparse_copy, real_header):
    """Two tensors sharing one extent (still in header order: equal starts are not out of order)."""
    a, b = _same_size_neighbours(real_header)
    patch(sparse_copy, b.offset_offset, "<Q", a.offset)
    assert_rejected(admit(capsys, sparse_copy), "layout", "LAYOUT_OVERLAP", f"tensors.{Q}.offset",
                    located=True)


def test_gap_before_the_last_tensor(capsys, sparse_copy, real_header):
    last = max(real_header.tensors, key=lambda t: t.end)
    patch(sparse_copy, last.offset_offset, "<Q", last.offset + 32)
    with open(sparse_copy, "r+b") as f:
        f.truncate(real_header.file_size + 32)
    assert_rejected(admit(capsys, sparse_copy), "layout", "LAYOUT_GAP", f"tensors.{last.name}.offset",
                    fact="packed: true")


def test_trailing_bytes(capsys, sparse_copy, real_header):
    with open(sparse_copy, "r+b") as f:
        f.truncate(real_header.file_size + 1)
    d = assert_rejected(admit(capsys, sparse_copy), "layout", "LAYOUT_TRAILING", "layout.trailing",
                        fact="trailing: reject")
    assert d["message"].startswith("1 bytes after the last extent")


def test_truncated_payload_is_a_container_extent(capsys, sparse_copy, real_header):
    with open(sparse_copy, "r+b") as f:
        f.truncate(real_header.file_size - 1)
    assert_rejected(admit(capsys, sparse_copy), "container", "CONTAINER_EXTENT", located=False)


# --- payload -------------------------------------------------------------------------------------


def test_payload_byte_flipped(capsys, full_copy, real_header):
    t = tensor(real_header, Q)
    with open(full_copy, "r+b") as f:
        f.seek(t.start + 100)
        b = f.read(1)
        f.seek(t.start + 100)
        f.write(bytes([b[0] ^ 0x01]))
    assert_admitted(admit(capsys, full_copy))  # header stages cannot see payload bytes
    assert_rejected(admit(capsys, full_copy, SMOLLM2_CONTRACT, "--verify-payload"), "payload",
                    "PAYLOAD_FILE_DIGEST", "payload.file_sha256", fact="file_sha256: b179c952")


def test_sparse_copy_fails_only_the_payload_stage(capsys, sparse_copy):
    assert_rejected(admit(capsys, sparse_copy, SMOLLM2_CONTRACT, "--verify-payload"), "payload",
                    "PAYLOAD_FILE_DIGEST", "payload.file_sha256", fact="file_sha256")


def test_reader_offsets_match_the_file(real_header, smollm2_path):
    """The offsets the cases above patch at are the ones the reader exposes (self-check)."""
    data = smollm2_path.read_bytes()[: real_header.data_offset]
    kv = real_header.kvs["llama.block_count"]
    assert struct.unpack_from("<I", data, kv.type_offset)[0] == GGUFValueType.UINT32
    assert struct.unpack_from("<I", data, kv.value_offset)[0] == 30
    t = tensor(real_header, Q)
    assert struct.unpack_from("<QQ", data, t.dims_offset) == t.dims
    assert struct.unpack_from("<I", data, t.type_offset)[0] == 3
    assert struct.unpack_from("<Q", data, t.offset_offset)[0] == t.offset
    assert read_gguf(smollm2_path).kvs.keys() == real_header.kvs.keys()


@pytest.mark.parametrize("key", ["general.file_type", "llama.context_length", "llama.vocab_size"])
def test_every_uint32_value_is_checked(capsys, sparse_copy, real_header, key):
    kv = real_header.kvs[key]
    patch(sparse_copy, kv.value_offset, "<I", kv.value + 1)
    assert_rejected(admit(capsys, sparse_copy), "metadata", "METADATA_VALUE", f"metadata.{key}", fact=key)
