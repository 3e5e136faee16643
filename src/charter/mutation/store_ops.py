"""Artifact mutation operators for embedded stores: change one field of a store's manifest region.

Store bytes live in the data section, so these mutants keep the header and carry byte patches
(absolute offset -> bytes) that the battery overlays on the conforming artifact. Unless the
operator targets a digest, the manifest digest is recomputed after the edit: a field check, not
the digest, must catch the change.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from charter.diagnostics import Code
from charter.mutation import oracle
from charter.mutation.mutant import Expect, Mutant
from charter.contract.plan import ArtifactPlan, StorePlan, value_of
from charter.formats.stores import expertmajor as em
from charter.formats.stores import ple

def mutants(h, raw: bytes, plan: ArtifactPlan, read) -> Iterator[Mutant]:
    """`read(offset, length) -> bytes` reads the conforming artifact (the battery's overlay reader)."""
    extents = {t.name: t for t in h.tensors}
    for store in plan.stores:
        t = extents.get(store.tensor)
        if t is None:
            continue
        if store.kind == "expert-major-v2":
            yield from _expert_major(raw, h.file_size, store, t.start, read)
        else:
            yield from _ple(raw, h.file_size, store, t.start, read)
        yield from _overlap(h, raw, plan, t)


def _patched(raw: bytes, size: int, patches: dict[int, bytes]):
    return lambda: (raw, size, patches)


def _field(layout, field: str, value) -> bytes:
    return struct.pack("<" + layout.code_of(field), value)


# --- ExpertMajor ------------------------------------------------------------------------------


def _expert_major(raw: bytes, size: int, s: StorePlan, base: int, read) -> Iterator[Mutant]:
    head = read(base, em.MANIFEST.size)
    manifest = em.MANIFEST.parse(head)
    comp_raw = read(base + em.COMPONENT_TABLE, em.COMPONENT.size * manifest["components"])
    table = bytearray(read(base + manifest["table_offset"], em.RECORD.size * manifest["record_count"]))
    target = f"stores.{s.name}"
    identity = [f for f, _, _ in s.fields]

    def with_digest(new_head: bytes, new_comp: bytes, new_table: bytes, extra: dict | None = None) -> dict:
        digest = em.manifest_digest(new_head, new_comp, new_table)
        at = em.MANIFEST.offset_of("sha256")
        fixed = new_head[:at] + digest + new_head[at + 32:]
        patches = {base: fixed}
        patches.update(extra or {})
        return patches

    def manifest_edit(field: str, value) -> dict:
        at = em.MANIFEST.offset_of(field)
        new = head[:at] + _field(em.MANIFEST, field, value) + head[at + len(_field(em.MANIFEST, field, value)):]
        return with_digest(new, comp_raw, bytes(table))

    yield Mutant("artifact", f"{target}.manifest.magic", "edit",
                 Expect.of(Code.STORE_MANIFEST, f"{target}.manifest.magic"),
                 _patched(raw, size, manifest_edit("magic", b"EXMK")))
    for field in identity + ["components"]:
        yield Mutant("artifact", f"{target}.manifest.{field}", "+1",
                     Expect.of(Code.STORE_MANIFEST, f"{target}.manifest.{field}"),
                     _patched(raw, size, manifest_edit(field, manifest[field] + 1)))
    for field in ("record_bytes", "table_offset", "records_offset", "record_count"):
        yield Mutant("artifact", f"{target}.manifest.{field}", "+1",
                     Expect.of(Code.STORE_GEOMETRY, f"{target}.manifest.{field}"),
                     _patched(raw, size, manifest_edit(field, manifest[field] + 1)))
    for i in range(manifest["components"]):
        entry = em.COMPONENT.parse(comp_raw, i * em.COMPONENT.size)
        for field in ("name", "ne0", "ne1", "offset", "bytes"):
            new_comp = bytearray(comp_raw)
            at = i * em.COMPONENT.size + em.COMPONENT.offset_of(field)
            value = b"gatf".ljust(16, b"\0") if field == "name" else _field(em.COMPONENT, field, entry[field] + 1)
            new_comp[at:at + len(value)] = value
            patches = with_digest(head, bytes(new_comp), bytes(table), {base + em.COMPONENT_TABLE: bytes(new_comp)})
            yield Mutant("artifact", f"{target}.components[{i}].{field}", "edit",
                         Expect.of(Code.STORE_GEOMETRY, f"{target}.components[{i}].{field}"),
                         _patched(raw, size, patches))
    count = manifest["record_count"]
    experts = manifest["experts"]
    for i in sorted({0, count // 2, count - 1}):
        entry = em.RECORD_STRUCT.unpack_from(table, i * em.RECORD.size)
        for k, field in enumerate(("layer", "expert", "offset")):
            new_table = bytearray(table)
            at = i * em.RECORD.size + em.RECORD.offset_of(field)
            new_table[at:at + len(_field(em.RECORD, field, 0))] = _field(em.RECORD, field, entry[k] + 1)
            patches = with_digest(head, comp_raw, bytes(new_table), {base + manifest["table_offset"]: bytes(new_table)})
            yield Mutant("artifact", f"{target}.records[{i}].{field}", "+1",
                         Expect.of(Code.STORE_GEOMETRY, f"{target}.records[{i}].{field}"),
                         _patched(raw, size, patches))
    # Layer id order: swap the layer ids of the first records of two layers.
    if count > experts:
        new_table = bytearray(table)
        a, b = 0, experts * em.RECORD.size
        new_table[a:a + 4], new_table[b:b + 4] = table[b:b + 4], table[a:a + 4]
        patches = with_digest(head, comp_raw, bytes(new_table), {base + manifest["table_offset"]: bytes(new_table)})
        yield Mutant("artifact", f"{target}.records", "swap layer ids of layers 0 and 1",
                     Expect.of(Code.STORE_GEOMETRY, f"{target}.records[0].layer"), _patched(raw, size, patches))
    # Digests: a record checksum (covered by the manifest digest) and the manifest digest itself.
    new_table = bytearray(table)
    new_table[em.RECORD.offset_of("sha256")] ^= 1
    yield Mutant("artifact", f"{target}.records[0].sha256", "flip one bit",
                 Expect.of(Code.STORE_DIGEST, f"{target}.manifest.sha256"),
                 _patched(raw, size, {base + manifest["table_offset"]: bytes(new_table)}))
    at = em.MANIFEST.offset_of("sha256")
    yield Mutant("artifact", f"{target}.manifest.sha256", "flip one bit",
                 Expect.of(Code.STORE_DIGEST, f"{target}.manifest.sha256"),
                 _patched(raw, size, {base + at: bytes([head[at] ^ 1])}))


# --- PLE --------------------------------------------------------------------------------------


def _ple(raw: bytes, size: int, s: StorePlan, base: int, read) -> Iterator[Mutant]:
    head = read(base, ple.MANIFEST.size)
    manifest = ple.MANIFEST.parse(head)
    region = manifest["payload_offset"] - ple.PAGE_TABLE
    tail = read(base + ple.PAGE_TABLE, region)
    target = f"stores.{s.name}"

    def manifest_edit(changes: dict) -> dict:
        new = bytearray(head)
        for field, value in changes.items():
            packed = _field(ple.MANIFEST, field, value)
            at = ple.MANIFEST.offset_of(field)
            new[at:at + len(packed)] = packed
        digest = ple.manifest_digest(bytes(new), tail)
        at = ple.MANIFEST.offset_of("sha256")
        new[at:at + 32] = digest
        return {base: bytes(new)}

    yield Mutant("artifact", f"{target}.manifest.magic", "edit",
                 Expect.of(Code.STORE_MANIFEST, f"{target}.manifest.magic"),
                 _patched(raw, size, manifest_edit({"magic": b"PLE2"})))
    for field, _, _ in s.fields:
        if field == "group_bytes":
            continue
        yield Mutant("artifact", f"{target}.manifest.{field}", "+1",
                     Expect.of(Code.STORE_MANIFEST, f"{target}.manifest.{field}"),
                     _patched(raw, size, manifest_edit({field: manifest[field] + 1})))
    heads = len(s.head_rows)
    for i in sorted({0, heads - 1}):
        key = f"head_rows[{i}]"
        yield Mutant("artifact", f"{target}.manifest.{key}", "+1",
                     Expect.of(Code.STORE_MANIFEST, f"{target}.manifest.{key}"),
                     _patched(raw, size, manifest_edit({key: manifest[key] + 1})))
    if heads > 1:
        yield Mutant("artifact", f"{target}.manifest.head_rows", "move one row between heads (sum kept)",
                     Expect.of(Code.STORE_MANIFEST, f"{target}.manifest.head_rows[0]"),
                     _patched(raw, size, manifest_edit({"head_rows[0]": manifest["head_rows[0]"] + 1,
                                                        "head_rows[1]": manifest["head_rows[1]"] - 1})))
    for field in ("padded_rows", "encoded_row_bytes", "page_count", "page_stride", "page_table_offset",
                  "payload_offset"):
        yield Mutant("artifact", f"{target}.manifest.{field}", "+1",
                     Expect.of(Code.STORE_GEOMETRY, f"{target}.manifest.{field}"),
                     _patched(raw, size, manifest_edit({field: manifest[field] + 1})))
    new_tail = bytearray(tail)
    new_tail[0] ^= 1
    yield Mutant("artifact", f"{target}.page_table[0]", "flip one bit",
                 Expect.of(Code.STORE_DIGEST, f"{target}.manifest.sha256"),
                 _patched(raw, size, {base + ple.PAGE_TABLE: bytes(new_tail[:32])}))
    at = ple.MANIFEST.offset_of("sha256")
    yield Mutant("artifact", f"{target}.manifest.sha256", "flip one bit",
                 Expect.of(Code.STORE_DIGEST, f"{target}.manifest.sha256"),
                 _patched(raw, size, {base + at: bytes([head[at] ^ 1])}))
    pages = manifest["page_count"]
    for page in sorted({0, pages - 1}):
        offset = base + manifest["payload_offset"] + page * manifest["page_stride"]
        header = ple.PAGE.parse(read(offset, ple.PAGE.size))
        for field, _, _ in ple.PAGE.fields:
            yield Mutant("artifact", f"{target}.pages[{page}].{field}", "+1",
                         Expect.of(Code.STORE_GEOMETRY, f"{target}.pages[{page}].{field}"),
                         _patched(raw, size, {offset + ple.PAGE.offset_of(field):
                                              _field(ple.PAGE, field, header[field] + 1)}))


# --- ownership --------------------------------------------------------------------------------


def _overlap(h, raw: bytes, plan: ArtifactPlan, store_tensor) -> Iterator[Mutant]:
    """A dense extent that reaches into the store: one owner per byte range (AFN-004)."""
    from charter.mutation.gguf_ops import _replace_tensor, rebuild

    ordered = sorted(h.tensors, key=lambda t: t.start)
    index = ordered.index(store_tensor)
    if index == 0:
        return
    dense = ordered[index - 1]
    shift = store_tensor.start - dense.start  # the dense tensor now starts where the store starts
    i = h.tensors.index(dense)
    spans = [(t.name, t.start + (shift if t is dense else 0), t.end + (shift if t is dense else 0)) for t in h.tensors]
    expect = (Expect.of(Code.CONTAINER_EXTENT, f"tensors.{dense.name}.offset")
              if dense.end + shift > h.file_size else oracle.layout(spans, h.data_offset, h.file_size,
                                                                    value_of(plan.alignment), plan.layout.policy()))
    yield Mutant("artifact", f"tensors.{dense.name}", f"dense extent into {store_tensor.name}", expect,
                 lambda: rebuild(h, tensors=_replace_tensor(h, i, offset=dense.offset + shift)))
