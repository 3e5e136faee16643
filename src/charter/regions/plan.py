"""A regions contract resolved against its model, its artifact contract and the kernel contracts
its nodes call: the verified graph the F1 interpreter runs (Note [Regions resolution]).

Note [Regions resolution]: `charter check` resolves a regions contract here, and every rule below
is a check that can fail (each has a REGION_* code, docs/diagnostics.md):

  ownership   every tensor of the artifact contract's inventory is owned by exactly one region
              instance (patterns, `{i}` = the layer) or a named exclusion; every pattern owns
              something; a node reads only tensors its region owns or declares under `shares`
              (naming the owner); every owned tensor is read by a node of its region.
  layers      the layer regions are contiguous, instantiated per layer, and every layer has exactly
              the regions `layers.regions` lists for its kind, in order.
  edges       a region consumes only graph inputs or edges an earlier region produced, and writes
              every edge it produces; a node's output written to an edge has the edge's type.
  signatures  a node binds exactly its kernel's inputs, outputs and call attributes; every input's
              dtype and shape equals the kernel's, with free dims bound by the first input that has
              them and every other dim the model constant the kernel states.
  state       a region that calls a stateful kernel (causal attention reads the K/V rows of earlier
              tokens) declares that state, kv_append of the kernel's K width; no other region does.
  activation  the validators of charter.regions.contract (Note [Activation is three facts]); here,
              a skippable attention region must skip as `no_kv`.
  precision   every codec of the inventory has a step; `identity` only for F32.

The artifact contract's inventory is what `charter admit` enforces exactly (TENSOR_MISSING,
TENSOR_UNEXPECTED), so an admitted file has the tensors ownership was checked over.
"""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass, field

from charter.contract import expr
from charter.contract.load import LoadedContract
from charter.contract.models import KernelContract, ProvenanceContract, Status
from charter.contract.plan import ArtifactPlan, ModelPlan
from charter.contract.yamlload import dotted
from charter.diagnostics import CharterError, Code, Diagnostic, Location
from charter.regions.contract import RegionsContract

TOKENS = "tokens"
Dim = int | str  # an int, or the graph's free dim "tokens"

# Kernels whose call reads rows of earlier tokens, and the state kind those rows are.
STATEFUL_KERNELS = {"attention-causal-gqa": ("kv_append", "k")}


@dataclass(frozen=True)
class VType:
    dtype: str
    shape: tuple[Dim, ...]

    def render(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"

    def concrete(self, tokens: int) -> tuple[int, ...]:
        return tuple(tokens if d == TOKENS else d for d in self.shape)

    def bytes_per_token(self) -> int | None:
        """Bytes one token contributes (the shape's other dims times the element size)."""
        if self.shape.count(TOKENS) != 1:
            return None
        n = 4
        for d in self.shape:
            if d != TOKENS:
                n *= d
        return n


@dataclass(frozen=True)
class Binding:
    arg: str
    kind: str  # input | edge | local | tensor
    name: str
    type: VType


@dataclass(frozen=True)
class NodePlan:
    index: int
    kernel: str
    oracle: str
    inputs: tuple[Binding, ...]
    attrs: tuple[tuple[str, object], ...]
    outputs: tuple[Binding, ...]  # kind: edge | local
    at: Location
    native: str | None = None  # the kernel contract's C++ function (backends.cpp), None if oracle-only
    fixed: tuple[str, ...] = ()  # attributes the kernel contract fixes (a native binding has them built in)


@dataclass(frozen=True)
class StatePlan:
    name: str
    kind: str
    width: int | None
    scope: str
    at: Location


@dataclass(frozen=True)
class ActivationPlan:
    decision: str
    provenance: str
    router: str | None
    k: int | None
    by: str | None
    controls: tuple[str, ...]
    skip: str | None
    at: Location


@dataclass(frozen=True)
class RegionInstance:
    name: str  # "embedding", "attention.3"
    region: str
    layer: int | None
    tensors: tuple[str, ...]
    shares: tuple[tuple[str, str], ...]
    consumes: tuple[str, ...]
    produces: tuple[str, ...]
    state: tuple[StatePlan, ...]
    activation: ActivationPlan
    nodes: tuple[NodePlan, ...]
    at: Location
    records: tuple[str, int, int] | None = None  # (store, first record, end) this instance owns
    within: str | None = None  # the region this one is a sub-region of


@dataclass(frozen=True)
class WeightPlan:
    name: str
    codec: str
    stored_shape: tuple[int, ...]  # the container's order (GGUF: ne[0] first)
    shape: tuple[int, ...]  # the array a node receives (row-major: GGUF dims reversed)
    step: str  # identity | dequantize | quantized
    kernel: str | None  # the dequantize step's kernel contract
    label: str | None
    dtype: str  # what a node receives


@dataclass(frozen=True)
class ParityPlan:
    fixture: str
    top1_agreement_min: float
    max_abs_logit_error: float
    at: Location
    layer_cosine_min: float | None = None
    layer_relative_error_max: float | None = None


@dataclass(frozen=True)
class RegionsPlan:
    id: str
    status: str
    model: str
    artifact: str
    spec_path: str
    spec_sha256: str
    artifact_sha256: str | None
    max_tokens: int | None
    max_tokens_at: Location | None
    compute: str | None
    inputs: dict[str, VType]
    edges: dict[str, VType]
    outputs: tuple[str, ...]
    instances: tuple[RegionInstance, ...]
    weights: dict[str, WeightPlan]
    exclusions: dict[str, tuple[str, ...]]
    excluded: tuple[str, ...]
    precision: dict[str, str]
    parity: ParityPlan | None
    input_ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    codecs: dict[str, str] = field(default_factory=dict)  # every tensor of the inventory -> its codec
    constants: dict[str, int | float] = field(default_factory=dict)

    @property
    def node_count(self) -> int:
        return sum(len(r.nodes) for r in self.instances)


class _Collector:
    def __init__(self, loaded: LoadedContract) -> None:
        self.loaded = loaded
        self.diagnostics: list[Diagnostic] = []

    def at(self, *path) -> Location:
        return self.loaded.doc.where(path)

    def add(self, d: Diagnostic) -> None:
        if d not in self.diagnostics:  # a fact of a layer region is checked once per layer: report it once
            self.diagnostics.append(d)

    def error(self, code: Code, path: tuple, message: str, expected: object = None, actual: object = None) -> None:
        self.add(Diagnostic(code, dotted(path), message, None if expected is None else str(expected),
                            None if actual is None else str(actual), location=self.at(*path)))

    def value(self, raw, env: dict, path: tuple):
        if not isinstance(raw, str):
            return raw
        try:
            return expr.parse(raw, self.at(*path), dotted(path)).evaluate(env)
        except CharterError as exc:
            for d in exc.diagnostics:
                self.add(d)
            return None


def _vtype(c: _Collector, t, env: dict, path: tuple) -> VType | None:
    shape: list[Dim] = []
    for j, d in enumerate(t.shape):
        if d == TOKENS:
            shape.append(TOKENS)
            continue
        v = c.value(d, env, (*path, "shape", j))
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            c.error(Code.SPEC_INVALID, (*path, "shape", j), f"a dim is a positive integer, got {v!r}")
            return None
        shape.append(v)
    return VType(t.dtype, tuple(shape))


def profile_constants(artifact: LoadedContract | None, model: ModelPlan) -> dict:
    """The model's constants with the artifact profile's (codec and layout choices such as
    Qwen4Exp's qsa_kv_width), as the artifact contract's own expressions see them."""
    if artifact is None:
        return dict(model.constants)
    from charter.contract import resolve

    return resolve._profile_env(resolve._Collector(artifact), artifact.contract, model)


def resolve_regions(loaded: LoadedContract, model: ModelPlan, artifact: ArtifactPlan,
                    kernels: dict[str, LoadedContract], provenance: dict[str, LoadedContract],
                    artifact_contract: LoadedContract | None = None) -> RegionsPlan:
    """The verified graph, or CharterError with every independent finding."""
    rc = loaded.contract
    assert isinstance(rc, RegionsContract)
    c = _Collector(loaded)
    env = profile_constants(artifact_contract, model)
    if artifact.model != rc.model:
        c.error(Code.SPEC_INVALID, ("model",), f"artifact {artifact.id} is a contract of model {artifact.model!r}, "
                                               f"not {rc.model!r}")
    if rc.status is Status.SUPPORTED:
        c.error(Code.REGION_STATUS, ("status",), "a regions contract is a reference graph, not runtime support "
                                                 "(AFN-013): its status stays below supported")
    elif rc.status.rank > Status(artifact.status).rank:
        c.error(Code.REGION_STATUS, ("status",), f"status {rc.status.value} claims more than its artifact contract "
                                                 f"{artifact.id} ({artifact.status})")
    inputs = {n: t for n, raw in rc.inputs.items() if (t := _vtype(c, raw, env, ("inputs", n))) is not None}
    edges = {n: t for n, raw in rc.edges.items() if (t := _vtype(c, raw, env, ("edges", n))) is not None}
    ranges: dict[str, tuple[int, int]] = {}
    for n, raw in rc.inputs.items():
        if raw.range is not None:
            lo, hi = (c.value(v, env, ("inputs", n, "range", j)) for j, v in enumerate(raw.range))
            if isinstance(lo, int) and isinstance(hi, int) and lo < hi:
                ranges[n] = (lo, hi)
            else:
                c.error(Code.SPEC_INVALID, ("inputs", n, "range"), f"a range is [lo, hi) with integers lo < hi, "
                                                                   f"got [{lo!r}, {hi!r})")
    if len(inputs) != len(rc.inputs) or len(edges) != len(rc.edges) or (c.diagnostics and not edges):
        raise CharterError(c.diagnostics)  # an untyped value: nothing below can be checked against it
    tensors = {t.name: t for t in artifact.tensors}

    # --- precision ------------------------------------------------------------------------------
    codecs = sorted({t.codec for t in artifact.tensors})
    for codec in codecs:
        if codec not in rc.precision:
            c.error(Code.REGION_PRECISION, ("precision",), f"codec {codec} of artifact {artifact.id} has no "
                                                           "precision step: its tensors cannot enter the graph")
    for codec, step in rc.precision.items():
        if codec not in codecs:
            c.error(Code.REGION_PRECISION, ("precision", codec), f"no tensor of artifact {artifact.id} has codec {codec}")
        elif step.step == "identity" and codec != "F32":
            c.error(Code.REGION_PRECISION, ("precision", codec, "step"),
                    f"{codec} is not float32: it enters through an explicit dequantization step, never as is")
        if step.kernel is not None and (step.kernel not in kernels):
            c.error(Code.REF_DANGLING, ("precision", codec, "kernel"), f"no kernel contract has id {step.kernel!r}")

    # --- layers and instance order -----------------------------------------------------------------
    layer_regions = [i for i, r in enumerate(rc.regions) if r.scope == "layer"]
    count = 0
    if layer_regions:
        if rc.layers is None:
            c.error(Code.REGION_LAYERS, ("regions", layer_regions[0], "scope"),
                    "layer regions need `layers` (the count and the regions of every layer)")
        elif layer_regions != list(range(layer_regions[0], layer_regions[-1] + 1)):
            gap = next(i for i in range(layer_regions[0], layer_regions[-1]) if i not in layer_regions)
            c.error(Code.REGION_ORDER, ("regions", gap), "the layer regions are stated together: a model region "
                                                         "between them has no place in the layer order")
    if rc.layers is not None:
        count = c.value(rc.layers.count, env, ("layers", "count"))
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            c.error(Code.REGION_LAYERS, ("layers", "count"), f"layers.count is a positive integer, got {count!r}")
            count = 0
        elif "layers" in env and count != env["layers"]:
            c.error(Code.REGION_LAYERS, ("layers", "count"), f"{count} layers, but the model has {env['layers']}",
                    env["layers"], count)
        kinds = model.layer_kinds or ("all",) * count
        for i in range(min(count, len(kinds))):
            kind = kinds[i]
            expected = rc.layers.regions.get(kind)
            if expected is None:
                c.error(Code.REGION_LAYERS, ("layers", "regions"), f"layer {i} is of kind {kind}, which "
                                                                  "layers.regions does not list")
                break
            actual = [r.name for r in rc.regions if r.scope == "layer" and (r.layer_kinds is None or kind in r.layer_kinds)]
            if actual != list(expected):
                c.error(Code.REGION_LAYERS, ("layers", "regions", kind),
                        f"layer {i} ({kind}) has regions {actual}, layers.regions says {list(expected)}",
                        list(expected), actual)
                break
        for kind in rc.layers.regions:
            if kind not in set(kinds):
                c.error(Code.REGION_LAYERS, ("layers", "regions", kind), f"no layer of the model is of kind {kind}")
    order: list[tuple[int, int | None]] = []
    for i, r in enumerate(rc.regions):
        if r.scope == "model":
            order.append((i, None))
        elif i == (layer_regions[0] if layer_regions else -1):
            kinds = model.layer_kinds or ("all",) * count
            for layer in range(count):
                for j in layer_regions:
                    lk = rc.regions[j].layer_kinds
                    if lk is None or (layer < len(kinds) and kinds[layer] in lk):
                        order.append((j, layer))

    # --- ownership --------------------------------------------------------------------------------
    owner: dict[str, str] = {}
    owned_by: dict[str, list[str]] = {}
    used_patterns: set[tuple] = set()
    names = list(tensors)
    for ri, layer in order:
        r = rc.regions[ri]
        inst = r.name if layer is None else f"{r.name}.{layer}"
        mine: list[str] = []
        for pi, pattern in enumerate(r.tensors):
            concrete = pattern.replace("{i}", str(layer)) if layer is not None else pattern
            hits = [n for n in names if fnmatch.fnmatchcase(n, concrete)]
            if hits:
                used_patterns.add((ri, pi))
            for n in hits:
                if n in owner and owner[n] != inst:
                    c.error(Code.REGION_OWNERSHIP, ("regions", ri, "tensors", pi),
                            f"tensor {n} is owned by both {owner[n]} and {inst}", owner[n], inst)
                elif n not in owner:
                    owner[n] = inst
                    mine.append(n)
        owned_by[inst] = mine
    for ri, r in enumerate(rc.regions):
        for pi, pattern in enumerate(r.tensors):
            if (ri, pi) not in used_patterns and (r.scope == "model" or count):
                c.error(Code.REGION_PATTERN_UNUSED, ("regions", ri, "tensors", pi),
                        f"pattern {pattern!r} owns no tensor of artifact {artifact.id}")
    records = _records(c, rc, order, count, artifact, env, owner)
    _routers(c, rc, kernels, env)
    excluded: list[str] = []
    for name, ex in rc.exclusions.items():
        for pi, pattern in enumerate(ex.patterns):
            hits = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
            if not hits:
                c.error(Code.REGION_PATTERN_UNUSED, ("exclusions", name, "patterns", pi),
                        f"exclusion pattern {pattern!r} matches no tensor of artifact {artifact.id}")
            for n in hits:
                if n in owner:
                    c.error(Code.REGION_OWNERSHIP, ("exclusions", name, "patterns", pi),
                            f"tensor {n} is owned by {owner[n]} and excluded as {name}", owner[n], f"exclusion {name}")
                elif n not in excluded:
                    excluded.append(n)
    unowned = [n for n in names if n not in owner and n not in excluded]
    if unowned:
        c.error(Code.REGION_UNOWNED, ("regions",),
                f"{len(unowned)} tensor(s) of artifact {artifact.id} belong to no region and no named exclusion: "
                f"{', '.join(unowned[:4])}{' …' if len(unowned) > 4 else ''}", "every tensor owned once", unowned[0])

    # --- instances: nodes, edges, state ------------------------------------------------------------
    available: dict[str, VType] = dict(inputs)
    weights: dict[str, WeightPlan] = {}
    read: set[str] = set()
    instances: list[RegionInstance] = []
    for ri, layer in order:
        r = rc.regions[ri]
        inst_name = r.name if layer is None else f"{r.name}.{layer}"
        base = ("regions", ri)
        for j, n in enumerate(r.consumes):
            if n not in available:
                c.error(Code.REGION_EDGE_UNPRODUCED, (*base, "consumes", j),
                        f"{inst_name} consumes {n}, which no earlier region produces")
        shares: list[tuple[str, str]] = []
        for pattern, owner_region in r.shares.items():
            concrete = pattern.replace("{i}", str(layer)) if layer is not None else pattern
            holder = owner.get(concrete)
            if holder is None or holder.split(".")[0] != owner_region:
                c.error(Code.REGION_SHARE, (*base, "shares", pattern),
                        f"{inst_name} shares {concrete} from {owner_region}, but its owner is {holder or 'nobody'}",
                        owner_region, holder)
            shares.append((concrete, owner_region))
        local: dict[str, VType] = {n: available[n] for n in r.consumes if n in available}
        kinds_of: dict[str, str] = {n: ("input" if n in inputs else "edge") for n in local}
        written: set[str] = set()
        nodes: list[NodePlan] = []
        stateful: list[tuple[str, int | None, int]] = []
        for ni, node in enumerate(r.nodes):
            np_ = _node(c, rc, node, ni, base, inst_name, layer, kernels, env, local, kinds_of, edges, r.produces,
                        set(owned_by.get(inst_name, [])) | {s for s, _ in shares}, tensors, weights, read, written)
            if np_ is not None:
                nodes.append(np_)
                if np_.kernel in STATEFUL_KERNELS:
                    kind, arg = STATEFUL_KERNELS[np_.kernel]
                    width = next((b.type.shape[-1] for b in np_.inputs if b.arg == arg), None)
                    stateful.append((kind, width if isinstance(width, int) else None, ni))
        for j, n in enumerate(r.produces):
            if not r.nodes:  # a structural region: what it produces is stated, not computed
                available[n] = edges[n]
            elif n not in written:
                c.error(Code.REGION_EDGE_UNWRITTEN, (*base, "produces", j), f"{inst_name} produces {n}, "
                                                                             "but none of its nodes writes it")
            elif n in edges:
                available[n] = edges[n]
        state = _state(c, r, base, inst_name, env, stateful if r.nodes else None)
        act = r.activation
        k = c.value(act.k, env, (*base, "activation", "k")) if act.k is not None else None
        if act.decision != "always" and stateful and act.skip != "no_kv":
            c.error(Code.REGION_SKIP, (*base, "activation", "skip"),
                    f"{inst_name} appends K/V rows: a token that skips it contributes none, and later tokens "
                    "cannot attend to it there (skip: no_kv)", "no_kv", act.skip)
        if act.skip == "no_kv" and not stateful:
            c.error(Code.REGION_SKIP, (*base, "activation", "skip"), f"{inst_name} writes no K/V rows: no_kv "
                                                                      "describes nothing")
        instances.append(RegionInstance(
            inst_name, r.name, layer, tuple(owned_by.get(inst_name, [])), tuple(shares), tuple(r.consumes),
            tuple(r.produces), state,
            ActivationPlan(act.decision, act.provenance, act.router, k, act.by, tuple(act.controls), act.skip,
                           c.at(*base, "activation")),
            tuple(nodes), c.at(*base), records.get((ri, layer)), r.within))
    for inst in instances:
        if not inst.nodes:
            continue  # structural: nothing reads its tensors, and nothing claims to
        for n in inst.tensors:
            if n not in read:
                ri = next(i for i, r in enumerate(rc.regions) if r.name == inst.region)
                c.error(Code.REGION_TENSOR_UNUSED, ("regions", ri, "tensors"),
                        f"{inst.name} owns {n}, but no node reads it: an owned tensor is computed with")
                break
    for j, n in enumerate(rc.outputs):
        if n not in available:
            c.error(Code.REGION_EDGE_UNPRODUCED, ("outputs", j), f"output {n} is produced by no region")
    parity = None
    if rc.parity is not None:
        p = rc.parity
        if p.fixture not in provenance:
            c.error(Code.REF_DANGLING, ("parity", "fixture"), f"no provenance contract has id {p.fixture!r}")
        parity = ParityPlan(p.fixture, p.top1_agreement_min, p.max_abs_logit_error, c.at("parity"),
                            p.layer_cosine_min, p.layer_relative_error_max)
    if c.diagnostics:
        raise CharterError(c.diagnostics)
    return RegionsPlan(
        id=rc.id, status=rc.status.value, model=rc.model, artifact=rc.artifact, spec_path=loaded.doc.file,
        spec_sha256=hashlib.sha256(loaded.doc.source.encode("utf-8")).hexdigest(),
        artifact_sha256=artifact.source.sha256 if artifact.source else None,
        max_tokens=rc.f1.max_tokens if rc.f1 else None, max_tokens_at=c.at("f1", "max_tokens") if rc.f1 else None,
        compute=rc.f1.compute if rc.f1 else None, inputs=inputs, edges=edges, outputs=tuple(rc.outputs),
        instances=tuple(instances), weights=weights,
        exclusions={n: tuple(e.patterns) for n, e in rc.exclusions.items()}, excluded=tuple(excluded),
        precision={k: v.step for k, v in rc.precision.items()}, parity=parity, input_ranges=ranges,
        codecs={n: t.codec for n, t in tensors.items()},
        constants=env)


def _node(c: _Collector, rc: RegionsContract, node, ni: int, base: tuple, inst: str, layer: int | None,
          kernels: dict[str, LoadedContract], env: dict, local: dict[str, VType], kinds_of: dict[str, str],
          edges: dict[str, VType], produces: list[str], readable: set[str], tensors: dict, weights: dict,
          read: set[str], written: set[str]) -> NodePlan | None:
    path = (*base, "nodes", ni)
    lc = kernels.get(node.call)
    if lc is None:
        c.error(Code.REF_DANGLING, (*path, "call"), f"no kernel contract has id {node.call!r}")
        return None
    k = lc.contract
    assert isinstance(k, KernelContract)
    if rc.model not in k.models:
        c.error(Code.REGION_SIGNATURE, (*path, "call"), f"kernel {k.id} is not stated over model {rc.model} "
                                                        f"(its models: {k.models})")
        return None
    want_in = [a.name for a in k.inputs]
    given = list(node.in_) + list(node.weights)
    if sorted(given) != sorted(want_in):
        c.error(Code.REGION_SIGNATURE, (*path, "in"), f"{k.id} takes inputs {want_in}, the node binds {given}",
                want_in, given)
        return None
    if sorted(node.out) != sorted(a.name for a in k.outputs):
        c.error(Code.REGION_SIGNATURE, (*path, "out"), f"{k.id} has outputs {[a.name for a in k.outputs]}, the node "
                                                       f"names {list(node.out)}")
        return None
    attrs: list[tuple[str, object]] = []
    for name, attr in k.attributes.items():
        if attr.value is not None:
            if name in node.attrs:
                c.error(Code.REGION_SIGNATURE, (*path, "attrs", name), f"{k.id} fixes {name} in its contract; the "
                                                                       "node cannot state it")
                return None
            attrs.append((name, c.value(attr.value, env, (*path, "call"))))
        elif name not in node.attrs:
            c.error(Code.REGION_SIGNATURE, (*path, "attrs"), f"{k.id} takes the attribute {name}; the node does not "
                                                             "give it")
            return None
        else:
            attrs.append((name, c.value(node.attrs[name], env, (*path, "attrs", name))))
    for name in node.attrs:
        if name not in k.attributes:
            c.error(Code.REGION_SIGNATURE, (*path, "attrs", name), f"{k.id} has no attribute {name}")
            return None
    bindings: list[Binding] = []
    for arg in k.inputs:
        if arg.name in node.in_:
            value = node.in_[arg.name]
            if value not in local:
                c.error(Code.REGION_VALUE_UNDEFINED, (*path, "in", arg.name),
                        f"{inst}: {value} is not a value here (not consumed by the region, nor written by an "
                        "earlier node)")
                return None
            bindings.append(Binding(arg.name, kinds_of.get(value, "local"), value, local[value]))
        else:
            pattern = node.weights[arg.name]
            name = pattern.replace("{i}", str(layer)) if layer is not None else pattern
            if name not in readable:
                c.error(Code.REGION_FOREIGN_TENSOR, (*path, "weights", arg.name),
                        f"{inst} reads {name}, which it neither owns nor shares"
                        + ("" if name in tensors else f" (artifact has no tensor {name!r})"))
                return None
            w = weights.get(name) or _weight(rc, tensors[name])
            weights[name] = w
            read.add(name)
            bindings.append(Binding(arg.name, "tensor", name, VType(w.dtype, w.shape)))
    bound: dict[str, Dim] = {}
    for arg, b in zip(k.inputs, bindings):
        where = (*path, "in" if arg.name in node.in_ else "weights", arg.name)
        expected = _expected(c, arg, env, k, bound, b.type, where)
        if expected is None:
            return None
        if expected != b.type:
            c.error(Code.REGION_SIGNATURE, where, f"{k.id} argument {arg.name} is {expected.render()}, "
                                                  f"{b.name} is {b.type.render()}", expected.render(), b.type.render())
            return None
    outs: list[Binding] = []
    for arg in k.outputs:
        t = _expected(c, arg, env, k, bound, None, (*path, "out", arg.name))
        if t is None:
            return None
        target = node.out[arg.name]
        if target in produces:
            if t != edges[target]:
                c.error(Code.REGION_EDGE_TYPE, (*path, "out", arg.name),
                        f"{inst} writes {k.id}'s {arg.name}, {t.render()}, to edge {target}, "
                        f"{edges[target].render()}", edges[target].render(), t.render())
                return None
            written.add(target)
            kinds_of[target] = "edge"
        elif target in rc.edges or target in rc.inputs:
            c.error(Code.REGION_EDGE_UNPRODUCED, (*path, "out", arg.name),
                    f"{inst} writes {target}, an edge or input it does not produce")
            return None
        else:
            kinds_of[target] = "local"
        local[target] = t
        outs.append(Binding(arg.name, kinds_of[target], target, t))
    return NodePlan(ni, k.id, k.oracle, tuple(bindings), tuple(attrs), tuple(outs), c.at(*path),
                    k.backends.cpp.function if k.backends.cpp is not None else None,
                    tuple(n for n, a in k.attributes.items() if a.value is not None))


def _expected(c: _Collector, arg, env: dict, k: KernelContract, bound: dict[str, Dim], actual: VType | None,
              where: tuple) -> VType | None:
    """The kernel argument's type; free dims bind to `actual`'s on first sight."""
    shape: list[Dim] = []
    for j, d in enumerate(arg.shape):
        if isinstance(d, str) and d in k.dims:
            if d not in bound:
                if actual is None or j >= len(actual.shape):
                    c.error(Code.REGION_SIGNATURE, where, f"{k.id}: free dim {d} is bound by no input")
                    return None
                bound[d] = actual.shape[j]
            shape.append(bound[d])
        else:
            v = c.value(d, env, where)
            if v is None:
                return None
            shape.append(v)
    return VType(arg.dtype, tuple(shape))


def _weight(rc: RegionsContract, t) -> WeightPlan:
    step = rc.precision.get(t.codec)
    kind = step.step if step else "quantized"
    shape = tuple(reversed(t.shape))
    dtype = "float32" if kind in ("identity", "dequantize") else "uint8"
    return WeightPlan(t.name, t.codec, tuple(t.shape), shape, kind, step.kernel if step else None,
                      step.label if step else None, dtype)


def _state(c: _Collector, r, base: tuple, inst: str, env: dict,
           stateful: list[tuple[str, int | None, int]] | None) -> tuple[StatePlan, ...]:
    """The region's state; with nodes (`stateful` not None), checked against what they call."""
    out = []
    for name, s in r.state.items():
        width = c.value(s.width, env, (*base, "state", name, "width")) if s.width is not None else None
        out.append(StatePlan(name, s.kind, width, s.scope, c.at(*base, "state", name)))
    kv = [s for s in out if s.kind == "kv_append"]
    if stateful is None:
        return tuple(out)
    if stateful and not kv:
        c.error(Code.REGION_STATE, (*base, "state"), f"{inst} calls a causal attention kernel, which reads the K/V "
                                                     "rows of earlier tokens: declare its kv_append state",
                "kv_append", "none")
    elif kv and not stateful:
        c.error(Code.REGION_STATE, (*base, "state", kv[0].name), f"{inst} calls no kernel that keeps K/V rows: it "
                                                                 "writes no kv_append state", "none", "kv_append")
    elif kv and len(kv) > 1:
        c.error(Code.REGION_STATE, (*base, "state", kv[1].name), f"{inst} states two kv_append states")
    elif kv and stateful and stateful[0][1] is not None and kv[0].width != stateful[0][1]:
        c.error(Code.REGION_STATE, (*base, "state", kv[0].name, "width"),
                f"{inst} appends K rows of width {stateful[0][1]}, the state says {kv[0].width}",
                stateful[0][1], kv[0].width)
    return tuple(out)


def _records(c: _Collector, rc: RegionsContract, order, count: int, artifact: ArtifactPlan, env: dict,
             owner: dict[str, str]) -> dict[tuple[int, int | None], tuple[str, int, int]]:
    """Store records owned per layer: each instance owns `per_layer` consecutive records; together
    they are every record of the store, and the store tensor belongs to that region alone."""
    out: dict[tuple[int, int | None], tuple[str, int, int]] = {}
    stores = {s.name: s for s in artifact.stores}
    for ri, r in enumerate(rc.regions):
        if r.records is None:
            continue
        path = ("regions", ri, "records")
        store = stores.get(r.records.store)
        if store is None:
            c.error(Code.REGION_STORE, (*path, "store"), f"artifact {artifact.id} has no store {r.records.store!r}")
            continue
        fields = {f.field: f.value for f in store.fields}
        if store.kind != "expert-major-v2" or "layers" not in fields or "experts" not in fields:
            c.error(Code.REGION_STORE, (*path, "store"), f"store {store.name} ({store.kind}) holds no per-layer records")
            continue
        per = c.value(r.records.per_layer, env, (*path, "per_layer"))
        if not isinstance(per, int) or isinstance(per, bool) or per < 1:
            c.error(Code.REGION_STORE, (*path, "per_layer"), f"per_layer is a positive integer, got {per!r}")
            continue
        layers = [layer for i, layer in order if i == ri]
        total = fields["layers"] * fields["experts"]
        if per != fields["experts"] or len(layers) * per != total:
            c.error(Code.REGION_STORE, (*path, "per_layer"),
                    f"{len(layers)} layers x {per} records, but store {store.name} holds {fields['layers']} x "
                    f"{fields['experts']}: every record is owned exactly once", f"{fields['layers']} x {fields['experts']}",
                    f"{len(layers)} x {per}")
            continue
        for layer in layers:
            out[(ri, layer)] = (store.name, layer * per, (layer + 1) * per)
        holder = owner.get(store.tensor)
        if holder is not None:
            c.error(Code.REGION_OWNERSHIP, (*path, "store"), f"store tensor {store.tensor} is owned by {holder} and "
                                                             f"by the records of {r.name}", holder, r.name)
        else:
            owner[store.tensor] = f"{r.name} (records)"
    return out


def _routers(c: _Collector, rc: RegionsContract, kernels: dict[str, LoadedContract], env: dict) -> None:
    """A router is a call of its kernel contract: k and the expert count are the kernel's; the
    regions it routes select k of exactly that many records per layer."""
    for name, router in rc.routers.items():
        path = ("routers", name)
        lc = kernels.get(router.kernel)
        if lc is None:
            c.error(Code.REF_DANGLING, (*path, "kernel"), f"no kernel contract has id {router.kernel!r}")
            continue
        k = lc.contract
        if rc.model not in k.models:
            c.error(Code.REGION_ROUTER, (*path, "kernel"), f"kernel {k.id} is not stated over model {rc.model}")
            continue
        want_k = c.value(router.k, env, (*path, "k"))
        fixed = k.attributes.get("k")
        kernel_k = c.value(fixed.value, env, (*path, "kernel")) if fixed is not None and fixed.value is not None else None
        if kernel_k is not None and want_k != kernel_k:
            c.error(Code.REGION_ROUTER, (*path, "k"), f"router {name} selects {want_k}, its kernel {k.id} {kernel_k}",
                    kernel_k, want_k)
        experts = c.value(router.experts, env, (*path, "experts"))
        width = c.value(k.inputs[0].shape[-1], env, (*path, "kernel"))
        if experts != width:
            c.error(Code.REGION_ROUTER, (*path, "experts"), f"router {name} chooses among {experts}, its kernel's "
                                                            f"logits are {width} wide", width, experts)
        for ri, r in enumerate(rc.regions):
            a = r.activation
            if a.decision != "routed" or a.router != name:
                continue
            rk = c.value(a.k, env, ("regions", ri, "activation", "k"))
            if rk != want_k:
                c.error(Code.REGION_ROUTER, ("regions", ri, "activation", "k"),
                        f"{r.name} runs {rk} per token, router {name} selects {want_k}", want_k, rk)
            per = c.value(r.records.per_layer, env, ("regions", ri, "records", "per_layer")) if r.records else None
            if per != experts:
                c.error(Code.REGION_ROUTER, ("regions", ri, "records", "per_layer"),
                        f"{r.name} has {per} records per layer, router {name} chooses among {experts}", experts, per)


def kernel_and_provenance(contracts: dict[str, LoadedContract]) -> tuple[dict, dict]:
    kernels = {k: v for k, v in contracts.items() if isinstance(v.contract, KernelContract)}
    prov = {k: v for k, v in contracts.items() if isinstance(v.contract, ProvenanceContract)}
    return kernels, prov
