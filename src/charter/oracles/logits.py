"""Greedy selection over padded logits: only tokenizer ids may win.

A checkpoint's output projection can have more physical rows than the tokenizer has ids
(Qwen4Exp: 248,320 rows, 248,077 ids). Rows >= valid_ids are not tokens; whatever values they
hold, they are masked before selection. Ties go to the lowest index.
"""

from __future__ import annotations

import numpy as np

from charter.oracles import _check


def masked_argmax(logits: np.ndarray, valid_ids: int) -> np.ndarray:
    """float32[n, rows], valid_ids in [1, rows] -> int32[n]: argmax over ids [0, valid_ids)."""
    logits = _check.array("logits", logits, "float32", 2)
    rows = logits.shape[1]
    if rows == 0:
        raise ValueError("logits must have at least one row per token")
    valid_ids = _check.integer("valid_ids", valid_ids, 1, rows)
    valid = logits[:, :valid_ids]
    _check.no_nan("logits[:, :valid_ids]", valid)
    return np.argmax(valid, axis=-1).astype(np.int32)  # first maximum: the lowest index
