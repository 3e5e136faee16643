"""PLE v1: a fixed-page row store (AFN-003), located affinely: no per-row index.

Store layout (offsets from the start of the store's extent, little-endian):

    [0, 512)                        manifest header (MANIFEST)
    [512, 512 + 32*P)               page table: one SHA-256 per page
    [.., payload_offset)            zero padding to `page_alignment`
    payload_offset + p*page_stride  page p: a 64-byte header (PAGE), then `rows_per_page` rows of
                                    `encoded_row_bytes`, then unused stride bytes

Row r lives in page r // rows_per_page at slot r % rows_per_page. The manifest digest is the SHA-256
of the header (its digest field zeroed), the page table and the padding; page digests cover a whole
physical page; the payload digest covers every page in order (payload facts).
"""

from __future__ import annotations

import hashlib

from charter.language import align_up
from charter.formats.stores.layout import layout

MAGIC = b"PLE1"
HEADS_MAX = 16
MANIFEST = layout(
    "ple manifest", 512,
    ("magic", "4s"), ("version", "I"), ("family", "I"), ("heads", "I"), ("width", "I"), ("row_alignment", "I"),
    ("logical_rows", "Q"), ("padded_rows", "Q"), ("rows_per_page", "I"), ("page_header_bytes", "I"),
    ("encoded_row_bytes", "I"), ("codec_version", "I"), ("group_size", "I"), ("codec_id", "I"),
    ("page_stride", "Q"), ("page_count", "Q"), ("page_table_offset", "Q"), ("payload_offset", "Q"),
    ("page_alignment", "I"), ("reserved", "I"),
    *((f"head_rows[{i}]", "Q") for i in range(HEADS_MAX)),
    ("sha256", "32s"), ("payload_sha256", "32s"),
)
PAGE = layout(
    "ple page header", 64,
    ("page_index", "Q"), ("first_row", "Q"), ("valid_rows", "I"), ("width", "I"), ("encoded_row_bytes", "I"),
    ("rows_per_page", "I"), ("codec_version", "I"), ("group_size", "I"), ("family", "I"),
)
PAGE_TABLE = MANIFEST.size
DIGEST = 32


def geometry(logical_rows: int, row_alignment: int, width: int, group: int, group_bytes: int, rows_per_page: int,
             page_header_bytes: int, page_alignment: int) -> dict:
    padded = align_up(logical_rows, row_alignment)
    row_bytes = width // group * group_bytes
    pages = -(-padded // rows_per_page)
    stride = align_up(page_header_bytes + rows_per_page * row_bytes, page_alignment)
    payload = align_up(PAGE_TABLE + DIGEST * pages, page_alignment)
    return {"padded_rows": padded, "encoded_row_bytes": row_bytes, "page_count": pages, "page_stride": stride,
            "page_table_offset": PAGE_TABLE, "payload_offset": payload, "size": payload + pages * stride}


def page_header(fields: dict, g: dict, page: int) -> dict:
    """What page `page`'s header must repeat."""
    first = page * fields["rows_per_page"]
    return {"page_index": page, "first_row": first,
            "valid_rows": min(fields["rows_per_page"], g["padded_rows"] - first), "width": fields["width"],
            "encoded_row_bytes": g["encoded_row_bytes"], "rows_per_page": fields["rows_per_page"],
            "codec_version": fields["codec_version"], "group_size": fields["group_size"], "family": fields["family"]}


def manifest_digest(header: bytes, table_and_padding: bytes | None = None, chunks=()) -> bytes:
    h = hashlib.sha256()
    zeroed = bytearray(header)
    at = MANIFEST.offset_of("sha256")
    zeroed[at:at + 32] = bytes(32)
    h.update(zeroed)
    if table_and_padding is not None:
        h.update(table_and_padding)
    for chunk in chunks:
        h.update(chunk)
    return h.digest()


def build(fields: dict, head_rows: list[int], group_bytes: int) -> tuple[bytes, dict[int, bytes], int]:
    """(manifest region through the padding, {offset: bytes} of the first and last page headers, size).

    The pages themselves are zeros (a sparse hole), so every page digest is that of a zero page with
    its header; the payload digest is not computed (it is a payload-stage fact) and stays zero."""
    g = geometry(fields["logical_rows"], fields["row_alignment"], fields["width"], fields["group_size"], group_bytes,
                 fields["rows_per_page"], fields["page_header_bytes"], fields["page_alignment"])
    boundary = {}
    for page in sorted({0, g["page_count"] - 1}):
        boundary[g["payload_offset"] + page * g["page_stride"]] = PAGE.pack(page_header(fields, g, page))
    zero_page = hashlib.sha256(bytes(g["page_stride"])).digest()
    table = bytearray(zero_page * g["page_count"])
    for offset, head in boundary.items():
        page = (offset - g["payload_offset"]) // g["page_stride"]
        digest = hashlib.sha256(head + bytes(g["page_stride"] - len(head))).digest()
        table[page * DIGEST:(page + 1) * DIGEST] = digest
    manifest = dict(fields, magic=MAGIC, heads=len(head_rows), padded_rows=g["padded_rows"],
                    encoded_row_bytes=g["encoded_row_bytes"], page_stride=g["page_stride"],
                    page_count=g["page_count"], page_table_offset=PAGE_TABLE, payload_offset=g["payload_offset"],
                    **{f"head_rows[{i}]": r for i, r in enumerate(head_rows)})
    padding = bytes(g["payload_offset"] - PAGE_TABLE - len(table))
    head = MANIFEST.pack(manifest)
    digest = manifest_digest(head, bytes(table) + padding)
    head = MANIFEST.pack(dict(manifest, sha256=digest))
    return head + bytes(table) + padding, boundary, g["size"]
