"""A regions plan -> the view the region-table templates render. Every decision (order, names,
literals) is made here; the templates only loop and substitute."""

from __future__ import annotations

from dataclasses import dataclass

from charter.codegen.common.cpp import cpp_bool, cpp_int64, cpp_sv
from charter.codegen.common.header import generated_header
from charter.codegen.common.names import identifier
from charter.codegen.common.python import py_literal
from charter.regions import gate
from charter.regions.plan import TOKENS, RegionsPlan

TOKENS_DIM = -1  # the free dim `tokens` in a shape table
MAX_RANK = 4  # kMaxRank of the C++ tables (a regions ValueType has at most 4 dims)


@dataclass(frozen=True)
class Row:
    py: str  # a Python tuple literal
    cpp: str  # a C++ aggregate initializer
    where: str  # the contract location, for the comment beside the row


@dataclass(frozen=True)
class RegionsView:
    py_header: str
    cpp_header: str
    identifier: str
    py_id: str
    cpp_id: str
    py_status: str
    cpp_status: str
    py_max_tokens: str
    cpp_max_tokens: str
    py_f1: str
    cpp_f1: str
    py_f1_reasons: str
    cpp_f1_reasons: tuple[str, ...]
    regions: tuple[Row, ...]
    instances: tuple[Row, ...]
    ownership: tuple[Row, ...]
    edges: tuple[Row, ...]
    state: tuple[Row, ...]
    nodes: tuple[Row, ...]
    records: tuple[Row, ...]
    max_rank: int


def _shape(shape) -> tuple[int, ...]:
    return tuple(TOKENS_DIM if d == TOKENS else d for d in shape)


def _cpp_shape(shape: tuple[int, ...], rank: int) -> str:
    padded = list(shape) + [0] * (rank - len(shape))
    return "{" + ", ".join(cpp_int64(d) for d in padded) + "}"


def build(cs, plan: RegionsPlan) -> RegionsView:
    spec = (plan.spec_path, plan.spec_sha256)
    from charter.codegen.regions import inputs

    others = {k: v for k, v in inputs(cs, plan).items() if k != plan.spec_path}
    names = list(dict.fromkeys(i.region for i in plan.instances))
    templates = {i.region: i for i in reversed(plan.instances)}  # the first instance of each region
    regions = []
    state = []
    nodes = []
    for r in names:
        t = templates[r]
        a = t.activation
        scope = "layer" if t.layer is not None else "model"
        regions.append(Row(
            py_literal((r, scope, a.decision, a.provenance, a.skip or "", len(t.nodes))),
            f"{{{cpp_sv(r)}, {cpp_sv(scope)}, {cpp_sv(a.decision)}, {cpp_sv(a.provenance)}, {cpp_sv(a.skip or '')}, "
            f"{cpp_int64(len(t.nodes))}}}", str(a.at)))
        for s in t.state:
            state.append(Row(py_literal((r, s.name, s.kind, s.width or 0, s.scope)),
                             f"{{{cpp_sv(r)}, {cpp_sv(s.name)}, {cpp_sv(s.kind)}, {cpp_int64(s.width or 0)}, "
                             f"{cpp_sv(s.scope)}}}", str(s.at)))
        for n in t.nodes:
            ins = ",".join(f"{b.arg}={b.kind}:{_generic(b.name, t.layer)}" for b in n.inputs)
            outs = ",".join(f"{b.arg}={b.kind}:{b.name}" for b in n.outputs)
            nodes.append(Row(py_literal((r, n.index, n.kernel, ins, outs)),
                             f"{{{cpp_sv(r)}, {cpp_int64(n.index)}, {cpp_sv(n.kernel)}, {cpp_sv(ins)}, {cpp_sv(outs)}}}",
                             str(n.at)))
    instances = [Row(py_literal((i.name, names.index(i.region), -1 if i.layer is None else i.layer)),
                     f"{{{cpp_sv(i.name)}, {cpp_int64(names.index(i.region))}, "
                     f"{cpp_int64(-1 if i.layer is None else i.layer)}}}", str(i.at)) for i in plan.instances]
    ownership = []
    for k, i in enumerate(plan.instances):
        for tname in i.tensors:
            codec = plan.codecs[tname]
            step = plan.precision.get(codec, "quantized")
            ownership.append(Row(py_literal((tname, k, codec, step)),
                                 f"{{{cpp_sv(tname)}, {cpp_int64(k)}, {cpp_sv(codec)}, {cpp_sv(step)}}}", ""))
    records = [Row(py_literal((k, i.records[0], i.records[1], i.records[2])),
                   f"{{{cpp_int64(k)}, {cpp_sv(i.records[0])}, {cpp_int64(i.records[1])}, {cpp_int64(i.records[2])}}}", "")
               for k, i in enumerate(plan.instances) if i.records is not None]
    rank = max(len(t.shape) for t in list(plan.edges.values()) + list(plan.inputs.values()))
    edges = []
    for kind, table in (("input", plan.inputs), ("edge", plan.edges)):
        for name, t in table.items():
            bpt = t.bytes_per_token() or 0
            edges.append(Row(py_literal((name, kind, t.dtype, _shape(t.shape), bpt)),
                             f"{{{cpp_sv(name)}, {cpp_sv(kind)}, {cpp_sv(t.dtype)}, {cpp_int64(len(t.shape))}, "
                             f"{_cpp_shape(_shape(t.shape), MAX_RANK)}, {cpp_int64(bpt)}}}", ""))
    reasons = tuple(f"{d.code.value} {d.field}: {d.message}" for d in gate.check_graph(plan))
    max_tokens = plan.max_tokens or 0
    return RegionsView(
        py_header=generated_header("#", spec, others), cpp_header=generated_header("//", spec, others),
        identifier=identifier(plan.id), py_id=py_literal(plan.id), cpp_id=cpp_sv(plan.id),
        py_status=py_literal(plan.status), cpp_status=cpp_sv(plan.status),
        py_max_tokens=py_literal(max_tokens), cpp_max_tokens=cpp_int64(max_tokens),
        py_f1=py_literal(not reasons), cpp_f1=cpp_bool(not reasons),
        py_f1_reasons=py_literal(reasons), cpp_f1_reasons=tuple(cpp_sv(r) for r in reasons),
        regions=tuple(regions), instances=tuple(instances), ownership=tuple(ownership), edges=tuple(edges),
        state=tuple(state), nodes=tuple(nodes), records=tuple(records), max_rank=rank,
    )


def _generic(name: str, layer: int | None) -> str:
    """A layer tensor's name with its layer written `{i}`: one node row serves every layer."""
    if layer is None:
        return name
    return name.replace(f".{layer}.", ".{i}.")
