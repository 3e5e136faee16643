"""The numpy oracles: definitions, input checks, and agreement with upstream on real blocks."""

from __future__ import annotations

import ast
from pathlib import Path

import gguf.quants as gguf_quants
import numpy as np
import pytest
from gguf.constants import GGMLQuantizationType as Q
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from charter.oracles import dequant, logits, rmsnorm, router
from charter.provenance.npz import read_npz

from .conftest import PROVENANCE


# --- independence -------------------------------------------------------------------------------


def test_oracles_import_only_numpy_and_each_other():
    for path in Path(dequant.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] in {"numpy", "math", "__future__"} or name.startswith("charter.oracles"), \
                    f"{path.name} imports {name}"


# --- dequantization -----------------------------------------------------------------------------


def test_half_decoding_is_exact_for_every_bit_pattern():
    bits = np.arange(2**16, dtype=np.uint16)
    ours = dequant.half_to_float32(bits)
    theirs = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(theirs)
    assert np.array_equal(np.isnan(ours), nan)
    assert np.array_equal(ours[~nan].view(np.uint32), theirs[~nan].view(np.uint32))


def test_shipped_real_blocks_equal_upstream_bit_for_bit():
    arrays = read_npz(PROVENANCE / "dequant-smollm2.npz")
    for codec, qtype in (("q8_0", Q.Q8_0), ("q4_1", Q.Q4_1)):
        blocks = arrays[f"{codec}_blocks"]
        ours = getattr(dequant, f"dequantize_{codec}")(blocks)
        upstream = gguf_quants.dequantize(blocks, qtype).reshape(-1)
        assert ours.dtype == np.float32 and ours.shape == (blocks.shape[0] * 32,)
        assert np.array_equal(ours.view(np.uint32), upstream.view(np.uint32))
        assert np.array_equal(ours, arrays[f"{codec}_oracle"])


def _blocks(width):
    return hnp.arrays(np.uint8, st.tuples(st.integers(1, 6), st.just(width)))


@settings(max_examples=50, deadline=None)
@given(_blocks(34))
@np.errstate(invalid="ignore", over="ignore")
def test_q8_0_matches_upstream_on_any_bytes(blocks):
    ours = dequant.dequantize_q8_0(blocks)
    upstream = gguf_quants.dequantize(blocks, Q.Q8_0).reshape(-1)
    assert np.array_equal(ours, upstream, equal_nan=True)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float64)
    ref = blocks[:, 2:].view(np.int8).astype(np.float64) * d  # exact: 8-bit times 11-bit significand
    assert np.array_equal(ours, ref.astype(np.float32).reshape(-1), equal_nan=True)


@settings(max_examples=50, deadline=None)
@given(_blocks(20))
@np.errstate(invalid="ignore", over="ignore")
def test_q4_1_matches_upstream_and_the_nibble_layout(blocks):
    ours = dequant.dequantize_q4_1(blocks).reshape(-1, 32)
    upstream = gguf_quants.dequantize(blocks, Q.Q4_1)
    assert np.array_equal(ours, upstream, equal_nan=True)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    for j in range(16):  # the C reference loop, element by element
        lo = (blocks[:, 4 + j] & 0x0F).astype(np.float32)[:, None]
        hi = (blocks[:, 4 + j] >> 4).astype(np.float32)[:, None]
        assert np.array_equal(ours[:, j:j + 1], lo * d + m, equal_nan=True)
        assert np.array_equal(ours[:, 16 + j:17 + j], hi * d + m, equal_nan=True)


@pytest.mark.parametrize("fn, bad", [
    (dequant.dequantize_q8_0, np.zeros((2, 20), np.uint8)),
    (dequant.dequantize_q4_1, np.zeros((2, 34), np.uint8)),
    (dequant.dequantize_q8_0, np.zeros((2, 34), np.int8)),
    (dequant.dequantize_q8_0, np.zeros(34, np.uint8)),
    (dequant.dequantize_q4_1, [[0] * 20]),
])
def test_dequant_refuses_wrong_blocks(fn, bad):
    with pytest.raises(ValueError):
        fn(bad)


# --- rmsnorm ------------------------------------------------------------------------------------

_rows = st.tuples(st.integers(1, 3), st.integers(1, 64))
_f32 = st.floats(-4, 4, width=32, allow_subnormal=False)  # subnormal float32 loses relative precision


@settings(max_examples=50, deadline=None)
@given(_rows.flatmap(lambda s: st.tuples(hnp.arrays(np.float32, s, elements=_f32),
                                          hnp.arrays(np.float32, s[1], elements=_f32))),
       st.sampled_from([1e-5, 1e-6, 1e-2]))
def test_rmsnorm_matches_the_float64_formula(xw, eps):
    x, w = xw
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    inv = 1 / np.sqrt((x64 * x64).mean(axis=-1, keepdims=True) + np.float32(eps))
    for fn, scale in ((rmsnorm.rmsnorm, w64), (rmsnorm.rmsnorm_zero_centred, 1 + w64)):
        y = fn(x, w, eps)
        assert y.dtype == np.float32 and y.shape == x.shape
        np.testing.assert_allclose(y, x64 * inv * scale, rtol=2e-5, atol=2e-5 * np.abs(scale).max())


def test_rmsnorm_zero_centred_is_rmsnorm_with_one_plus_w():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6)
    w = np.linspace(-0.5, 0.5, 6, dtype=np.float32)
    assert np.array_equal(rmsnorm.rmsnorm_zero_centred(x, w, 1e-6), rmsnorm.rmsnorm(x, np.float32(1) + w, 1e-6))


def test_rmsnorm_accumulates_left_to_right_in_float32():
    x = np.array([[1e4, 1.0, -1e4, 1.0] + [1e-3] * 60], dtype=np.float32)
    w = np.ones(64, np.float32)
    squares = x * x
    acc = np.float32(0)
    for v in squares[0]:
        acc = np.float32(acc + v)
    inv = np.float32(1) / np.sqrt(acc / np.float32(64) + np.float32(1e-5))
    assert np.array_equal(rmsnorm.rmsnorm(x, w, 1e-5), (x * inv) * w)


@pytest.mark.parametrize("x, w, eps", [
    (np.zeros((2, 4), np.float64), np.zeros(4, np.float32), 1e-5),
    (np.zeros((2, 4), np.float32), np.zeros(3, np.float32), 1e-5),
    (np.zeros((2, 4), np.float32), np.zeros(4, np.float32), 0.0),
    (np.zeros((2, 4), np.float32), np.zeros(4, np.float32), float("nan")),
    (np.zeros((2, 4), np.float32), np.zeros(4, np.float32), True),
    (np.full((1, 4), np.nan, np.float32), np.zeros(4, np.float32), 1e-5),
    (np.zeros((1, 0), np.float32), np.zeros(0, np.float32), 1e-5),
])
def test_rmsnorm_refuses_bad_inputs(x, w, eps):
    with pytest.raises(ValueError):
        rmsnorm.rmsnorm(x, w, eps)


# --- router -------------------------------------------------------------------------------------


def _reference_topk(row: np.ndarray, k: int):
    e = np.exp(row.astype(np.float64) - row.max())
    p = (e / e.sum()).astype(np.float32)
    order = sorted(range(len(row)), key=lambda i: (-p[i], i))[:k]
    return order, p[order]


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 40).flatmap(lambda e: st.tuples(
    hnp.arrays(np.float32, st.tuples(st.integers(1, 3), st.just(e)),
               elements=st.sampled_from([-2.0, -1.0, 0.0, 0.5, 1.0, 3.0])),  # few values: many ties
    st.integers(1, e))))
def test_router_topk_ranks_by_score_then_index(args):
    logits_, k = args
    idx, w = router.router_topk(logits_, k)
    assert idx.dtype == np.int32 and w.dtype == np.float32 and idx.shape == w.shape == (logits_.shape[0], k)
    for r in range(logits_.shape[0]):
        order, p = _reference_topk(logits_[r], k)
        assert idx[r].tolist() == order
        np.testing.assert_allclose(w[r], p / p.sum(), rtol=1e-5)
        assert abs(float(w[r].astype(np.float64).sum()) - 1) < 1e-5


def test_router_tie_policy_is_on_float32_probabilities():
    row = np.concatenate([[0.0, 0.0], -1000.0 - np.arange(10)]).astype(np.float32)[None]
    idx, w = router.router_topk(row, 5)
    assert idx[0].tolist() == [0, 1, 2, 3, 4]  # -1000 .. -1002 all underflow to p = 0: ranked by index
    assert w[0].tolist() == [0.5, 0.5, 0.0, 0.0, 0.0]


def test_router_allows_masked_experts():
    row = np.array([[-np.inf, 1.0, -np.inf, 2.0]], np.float32)
    idx, w = router.router_topk(row, 3)
    assert idx[0].tolist() == [3, 1, 0] and w[0, 2] == 0.0


@pytest.mark.parametrize("x, k", [
    (np.zeros((2, 8), np.float32), 9),
    (np.zeros((2, 8), np.float32), 0),
    (np.zeros((2, 8), np.float32), 2.0),
    (np.zeros((2, 8), np.float32), True),
    (np.zeros((2, 8), np.float64), 2),
    (np.zeros(8, np.float32), 2),
    (np.array([[np.nan, 1.0]], np.float32), 1),
    (np.array([[np.inf, 1.0]], np.float32), 1),
    (np.array([[-np.inf, -np.inf]], np.float32), 1),
])
def test_router_refuses_bad_inputs(x, k):
    with pytest.raises(ValueError):
        router.router_topk(x, k)


# --- masked argmax ------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 30).flatmap(lambda rows: st.tuples(
    hnp.arrays(np.float32, st.tuples(st.integers(1, 3), st.just(rows)),
               elements=st.sampled_from([-1.0, 0.0, 1.0, 1e30, np.inf])),
    st.integers(1, rows))))
def test_masked_argmax_matches_reference(args):
    x, valid = args
    got = logits.masked_argmax(x, valid)
    assert got.dtype == np.int32
    for r in range(x.shape[0]):
        best = max(range(valid), key=lambda i: (x[r, i], -i))  # largest value, then lowest index
        assert got[r] == best


def test_masked_argmax_ignores_padded_rows_even_nan():
    x = np.array([[0.0, 1.0, 1.0, np.nan, 1e38]], np.float32)
    assert logits.masked_argmax(x, 3).tolist() == [1]


@pytest.mark.parametrize("x, valid", [
    (np.zeros((1, 4), np.float32), 5),
    (np.zeros((1, 4), np.float32), 0),
    (np.zeros((1, 4), np.float16), 2),
    (np.array([[np.nan, 0.0]], np.float32), 2),
    (np.zeros((1, 4), np.float32), 2.5),
])
def test_masked_argmax_refuses_bad_inputs(x, valid):
    with pytest.raises(ValueError):
        logits.masked_argmax(x, valid)
