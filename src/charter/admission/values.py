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

from charter.diagnostics import Code
from charter.formats.values import INTEGER_ELEMENTS, KIND_BYTES, VALUE_FIELDS, IntegerElement, ValueField, describe


BOTH = "both"  # native_values: every chunk scanned by numpy and by charter/values.hpp, compared


class ScannersDisagree(Exception):
    """numpy and charter/values.hpp found different first bad values in one chunk (native_values
    BOTH: the mutation battery's run of the payload stage as both engines run it, streamed once)."""


def _compared(name: str, python, native):
    """`python`'s finding, if `native` found the same one."""
    if python != native:
        raise ScannersDisagree(f"engines disagree on the values of {name}: python {python} / c++ {native}")
    return python


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
                 native=None, compare: bool = False):
        self.name = name
        self.codec = codec
        self.fields = fields
        self.block_bytes = block_bytes
        self.at = at
        self.element = len(fields) == 1 and fields[0].name == "value"  # a float tensor: blocks are elements
        self._native = native  # charter._native.first_bad_value (the C++ engine), or None: numpy
        self._compare = compare  # both scans, compared (BOTH)
        self._table = tuple((f.offset, f.kind) for f in fields)

    def chunk_bytes(self, chunk: int) -> int:
        """The largest multiple of the block size that fits a chunk (at least one block)."""
        return max(self.block_bytes, chunk // self.block_bytes * self.block_bytes)

    def first_bad(self, data: bytes, first_block: int) -> BadValue | None:
        """The first bad value among the whole blocks of `data`, whose first block is `first_block`."""
        if self._native is not None:
            hit = self._native(data, self.block_bytes, self._table)
            native = None if hit is None else BadValue(first_block + hit[0], self.fields[hit[1]], hit[2])
            return _compared(self.name, self._numpy_first_bad(data, first_block), native) if self._compare else native
        return self._numpy_first_bad(data, first_block)

    def _numpy_first_bad(self, data: bytes, first_block: int) -> BadValue | None:
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

    def finding(self, bad: BadValue, start: int) -> tuple:
        """Context.fail's arguments for `bad`, in the tensor whose extent starts at file byte `start`."""
        offset = start + bad.index * self.block_bytes + bad.field.offset
        return Code.PAYLOAD_VALUE, self.field_path(bad), self.message(bad, offset), self.at, "finite", \
            describe(bad.field.kind, bad.raw), offset

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


class OutOfBounds(NamedTuple):
    """The first element of a chunk outside its tensor's bounds: its index in the tensor, its value."""

    index: int
    value: int


_INTEGER_DTYPES = {f"{sign}{bits}": np.dtype(f"<{sign}{bits // 8}") for sign in "iu" for bits in (8, 16, 32, 64)}


class TensorBounds:
    """The bounds of one integer tensor (Note [Value bounds] in charter.formats.values): every
    element in [lo, hi]; a side the rule leaves open is the codec's own extreme."""

    def __init__(self, name: str, codec: str, element: IntegerElement, rule, native=None, compare: bool = False):
        self.name = name
        self.codec = codec
        self.block_bytes = element.bytes  # one element per block: the payload stage's chunking
        self.kind = element.kind
        _, _, self.min, self.max, self.min_at, self.max_at = rule
        dtype = _INTEGER_DTYPES[element.kind]
        info = np.iinfo(dtype)
        self.lo = info.min if self.min is None else self.min
        self.hi = info.max if self.max is None else self.max
        self._dtype = dtype
        self._bounds = (dtype.type(self.lo), dtype.type(self.hi))
        self._native = native  # charter._native.first_out_of_bounds (the C++ engine), or None: numpy
        self._compare = compare  # both scans, compared (BOTH)

    def chunk_bytes(self, chunk: int) -> int:
        return max(self.block_bytes, chunk // self.block_bytes * self.block_bytes)

    def first_bad(self, data: bytes, first: int) -> OutOfBounds | None:
        """The first element of the whole elements of `data` outside [lo, hi]; `first` is the index
        of its first element in the tensor."""
        if self._native is not None:
            hit = self._native(data, self.kind, self.lo, self.hi)
            native = None if hit is None else OutOfBounds(first + hit[0], hit[1])
            return _compared(self.name, self._numpy_first_bad(data, first), native) if self._compare else native
        return self._numpy_first_bad(data, first)

    def _numpy_first_bad(self, data: bytes, first: int) -> OutOfBounds | None:
        a = np.frombuffer(data, self._dtype, len(data) // self.block_bytes)
        lo, hi = self._bounds
        bad = (a < lo) | (a > hi)
        if not bad.any():
            return None
        i = int(bad.argmax())
        return OutOfBounds(first + i, int(a[i]))

    def finding(self, bad: OutOfBounds, start: int) -> tuple:
        """Context.fail's arguments for `bad`: the bound it breaks is the fact it cites."""
        offset = start + bad.index * self.block_bytes
        below = bad.value < self.lo  # pragma: no mutate -- a value at its bound is never out of bounds: < and <= agree
        side, bound, at = ("min", self.lo, self.min_at) if below else ("max", self.hi, self.max_at)
        message = (f"{self.name}: element {bad.index} ({self.codec}) is {bad.value} at byte {offset}, "
                   f"{'below' if below else 'above'} the bound {side} {bound}")
        return Code.PAYLOAD_BOUND, f"values.{self.name}[{bad.index}]", message, at, \
            f"{'>=' if below else '<='} {bound}", str(bad.value), offset


def _first_rule(name: str, rules):
    """The first row whose patterns (its second field) match `name`, or None: the policy's order decides."""
    return next((r for r in rules if any(fnmatch.fnmatchcase(name, p) for p in r[1])), None)


def tensor_bounds(tensors, bounds, fmt: str, native: bool | str = False) -> dict[str, TensorBounds]:
    """The bounded tensors by name (rows of charter.contract.plan.BoundRule, as generated checkers
    pass them; `charter check` made sure each tensor has one bound and an integer codec). `native`:
    the elements are scanned by the C++ runtime (charter/values.hpp), as the C++ engine does; BOTH:
    by numpy too, the two compared."""
    integers = INTEGER_ELEMENTS[fmt]
    scan = None
    if native:
        from charter import _native

        scan = _native.first_out_of_bounds
    out: dict[str, TensorBounds] = {}
    for t in tensors:
        rule = _first_rule(t.name, bounds)
        if rule is not None and t.codec in integers:
            out[t.name] = TensorBounds(t.name, t.codec, integers[t.codec], rule, scan, native == BOTH)
    return out


def _field_bits(data: bytes, n: int, f: ValueField, block_bytes: int) -> np.ndarray:
    """The raw bits of field `f` in each of the `n` blocks of `data` (a strided view, no copy)."""
    if f.kind == "iq1m":  # the top nibble of each of four uint16 words (ggml's iq1m_scale_t)
        w = [np.ndarray((n,), _DTYPES[2], data, f.offset + 2 * k, (block_bytes,)) for k in range(4)]
        return (w[0] >> 12) | ((w[1] >> 8) & 0x00F0) | ((w[2] >> 4) & 0x0F00) | (w[3] & 0xF000)
    return np.ndarray((n,), _DTYPES[KIND_BYTES[f.kind]], data, f.offset, (block_bytes,))


def tensor_rules(tensors, rules, fmt: str, block_bytes, native: bool | str = False) -> dict[str, TensorValues]:
    """The tensors whose values the policy checks, by name: the first rule matching a name decides
    (rows of charter.contract.plan.ValueRule, as generated checkers pass them). `native`: the
    blocks are scanned by the C++ runtime (charter/values.hpp), as the C++ engine does; BOTH: by
    numpy too, the two compared."""
    fields = VALUE_FIELDS[fmt]
    scan = None
    if native:
        from charter import _native

        scan = _native.first_bad_value
    out: dict[str, TensorValues] = {}
    for t in tensors:
        rule = _first_rule(t.name, rules)
        if rule is None or not rule[2] or not fields.get(t.codec):
            continue  # unchecked, or a codec with nothing that can be non-finite (integers, NVFP4)
        out[t.name] = TensorValues(t.name, t.codec, fields[t.codec], block_bytes(t.codec), rule[3], scan,
                                   native == BOTH)
    return out
