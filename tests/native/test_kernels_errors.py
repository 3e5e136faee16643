"""Generated bindings refuse what does not fit the contract, naming the argument and the dim, and
never convert: a wrong output is an error, not a silently written temporary copy."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

SENTINEL = np.float32(-7.25)


@pytest.fixture
def xw():
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 576), dtype=np.float32), rng.standard_normal(576, dtype=np.float32)


def test_float64_input_is_refused_naming_the_argument(kernels, xw):
    x, w = xw
    with pytest.raises(TypeError, match=r"rmsnorm\(\): argument 'x' must have dtype float32, got float64"):
        kernels.rmsnorm(x.astype(np.float64), w, 1e-5)


def test_fortran_order_input_is_refused(kernels, xw):
    x, w = xw
    with pytest.raises(ValueError, match=r"argument 'x' must be C-contiguous; dim 1 has stride 3 elements"):
        kernels.rmsnorm(np.asfortranarray(x), w, 1e-5)
    with pytest.raises(ValueError, match=r"argument 'x' must be C-contiguous; dim 0 has stride 1152"):
        kernels.rmsnorm(np.concatenate([x, x])[::2], w, 1e-5)


def test_wrong_model_dim_names_argument_dim_and_models(kernels, xw):
    x, w = xw
    with pytest.raises(ValueError, match=r"argument 'x' dim 1 \(hidden\) is 575; hidden is 576 in "
                                         r"smollm2-135m-instruct, 2560 in qwen4exp \(shape \(3, 575\)\)"):
        kernels.rmsnorm(x[:, :575].copy(), w, 1e-5)


def test_dims_must_agree_with_the_model_the_first_array_selected(kernels):
    x = np.zeros((2, 2560), dtype=np.float32)
    with pytest.raises(ValueError, match=r"argument 'w' dim 0 \(hidden\) is 576; hidden is 2560 in qwen4exp "
                                         r"\(the models left after argument 'x'\)"):
        kernels.rmsnorm(x, np.zeros(576, dtype=np.float32), 1e-5)


def test_free_dim_mismatch_names_who_bound_it(kernels, xw):
    x, w = xw
    y = np.empty((4, 576), dtype=np.float32)
    with pytest.raises(ValueError, match=r"argument 'y' dim 0 \(rows\) is 4, but argument 'x' dim 0 set rows = 3"):
        kernels.rmsnorm(x, w, 1e-5, y=y)


def test_wrong_rank_and_literal_dims(kernels, xw):
    x, w = xw
    with pytest.raises(ValueError, match=r"argument 'x' must have 2 dims \[rows, hidden\], got shape \(576,\)"):
        kernels.rmsnorm(w, w, 1e-5)
    with pytest.raises(ValueError, match=r"argument 'blocks' dim 1 \(34\) must be 34, got 33"):
        kernels.dequantize_q8_0(np.zeros((2, 33), dtype=np.uint8))
    with pytest.raises(ValueError, match=r"argument 'logits' dim 1 \(logits_rows\) is 248077; logits_rows is 248320"):
        kernels.masked_argmax(np.zeros((1, 248077), dtype=np.float32))  # the id domain is not the physical width


@pytest.mark.parametrize("bad", [
    pytest.param(lambda: np.zeros((3, 576), dtype=np.float64), id="float64"),
    pytest.param(lambda: np.zeros((3, 576), dtype=np.float16), id="float16"),
    pytest.param(lambda: np.asfortranarray(np.zeros((3, 576), dtype=np.float32)), id="fortran"),
    pytest.param(lambda: np.zeros((3, 577), dtype=np.float32), id="shape"),
])
def test_a_wrong_output_raises_and_is_not_written(kernels, xw, bad):
    """With conversion allowed, a float64 or Fortran-order `y` would be converted to a temporary
    the kernel writes and the caller never sees; `.noconvert()` plus the checks make it an error."""
    x, w = xw
    y = bad()
    y[...] = SENTINEL
    with pytest.raises((TypeError, ValueError), match="argument 'y'"):
        kernels.rmsnorm(x, w, 1e-5, y=y)
    assert (y == SENTINEL).all()


def test_read_only_output_is_refused(kernels, xw):
    x, w = xw
    y = np.full((3, 576), SENTINEL, dtype=np.float32)
    y.flags.writeable = False
    with pytest.raises(TypeError, match="incompatible function arguments"):
        kernels.rmsnorm(x, w, 1e-5, y=y)
    assert (y == SENTINEL).all()


def test_read_only_inputs_are_accepted(kernels, xw):
    x, w = xw
    x.flags.writeable = w.flags.writeable = False
    assert kernels.rmsnorm(x, w, 1e-5).shape == (3, 576)


def test_non_arrays_are_never_converted(kernels, xw):
    x, w = xw
    with pytest.raises(TypeError, match="incompatible function arguments"):
        kernels.rmsnorm(x.tolist(), w, 1e-5)


def test_outputs_are_written_in_place_and_returned(kernels, xw):
    x, w = xw
    y = np.empty_like(x)
    assert kernels.rmsnorm(x, w, 1e-5, y=y) is y
    indices, weights = np.empty((2, 10), np.int32), np.empty((2, 10), np.float32)
    got = kernels.router_topk(np.zeros((2, 512), np.float32), indices=indices, weights=weights)
    assert got[0] is indices and got[1] is weights
    with pytest.raises(TypeError, match=r"router_topk\(\): argument 'indices' must have dtype int32, got int64"):
        kernels.router_topk(np.zeros((2, 512), np.float32), indices=np.empty((2, 10), np.int64))


def test_outputs_may_not_alias_inputs_or_each_other(kernels, xw):
    x, w = xw
    with pytest.raises(ValueError, match="argument 'y' overlaps argument 'x'"):
        kernels.rmsnorm(x, w, 1e-5, y=x)
    buf = np.zeros(40, np.float32)
    with pytest.raises(ValueError, match="argument 'weights' overlaps argument 'indices'"):
        kernels.router_topk(np.zeros((2, 512), np.float32), indices=buf.view(np.int32)[:20].reshape(2, 10),
                           weights=buf[10:30].reshape(2, 10))


def test_size_one_dims_may_have_any_stride(kernels):
    """numpy's contiguity rule: a dim of extent 1 does not constrain the layout."""
    x = np.zeros((1, 2560), dtype=np.float32)
    view = np.lib.stride_tricks.as_strided(x, shape=(1, 2560), strides=(12345 * 4, 4))
    assert kernels.rmsnorm(view, np.zeros(2560, np.float32), 1e-5).shape == (1, 2560)


def test_empty_batches_are_fine(kernels):
    assert kernels.rmsnorm(np.zeros((0, 576), np.float32), np.zeros(576, np.float32), 1e-5).shape == (0, 576)
    i, w = kernels.router_topk(np.zeros((0, 512), np.float32))
    assert i.shape == w.shape == (0, 10)
    assert kernels.masked_argmax(np.zeros((0, 248320), np.float32)).shape == (0,)
    assert kernels.dequantize_q4_1(np.zeros((0, 20), np.uint8)).shape == (0, 32)


@pytest.mark.parametrize("eps", [0.0, -1e-5, float("nan"), float("inf")])
def test_kernel_domain_errors_are_value_errors(kernels, xw, eps):
    x, w = xw
    with pytest.raises(ValueError, match=r"rmsnorm\(\): eps must be finite and > 0"):
        kernels.rmsnorm(x, w, eps)


def test_router_and_argmax_report_the_bad_row(kernels):
    x = np.zeros((3, 512), np.float32)
    x[2, 7] = np.nan
    with pytest.raises(ValueError, match=r"router_topk\(\): row 2: logits contain NaN"):
        kernels.router_topk(x)
    x[2, 7] = np.inf
    with pytest.raises(ValueError, match=r"row 2: logits contain \+inf"):
        kernels.router_topk(x)
    x[2] = -np.inf
    with pytest.raises(ValueError, match=r"row 2: every row of logits needs a finite maximum"):
        kernels.router_topk(x)
    logits = np.zeros((2, 248320), np.float32)
    logits[1, 248076] = np.nan
    with pytest.raises(ValueError, match=r"masked_argmax\(\): row 1: logits\[:, :valid_ids\] contains NaN"):
        kernels.masked_argmax(logits)


def test_the_gil_is_released_while_the_kernel_runs(kernels):
    """The main thread keeps running Python while another thread is inside the kernel; with the
    GIL held it could not run a single bytecode until the call returned."""
    logits = np.random.default_rng(1).standard_normal((16384, 512), dtype=np.float32)  # 32 MiB, ~0.1 s
    start = time.perf_counter()
    kernels.router_topk(logits)
    alone = time.perf_counter() - start
    span = {}

    def work():
        span["start"] = time.perf_counter()
        kernels.router_topk(logits)
        span["end"] = time.perf_counter()

    ticks = []
    thread = threading.Thread(target=work)
    thread.start()
    while thread.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    thread.join()
    assert alone > 0.02, "the kernel call is too short to tell"
    inside = [t for t in ticks if span["start"] + 0.3 * (span["end"] - span["start"]) < t
              < span["end"] - 0.3 * (span["end"] - span["start"])]
    assert inside, f"no Python ran during the middle of a {span['end'] - span['start']:.3f}s kernel call"
