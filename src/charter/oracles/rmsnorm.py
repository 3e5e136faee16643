"""RMSNorm over the last axis, in float32, with a defined accumulation order.

    ms  = (x[0]^2 + x[1]^2 + ... + x[H-1]^2) / H      float32, summed left to right
    inv = 1 / sqrt(ms + eps)                           float32 (eps rounded to float32 first)
    y   = (x * inv) * w                                rmsnorm
    y   = (x * inv) * (1 + w)                          rmsnorm_zero_centred (1 + w in float32)

Note [Oracle accumulation]: every operation is a float32 operation rounded to nearest, and the
sum of squares is a sequential left-to-right float32 accumulation (numpy's `add.accumulate`,
which, unlike `np.sum`, never reorders into pairwise blocks). A native kernel that wants
bit-identical results must use the same order; one that sums in another order (SIMD lanes,
float64) agrees to a few ulp, and the kernel contract states that tolerance. The zero-centred
variant is the Gemma / Qwen3-Next convention where the stored weight is w and the applied scale
is 1 + w.
"""

from __future__ import annotations

import math

import numpy as np

from charter.oracles import _check


def _inputs(x: object, w: object, eps: object) -> tuple[np.ndarray, np.ndarray, np.float32]:
    x = _check.array("x", x, "float32", (1, 2))
    w = _check.array("w", w, "float32", 1)
    if x.shape[-1] == 0:
        raise ValueError("x must have a non-empty last axis")
    if w.shape[0] != x.shape[-1]:
        raise ValueError(f"w has {w.shape[0]} elements, x's last axis has {x.shape[-1]}")
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, (int, float, np.floating, np.integer)):
        raise ValueError(f"eps must be a number, got {type(eps).__name__}")
    if not (math.isfinite(float(eps)) and float(eps) > 0):
        raise ValueError(f"eps must be finite and > 0, got {eps!r}")
    _check.no_nan("x", x)
    _check.no_nan("w", w)
    return x, w, np.float32(eps)


def _normalized(x: np.ndarray, eps: np.float32) -> np.ndarray:
    squares = x * x
    total = np.add.accumulate(squares, axis=-1, dtype=np.float32)[..., -1:]
    ms = total / np.float32(x.shape[-1])
    inv = np.float32(1.0) / np.sqrt(ms + eps)
    return x * inv


def rmsnorm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """float32[..., H] -> float32[..., H]: x / rms(x) * w."""
    x, w, eps32 = _inputs(x, w, eps)
    return (_normalized(x, eps32) * w).astype(np.float32)


def rmsnorm_zero_centred(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """float32[..., H] -> float32[..., H]: x / rms(x) * (1 + w)."""
    x, w, eps32 = _inputs(x, w, eps)
    return (_normalized(x, eps32) * (np.float32(1.0) + w)).astype(np.float32)
