"""ArtifactPlan -> the view the Python checker template renders.

Every decision is made here: which checks each stage runs, in which order, and the exact literal
of every argument (through charter.codegen.escape). The template only loops and substitutes.
"""

from __future__ import annotations

from dataclasses import dataclass

from charter.codegen.escape import py_literal as lit
from charter.diagnostics import ADMISSION_STAGES
from charter.spec.plan import ArtifactPlan, MetaCheck


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


def _at(location) -> str:
    return lit(str(location)) if location is not None else "None"


def build(plan: ArtifactPlan) -> CheckerView:
    builders = {
        "container": _container, "identity": _identity, "metadata": _metadata, "tokenizer": _tokenizer,
        "tensors": _tensors, "codec": _codec, "layout": _layout, "stores": _stores, "policy": _policy,
        "payload": _payload,
    }
    stages = []
    for stage in ADMISSION_STAGES:
        doc, statements = builders[stage.value](plan)
        stages.append(Stage(stage.value, doc, tuple(statements)))
    return CheckerView(plan.id, plan.model, plan.spec_path, plan.format, plan.status, tuple(stages))


def _container(p: ArtifactPlan):
    out = [f"ctx.container_format({lit(p.format)}, None)"]
    if p.version is not None:
        out.append(f"ctx.container_version({lit(p.version)}, {_at(p.version_location)})")
    if p.alignment is not None:
        out.append(f"ctx.container_alignment({lit(p.alignment)}, {_at(p.alignment_location)})")
    if p.header_aligned is not None:
        out.append(f"ctx.container_header_aligned({lit(p.header_aligned)}, None)")
    return "The container's own facts; the strict reader has already bounded the header.", out


def _identity(p: ArtifactPlan):
    return "The artifact is the model the contract names.", [
        f"ctx.identity({lit(m.key)}, {lit(m.value)}, {_at(m.location)})" for m in p.identity
    ]


def _metadata(p: ArtifactPlan):
    every = p.identity + p.metadata
    rows = ",\n        ".join(
        f"({lit(m.key)}, {lit('string' if m.stage == 'identity' else m.type)}, {lit(m.element)}, {_at(m.location)})"
        for m in every
    )
    forbidden = ", ".join(f"({lit(k)}, {_at(loc)})" for k, loc in p.forbidden)
    out = [
        f"ctx.meta_types((\n        {rows},\n    ))" if every else "ctx.meta_types(())",
        f"ctx.meta_key_set({lit(tuple(m.key for m in every))}, ({forbidden}{',' if len(p.forbidden) == 1 else ''}), "
        f"{lit(p.extra_keys)}, {_at(p.extra_keys_location)})",
    ]
    out.extend(_values("metadata", [m for m in p.metadata if m.stage == "metadata"]))
    if p.config_file is not None:
        rows = ",\n        ".join(f"({lit(m.key)}, {lit(m.type)}, {lit(m.value)}, {_at(m.location)})" for m in p.config)
        out.append(f"ctx.config({lit(p.config_file)}, (\n        {rows},\n    ))")
    return "Exact key set and exact types of every key, then the values metadata owns.", out


def _values(stage: str, checks: list[MetaCheck]) -> list[str]:
    out = []
    for m in checks:
        if m.type == "array":
            out.append(f"ctx.array({lit(stage)}, {lit(m.key)}, {lit(m.length)}, {lit(m.values)}, "
                       f"{lit(m.sha256)}, {_at(m.location)})")
        elif m.sha256 is not None:
            out.append(f"ctx.string_digest({lit(stage)}, {lit(m.key)}, {lit(m.sha256)}, {_at(m.location)})")
        elif m.value is not None:
            out.append(f"ctx.value({lit(stage)}, {lit(m.key)}, {lit(m.type)}, {lit(m.value)}, {_at(m.location)})")
    return out


def _tokenizer(p: ArtifactPlan):
    t = p.tokenizer
    if t is None:
        return "The contract binds no tokenizer facts.", []
    out = _values("tokenizer", [m for m in p.metadata if m.stage == "tokenizer"])
    out.extend(f"ctx.special_id({lit(s.key)}, {lit(s.name)}, {lit(s.value)}, {_at(s.location)})" for s in t.special)
    out.extend(f"ctx.stop_id({lit(k)}, {lit(t.stop_ids)}, {_at(loc)})" for k, loc in t.stop_keys)
    if t.tokens_key is not None and t.ids is not None:
        out.append(f"ctx.token_domain({lit(t.tokens_key)}, {lit(t.ids)}, {_at(t.ids_location)})")
    if t.logits_tensor is not None and t.logits_rows is not None:
        out.append(f"ctx.logits_rows({lit(t.logits_tensor)}, {lit(t.logits_axis)}, {lit(t.logits_rows)}, "
                   f"{_at(t.logits_location)})")
    return "Tokenizer values, special and stop ids, id domain vs physical logits rows.", out


def _tensors(p: ArtifactPlan):
    patterns = tuple(pat for e in p.exclusions for pat in e.patterns)
    rows = ",\n        ".join(
        f"({lit(r.template)}, {lit(r.repeat)}, {lit(r.role)}, {lit(r.shape)}, {lit(r.codec)}, {_at(r.location)})"
        for r in p.tensor_rows
    )
    out = [f"ctx.exclude({lit(patterns)})",
           f"ctx.tensors((\n        {rows},\n    ))" if rows else "ctx.tensors(())"]
    return "Exact tensor set, then rank, shape and codec of each (name, repeat, role, shape, codec, at).", out


def _codec(p: ArtifactPlan):
    if not p.codecs:
        return "The contract states no codec geometry.", []
    rows = ",\n        ".join(f"({lit(c.name)}, {lit(c.block)}, {lit(c.bytes)}, {_at(c.location)})" for c in p.codecs)
    return "Block geometry of each codec: the block divides the row, the extent has the computed size.", [
        f"ctx.codecs((\n        {rows},\n    ))"
    ]


def _layout(p: ArtifactPlan):
    at = "{" + ", ".join(f"{lit(k)}: {_at(v)}" for k, v in sorted(p.layout_locations.items())) + "}"
    alignment = p.alignment if p.alignment is not None else None
    lay = p.layout
    return "Extents aligned, in order, disjoint, packed; trailing bytes per policy.", [
        f"ctx.layout({lit(alignment)}, {lit(lay['sorted'])}, {lit(lay['packed'])}, {lit(lay['trailing'])}, {at})"
    ]


def _stores(p: ArtifactPlan):
    return "The contract states no embedded stores.", []


def _policy(p: ArtifactPlan):
    rows = ", ".join(f"({lit(e.name)}, {lit(e.patterns)}, {_at(e.location)})" for e in p.exclusions)
    comma = "," if len(p.exclusions) == 1 else ""
    return "Named exclusions stay out; the support status meets what the caller requires.", [
        f"ctx.exclusions(({rows}{comma}))",
        f"ctx.status({lit(p.status)}, {_at(p.status_location)})",
    ]


def _payload(p: ArtifactPlan):
    rows = ", ".join(f"({lit(n)}, {lit(d)}, {_at(loc)})" for n, d, loc in p.payload_tensors)
    comma = "," if len(p.payload_tensors) == 1 else ""
    at = {"padding": p.layout_locations.get("padding"), "file_sha256": p.payload_location}
    at_lit = "{" + ", ".join(f"{lit(k)}: {_at(v)}" for k, v in sorted(at.items())) + "}"
    return "Opt-in: streams the file once (bounded memory) for digests and zero padding.", [
        f"ctx.payload({lit(p.payload_file_sha256)}, ({rows}{comma}), {lit(p.layout['padding'])}, {at_lit})"
    ]
