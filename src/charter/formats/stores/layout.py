"""Fixed little-endian record layouts, declared once and used to pack, parse and patch.

A layout is an ordered table of (field, struct code, offset). Parsing never trusts a length from
the bytes: every layout has a fixed size and the caller bounds every table by the extent that
holds it before reading (Note [Store extents] in charter.formats.stores).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    name: str
    size: int
    fields: tuple[tuple[str, str, int], ...]  # (field, struct code without '<', offset)

    def offset_of(self, field: str) -> int:
        for name, _, offset in self.fields:
            if name == field:
                return offset
        raise KeyError(field)

    def code_of(self, field: str) -> str:
        for name, code, _ in self.fields:
            if name == field:
                return code
        raise KeyError(field)

    def parse(self, raw: bytes | memoryview, at: int = 0) -> dict:
        out = {}
        for name, code, offset in self.fields:
            (value,) = struct.unpack_from("<" + code, raw, at + offset)
            out[name] = value
        return out

    def pack(self, values: dict) -> bytes:
        out = bytearray(self.size)
        for name, code, offset in self.fields:
            struct.pack_into("<" + code, out, offset, values.get(name, b"" if code.endswith("s") else 0))
        return bytes(out)


def layout(name: str, size: int, *fields: tuple[str, str]) -> Layout:
    """Fields laid out in order from offset 0; `size` pads the record (and must hold them all)."""
    table, offset = [], 0
    for field, code in fields:
        table.append((field, code, offset))
        offset += struct.calcsize("<" + code)
    if offset > size:
        raise ValueError(f"{name}: fields take {offset} bytes, more than {size}")
    return Layout(name, size, tuple(table))
