"""An independent cross-check of the value verdict: `gguf.quants.dequantize` followed by
`numpy.isfinite` (gguf-py's own block decoders, not charter's field table) must agree with
charter's verdict on every block of every real tensor of SmolLM2, and, block by block, on blocks
of every codec with NaN, infinities and signalling NaN written into their scale fields.

Blocks of codecs the real file does not hold are real-format blocks: quantized from real SmolLM2
weights by gguf's quantizers where it has them (Q4_0, Q5_0, Q5_1, TQ1_0, TQ2_0, MXFP4, BF16, F16),
else real bytes of the SmolLM2 payload re-encoded as that codec's blocks with the real file's f16
scales in their float fields (the k-quants, the i-quants, NVFP4)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize

from charter.admission.values import TensorValues
from charter.formats.ggml_types import GGML_TYPES_BY_NAME
from charter.formats.values import GGML_VALUE_FIELDS

BAD_F16 = (0x7E00, 0x7C00, 0xFC00, 0x7C01, 0xFE01)  # NaN, +Inf, -Inf, sNaN, a negative NaN with payload


def _rule(codec: str) -> TensorValues:
    return TensorValues("t", codec, GGML_VALUE_FIELDS[codec], GGML_TYPES_BY_NAME[codec].block_bytes, None)


def _dequantized_bad(raw: np.ndarray, codec: str) -> np.ndarray:
    """gguf-py's verdict per block: some dequantized value of the block is not finite."""
    t = GGML_TYPES_BY_NAME[codec]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # inf * 0 and friends, on purpose
        values = dequantize(raw.reshape(1, -1), GGMLQuantizationType[codec])
    return ~np.isfinite(values.reshape(-1, t.block_size)).all(axis=1)


@pytest.fixture(scope="module")
def payload(smollm2_path, smollm2_header):
    data = np.memmap(smollm2_path, dtype=np.uint8, mode="r")
    return {t.name: (t.ggml_type.name, data[t.data_start + t.offset:t.data_start + t.offset + t.nbytes])
            for t in smollm2_header.tensors}


def test_every_block_of_every_real_tensor_agrees(payload):
    assert len(payload) == 272
    for name, (codec, raw) in payload.items():
        ours = _rule(codec).bad_blocks(raw.tobytes())
        theirs = _dequantized_bad(raw, codec)
        assert ours.shape == theirs.shape and not ours.any() and not theirs.any(), name


def _real_scales(payload, n: int) -> np.ndarray:
    """n real f16 scales: the `d` of the first blocks of the real Q8_0 embedding."""
    raw = payload["token_embd.weight"][1]
    return raw.reshape(-1, 34)[:n, :2].copy().view("<u2").reshape(-1)


def _weights(payload, n: int) -> np.ndarray:
    """n real weights: the embedding's dequantized values, in rows of 256."""
    values = dequantize(payload["token_embd.weight"][1].reshape(1, -1), GGMLQuantizationType.Q8_0).reshape(-1)
    return values[:n].reshape(-1, 256).astype(np.float32)


QUANTIZED = ("Q4_0", "Q5_0", "Q5_1", "TQ1_0", "TQ2_0", "MXFP4", "BF16", "F16")
REENCODED = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S",
             "IQ1_M", "IQ4_NL", "IQ4_XS", "NVFP4")


def quantize_q8_k(x: np.ndarray) -> np.ndarray:
    """Q8_K blocks of `x` (rows of 256), as ggml's quantize_row_q8_K_ref writes them: f32 d, int8
    qs[256], int16 bsums[16]; gguf-py has no Q8_K quantizer."""
    x = x.reshape(-1, 256).astype(np.float32)
    at = np.abs(x).argmax(axis=1)
    peak = x[np.arange(len(x)), at]
    iscale = np.where(peak != 0, np.float32(-127) / np.where(peak != 0, peak, 1), 0).astype(np.float32)
    q = np.minimum(127, np.rint(iscale[:, None] * x)).astype(np.int8)
    d = np.where(iscale != 0, 1 / np.where(iscale != 0, iscale, 1), 0).astype("<f4")
    bsums = q.reshape(-1, 16, 16).astype(np.int16).sum(axis=2).astype("<i2")
    return np.concatenate([d[:, None].view(np.uint8), q.view(np.uint8), bsums.view(np.uint8)], axis=1)


def quantize_q1_0(x: np.ndarray) -> np.ndarray:
    """Q1_0 blocks of `x` (rows of 128), as ggml's quantize_row_q1_0_ref writes them: f16 d (the
    block's mean magnitude), one sign bit per element, LSB first; gguf-py has no Q1_0."""
    x = x.reshape(-1, 128).astype(np.float32)
    d = np.abs(x).mean(axis=1).astype("<f2")
    bits = np.packbits((x >= 0).astype(np.uint8).reshape(-1, 16, 8), axis=2, bitorder="little").reshape(-1, 16)
    return np.concatenate([d[:, None].view(np.uint8), bits], axis=1)


REFERENCE = {"Q8_K": quantize_q8_k, "Q1_0": quantize_q1_0}  # codecs gguf-py can neither quantize nor dequantize


def _blocks(payload, codec: str, n_blocks: int) -> np.ndarray:
    """n_blocks real-format blocks of `codec`, as rows of bytes."""
    t = GGML_TYPES_BY_NAME[codec]
    if codec in REFERENCE:
        return REFERENCE[codec](_weights(payload, n_blocks * t.block_size))
    if codec in QUANTIZED or codec in ("Q4_1", "Q8_0", "F32"):
        q = quantize(_weights(payload, n_blocks * t.block_size), GGMLQuantizationType[codec])
        return np.ascontiguousarray(q).view(np.uint8).reshape(n_blocks, t.block_bytes)
    source = payload["blk.0.ffn_down.weight"][1]  # real Q4_1 bytes, re-encoded as this codec's blocks
    out = source[: n_blocks * t.block_bytes].copy().reshape(n_blocks, t.block_bytes)
    scales = _real_scales(payload, n_blocks)
    for f in GGML_VALUE_FIELDS[codec]:
        if f.kind == "f16":
            out[:, f.offset:f.offset + 2] = scales.view(np.uint8).reshape(-1, 2)
        elif f.kind == "iq1m":
            words = out[:, f.offset:f.offset + 8].copy().view("<u2")
            for k in range(4):
                words[:, k] = (words[:, k] & 0x0FFF) | (((scales >> (4 * k)) & 0xF) << 12)
            out[:, f.offset:f.offset + 8] = words.view(np.uint8)
    return out


def _inject(blocks: np.ndarray, codec: str, rng) -> np.ndarray:
    """Bad values in about a tenth of the blocks, each in one random float field, of a random kind."""
    out = blocks.copy()
    fields = GGML_VALUE_FIELDS[codec]
    for b in rng.choice(len(out), size=max(2, len(out) // 10), replace=False):
        f = fields[rng.integers(len(fields))]
        bad = int(rng.choice(BAD_F16))
        if f.kind == "f16":
            out[b, f.offset:f.offset + 2] = np.array([bad], "<u2").view(np.uint8)
        elif f.kind == "bf16":
            out[b, f.offset:f.offset + 2] = np.array([0x7F80 | (bad & 0x807F)], "<u2").view(np.uint8)
        elif f.kind == "f32":
            out[b, f.offset:f.offset + 4] = np.array([0x7F800000 | (bad & 0x8000) << 16 | (bad & 0x3FF)],
                                                     "<u4").view(np.uint8)
        elif f.kind == "e8m0":
            out[b, f.offset] = 0xFF
        elif f.kind == "iq1m":
            words = out[b, f.offset:f.offset + 8].copy().view("<u2")
            for k in range(4):
                words[k] = (words[k] & 0x0FFF) | (((bad >> (4 * k)) & 0xF) << 12)
            out[b, f.offset:f.offset + 8] = words.view(np.uint8)
    return out


CODECS = ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", *REENCODED[:-1], "TQ1_0", "TQ2_0", "MXFP4")


@pytest.mark.parametrize("codec", CODECS)
def test_injected_blocks_agree_block_by_block(payload, codec):
    n_blocks = 4096 if GGML_TYPES_BY_NAME[codec].block_size == 1 else 512
    n_blocks -= n_blocks % max(1, 256 // GGML_TYPES_BY_NAME[codec].block_size)
    clean = _blocks(payload, codec, n_blocks)
    rule = _rule(codec)
    assert not rule.bad_blocks(clean.tobytes()).any() and not _dequantized_bad(clean.reshape(-1), codec).any()
    bad = _inject(clean, codec, np.random.default_rng(18))
    ours = rule.bad_blocks(bad.tobytes())
    theirs = _dequantized_bad(bad.reshape(-1), codec)
    assert ours.any()
    np.testing.assert_array_equal(ours, theirs)
    first = int(np.flatnonzero(theirs)[0])
    assert rule.first_bad(bad.tobytes(), 0).index == first


def test_nvfp4_has_no_bad_encoding(payload):
    """ggml accepts every NVFP4 byte (its ue4m3 scales have no infinity or NaN): no field to check."""
    assert GGML_VALUE_FIELDS["NVFP4"] == ()
    blocks = _blocks(payload, "NVFP4", 256)
    blocks[:, :4] = 0xFF  # the largest ue4m3 byte in every scale
    assert not _dequantized_bad(blocks.reshape(-1), "NVFP4").any()


@pytest.mark.parametrize("codec", (*CODECS, "F64"))
def test_cpp_scanner_agrees_with_numpy(native, payload, codec):
    """The C++ engine's scanner (charter/values.hpp) and the numpy one find the same first bad value,
    block, field and bits, in every block of injected real-format blocks, and none in clean ones."""
    rng = np.random.default_rng(7)
    if codec == "F64":  # gguf-py has no F64: real F32 weights widened
        clean = _weights(payload, 4096).astype("<f8").view(np.uint8).reshape(-1, 8)
    else:
        n_blocks = 4096 if GGML_TYPES_BY_NAME[codec].block_size == 1 else 512
        clean = _blocks(payload, codec, n_blocks - n_blocks % max(1, 256 // GGML_TYPES_BY_NAME[codec].block_size))
    fields = GGML_VALUE_FIELDS[codec]
    table = tuple((f.offset, f.kind) for f in fields)
    rule = _rule(codec)
    assert native.first_bad_value(clean.tobytes(), clean.shape[1], table) is None
    bad = _inject(clean, codec, rng) if codec != "F64" else clean.copy()
    if codec == "F64":
        bad[rng.choice(len(bad), 40, replace=False), 7] |= 0x7F
        bad[:, 6] |= np.where(bad[:, 7] & 0x7F == 0x7F, 0xF0, 0).astype(np.uint8)
    data = bad.tobytes()
    while True:
        ours = rule.first_bad(data, 0)
        hit = native.first_bad_value(data, clean.shape[1], table)
        if ours is None:
            assert hit is None
            break
        assert hit == (ours.index, fields.index(ours.field), ours.raw)
        data = data[(ours.index + 1) * clean.shape[1]:]  # and the next one, to the end


def test_cpp_scanner_finds_nothing_in_real_tensors(native, payload):
    for name, (codec, raw) in payload.items():
        fields = GGML_VALUE_FIELDS[codec]
        assert native.first_bad_value(raw, GGML_TYPES_BY_NAME[codec].block_bytes,
                                      tuple((f.offset, f.kind) for f in fields)) is None, name


def test_cpp_scanner_refuses_a_field_outside_its_block(native):
    with pytest.raises(ValueError, match="outside its block"):
        native.first_bad_value(b"\0" * 40, 20, ((19, "f16"),))
    with pytest.raises(ValueError, match="unknown value kind"):
        native.first_bad_value(b"\0" * 40, 20, ((0, "f8"),))


def test_both_scanners_compared_chunk_by_chunk(native):
    """values.BOTH (the battery's payload stage with both engines, streamed once): the finding
    when numpy and charter/values.hpp agree, ScannersDisagree when they do not."""
    from charter.admission.values import BOTH, ScannersDisagree, TensorBounds, tensor_rules
    from charter.formats.values import INTEGER_ELEMENTS

    q8 = GGML_TYPES_BY_NAME["Q8_0"]
    (rows,) = tensor_rules([SimpleNamespace(name="t", codec="Q8_0")], [("r", ("*",), True, None)], "gguf",
                           lambda codec: q8.block_bytes, BOTH).values()
    blocks = bytearray(3 * q8.block_bytes)
    blocks[q8.block_bytes:q8.block_bytes + 2] = b"\x00\x7c"  # block 1's scale d is +Inf (f16 0x7c00)
    assert rows.first_bad(bytes(blocks), 5) == _rule("Q8_0").first_bad(bytes(blocks), 5)
    assert rows.first_bad(bytes(blocks), 5).index == 6
    liar = TensorValues("t", "Q8_0", GGML_VALUE_FIELDS["Q8_0"], q8.block_bytes, None, lambda *a: None, compare=True)
    with pytest.raises(ScannersDisagree, match="engines disagree on the values of t"):
        liar.first_bad(bytes(blocks), 0)
    i8 = INTEGER_ELEMENTS["gguf"]["I8"]
    bounds = TensorBounds("b", "I8", i8, ("b", ("*",), 0, 9, None, None), lambda *a: (0, 1), compare=True)  # liar
    with pytest.raises(ScannersDisagree):
        bounds.first_bad(bytes([1, 2, 3]), 0)
