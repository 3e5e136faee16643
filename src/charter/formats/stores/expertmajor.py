"""ExpertMajor v2: routed-expert records, contiguous by expert, one record per (layer, expert).

Store layout (offsets from the start of the store's extent, little-endian):

    [0, 128)                 manifest (MANIFEST)
    [128, 128 + 64*C)        component table: C entries (COMPONENT), the extents inside a record
    [table, table + 64*R)    record table: R = layers * experts entries (RECORD), layer-major
    [records, ...)           R records of `record_bytes`, each holding the C components back to back

`records` is aligned to `record_alignment`. The manifest digest is the SHA-256 of the manifest
(with its digest field zeroed), the component table and the record table. Each record entry
carries the SHA-256 of its record's bytes (a payload fact).
"""

from __future__ import annotations

import hashlib
import struct

from charter.formats.stores.layout import layout

MAGIC = b"EXMJ"
MANIFEST = layout(
    "expert-major manifest", 128,
    ("magic", "4s"), ("version", "I"), ("family", "I"), ("layers", "I"), ("experts", "I"), ("experts_used", "I"),
    ("components", "I"), ("codec_id", "I"), ("group_size", "I"), ("group_bytes", "I"), ("record_bytes", "Q"),
    ("table_offset", "Q"), ("records_offset", "Q"), ("record_count", "Q"), ("record_alignment", "I"),
    ("reserved", "I"), ("sha256", "32s"),
)
COMPONENT = layout("component", 64, ("name", "16s"), ("ne0", "Q"), ("ne1", "Q"), ("offset", "Q"), ("bytes", "Q"))
RECORD = layout("record", 64, ("layer", "I"), ("expert", "I"), ("offset", "Q"), ("sha256", "32s"))
COMPONENT_TABLE = MANIFEST.size
RECORD_STRUCT = struct.Struct("<IIQ32s16x")  # RECORD's fields, for packing and scanning 24,576 entries fast


def component_bytes(ne0: int, ne1: int, group: int, group_bytes: int) -> int:
    """A component of ne0 x ne1 values in groups along its rows (ne0 must be a whole number of groups)."""
    return ne0 // group * group_bytes * ne1


def geometry(layers: int, experts: int, components: list[tuple[str, int, int]], group: int, group_bytes: int,
             alignment: int) -> dict:
    """Every derived number of a store: what the manifest and tables must say."""
    offset, table = 0, []
    for name, ne0, ne1 in components:
        size = component_bytes(ne0, ne1, group, group_bytes)
        table.append({"name": name, "ne0": ne0, "ne1": ne1, "offset": offset, "bytes": size})
        offset += size
    record_bytes = -(-offset // alignment) * alignment
    count = layers * experts
    table_offset = COMPONENT_TABLE + COMPONENT.size * len(components)
    records_offset = -(-(table_offset + RECORD.size * count) // alignment) * alignment
    return {"components": table, "record_bytes": record_bytes, "record_count": count,
            "table_offset": table_offset, "records_offset": records_offset,
            "size": records_offset + count * record_bytes}


def manifest_digest(manifest: bytes, component_table: bytes, record_table: bytes) -> bytes:
    h = hashlib.sha256()
    zeroed = bytearray(manifest)
    at = MANIFEST.offset_of("sha256")
    zeroed[at:at + 32] = bytes(32)
    h.update(zeroed)
    h.update(component_table)
    h.update(record_table)
    return h.digest()


def name_bytes(name: str) -> bytes:
    return name.encode("ascii")[:16].ljust(16, b"\0")


def name_of(raw: bytes) -> str:
    return raw.rstrip(b"\0").decode("ascii", "replace")


def build(fields: dict, components: list[tuple[str, int, int]], record_sha256: bytes) -> tuple[bytes, int]:
    """The manifest region (manifest + both tables + padding to the records) and the store size.

    `fields` holds version, family, layers, experts, experts_used, codec_id, group_size,
    group_bytes and record_alignment; every record is stated to hold `record_sha256`."""
    g = geometry(fields["layers"], fields["experts"], components, fields["group_size"], fields["group_bytes"],
                 fields["record_alignment"])
    comp = b"".join(COMPONENT.pack({**c, "name": name_bytes(c["name"])}) for c in g["components"])
    rec = bytearray(RECORD.size * g["record_count"])
    for i in range(g["record_count"]):
        RECORD_STRUCT.pack_into(rec, i * RECORD.size, i // fields["experts"], i % fields["experts"],
                                g["records_offset"] + i * g["record_bytes"], record_sha256)
    manifest = dict(fields, magic=MAGIC, components=len(components), record_bytes=g["record_bytes"],
                    table_offset=g["table_offset"], records_offset=g["records_offset"],
                    record_count=g["record_count"], sha256=bytes(32))
    head = MANIFEST.pack(manifest)
    digest = manifest_digest(head, comp, bytes(rec))
    head = MANIFEST.pack(dict(manifest, sha256=digest))
    region = head + comp + bytes(rec)
    return region + bytes(g["records_offset"] - len(region)), g["size"]
