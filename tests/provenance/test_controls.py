"""Contract-control generators: the stated rules hold, and the oracles agree with them."""

from __future__ import annotations

import numpy as np

from charter.oracles.logits import masked_argmax
from charter.oracles.router import router_topk
from charter.provenance import controls
from charter.provenance.npz import read_npz

from .conftest import PROVENANCE


def test_splitmix64_reference_vector():
    # SplitMix64 (Steele, Lea, Flood 2014) from seed 0: the published first outputs.
    assert [hex(v) for v in controls.splitmix64(0, 3).tolist()] == [
        "0xe220a8397b1dcdaf", "0x6e789e6aa1b965f4", "0x6c45d188009454f"]
    assert controls.splitmix64(7, 2, start=3).tolist() == controls.splitmix64(7, 5).tolist()[3:]


def test_uniform_is_exact_in_float32_and_in_range():
    u = controls.uniform(123, (4, 1000))
    assert u.dtype == np.float32 and u.min() >= -1 and u.max() < 1
    assert np.array_equal(u * np.float32(2**23), np.round(u.astype(np.float64) * 2**23))


def test_router_tie_rows_give_the_stated_order():
    arrays = read_npz(PROVENANCE / "router-topk-ties.npz")
    idx, w = router_topk(arrays["logits"], int(arrays["k"]))
    for row, expected in controls.ROUTER_TIE_EXPECTED.items():
        assert idx[row].tolist() == list(expected)
    assert np.all(w[0] == np.float32(0.1))
    assert w[3].tolist() == [0.5, 0.5] + [0.0] * 8
    assert np.array_equal(idx, arrays["topk_indices"]) and np.array_equal(w, arrays["topk_weights"])


def test_padded_logits_rule_and_the_oracle():
    arrays = read_npz(PROVENANCE / "masked-argmax-padded.npz")
    valid, rows = int(arrays["valid_ids"]), int(arrays["logits_rows"])
    assert (valid, rows) == (248077, 248320)
    x = controls.padded_logits(248076, valid, rows, 2)  # the seed stated in the spec
    assert x.shape == (2, rows)
    assert (np.argmax(x, axis=1) >= valid).all()  # unmasked selection picks a padded row
    assert (x[:, valid:].min(axis=1) > x[:, :valid].max(axis=1)).all()
    assert masked_argmax(x, valid).tolist() == arrays["expected_ids"].tolist() == [248076, 248076]
