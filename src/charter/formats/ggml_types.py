"""The ggml tensor types a GGUF file may name: id, name, elements per block, bytes per block.

Why a table of our own: the byte size of every tensor, and so every extent check, is computed
from it, and it must not depend on an optional package at run time. Ids and block geometry follow
ggml's `ggml.h` (`enum ggml_type`) and `ggml-common.h` (`block_*` structs); the test suite
cross-checks every row against `gguf.constants.GGML_QUANT_SIZES` of gguf 0.19.0.

One deliberate divergence: gguf-py still lists Q8_1 as 40 bytes per block (its old layout of two
f32 scales); ggml has stored `block_q8_1` as two f16 halves plus 32 quants, 36 bytes, since 2024,
and ggml is what computes the sizes when llama.cpp loads a file. We follow ggml.

Ids that ggml removed from GGUF files (4-5 Q4_2/Q4_3, 31-33 Q4_0_4_4/Q4_0_4_8/Q4_0_8_8, 36-38
IQ4_NL_4_4/IQ4_NL_4_8/IQ4_NL_8_8) are rejected like unknown ids; `REMOVED` only names them so the
diagnostic can say why.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GGMLType:
    """One ggml tensor type: `block_size` elements are stored in `block_bytes` bytes."""

    id: int
    name: str
    block_size: int
    block_bytes: int

    def nbytes(self, n_elements: int) -> int:
        """Bytes for `n_elements`; the caller guarantees a whole number of blocks."""
        return (n_elements // self.block_size) * self.block_bytes


_QK_K = 256  # ggml's super-block size for the k-quants and most i-quants

_ROWS: tuple[tuple[int, str, int, int], ...] = (
    (0, "F32", 1, 4),
    (1, "F16", 1, 2),
    (2, "Q4_0", 32, 18),  # f16 d + 16 nibble bytes
    (3, "Q4_1", 32, 20),  # f16 d, m + 16
    (6, "Q5_0", 32, 22),  # f16 d + 4 high bits + 16
    (7, "Q5_1", 32, 24),  # f16 d, m + 4 + 16
    (8, "Q8_0", 32, 34),  # f16 d + 32
    (9, "Q8_1", 32, 36),  # f16 d, s + 32 (gguf-py says 40: see module docstring)
    (10, "Q2_K", _QK_K, 84),
    (11, "Q3_K", _QK_K, 110),
    (12, "Q4_K", _QK_K, 144),
    (13, "Q5_K", _QK_K, 176),
    (14, "Q6_K", _QK_K, 210),
    (15, "Q8_K", _QK_K, 292),
    (16, "IQ2_XXS", _QK_K, 66),
    (17, "IQ2_XS", _QK_K, 74),
    (18, "IQ3_XXS", _QK_K, 98),
    (19, "IQ1_S", _QK_K, 50),
    (20, "IQ4_NL", 32, 18),
    (21, "IQ3_S", _QK_K, 110),
    (22, "IQ2_S", _QK_K, 82),
    (23, "IQ4_XS", _QK_K, 136),
    (24, "I8", 1, 1),
    (25, "I16", 1, 2),
    (26, "I32", 1, 4),
    (27, "I64", 1, 8),
    (28, "F64", 1, 8),
    (29, "IQ1_M", _QK_K, 56),
    (30, "BF16", 1, 2),
    (34, "TQ1_0", _QK_K, 54),
    (35, "TQ2_0", _QK_K, 66),
    (39, "MXFP4", 32, 17),  # e8m0 scale + 16 nibble bytes
    (40, "NVFP4", 64, 36),  # 4 ue4m3 scales + 32 nibble bytes
    (41, "Q1_0", 128, 18),  # f16 d + 16 bit bytes
)

GGML_TYPES: dict[int, GGMLType] = {row[0]: GGMLType(*row) for row in _ROWS}
GGML_TYPES_BY_NAME: dict[str, GGMLType] = {t.name: t for t in GGML_TYPES.values()}

REMOVED: dict[int, str] = {
    4: "Q4_2",
    5: "Q4_3",
    31: "Q4_0_4_4",
    32: "Q4_0_4_8",
    33: "Q4_0_8_8",
    36: "IQ4_NL_4_4",
    37: "IQ4_NL_4_8",
    38: "IQ4_NL_8_8",
}


def ggml_type(type_id: int) -> GGMLType | None:
    """The type with this id, or None for unknown and removed ids."""
    return GGML_TYPES.get(type_id)
