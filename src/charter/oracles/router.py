"""Mixture-of-experts routing: float32 softmax, top-k, renormalized weights.

    p[e]   = exp(l[e] - max(l)) / S,  S = exp(l[0]-max) + ... + exp(l[E-1]-max)   float32,
             S summed left to right in expert order (Note [Oracle accumulation] in rmsnorm)
    order  = experts sorted by p descending, then by expert index ascending
    top    = the first k of order (rank order)
    w[r]   = p[top[r]] / T,  T = p[top[0]] + ... + p[top[k-1]]   float32, in rank order

`l - max(l)` is a float32 subtraction; exp is evaluated in float64 and rounded to float32, which
is the correctly rounded float32 exp except in vanishingly rare double-rounding cases, so the
oracle's bits do not depend on which SIMD float32 exp the machine's numpy happens to use.

Ties are decided on the float32 probability, not on the logit: two different logits whose
probabilities round (or underflow) to the same float32 are tied, and the lower expert index
ranks first. A logit of -inf is allowed (a masked expert, probability 0); NaN and +inf are not,
and each row needs a finite maximum.
"""

from __future__ import annotations

import numpy as np

from charter.oracles import _check


def softmax_f32(logits: np.ndarray) -> np.ndarray:
    """Row softmax of float32[n, E], float32 throughout, denominator summed in expert order."""
    m = logits.max(axis=-1, keepdims=True)
    e = np.exp((logits - m).astype(np.float64)).astype(np.float32)  # see the module docstring
    s = np.add.accumulate(e, axis=-1, dtype=np.float32)[..., -1:]
    return (e / s).astype(np.float32)


def router_topk(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """float32[n, E], k -> (int32[n, k] expert indices, float32[n, k] weights), in rank order."""
    logits = _check.array("logits", logits, "float32", 2)
    n, experts = logits.shape
    if experts == 0:
        raise ValueError("logits must have at least one expert")
    k = _check.integer("k", k, 1, experts)
    _check.no_nan("logits", logits)
    if np.isposinf(logits).any():
        raise ValueError("logits contain +inf")
    if n and not np.isfinite(logits.max(axis=-1)).all():
        raise ValueError("every row of logits needs a finite maximum")
    p = softmax_f32(logits)
    index = np.broadcast_to(np.arange(experts), p.shape)
    order = np.lexsort((index, -p), axis=-1)  # last key is primary: p descending, then index
    top = order[:, :k]
    chosen = np.take_along_axis(p, top, axis=-1)
    total = np.add.accumulate(chosen, axis=-1, dtype=np.float32)[..., -1:]
    return top.astype(np.int32), (chosen / total).astype(np.float32)
