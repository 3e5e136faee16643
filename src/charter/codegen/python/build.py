"""ArtifactPlan -> the checks of each stage, and the view the Python checker template renders.

Every decision is made here: which checks each stage runs, in which order, with which literal
arguments. `checks(plan)` is the structured form (the mutation battery diffs it to predict where
a mutated contract must fail); `build(plan)` renders each check as one statement through
charter.codegen.escape. The template only loops and substitutes.
"""

from __future__ import annotations

from dataclasses import dataclass

from charter.codegen.escape import py_literal as lit
from charter.diagnostics import ADMISSION_STAGES
from charter.spec.plan import ArtifactPlan, MetaCheck


@dataclass(frozen=True)
class Check:
    """One call `ctx.<method>(*args)` in one stage of a generated checker."""

    stage: str
    method: str
    args: tuple


@dataclass(frozen=True)
class Stage:
    name: str
    doc: str
    statements: tuple[str, ...]


@dataclass(frozen=True)
class CheckerView:
    contract_id: str
    model_id: str
    spec: str
    format: str
    status: str
    stages: tuple[Stage, ...]


DOCS = {
    "container": "The container's own facts; the strict reader has already bounded the header.",
    "identity": "The artifact is the model the contract names.",
    "metadata": "Exact key set and exact types of every key, then the values metadata owns.",
    "tokenizer": "Tokenizer values, special and stop ids, id domain vs physical logits rows.",
    "tensors": "Exact tensor set, then rank, shape and codec of each (name, repeat, role, shape, codec, at).",
    "codec": "Block geometry of each codec: the block divides the row, the extent has the computed size.",
    "layout": "Extents aligned, in order, disjoint, packed; trailing bytes per policy.",
    "stores": "Embedded store manifests and geometry.",
    "policy": "Named exclusions stay out; the support status meets what the caller requires.",
    "payload": "Opt-in: streams the file once (bounded memory) for digests and zero padding.",
}


def _at(location) -> str | None:
    return str(location) if location is not None else None


def checks(plan: ArtifactPlan) -> list[Check]:
    """Every check of the generated checker, in execution order."""
    out: list[Check] = []
    for stage in ADMISSION_STAGES:
        for method, *args in _BUILDERS[stage.value](plan):
            out.append(Check(stage.value, method, tuple(args)))
    return out


def build(plan: ArtifactPlan) -> CheckerView:
    by_stage: dict[str, list[str]] = {s.value: [] for s in ADMISSION_STAGES}
    for check in checks(plan):
        by_stage[check.stage].append(render_call(check))
    stages = tuple(Stage(name, DOCS[name], tuple(statements)) for name, statements in by_stage.items())
    return CheckerView(plan.id, plan.model, plan.spec_path, plan.format, plan.status, stages)


def render_call(check: Check) -> str:
    """`ctx.method(a, b)`; a table argument (a tuple of rows) gets one row per line."""
    parts = []
    for arg in check.args:
        if isinstance(arg, tuple) and len(arg) > 1 and all(isinstance(r, tuple) for r in arg):
            rows = "".join(f"        {lit(r)},\n" for r in arg)
            parts.append(f"(\n{rows}    )")
        else:
            parts.append(lit(arg))
    return f"ctx.{check.method}({', '.join(parts)})"


def _container(p: ArtifactPlan):
    yield "container_format", p.format, None
    if p.version is not None:
        yield "container_version", p.version, _at(p.version_location)
    if p.alignment is not None:
        yield "container_alignment", p.alignment, _at(p.alignment_location)
    if p.header_aligned is not None:
        yield "container_header_aligned", p.header_aligned, _at(p.header_aligned_location)


def _identity(p: ArtifactPlan):
    for m in p.identity:
        yield "identity", m.key, m.value, _at(m.location)


def _metadata(p: ArtifactPlan):
    every = p.identity + p.metadata
    yield "meta_types", tuple(
        (m.key, "string" if m.stage == "identity" else m.type, m.element, _at(m.location)) for m in every)
    yield ("meta_key_set", tuple(m.key for m in every), tuple((k, _at(loc)) for k, loc in p.forbidden),
           p.extra_keys, _at(p.extra_keys_location))
    yield from _values("metadata", [m for m in p.metadata if m.stage == "metadata"])
    if p.config_file is not None:
        yield "config", p.config_file, tuple((m.key, m.type, m.value, _at(m.location)) for m in p.config)


def _values(stage: str, facts: list[MetaCheck]):
    for m in facts:
        if m.type == "array":
            yield "array", stage, m.key, m.length, m.values, m.sha256, _at(m.location)
        elif m.sha256 is not None:
            yield "string_digest", stage, m.key, m.sha256, _at(m.location)
        elif m.value is not None:
            yield "value", stage, m.key, m.type, m.value, _at(m.location)


def _tokenizer(p: ArtifactPlan):
    t = p.tokenizer
    if t is None:
        return
    yield from _values("tokenizer", [m for m in p.metadata if m.stage == "tokenizer"])
    for s in t.special:
        yield "special_id", s.key, s.name, s.value, _at(s.location)
    for key, loc in t.stop_keys:
        yield "stop_id", key, t.stop_ids, _at(loc)
    if t.tokens_key is not None and t.ids is not None:
        yield "token_domain", t.tokens_key, t.ids, _at(t.ids_location)
    if t.logits_tensor is not None and t.logits_rows is not None:
        yield "logits_rows", t.logits_tensor, t.logits_axis, t.logits_rows, _at(t.logits_location)


def _tensors(p: ArtifactPlan):
    yield "exclude", tuple(pat for e in p.exclusions for pat in e.patterns)
    yield ("tensors", tuple((r.template, r.repeat, r.role, r.shape, r.codec, _at(r.location)) for r in p.tensor_rows),
           _at(p.tensors_location))


def _codec(p: ArtifactPlan):
    if p.codecs:
        yield "codecs", tuple((c.name, c.block, c.bytes, _at(c.location)) for c in p.codecs)


def _layout(p: ArtifactPlan):
    lay = p.layout
    yield ("layout", p.alignment, lay["sorted"], lay["packed"], lay["trailing"],
           {k: _at(v) for k, v in sorted(p.layout_locations.items())})


def _stores(p: ArtifactPlan):
    for st in p.stores:
        fields = tuple((f, v, _at(loc)) for f, v, loc in st.fields)
        if st.kind == "expert-major-v2":
            yield ("expert_major_store", st.name, st.tensor, fields,
                   tuple((n, ne0, ne1, _at(loc)) for n, ne0, ne1, loc in st.components), _at(st.location))
        else:
            yield ("ple_store", st.name, st.tensor, fields, tuple((v, _at(loc)) for v, loc in st.head_rows),
                   _at(st.location))


def _policy(p: ArtifactPlan):
    yield "exclusions", tuple((e.name, e.patterns, e.count_key, e.source_count, _at(e.location)) for e in p.exclusions)
    yield "status", p.status, _at(p.status_location)


def _payload(p: ArtifactPlan):
    yield ("payload", p.payload_file_sha256, tuple((n, d, _at(loc)) for n, d, loc in p.payload_tensors),
           p.layout["padding"], {"file_sha256": _at(p.payload_location), "padding": _at(p.layout_locations.get("padding"))})


_BUILDERS = {
    "container": _container, "identity": _identity, "metadata": _metadata, "tokenizer": _tokenizer,
    "tensors": _tensors, "codec": _codec, "layout": _layout, "stores": _stores, "policy": _policy,
    "payload": _payload,
}
