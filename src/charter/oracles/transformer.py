"""numpy oracles of the transformer nodes a regions contract calls (specs/kernels/*.yaml with
`backends: {oracle_only: true}`): embedding lookup, linear, rotary embedding, causal grouped-query
attention, SwiGLU and the residual add. float32 throughout, every input checked, nothing coerced.

They define what an F1 node computes (charter.regions.interpreter); they are written from the
formulas, independently of the interpreter, which only calls them by their kernel contract's
`oracle`. Matmuls use numpy's float32 matmul (BLAS order); Note [Oracle accumulation] in
charter.oracles.rmsnorm states why such results agree with other orders only within a tolerance.
"""

from __future__ import annotations

import math

import numpy as np

from charter.oracles import _check


def _finite(name: str, x: np.ndarray) -> None:
    if not np.isfinite(x).all():
        raise ValueError(f"{name} contains a non-finite value")


def embedding_lookup(table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """float32[rows, H], int32[T] -> float32[T, H]; an id outside [0, rows) is an error."""
    table = _check.array("table", table, "float32", 2)
    ids = _check.array("ids", ids, "int32", 1)
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= table.shape[0]):
        raise ValueError(f"ids must lie in [0, {table.shape[0]}), got [{int(ids.min())}, {int(ids.max())}]")
    return table[ids.astype(np.int64)].astype(np.float32, copy=True)


def linear(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """float32[T, K], float32[N, K] -> float32[T, N] = x @ w.T."""
    x = _check.array("x", x, "float32", 2)
    w = _check.array("w", w, "float32", 2)
    if x.shape[1] != w.shape[1]:
        raise ValueError(f"x has width {x.shape[1]}, w rows have width {w.shape[1]}")
    _finite("x", x)
    return np.matmul(x, w.T).astype(np.float32, copy=False)


def rope_norm(x: np.ndarray, positions: np.ndarray, head_dim: int, theta: float) -> np.ndarray:
    """float32[T, W] (W = heads * head_dim), int32[T] -> float32[T, W]: every head's adjacent pairs
    (2j, 2j+1) rotated by positions[t] * theta ** (-2j / head_dim) (llama.cpp's LLAMA_ROPE_TYPE_NORM)."""
    x = _check.array("x", x, "float32", 2)
    positions = _check.array("positions", positions, "int32", 1)
    head_dim = _check.integer("head_dim", head_dim, 2, 1 << 16)
    if head_dim % 2 or x.shape[1] % head_dim:
        raise ValueError(f"width {x.shape[1]} is not a whole number of heads of even head_dim {head_dim}")
    if positions.shape[0] != x.shape[0]:
        raise ValueError(f"{positions.shape[0]} positions for {x.shape[0]} rows")
    if not (math.isfinite(float(theta)) and float(theta) > 1.0):
        raise ValueError(f"theta must be finite and > 1, got {theta!r}")
    if positions.size and int(positions.min()) < 0:
        raise ValueError("positions must be >= 0")
    half = head_dim // 2
    # inv = theta ** exponent with float32 exponents, rounded from <cmath>'s double pow (which
    # math.pow calls), not numpy's float32 power: that one dispatches on the CPU (AVX-512 builds
    # round some powers 1 ulp away, and at angles of tens of radians an ulp of inv moves an output by
    # more than the contract's tolerance). Then float32 angles, cos and sin, as ggml rotates in float32.
    exponents = -np.arange(half, dtype=np.float32) * np.float32(2.0 / head_dim)
    inv = np.array([math.pow(float(np.float32(theta)), float(e)) for e in exponents]).astype(np.float32)
    angles = positions.astype(np.float32)[:, None] * inv[None, :]
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    heads = x.reshape(x.shape[0], x.shape[1] // head_dim, half, 2)  # explicit: 0 tokens reshape too
    x0, x1 = heads[..., 0], heads[..., 1]
    c, s = cos[:, None, :], sin[:, None, :]
    out = np.empty_like(heads)
    out[..., 0] = x0 * c - x1 * s
    out[..., 1] = x0 * s + x1 * c
    return out.reshape(x.shape).astype(np.float32, copy=False)


def attention_causal_gqa(q: np.ndarray, k: np.ndarray, v: np.ndarray, heads: int, kv_heads: int,
                         head_dim: int) -> np.ndarray:
    """float32[T, heads*d], float32[T, kv_heads*d] x2 -> float32[T, heads*d]: causal softmax
    attention, query head h reading KV head h // (heads // kv_heads), scale 1/sqrt(d)."""
    q = _check.array("q", q, "float32", 2)
    k = _check.array("k", k, "float32", 2)
    v = _check.array("v", v, "float32", 2)
    heads = _check.integer("heads", heads, 1, 1 << 16)
    kv_heads = _check.integer("kv_heads", kv_heads, 1, heads)
    head_dim = _check.integer("head_dim", head_dim, 1, 1 << 16)
    t = q.shape[0]
    if heads % kv_heads:
        raise ValueError(f"heads {heads} is not a multiple of kv_heads {kv_heads}")
    if q.shape[1] != heads * head_dim or k.shape != (t, kv_heads * head_dim) or v.shape != k.shape:
        raise ValueError(f"shapes q {q.shape}, k {k.shape}, v {v.shape} do not fit {heads} heads and "
                         f"{kv_heads} KV heads of {head_dim}")
    for name, a in (("q", q), ("k", k), ("v", v)):
        _finite(name, a)
    if t == 0:  # no rows to attend over (numpy's max has no identity for an empty axis)
        return np.zeros((0, heads * head_dim), dtype=np.float32)
    group = heads // kv_heads
    qh = q.reshape(t, heads, head_dim).transpose(1, 0, 2)                       # [H, T, d]
    kh = np.repeat(k.reshape(t, kv_heads, head_dim).transpose(1, 0, 2), group, axis=0)
    vh = np.repeat(v.reshape(t, kv_heads, head_dim).transpose(1, 0, 2), group, axis=0)
    scores = np.matmul(qh, kh.transpose(0, 2, 1)) * np.float32(1.0 / math.sqrt(head_dim))
    future = np.triu(np.ones((t, t), dtype=bool), k=1)
    scores = np.where(future[None], np.float32(-np.inf), scores).astype(np.float32)
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores, dtype=np.float32)
    p /= p.sum(axis=-1, keepdims=True, dtype=np.float32)
    out = np.matmul(p, vh)                                                      # [H, T, d]
    return out.transpose(1, 0, 2).reshape(t, heads * head_dim).astype(np.float32, copy=False)


def swiglu(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """float32[T, F] x2 -> float32[T, F] = gate / (1 + exp(-gate)) * up."""
    gate = _check.array("gate", gate, "float32", 2)
    up = _check.array("up", up, "float32", 2)
    if gate.shape != up.shape:
        raise ValueError(f"gate {gate.shape} and up {up.shape} differ")
    _finite("gate", gate)
    with np.errstate(over="ignore"):
        silu = gate / (np.float32(1.0) + np.exp(-gate, dtype=np.float32))
    return (silu * up).astype(np.float32, copy=False)


def residual_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32[T, H] x2 -> float32[T, H] = a + b."""
    a = _check.array("a", a, "float32", 2)
    b = _check.array("b", b, "float32", 2)
    if a.shape != b.shape:
        raise ValueError(f"a {a.shape} and b {b.shape} differ")
    return (a + b).astype(np.float32, copy=False)
