"""Q8_K and Q1_0, the two codecs with a value rule that gguf-py can neither quantize nor
dequantize: real-format blocks quantized from real SmolLM2 weights by ggml's reference rule
(test_crosscheck.quantize_q8_k, quantize_q1_0), dequantized here by ggml's formulas
(`dequantize_row_q8_K`: d * q; `dequantize_row_q1_0`: +d or -d by the sign bit), and the verdict
of both scanners compared block by block with `numpy.isfinite` of that, clean and with NaN,
infinities and signalling NaN written into `d`."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from charter.formats.ggml_types import GGML_TYPES_BY_NAME
from tests.values.test_crosscheck import BAD_F16, _blocks, _rule, payload  # noqa: F401  (the real SmolLM2 tensors)

BAD_F32 = (0x7FC00000, 0x7F800000, 0xFF800000, 0x7F800001, 0xFFC00001)


def _dequantize(blocks: np.ndarray, codec: str) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # inf * 0 and friends, on purpose
        if codec == "Q8_K":
            d = blocks[:, :4].copy().view("<f4")
            return d * blocks[:, 4:260].copy().view(np.int8).astype(np.float32)
        d = blocks[:, :2].copy().view("<f2").astype(np.float32)
        signs = np.unpackbits(blocks[:, 2:18], axis=1, bitorder="little").astype(np.float32) * 2 - 1
        return d * signs


@pytest.mark.parametrize("codec", ("Q8_K", "Q1_0"))
def test_the_verdict_is_isfinite_of_the_dequantized_block(native, payload, codec):  # noqa: F811
    t = GGML_TYPES_BY_NAME[codec]
    clean = _blocks(payload, codec, 512)
    assert clean.shape == (512, t.block_bytes)
    rule = _rule(codec)
    table = tuple((f.offset, f.kind) for f in rule.fields)
    assert np.isfinite(_dequantize(clean, codec)).all()
    assert not rule.bad_blocks(clean.tobytes()).any()
    assert native.first_bad_value(clean.tobytes(), t.block_bytes, table) is None
    bad = clean.copy()
    rng = np.random.default_rng(18)
    for b in rng.choice(len(bad), 50, replace=False):
        if codec == "Q8_K":
            bad[b, :4] = np.array([rng.choice(BAD_F32)], "<u4").view(np.uint8)
        else:
            bad[b, :2] = np.array([rng.choice(BAD_F16)], "<u2").view(np.uint8)
    theirs = ~np.isfinite(_dequantize(bad, codec)).all(axis=1)
    np.testing.assert_array_equal(rule.bad_blocks(bad.tobytes()), theirs)
    data = bad.tobytes()
    while (ours := rule.first_bad(data, 0)) is not None:
        assert native.first_bad_value(data, t.block_bytes, table) == (ours.index, 0, ours.raw)
        data = data[(ours.index + 1) * t.block_bytes:]
    assert native.first_bad_value(data, t.block_bytes, table) is None
