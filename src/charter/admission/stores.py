"""The `stores` stage: embedded store manifests and geometry (Note [Store extents]).

Each check reads only the store's manifest region through `ctx.read`, bounded by the extent of
the tensor that holds the store, and compares it with the contract's literals in a fixed order:
identity fields (STORE_MANIFEST), derived geometry and tables (STORE_GEOMETRY), then digests
(STORE_DIGEST). Tables are checked by loops, whatever their length.
"""

from __future__ import annotations

from charter.diagnostics import Code
from charter.formats.stores import expertmajor as em
from charter.formats.stores import ple

MAX_TABLE_BYTES = 256 * 1024 * 1024  # a manifest table larger than this is refused, not read
CHUNK = 1 << 20


def _extent(ctx, name: str, tensor: str, need: int, at):
    t = ctx.tensor_named(tensor)
    if t is None or t.end - t.start < need:
        have = 0 if t is None else t.end - t.start
        ctx.fail(Code.STORE_GEOMETRY, f"stores.{name}.size", f"{tensor} holds {have} bytes, fewer than the "
                 f"{need}-byte manifest", at, f">= {need}", have, None if t is None else t.start)
    return t


def _fields(ctx, name: str, manifest: dict, expected, base: int, layout, code=Code.STORE_MANIFEST,
            prefix: str = "manifest") -> None:
    for field, value, at in expected:
        if manifest[field] != value:
            ctx.mismatch(code, f"stores.{name}.{prefix}.{field}", value, manifest[field], at,
                         base + layout.offset_of(field))


def _bounded(ctx, name: str, t, start: int, length: int, what: str, at):
    if length > MAX_TABLE_BYTES or start + length > t.end - t.start:
        ctx.fail(Code.STORE_GEOMETRY, f"stores.{name}.{what}", f"the {what} [{start}, {start + length}) does not fit "
                 f"in {t.end - t.start} bytes (or exceeds {MAX_TABLE_BYTES})", at, f"<= {t.end - t.start}",
                 start + length, t.start)


def expert_major(ctx, name: str, tensor: str, fields, components, at) -> None:
    t = _extent(ctx, name, tensor, em.MANIFEST.size, at)
    base = t.start
    head = ctx.read(base, em.MANIFEST.size)
    manifest = em.MANIFEST.parse(head)
    if manifest["magic"] != em.MAGIC:
        ctx.mismatch(Code.STORE_MANIFEST, f"stores.{name}.manifest.magic", em.MAGIC, manifest["magic"], at, base)
    _fields(ctx, name, manifest, fields, base, em.MANIFEST)
    if manifest["components"] != len(components):
        ctx.mismatch(Code.STORE_MANIFEST, f"stores.{name}.manifest.components", len(components),
                     manifest["components"], at, base + em.MANIFEST.offset_of("components"))
    want = {f: v for f, v, _ in fields}
    g = em.geometry(want["layers"], want["experts"], [c[:3] for c in components], want["group_size"],
                    want["group_bytes"], want["record_alignment"])
    derived = [(f, g[f], at) for f in ("record_bytes", "table_offset", "records_offset", "record_count")]
    _fields(ctx, name, manifest, derived, base, em.MANIFEST, Code.STORE_GEOMETRY)
    if t.end - t.start != g["size"]:
        ctx.mismatch(Code.STORE_GEOMETRY, f"stores.{name}.size", g["size"], t.end - t.start, at, t.offset)
    _bounded(ctx, name, t, em.COMPONENT_TABLE, em.COMPONENT.size * len(components), "components", at)
    comp_raw = ctx.read(base + em.COMPONENT_TABLE, em.COMPONENT.size * len(components))
    for i, (expect, (_, _, _, comp_at)) in enumerate(zip(g["components"], components)):
        entry = em.COMPONENT.parse(comp_raw, i * em.COMPONENT.size)
        entry["name"] = em.name_of(entry["name"])
        for field in ("name", "ne0", "ne1", "offset", "bytes"):
            if entry[field] != expect[field]:
                ctx.mismatch(Code.STORE_GEOMETRY, f"stores.{name}.components[{i}].{field}", expect[field],
                             entry[field], comp_at,
                             base + em.COMPONENT_TABLE + i * em.COMPONENT.size + em.COMPONENT.offset_of(field))
    table_len = em.RECORD.size * g["record_count"]
    _bounded(ctx, name, t, g["table_offset"], table_len, "records", at)
    table = ctx.read(base + g["table_offset"], table_len)
    experts, first, stride = want["experts"], g["records_offset"], g["record_bytes"]
    for i, (layer, expert, offset, _) in enumerate(em.RECORD_STRUCT.iter_unpack(table)):
        if layer != i // experts or expert != i % experts or offset != first + i * stride:
            field, value, expected = next((f, v, e) for f, v, e in (
                ("layer", layer, i // experts), ("expert", expert, i % experts), ("offset", offset, first + i * stride))
                if v != e)
            ctx.mismatch(Code.STORE_GEOMETRY, f"stores.{name}.records[{i}].{field}", expected, value, at,
                         base + g["table_offset"] + i * em.RECORD.size + em.RECORD.offset_of(field))
    digest = em.manifest_digest(head, comp_raw, table)
    if digest != manifest["sha256"]:
        ctx.mismatch(Code.STORE_DIGEST, f"stores.{name}.manifest.sha256", digest.hex(), manifest["sha256"].hex(), at,
                     base + em.MANIFEST.offset_of("sha256"))


def ple_rows(ctx, name: str, tensor: str, fields, head_rows, at) -> None:
    t = _extent(ctx, name, tensor, ple.MANIFEST.size, at)
    base = t.start
    head = ctx.read(base, ple.MANIFEST.size)
    manifest = ple.MANIFEST.parse(head)
    if manifest["magic"] != ple.MAGIC:
        ctx.mismatch(Code.STORE_MANIFEST, f"stores.{name}.manifest.magic", ple.MAGIC, manifest["magic"], at, base)
    _fields(ctx, name, manifest, [f for f in fields if f[0] != "group_bytes"], base, ple.MANIFEST)
    rows = [(f"head_rows[{i}]", value, row_at) for i, (value, row_at) in enumerate(head_rows)]
    rows += [(f"head_rows[{i}]", 0, at) for i in range(len(head_rows), ple.HEADS_MAX)]
    _fields(ctx, name, manifest, rows, base, ple.MANIFEST)
    want = {f: v for f, v, _ in fields}
    g = ple.geometry(want["logical_rows"], want["row_alignment"], want["width"], want["group_size"],
                     want["group_bytes"], want["rows_per_page"], want["page_header_bytes"], want["page_alignment"])
    derived = [(f, g[f], at) for f in ("padded_rows", "encoded_row_bytes", "page_count", "page_stride",
                                       "page_table_offset", "payload_offset")]
    _fields(ctx, name, manifest, derived, base, ple.MANIFEST, Code.STORE_GEOMETRY)
    if t.end - t.start != g["size"]:
        ctx.mismatch(Code.STORE_GEOMETRY, f"stores.{name}.size", g["size"], t.end - t.start, at, t.offset)
    region = g["payload_offset"] - ple.PAGE_TABLE
    _bounded(ctx, name, t, ple.PAGE_TABLE, region, "page_table", at)
    digest = ple.manifest_digest(head, chunks=_chunks(ctx, base + ple.PAGE_TABLE, region))
    if digest != manifest["sha256"]:
        ctx.mismatch(Code.STORE_DIGEST, f"stores.{name}.manifest.sha256", digest.hex(), manifest["sha256"].hex(), at,
                     base + ple.MANIFEST.offset_of("sha256"))
    for page in sorted({0, g["page_count"] - 1}):
        offset = base + g["payload_offset"] + page * g["page_stride"]
        actual = ple.PAGE.parse(ctx.read(offset, ple.PAGE.size))
        for field, value in ple.page_header(want, g, page).items():
            if actual[field] != value:
                ctx.mismatch(Code.STORE_GEOMETRY, f"stores.{name}.pages[{page}].{field}", value, actual[field], at,
                             offset + ple.PAGE.offset_of(field))


def _chunks(ctx, start: int, length: int):
    pos, end = start, start + length
    while pos < end:
        n = min(CHUNK, end - pos)
        yield ctx.read(pos, n)
        pos += n
