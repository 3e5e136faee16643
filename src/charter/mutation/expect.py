"""Predict where a mutated contract rejects the unchanged artifact, from the checks that changed.

The generated checker's checks (charter.codegen.python.build.checks) are compared before and
after the mutation. Each changed check is evaluated against the conforming artifact by the rules
of its stage (Note [Ordered admission]); the first that must fail is the expectation. No changed
check means no generated code enforces the leaf: the mutant is expected to survive, and does
unless the operator declared it equivalent.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from charter.admission.view import ArtifactView
from charter.codegen.python.build import Check
from charter.floatbits import float_bits
from charter.mutation import oracle
from charter.mutation.mutant import Expect

STATUS_ORDER = ("structural", "pinned-not-supported", "supported")
_LOCATION = re.compile(r".+\.ya?ml:\d+(:\d+)?$")


@dataclass(frozen=True)
class Prediction:
    changed: tuple[Check, ...]  # the checks whose literals changed (the generated code enforcing the leaf)
    expect: Expect | None  # None: every changed check still holds for this artifact


def _plain(value):
    """A check's arguments without contract locations (moving a fact is not changing it)."""
    if isinstance(value, str) and _LOCATION.match(value):
        return "@"
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, float):  # by its bits: every NaN prints `nan` (Note [Float bits])
        return ("float", float_bits("float64", value))
    return value


def _key(c: Check) -> tuple:
    return (c.stage, c.method, repr(_plain(c.args)))


def predict(before: list[Check], after: list[Check], view: ArtifactView, require_status: str | None,
            beside: Path | None = None) -> Prediction:
    """Changed checks are those of `after` that `before` does not have (order-insensitive, so
    dropping one check does not make every later one look changed), plus checks `before` had that
    are gone (they enforced the leaf; losing one relaxes the checker). `beside`: the artifact's
    folder, where a contract's companion config is read."""
    old = {_key(c) for c in before}
    new = {_key(c) for c in after}
    added = [c for c in after if _key(c) not in old]
    removed = [c for c in before if _key(c) not in new]
    excluded = next((c.args[0] for c in after if c.method == "exclude"), ())
    previous = {(c.stage, c.method, _store_name(c)): c for c in before}
    for c in added:
        expect = _evaluate(c, view, require_status, excluded, previous.get((c.stage, c.method, _store_name(c))),
                           beside)
        if expect is not None:
            return Prediction(tuple(added + removed), expect)
    return Prediction(tuple(added + removed), None)


def _config(file: str, facts: tuple, beside: Path | None) -> Expect | None:
    """The companion config's rules (Context.config) over the JSON beside the artifact, in fact
    order; without the artifact's folder, all that can be said is that the stage rejects."""
    if beside is None:
        return Expect("metadata", None, None)
    try:
        data = json.loads((beside / file).read_text("utf-8"))
    except (OSError, ValueError):
        return Expect("metadata", "METADATA_CONFIG", "config")
    json_types = {bool: "bool", int: "int64", float: "float64", str: "string"}
    for key, ctype, expected, _ in facts:
        node = data
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return Expect("metadata", "METADATA_MISSING", f"config.{key}")
            node = node[part]
        if json_types.get(type(node)) != ctype:
            return Expect("metadata", "METADATA_TYPE", f"config.{key}")
        if not (_same_float("float64", node, expected) if ctype == "float64" else node == expected):
            return Expect("metadata", "METADATA_VALUE", f"config.{key}")
    return None


def _same_float(ctype: str, a: float, b: float) -> bool:
    return float_bits(ctype, a) == float_bits(ctype, b)


def _evaluate(c: Check, v: ArtifactView, require_status: str | None, excluded: tuple[str, ...],
              previous: Check | None, beside: Path | None = None) -> Expect | None:
    """Would this check, with these literals, reject the artifact? (stage rules, not the runtime)"""
    a = c.args
    m = c.method
    if m == "container_format":
        return Expect("container", "CONTAINER_FORMAT", "format") if a[0] != v.format else None
    if m == "container_version":
        return Expect("container", "CONTAINER_VERSION", "container.version") if a[0] != v.version else None
    if m == "container_alignment":
        return Expect("container", "CONTAINER_ALIGNMENT", "container.alignment") if a[0] != v.alignment else None
    if m == "container_header_aligned":
        return Expect("container", "CONTAINER_HEADER", "container.header_aligned") \
            if a[0] != v.header_len_aligned else None
    if m == "identity":
        key, value = a[0], a[1]
        entry = v.meta.get(key)
        if entry is None:
            return Expect("identity", "IDENTITY_MISSING", f"identity.{key}")
        if entry.type != "string" or entry.value != value:
            code = "IDENTITY_ARCHITECTURE" if key.endswith(".architecture") and entry.type == "string" \
                else "IDENTITY_MISMATCH"
            return Expect("identity", code, f"identity.{key}")
        return None
    if m == "meta_types":
        for key, ctype, element, _ in a[0]:
            entry = v.meta.get(key)
            if entry is None:
                return Expect("metadata", "METADATA_MISSING", f"metadata.{key}")
            if entry.type != ctype:
                return Expect("metadata", "METADATA_TYPE", f"metadata.{key}")
            if element is not None and entry.element != element:
                return Expect("metadata", "METADATA_TYPE", f"metadata.{key}.element")
        return None
    if m == "meta_key_set":
        pinned, forbidden, extra = set(a[0]), a[1], a[2]
        for key, _ in forbidden:
            if key in v.meta:
                return Expect("metadata", "METADATA_FORBIDDEN", f"metadata.{key}")
        if extra == "reject":
            for key in v.meta:
                if key not in pinned and not (v.format == "gguf" and key == "general.alignment"):
                    return Expect("metadata", "METADATA_UNEXPECTED", f"metadata.{key}")
        return None
    if m == "value":
        stage, key, ctype, value = a[0], a[1], a[2], a[3]
        actual = v.meta[key].value
        same = _same_float(ctype, actual, value) if ctype in ("float32", "float64") else (
            actual == value and type(actual) is type(value))
        return None if same else Expect(stage, f"{stage.upper()}_VALUE", f"{stage}.{key}")
    if m == "string_digest":
        import hashlib

        stage, key, sha = a[0], a[1], a[2]
        actual = hashlib.sha256(v.meta[key].value.encode("utf-8")).hexdigest()
        return None if actual == sha else Expect(stage, f"{stage.upper()}_DIGEST", f"{stage}.{key}.sha256")
    if m == "array":
        stage, key, length, values, sha = a[0], a[1], a[2], a[3], a[4]
        arr = v.meta[key].value
        prefix = stage.upper()
        if arr.count != length:
            return Expect(stage, f"{prefix}_ARRAY_LENGTH", f"{stage}.{key}.length")
        if values is not None:
            for i, (want, got) in enumerate(zip(values, arr.items())):
                if want != got or type(want) is not type(got):
                    return Expect(stage, f"{prefix}_VALUE", f"{stage}.{key}.values[{i}]")
        if sha is not None and arr.sha256() != sha:
            return Expect(stage, f"{prefix}_ARRAY_DIGEST", f"{stage}.{key}.sha256")
        return None
    if m == "special_id":
        key, name, value = a[0], a[1], a[2]
        return None if v.meta[key].value == value else Expect("tokenizer", "TOKENIZER_SPECIAL_ID",
                                                               f"tokenizer.special.{name}")
    if m == "stop_id":
        key, ids = a[0], a[1]
        return None if v.meta[key].value in ids else Expect("tokenizer", "TOKENIZER_STOP_ID", f"tokenizer.stop.{key}")
    if m == "token_domain":
        key, ids = a[0], a[1]
        return None if v.meta[key].value.count == ids else Expect("tokenizer", "TOKENIZER_DOMAIN", "tokenizer.ids")
    if m == "logits_rows":
        name, axis, rows = a[0], a[1], a[2]
        t = next((t for t in v.tensors if t.name == name), None)
        if t is None or axis >= len(t.shape) or t.shape[axis] == rows:
            return None
        return Expect("tokenizer", "TOKENIZER_LOGITS_ROWS", "tokenizer.logits_rows")
    if m == "config":
        return _config(a[0], a[1], beside)
    if m == "exclude":
        return None  # takes effect through the tensors check that follows
    if m == "tensors":
        return _tensors(a[0], v, excluded)
    if m == "codecs":
        return _codecs(a[0], v)
    if m == "layout":
        alignment, sorted_, packed, trailing = a[0], a[1], a[2], a[3]
        spans = [(t.name, t.start, t.end) for t in v.tensors]
        policy = {"sorted": sorted_, "packed": packed, "trailing": trailing}
        if alignment is not None and v.tensors and v.data_offset % alignment:
            return Expect("layout", "LAYOUT_DATA_OFFSET", "layout.alignment")
        return oracle.layout(spans, v.data_offset, v.file_size, alignment, policy)
    if m == "exclusions":
        for name, patterns, count_key, count, _ in a[0]:
            if count_key is not None and v.meta[count_key].value != count:
                return Expect("policy", "POLICY_EXCLUSION", f"exclusions.{name}.source_count")
            if any(fnmatch.fnmatchcase(t.name, p) for t in v.tensors for p in patterns):
                return Expect("policy", "POLICY_EXCLUSION", f"exclusions.{name}")
        return None
    if m == "status":
        if require_status and STATUS_ORDER.index(a[0]) < STATUS_ORDER.index(require_status):
            return Expect("policy", "POLICY_STATUS", "status")
        return None
    if m in ("expert_major_store", "ple_store"):
        return _store(c, previous)
    if m == "payload":
        # The conforming artifact matches the unchanged contract's digests (its baseline is admitted
        # with --verify-payload), so a payload check rejects exactly when a digest literal changed.
        before = previous.args if previous is not None else (None, (), "any", {})
        if a[0] is not None and a[0] != before[0]:
            return Expect("payload", "PAYLOAD_FILE_DIGEST", "payload.file_sha256")
        for name, sha, _ in a[1]:
            if (name, sha) not in {(n, d) for n, d, _ in before[1]}:
                return Expect("payload", "PAYLOAD_DIGEST", f"payload.tensors.{name}")
        return None
    raise ValueError(f"no prediction rule for check {m!r}")


def _expand(template: str, repeat) -> list[str]:
    names = [template]
    for placeholder, count in repeat or ():
        indices = range(count) if isinstance(count, int) else count
        names = [n.replace("{" + placeholder + "}", str(i)) for n in names for i in indices]
    return names


def _tensors(table, v: ArtifactView, excluded: tuple[str, ...]) -> Expect | None:
    expected: dict[str, tuple] = {}
    for template, repeat, _role, shape, codec, _ in table:
        for name in _expand(template, repeat):
            expected[name] = (shape, codec)
    actual = {t.name: t for t in v.tensors}
    for name in expected:
        if name not in actual:
            return Expect("tensors", "TENSOR_MISSING", f"tensors.{name}")
    for t in v.tensors:
        if t.name not in expected and not any(fnmatch.fnmatchcase(t.name, p) for p in excluded):
            return Expect("tensors", "TENSOR_UNEXPECTED", f"tensors.{t.name}")
    for name, (shape, codec) in expected.items():
        t = actual[name]
        if len(t.shape) != len(shape):
            return Expect("tensors", "TENSOR_RANK", f"tensors.{name}.rank")
        for j, (want, got) in enumerate(zip(shape, t.shape)):
            if want != got:
                return Expect("tensors", "TENSOR_SHAPE", f"tensors.{name}.shape[{j}]")
        if t.codec != codec:
            return Expect("tensors", "TENSOR_CODEC", f"tensors.{name}.codec")
    return None


def _codecs(table, v: ArtifactView) -> Expect | None:
    geometry = {name: (block, nbytes) for name, block, nbytes, _ in table}
    for t in v.tensors:
        if t.codec not in geometry:
            continue
        block, nbytes = geometry[t.codec]
        row = t.shape[0] if v.format == "gguf" else (t.shape[-1] if t.shape else 1)
        if block <= 0 or row % block:
            return Expect("codec", "CODEC_BLOCK", f"codecs.{t.codec}.block")
        if math.prod(t.shape) // block * nbytes != t.end - t.start:
            return Expect("codec", "CODEC_SIZE", f"codecs.{t.codec}.bytes")
    return None


def _store_name(c: Check):
    return c.args[0] if c.method in ("expert_major_store", "ple_store") else None


# Manifest fields each store kind states directly (the rest of the contract's fields are derived).
_STORED = {"expert_major_store": {"version", "family", "layers", "experts", "experts_used", "codec_id", "group_size",
                                  "group_bytes", "record_alignment"},
           "ple_store": {"version", "family", "heads", "width", "row_alignment", "logical_rows", "rows_per_page",
                         "page_header_bytes", "codec_id", "group_size", "codec_version", "page_alignment"}}


def _store(c: Check, previous: Check | None) -> Expect | None:
    """The conforming artifact states exactly the unchanged contract's store, so a changed literal
    fails at the first check (in the stage's order) whose expected value moved."""
    from charter.stores import expertmajor, ple

    if previous is None:
        return Expect("stores", "STORE_MISSING", None)
    name = c.args[0]
    new = {f: v for f, v, _ in c.args[2]}
    old = {f: v for f, v, _ in previous.args[2]}
    for field, _, _ in c.args[2]:
        if field in _STORED[c.method] and new[field] != old[field]:
            return Expect("stores", "STORE_MANIFEST", f"stores.{name}.manifest.{field}")
    if c.method == "expert_major_store":
        comps_new, comps_old = c.args[3], previous.args[3]
        if len(comps_new) != len(comps_old):
            return Expect("stores", "STORE_MANIFEST", f"stores.{name}.manifest.components")

        def geometry(fields, comps):
            return expertmajor.geometry(fields["layers"], fields["experts"], [x[:3] for x in comps],
                                        fields["group_size"], fields["group_bytes"], fields["record_alignment"])

        g_new, g_old = geometry(new, comps_new), geometry(old, comps_old)
        for field in ("record_bytes", "table_offset", "records_offset", "record_count"):
            if g_new[field] != g_old[field]:
                return Expect("stores", "STORE_GEOMETRY", f"stores.{name}.manifest.{field}")
        if g_new["size"] != g_old["size"]:
            return Expect("stores", "STORE_GEOMETRY", f"stores.{name}.size")
        for i, (a, b) in enumerate(zip(g_new["components"], g_old["components"])):
            for field in ("name", "ne0", "ne1", "offset", "bytes"):
                if a[field] != b[field]:
                    return Expect("stores", "STORE_GEOMETRY", f"stores.{name}.components[{i}].{field}")
        return None
    rows_new, rows_old = [v for v, _ in c.args[3]], [v for v, _ in previous.args[3]]
    padded = lambda rows: rows + [0] * (ple.HEADS_MAX - len(rows))  # noqa: E731
    for i, (a, b) in enumerate(zip(padded(rows_new), padded(rows_old))):
        if a != b:
            return Expect("stores", "STORE_MANIFEST", f"stores.{name}.manifest.head_rows[{i}]")

    def geometry(f):
        return ple.geometry(f["logical_rows"], f["row_alignment"], f["width"], f["group_size"], f["group_bytes"],
                            f["rows_per_page"], f["page_header_bytes"], f["page_alignment"])

    g_new, g_old = geometry(new), geometry(old)
    for field in ("padded_rows", "encoded_row_bytes", "page_count", "page_stride", "page_table_offset",
                  "payload_offset"):
        if g_new[field] != g_old[field]:
            return Expect("stores", "STORE_GEOMETRY", f"stores.{name}.manifest.{field}")
    if g_new["size"] != g_old["size"]:
        return Expect("stores", "STORE_GEOMETRY", f"stores.{name}.size")
    return None
