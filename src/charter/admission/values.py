"""The value policy, checked block by block as the payload stage streams a tensor's bytes.

ggml's verdict (Note [Value rules] in charter.formats.values), vectorized with numpy: each value
field of a codec is one strided view over the chunk's blocks, tested on its exponent bits. The
C++ engine scans the same blocks with charter/values.hpp (charter._native.first_bad_value), the
same field table passed in; tests/values checks the two agree block for block. The
payload stage reads every tensor in chunks of whole blocks (`chunk_bytes`), so no block straddles
two chunks and memory stays bounded by one chunk. numpy is imported here, never by the header-only
admission path: charter.admission.runtime imports this module only when a policy checks values.
"""

from __future__ import annotations

import fnmatch
from typing import NamedTuple

import numpy as np

from charter.formats.values import KIND_BYTES, VALUE_FIELDS, ValueField, describe


class BadValue(NamedTuple):
    """The first non-finite value of a chunk: its block (or element) index, field and raw bits."""

    index: int  # the block's index in the tensor (the element's, for a float tensor)
    field: ValueField
    raw: int


_DTYPES = {1: np.uint8, 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}
# The exponent bits of each kind: a value is bad when all of them are set (an infinity or a NaN).
_EXPONENT = {"f16": 0x7C00, "iq1m": 0x7C00, "bf16": 0x7F80, "f32": 0x7F800000, "f64": 0x7FF0000000000000,
             "e8m0": 0xFF}


class TensorValues:
    """The value rule of one tensor: which fields of its blocks must be finite."""

    def __init__(self, name: str, codec: str, fields: tuple[ValueField, ...], block_bytes: int, at: str | None,
                 native=None):
        self.name = name
        self.codec = codec
        self.fields = fields
        self.block_bytes = block_bytes
        self.at = at
        self.element = len(fields) == 1 and fields[0].name == "value"  # a float tensor: blocks are elements
        self._native = native  # charter._native.first_bad_value (the C++ engine), or None: numpy
        self._table = tuple((f.offset, f.kind) for f in fields)

    def chunk_bytes(self, chunk: int) -> int:
        """The largest multiple of the block size that fits a chunk (at least one block)."""
        return max(self.block_bytes, chunk // self.block_bytes * self.block_bytes)

    def first_bad(self, data: bytes, first_block: int) -> BadValue | None:
        """The first bad value among the whole blocks of `data`, whose first block is `first_block`."""
        if self._native is not None:
            hit = self._native(data, self.block_bytes, self._table)
            return None if hit is None else BadValue(first_block + hit[0], self.fields[hit[1]], hit[2])
        found: BadValue | None = None
        for f, bits, bad in self._fields(data):
            if not bad.any():
                continue
            i = int(bad.argmax())
            if found is None or i < found.index - first_block:  # fields are in offset order: ties keep the first
                found = BadValue(first_block + i, f, int(bits[i]))
        return found

    def bad_blocks(self, data: bytes) -> np.ndarray:
        """Per whole block of `data`, whether any of its value fields is bad (the verdict per block)."""
        out = np.zeros(len(data) // self.block_bytes, dtype=bool)
        for _, _, bad in self._fields(data):
            out |= bad
        return out

    def _fields(self, data: bytes):
        """(field, raw bits, bad mask) of each value field over the whole blocks of `data`."""
        n = len(data) // self.block_bytes
        for f in self.fields if n else ():
            bits = _field_bits(data, n, f, self.block_bytes)
            yield f, bits, (bits & _EXPONENT[f.kind]) == _EXPONENT[f.kind]

    def field_path(self, bad: BadValue) -> str:
        if self.element:
            return f"values.{self.name}[{bad.index}]"
        return f"values.{self.name}.blocks[{bad.index}].{bad.field.name}"

    def message(self, bad: BadValue, offset: int) -> str:
        what = describe(bad.field.kind, bad.raw)
        if self.element:
            return f"{self.name}: element {bad.index} ({self.codec}) is {what} at byte {offset}"
        return (f"{self.name}: block {bad.index} of {self.codec}, field {bad.field.name}, is {what} at byte "
                f"{offset}")


def _field_bits(data: bytes, n: int, f: ValueField, block_bytes: int) -> np.ndarray:
    """The raw bits of field `f` in each of the `n` blocks of `data` (a strided view, no copy)."""
    if f.kind == "iq1m":  # the top nibble of each of four uint16 words (ggml's iq1m_scale_t)
        w = [np.ndarray((n,), _DTYPES[2], data, f.offset + 2 * k, (block_bytes,)) for k in range(4)]
        return (w[0] >> 12) | ((w[1] >> 8) & 0x00F0) | ((w[2] >> 4) & 0x0F00) | (w[3] & 0xF000)
    return np.ndarray((n,), _DTYPES[KIND_BYTES[f.kind]], data, f.offset, (block_bytes,))


def tensor_rules(tensors, rules, fmt: str, block_bytes, native: bool = False) -> dict[str, TensorValues]:
    """The tensors whose values the policy checks, by name: the first rule matching a name decides
    (rows of charter.contract.plan.ValueRule, as generated checkers pass them). `native`: the
    blocks are scanned by the C++ runtime (charter/values.hpp), as the C++ engine does."""
    fields = VALUE_FIELDS[fmt]
    scan = None
    if native:
        from charter import _native

        scan = _native.first_bad_value
    out: dict[str, TensorValues] = {}
    for t in tensors:
        rule = next((r for r in rules if any(fnmatch.fnmatchcase(t.name, p) for p in r[1])), None)
        if rule is None or not rule[2] or not fields.get(t.codec):
            continue  # unchecked, or a codec with nothing that can be non-finite (integers, NVFP4)
        out[t.name] = TensorValues(t.name, t.codec, fields[t.codec], block_bytes(t.codec), rule[3], scan)
    return out
