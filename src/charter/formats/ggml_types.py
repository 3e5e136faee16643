"""The ggml tensor types a GGUF file may name: id, name, elements per block, bytes per block, and
the bytes of a per-row header.

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

Note [Row headers]
~~~~~~~~~~~~~~~~~~
The fork ik_llama.cpp gives some of its types a header in front of every row (`row_meta_size` in
the `type_traits` of its ggml/src/ggml.c; a float or f16 scale of the whole row), so a row of
`ne[0]` elements is `row_meta_size + ne[0] / blck_size * type_size` bytes (`ggml_row_size`) and a
tensor is `rows * ggml_row_size`. A block/bytes model cannot state it: a tool that sizes tensors
by blocks alone (gguf-py's reader and writer did, ik_llama.cpp#2443) reserves each such tensor
`rows * header` bytes too few, and the tensor overlaps the next one (ik_llama.cpp#2437: 127 of
129 expert tensors of a published IQ4_KSS file, 4 bytes a row). A codec fact states the header
(`codecs.IQ4_KSS.header: 4`) and the codec stage owns the shortfall (CODEC_ROW_HEADER), before
the layout stage would see the overlap as a symptom.

The rows below with a header are the fork's types that have one and no row interleaving (ids,
`blck_size`, `type_size` = sizeof(block_*) of ggml-common.h, and `row_meta_size` read from
ikawrakow/ik_llama.cpp at 8337e4cd, ggml/include/ggml.h and ggml/src/ggml.c). Their ids (134
and up) are unused by ggml. Left out, and so refused like unknown ids: the fork's other types
(no header, outside this issue), its row-interleaved `_R4`/`_R8` types (whose rows come in
groups a per-row model does not state) and its run-time-only types (Q8_KV, Q8_K16, ...). The
value rules (charter.formats.values) have no rule for the fork's types: a value policy that
would check one is refused by `charter check`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GGMLType:
    """One ggml tensor type: `block_size` elements are stored in `block_bytes` bytes, and every row
    starts with `row_header` bytes (Note [Row headers])."""

    id: int
    name: str
    block_size: int
    block_bytes: int
    row_header: int = 0

    def nbytes(self, n_elements: int, row_width: int) -> int:
        """Bytes for `n_elements` in rows of `row_width`; the caller guarantees a whole number of
        blocks per row."""
        return codec_bytes(n_elements, row_width, self.block_size, self.block_bytes, self.row_header)


def codec_bytes(n_elements: int, row_width: int, block: int, block_bytes: int, row_header: int) -> int:
    """Bytes of `n_elements` in rows of `row_width`, each row a `row_header` and its blocks of `block`
    elements in `block_bytes` (ggml_row_size times the rows; no rows when a row is empty)."""
    rows = n_elements // row_width if row_width else 0
    return rows * row_header + n_elements // block * block_bytes


_QK_K = 256  # ggml's super-block size for the k-quants and most i-quants

_ROWS: tuple[tuple[int, str, int, int] | tuple[int, str, int, int, int], ...] = (
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
    # ik_llama.cpp's types with a row header (Note [Row headers]): (id, name, block, bytes, header)
    (134, "IQ1_BN", 64, 13, 2),
    (135, "IQ2_BN", 64, 16, 4),
    (144, "IQ4_KS", _QK_K, 136, 4),
    (145, "IQ2_KS", _QK_K, 70, 2),
    (146, "IQ4_KSS", _QK_K, 128, 4),
    (152, "IQ5_KS", _QK_K, 168, 4),
    (153, "IQ2_KT", _QK_K, 68, 4),
    (154, "IQ3_KT", _QK_K, 100, 4),
    (155, "IQ4_KT", _QK_K, 128, 4),
    (156, "IQ3_KS", _QK_K, 102, 2),
    (157, "IQ2_KL", _QK_K, 86, 2),
    (158, "IQ1_KT", _QK_K, 56, 4),
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


def row_header(fmt: str, codec: str) -> int:
    """The header every row of `codec` carries in format `fmt` (Note [Row headers]; safetensors
    dtypes have none)."""
    gtype = GGML_TYPES_BY_NAME.get(codec) if fmt == "gguf" else None
    return gtype.row_header if gtype is not None else 0
