"""Dequantization of ggml Q8_0 and Q4_1 blocks, from the block layout alone.

ggml's blocks (ggml-common.h; dequantize_row_q8_0 / dequantize_row_q4_1 in ggml-quants.c):

    block_q8_0 { ggml_half d; int8_t qs[32]; }            34 bytes, y[j] = qs[j] * d
    block_q4_1 { ggml_half d; ggml_half m; uint8_t qs[16]; }  20 bytes,
               y[j] = (qs[j] & 0x0F) * d + m,  y[j + 16] = (qs[j] >> 4) * d + m   (j < 16)

All fields little-endian. The low nibbles hold the first 16 elements of the block and the high
nibbles the last 16 (not interleaved). Arithmetic is float32: the integer quant is converted to
float32 exactly, multiplied by d (one rounding), then m is added (one rounding, no fused
multiply-add). The IEEE half-precision scales are decoded here from their bits (every half is
exactly representable in float32), not by numpy's float16 type, so the oracle does not share a
conversion routine with anything it checks.
"""

from __future__ import annotations

import numpy as np

from charter.oracles import _check

QK = 32
Q8_0_BYTES = 2 + QK  # d, qs[32]
Q4_1_BYTES = 2 + 2 + QK // 2  # d, m, qs[16]


def half_to_float32(bits: np.ndarray) -> np.ndarray:
    """IEEE 754 binary16 bit patterns (uint16) -> float32 values, exactly (NaN payloads kept)."""
    bits = np.asarray(bits, dtype=np.uint16).astype(np.uint32)
    sign = (bits >> 15) << 31
    exponent = (bits >> 10) & 0x1F
    mantissa = bits & 0x3FF
    normal = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13)
    special = sign | (0xFF << 23) | (mantissa << 13)  # inf and NaN
    out = np.where(exponent == 0x1F, special, normal).astype(np.uint32).view(np.float32)
    # Zero and subnormals: mantissa * 2**-24, exact in float32, with the sign applied.
    tiny = mantissa.astype(np.float32) * np.float32(2.0**-24)
    tiny = np.where(sign != 0, -tiny, tiny)
    return np.where(exponent == 0, tiny, out).astype(np.float32)


def _blocks(blocks: object, width: int, name: str) -> np.ndarray:
    b = _check.array("blocks", blocks, "uint8", 2)
    if b.shape[1] != width:
        raise ValueError(f"{name} blocks are {width} bytes wide, got shape {b.shape}")
    return b


def _le_u16(b: np.ndarray, at: int) -> np.ndarray:
    return b[:, at].astype(np.uint16) | (b[:, at + 1].astype(np.uint16) << 8)


def dequantize_q8_0(blocks: np.ndarray) -> np.ndarray:
    """uint8[n, 34] Q8_0 blocks -> float32[n * 32]."""
    b = _blocks(blocks, Q8_0_BYTES, "Q8_0")
    d = half_to_float32(_le_u16(b, 0))
    qs = b[:, 2:].view(np.int8).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):  # 0 * inf is NaN, as in ggml
        return (qs * d[:, None]).astype(np.float32).reshape(-1)


def dequantize_q4_1(blocks: np.ndarray) -> np.ndarray:
    """uint8[n, 20] Q4_1 blocks -> float32[n * 32]."""
    b = _blocks(blocks, Q4_1_BYTES, "Q4_1")
    d = half_to_float32(_le_u16(b, 0))[:, None]
    m = half_to_float32(_le_u16(b, 2))[:, None]
    qs = b[:, 4:]
    low = (qs & 0x0F).astype(np.float32)
    high = (qs >> 4).astype(np.float32)
    q = np.concatenate([low, high], axis=1)  # elements 0..15 from low nibbles, 16..31 from high
    with np.errstate(invalid="ignore", over="ignore"):  # inf/NaN scales give inf/NaN, as in ggml
        return ((q * d) + m).astype(np.float32).reshape(-1)
