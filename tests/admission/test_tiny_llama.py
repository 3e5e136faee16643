"""tiny-llama artifacts built from their contracts by charter.conforming, admitted and mutated.

The synthetic model is where a contract can be changed freely: padding the real SmolLM2 file does
not have, a named exclusion, a tensor digest, and every safetensors field (dtype, shape,
data_offsets, __metadata__)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import struct
from pathlib import Path

import pytest

from charter.conforming import build
from charter.conforming.payload import seeded_chunks
from charter.formats.gguf import read_gguf, serialize_gguf_header
from charter.contract.contractset import load_set
from tests.conftest import ROOT

from .conftest import (
    TINY_GGUF_CONTRACT,
    TINY_MODEL,
    TINY_ST_CONTRACT,
    admit,
    assert_admitted,
    assert_rejected,
    contract_tree,
    tensor,
    write_sparse,
)


def _plan(spec: Path):
    cs = load_set([spec], [spec.parents[1]])
    assert cs.ok, cs.diagnostics
    (plan,) = [p for p in cs.artifacts.values() if Path(p.spec_path).name == spec.name]
    return plan


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict[str, Path]:
    """Seeded builds of both shipped tiny-llama contracts (built once, copied by each test)."""
    out = tmp_path_factory.mktemp("tiny")
    return {
        "gguf": build(_plan(ROOT / TINY_GGUF_CONTRACT), out / "tiny.gguf"),
        "safetensors": build(_plan(ROOT / TINY_ST_CONTRACT), out / "tiny.safetensors"),
    }


@pytest.fixture
def tiny_gguf(built, tmp_path) -> Path:
    return Path(shutil.copyfile(built["gguf"], tmp_path / "tiny.gguf"))


@pytest.fixture
def tiny_st(built, tmp_path) -> Path:
    return Path(shutil.copyfile(built["safetensors"], tmp_path / "tiny.safetensors"))


def _flip(path: Path, offset: int, value: int = 0xA5) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(bytes([value]))


# --- GGUF ------------------------------------------------------------------------------------------


def test_built_gguf_is_admitted_with_payload(capsys, tiny_gguf):
    report = assert_admitted(admit(capsys, tiny_gguf, TINY_GGUF_CONTRACT, "--verify-payload"))
    assert report["contract"] == "tiny-llama-gguf"


def test_nonzero_padding_between_tensors(capsys, tiny_gguf):
    h = read_gguf(tiny_gguf)
    first, second = h.tensors[0], h.tensors[1]
    assert second.start - first.end == 16  # 260 rows x 68 bytes = 17680 = 32 * 552 + 16
    _flip(tiny_gguf, first.end + 3)
    assert_admitted(admit(capsys, tiny_gguf, TINY_GGUF_CONTRACT))  # padding content is a payload fact
    assert_rejected(admit(capsys, tiny_gguf, TINY_GGUF_CONTRACT, "--verify-payload"), "payload",
                    "PAYLOAD_PADDING", "layout.padding", fact="padding: zero")


def test_nonzero_padding_after_the_header(capsys, tiny_gguf):
    """[header_end, data_offset) is alignment padding too: padding: zero covers it."""
    h = read_gguf(tiny_gguf)
    assert h.data_offset - h.header_end > 0
    _flip(tiny_gguf, h.header_end)
    assert_rejected(admit(capsys, tiny_gguf, TINY_GGUF_CONTRACT, "--verify-payload"), "payload",
                    "PAYLOAD_PADDING", "layout.padding", fact="padding: zero")


def _add_vision_tensor(path: Path) -> None:
    """Append an F32 [64] tensor `v.patch_embd.weight` after the last extent (header re-serialized,
    payload sparse)."""
    h = read_gguf(path)
    last = h.tensors[-1]
    f32 = tensor(h, "output_norm.weight").ggml_type
    offset = -(-(last.offset + last.nbytes) // h.alignment) * h.alignment
    extra = last._replace(name="v.patch_embd.weight", dims=(64,), ggml_type=f32, offset=offset, nbytes=256)
    blob = serialize_gguf_header(dataclasses.replace(h, tensors=h.tensors + [extra], tensor_count=h.tensor_count + 1))
    write_sparse(path, blob, len(blob) + offset + 256)


EXCLUSION = """exclusions:
  - name: vision
    source_count: 1
    patterns: ["v.*", "mm.*"]
    reason: the toy is text-only; a vision tower converted by mistake must not be admitted
"""


def test_excluded_tensor_is_a_policy_rejection(capsys, tmp_path):
    """A vision-like tensor is not 'unexpected' (tensors stage) but a named exclusion (policy)."""
    spec = contract_tree(tmp_path, (ROOT / TINY_GGUF_CONTRACT).read_text("utf-8") + EXCLUSION, TINY_MODEL)
    path = build(_plan(spec), tmp_path / "tiny.gguf", payload="sparse")
    assert_admitted(admit(capsys, path, spec))
    _add_vision_tensor(path)
    assert_rejected(admit(capsys, path, spec), "policy", "POLICY_EXCLUSION", "exclusions.vision",
                    fact="name: vision", root=tmp_path)


def test_excluded_tensor_in_a_contract_without_the_exclusion_is_unexpected(capsys, tmp_path, tiny_gguf):
    _add_vision_tensor(tiny_gguf)
    assert_rejected(admit(capsys, tiny_gguf, TINY_GGUF_CONTRACT), "tensors", "TENSOR_UNEXPECTED",
                    "tensors.v.patch_embd.weight", located=True)


def test_tensor_digest(capsys, tmp_path):
    """A contract writer pins a tensor's digest from the builder's seeded bytes; one flipped
    payload byte of that tensor is a PAYLOAD_DIGEST."""
    name = "blk.0.attn_q.weight"
    nbytes = 64 * 64 // 32 * 20
    digest = hashlib.sha256(b"".join(seeded_chunks(name, "Q4_1", nbytes))).hexdigest()
    text = (ROOT / TINY_GGUF_CONTRACT).read_text("utf-8") + f"payload:\n  tensors:\n    {name}: {digest}\n"
    spec = contract_tree(tmp_path, text, TINY_MODEL)
    path = build(_plan(spec), tmp_path / "tiny.gguf")
    assert_admitted(admit(capsys, path, spec, "--verify-payload"))
    _flip(path, tensor(read_gguf(path), name).start + 7, 0x00)
    assert_rejected(admit(capsys, path, spec, "--verify-payload"), "payload", "PAYLOAD_DIGEST",
                    f"payload.tensors.{name}", fact=name, root=tmp_path)


@pytest.mark.parametrize("values", ["[0.1, 0.5]", "[1, 0.5]"], ids=["not-representable", "integer-literal"])
def test_float32_array_pinned_by_values_admits_the_file_that_holds_them(capsys, tmp_path, values):
    """A float32 array pinned by `values: [0.1, 0.5]` (or `[1, 0.5]`): the only file that can hold
    these values holds float32(0.1) (or 1.0). Scalar float32 facts are rounded to float32 at
    resolution and compared by bits; array elements must be too, or no GGUF file can ever satisfy
    the contract (expected: admitted)."""
    text = (ROOT / TINY_GGUF_CONTRACT).read_text("utf-8").replace(
        "    general.quantization_version: {type: uint32, value: 2}\n",
        "    general.quantization_version: {type: uint32, value: 2}\n"
        f"    tiny.scores: {{type: array, element: float32, length: 2, values: {values}}}\n")
    spec = contract_tree(tmp_path, text, TINY_MODEL)
    path = build(_plan(spec), tmp_path / "tiny.gguf", payload="sparse")
    stored = read_gguf(path).kvs["tiny.scores"].value.items()
    assert stored == [struct.unpack("<f", struct.pack("<f", float(v)))[0] for v in json.loads(values)]
    assert_admitted(admit(capsys, path, spec))


# --- safetensors -----------------------------------------------------------------------------------


def _st_rewrite(path: Path, mutate, *, aligned: bool = True, data: bytes | None = None) -> None:
    """Rewrite the safetensors header of `path` through `mutate(header_dict)`, keeping the data
    section (or replacing it with `data`); the header is padded to 8 unless `aligned` is False."""
    raw = path.read_bytes()
    (n,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8 : 8 + n])
    mutate(header)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8) + (b"" if aligned else b" ")
    path.write_bytes(struct.pack("<Q", len(text)) + text + (raw[8 + n :] if data is None else data))


L0 = "model.layers.0"


def _tensor_field(name: str, key: str, value):
    def mutate(h):
        h[name][key] = value
    return mutate


def _swap_offsets(a: str, b: str):
    def mutate(h):
        h[a]["data_offsets"], h[b]["data_offsets"] = h[b]["data_offsets"], h[a]["data_offsets"]
    return mutate


def _meta(fn):
    def mutate(h):
        fn(h["__metadata__"])
    return mutate


ST_CASES = [
    # (id, mutation, stage, code, field, fact; None = not a contract fact)
    ("dtype-bf16-to-f16", _tensor_field(f"{L0}.self_attn.q_proj.weight", "dtype", "F16"),
     "tensors", "TENSOR_CODEC", f"tensors.{L0}.self_attn.q_proj.weight.codec", "self_attn.q_proj"),
    ("dtype-bf16-to-f32", _tensor_field(f"{L0}.self_attn.q_proj.weight", "dtype", "F32"),
     "container", "CONTAINER_EXTENT", f"tensors.{L0}.self_attn.q_proj.weight.data_offsets", None),
    ("shape-transposed", _tensor_field("model.layers.3.mlp.gate_proj.weight", "shape", [64, 128]),
     "tensors", "TENSOR_SHAPE", "tensors.model.layers.3.mlp.gate_proj.weight.shape[0]", "mlp.gate_proj"),
    ("shape-rank", _tensor_field("model.norm.weight", "shape", [8, 8]),
     "tensors", "TENSOR_RANK", "tensors.model.norm.weight.rank", "model.norm.weight"),
    ("lm-head-rows", _tensor_field("lm_head.weight", "shape", [130, 128]),
     "tokenizer", "TOKENIZER_LOGITS_ROWS", "tokenizer.logits_rows", "logits: {tensor: lm_head.weight, axis: 0}"),
    ("offsets-swapped", _swap_offsets(f"{L0}.self_attn.q_proj.weight", f"{L0}.self_attn.o_proj.weight"),
     "layout", "LAYOUT_ORDER", "tensors.model.layers.1.self_attn.q_proj.weight.offset", "sorted: true"),
    ("offsets-size", _tensor_field("model.norm.weight", "data_offsets", [0, 256]),
     "container", "CONTAINER_EXTENT", None, None),
    ("metadata-value", _meta(lambda m: m.update(format="np")),
     "metadata", "METADATA_VALUE", "metadata.format", "format: {type: string, value: pt}"),
    ("metadata-architecture", _meta(lambda m: m.update({"general.architecture": "mistral"})),
     "identity", "IDENTITY_ARCHITECTURE", "identity.general.architecture", "general.architecture:"),
    ("metadata-extra-key", _meta(lambda m: m.update({"total_size": "123"})),
     "metadata", "METADATA_UNEXPECTED", "metadata.total_size", "extra_keys: reject"),
    ("metadata-missing-key", _meta(lambda m: m.pop("format")),
     "metadata", "METADATA_MISSING", "metadata.format", "format: {type: string"),
    ("metadata-dropped", lambda h: h.pop("__metadata__"),
     "identity", "IDENTITY_MISSING", "identity.general.architecture", "general.architecture:"),
    ("metadata-not-a-string", _meta(lambda m: m.update(format=1)),
     "container", "CONTAINER_METADATA", "metadata.format", None),
    ("tensor-renamed", lambda h: h.__setitem__("model.norm.w", h.pop("model.norm.weight")),
     "tensors", "TENSOR_MISSING", "tensors.model.norm.weight", "model.norm.weight"),
]


def test_built_safetensors_is_admitted_with_payload(capsys, tiny_st):
    report = assert_admitted(admit(capsys, tiny_st, TINY_ST_CONTRACT, "--verify-payload"))
    assert report["format"] == "safetensors" and report["status"] == "structural"


@pytest.mark.parametrize("case", ST_CASES, ids=[c[0] for c in ST_CASES])
def test_safetensors_mutation(capsys, tiny_st, case):
    _, mutate, stage, code, field, fact = case
    _st_rewrite(tiny_st, mutate)
    assert_rejected(admit(capsys, tiny_st, TINY_ST_CONTRACT), stage, code, field, fact=fact,
                    located=fact is not None)


def test_safetensors_unexpected_tensor(capsys, tiny_st):
    raw = tiny_st.read_bytes()
    (n,) = struct.unpack_from("<Q", raw, 0)
    end = len(raw) - 8 - n
    _st_rewrite(tiny_st, lambda h: h.update({"rope.inv_freq": {"dtype": "F32", "shape": [8],
                                                                "data_offsets": [end, end + 32]}}),
                data=raw[8 + n :] + bytes(32))
    assert_rejected(admit(capsys, tiny_st, TINY_ST_CONTRACT), "tensors", "TENSOR_UNEXPECTED",
                    "tensors.rope.inv_freq", located=True)


def test_safetensors_trailing_bytes_are_owned_by_the_reader(capsys, tiny_st):
    """safetensors extents must tile the data section: the container rejects trailing bytes before
    the layout stage's trailing policy could."""
    with open(tiny_st, "ab") as f:
        f.write(b"\x00")
    assert_rejected(admit(capsys, tiny_st, TINY_ST_CONTRACT), "container", "CONTAINER_EXTENT", "tensors",
                    located=False)


def test_safetensors_header_not_multiple_of_8(capsys, tiny_st):
    """`container.header_aligned: true` is a contract fact: its rejection names the contract line."""
    _st_rewrite(tiny_st, lambda h: None, aligned=False)
    assert_rejected(admit(capsys, tiny_st, TINY_ST_CONTRACT), "container", "CONTAINER_HEADER",
                    "container.header_aligned", fact="header_aligned: true")
