"""The regions contract: a model as a graph of coarse executable regions (docs/regions.md).

A regions contract sits over one model contract and one of its artifact contracts. It states which
tensors each region owns (by pattern, per layer), the typed values that cross region boundaries
(edges, dtype and shape from model constants), the state each region writes, when a region runs
(activation: decision, provenance, skip semantics; Note [Activation is three facts]) and the nodes
a region executes, each a call to a kernel contract. The F1 reference interpreter
(charter.regions.interpreter) executes exactly this graph: the IR is what runs.

Rules that need no model constants live in the validators below; rules over resolved values (the
artifact's tensor inventory, kernel signatures, edge types) live in charter.regions.plan.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, StrictInt, StringConstraints, model_validator

from charter.contract.models import Header, Id, IntOrExpr, Name, NumberOrExpr, Strict, located

# Note [Activation is three facts] (ADR-003 of the region design note): whether a region runs is
# split into
#   decision    always | routed (by a named router, with k) | skippable (by a named mechanism);
#   provenance  exact (the output is the model's own: a router's unselected experts, drafts the
#               target verifies) | quality_bounded (the output may differ; named controls required:
#               full, random, static, learned);
#   skip        what a skip means for state: an attention region that a token skips contributes no
#               K/V rows there, and later tokens cannot attend to it there (`no_kv`); an MLP region
#               passes the residual through (`passthrough`).
# Provenance, never a label, decides the numerical mode: a region skipped "by label" (a request
# said "C#") is refused outright, and so is a quality-bounded skip without its controls.
CONTROLS = ("full", "random", "static", "learned")
SkipMechanism = Literal["predictor", "draft_verification", "early_exit", "label"]

RegionName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
TensorPattern = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
DType = Literal["float32", "int32"]


class ValueType(Strict):
    """A typed value: dtype and shape, each dim an integer, the free dim `tokens`, or an expression
    over model constants."""

    dtype: DType = Field(description="The element type.")
    shape: list[IntOrExpr] = Field(min_length=1, max_length=4, description="Dims: integers, the free dim `tokens`, "
                                                                          "or expressions over model constants.",
                                   examples=[["tokens", "hidden"]])
    range: list[IntOrExpr] | None = Field(None, min_length=2, max_length=2,
                                          description="Graph inputs, int32: [lo, hi) holds every element.")

    @model_validator(mode="after")
    def _range_on_ints(self) -> "ValueType":
        if self.range is not None and self.dtype != "int32":
            raise located(("range",), "a range bounds int32 inputs")
        return self


class F1Domain(Strict):
    """The F1 oracle's machine-enforced domain (AFN-011: a reference algorithm needs an expiry
    condition). A call with more tokens than `max_tokens` is rejected before any node runs."""

    max_tokens: StrictInt = Field(ge=1, le=4096, description="Largest accepted sequence; max_tokens + 1 is rejected.")
    compute: Literal["float32"] = Field("float32", description="The interpreter's arithmetic.")


class PrecisionStep(Strict):
    """How tensors of one codec enter the graph: unchanged (`identity`, float32 only), through an
    explicit labelled dequantization (`dequantize`, by the named kernel contract), or still quantized
    (`quantized`: a node consumes the blocks; the F1 interpreter refuses it)."""

    step: Literal["identity", "dequantize", "quantized"] = Field(
        description="`identity` (float32 tensors as they are), `dequantize` (by `kernel`, labelled), or `quantized` "
                    "(consumed as blocks; refused by the F1 interpreter).")
    kernel: Id | None = Field(None, description="dequantize: the kernel contract that defines the step.")
    label: Literal["derived_metadata"] | None = Field(
        None, description="dequantize: the provenance class of the dequantized arrays (a value computed from "
                          "the pinned artifact's bytes).")

    @model_validator(mode="after")
    def _step_fields(self) -> "PrecisionStep":
        if self.step == "dequantize" and (self.kernel is None or self.label is None):
            raise located(("step",), "a dequantize step names its kernel contract and its label")
        if self.step != "dequantize" and (self.kernel is not None or self.label is not None):
            raise located(("kernel",) if self.kernel is not None else ("label",),
                          f"a {self.step} step has no kernel or label: only a dequantization is a step")
        return self


class StateEffect(Strict):
    """State a region writes. `kv_append`: K and V rows of `width` appended per token; `recurrent`:
    a named recurrent state. `scope`: `call` (created empty and dropped inside one call) or
    `session` (carried across calls)."""

    kind: Literal["kv_append", "recurrent"] = Field(description="`kv_append`: K and V rows appended per token; "
                                                                "`recurrent`: a named recurrent state.")
    width: IntOrExpr | None = Field(None, description="kv_append: elements per K (and per V) row.")
    rows_per_token: StrictInt | None = Field(None, ge=1, le=1, description="kv_append: rows appended per token.")
    scope: Literal["call", "session"] = Field(description="`call`: created empty and dropped inside one call; "
                                                          "`session`: carried across calls.")

    @model_validator(mode="after")
    def _kind_fields(self) -> "StateEffect":
        if self.kind == "kv_append" and (self.width is None or self.rows_per_token is None):
            raise located(("kind",), "a kv_append state states its width and rows_per_token")
        if self.kind == "recurrent" and (self.width is not None or self.rows_per_token is not None):
            raise located(("width",) if self.width is not None else ("rows_per_token",),
                          "a recurrent state is named, not a row width")
        return self


class Activation(Strict):
    """Note [Activation is three facts]."""

    decision: Literal["always", "routed", "skippable"] = Field(
        description="Whether the region runs: `always`, `routed` (selected by a router, with k), or `skippable` "
                    "(by the mechanism named in `by`).")
    router: Name | None = Field(None, description="routed: the router (under `routers`) that selects this region.")
    k: IntOrExpr | None = Field(None, description="routed: how many of the routed regions run per token.")
    by: SkipMechanism | None = Field(None, description="skippable: what decides the skip.")
    provenance: Literal["exact", "quality_bounded"] = Field(
        "exact", description="`exact`: the output is the model's own; `quality_bounded`: it may differ, measured "
                             "against the named `controls`.")
    controls: list[Literal["full", "random", "static", "learned"]] = Field(
        default_factory=list, description="quality_bounded: the controls every quality claim is measured against.")
    skip: Literal["no_kv", "passthrough"] | None = Field(
        None, description="What a skipped token leaves behind (required unless the decision is always).")

    @model_validator(mode="after")
    def _three_facts(self) -> "Activation":
        if self.decision == "always":
            for f in ("router", "k", "by", "skip"):
                if getattr(self, f) is not None:
                    raise located((f,), f"an always-active region has no {f}")
            if self.provenance != "exact" or self.controls:
                raise located(("provenance",), "an always-active region computes the model exactly")
            return self
        if self.skip is None:
            raise located(("skip",), f"a {self.decision} region states what a skip leaves behind (skip: no_kv or "
                                     "passthrough)")
        if self.decision == "routed":
            if self.router is None or self.k is None:
                raise located(("router",), "a routed region names its router and k")
            if self.by is not None:
                raise located(("by",), "a routed region is decided by its router, not by `by`")
        else:
            if self.by is None:
                raise located(("by",), "a skippable region names what decides the skip")
            if self.by == "label":
                raise located(("by",), "label-based skipping is refused: a label or heuristic about the request "
                                       "never removes a region from the model's computation")
            if self.router is not None or self.k is not None:
                raise located(("router",) if self.router is not None else ("k",), "only a routed region has a router")
        if self.provenance == "quality_bounded":
            missing = [c for c in CONTROLS if c not in self.controls]
            if missing:
                raise located(("controls",), f"a quality_bounded skip names its controls {list(CONTROLS)}; "
                                             f"missing {missing}")
        elif self.controls:
            raise located(("controls",), "controls belong to a quality_bounded provenance")
        if self.provenance == "exact" and self.decision == "skippable" and self.by != "draft_verification":
            raise located(("provenance",), f"a skip decided by {self.by} changes the output: its provenance is "
                                           "quality_bounded (only drafts the target verifies are exact)")
        if len(set(self.controls)) != len(self.controls):
            raise located(("controls",), "a control is listed twice")
        return self


class Node(Strict):
    """One call of a kernel contract. `in` binds kernel inputs to values (edges, graph inputs, or
    outputs of earlier nodes of the region); `weights` binds kernel inputs to tensors (`{i}` is the
    layer); `attrs` gives the call's attributes (expressions over model constants); `out` names the
    outputs (a local value, or an edge the region produces)."""

    call: Id = Field(description="The kernel contract this node calls.", examples=["rmsnorm"])
    in_: dict[Name, Name] = Field(default_factory=dict, alias="in", description="Kernel input -> an edge, a graph "
                                                                                "input or an earlier node's output.",
                                  examples=[{"x": "residual"}])
    weights: dict[Name, TensorPattern] = Field(default_factory=dict, description="Kernel input -> a tensor of the "
                                                                                 "artifact (`{i}`: the layer).",
                                               examples=[{"w": "blk.{i}.attn_norm.weight"}])
    attrs: dict[Name, NumberOrExpr] = Field(default_factory=dict, description="Kernel attribute -> a literal or "
                                                                              "an expression over model constants.",
                                            examples=[{"eps": "rms_eps"}])
    out: dict[Name, Name] = Field(min_length=1, description="Kernel output -> the name of its value (a local value, "
                                                            "or an edge the region produces).")

    model_config = {"extra": "forbid", "frozen": True, "strict": True, "populate_by_name": True}

    @model_validator(mode="after")
    def _args_once(self) -> "Node":
        both = sorted(set(self.in_) & set(self.weights))
        if both:
            raise located(("weights", both[0]), f"kernel argument {both[0]} is bound twice (in and weights)")
        return self


class StoreRecords(Strict):
    """A layer region that owns records of an embedded store instead of tensors: each layer's
    instance owns `per_layer` consecutive records (the routed experts of an ExpertMajor store)."""

    store: Name = Field(description="The artifact contract's store (under `stores`).")
    per_layer: IntOrExpr = Field(description="Consecutive records each layer's instance owns.")


class Region(Strict):
    name: RegionName = Field(description="The region's name, unique in the contract.", examples=["attention"])
    scope: Literal["model", "layer"] = Field(description="model: once; layer: once per layer ({i} is its index).")
    layer_kinds: list[Name] | None = Field(None, description="layer scope: only the layers of these kinds.")
    tensors: list[TensorPattern] = Field(default_factory=list, description="fnmatch patterns ({i}: the layer) of "
                                                                           "the tensors this region owns.")
    shares: dict[TensorPattern, RegionName] = Field(
        default_factory=dict, description="Tensors this region reads but another region owns (a tied output "
                                          "head reads the embedding): tensor -> owner region.")
    consumes: list[Name] = Field(default_factory=list, description="Edges and graph inputs the region reads.")
    produces: list[Name] = Field(default_factory=list, description="Edges the region writes.")
    state: dict[Name, StateEffect] = Field(default_factory=dict, description="State the region writes ({}: none).")
    records: StoreRecords | None = Field(None, description="Store records this layer region owns, per layer.")
    within: RegionName | None = Field(None, description="The region this one is a sub-region of (routed experts "
                                                        "of an MoE MLP).")
    activation: Activation = Field(description="When the region runs (Note [Activation is three facts]).")
    nodes: list[Node] = Field(default_factory=list, description="The calls the region executes; a region without "
                                                                "nodes is structural (stated, not executable).")

    @model_validator(mode="after")
    def _scope_fields(self) -> "Region":
        if self.records is not None and self.scope != "layer":
            raise located(("records",), "store records are owned per layer: only a layer region has records")
        if self.activation.decision == "routed" and self.records is None:
            raise located(("activation", "decision"), "a routed region is a set of sub-regions its router selects "
                                                      "among: state them as records")
        if self.scope == "model" and self.layer_kinds is not None:
            raise located(("layer_kinds",), "only a layer region has layer_kinds")
        for group in ("tensors", "shares"):
            for i, p in enumerate(getattr(self, group)):
                if "{i}" in p and self.scope != "layer":
                    raise located((group, i if group == "tensors" else p), f"{{i}} names the layer: only a layer "
                                                                            "region's patterns use it")
                if re.search(r"\{(?!i\})", p):
                    raise located((group, i if group == "tensors" else p), f"pattern {p!r}: the only placeholder "
                                                                            "is {i}")
        return self


class Layers(Strict):
    count: IntOrExpr = Field(description="Layers of the model (must equal the model's `layers`).")
    regions: dict[Name, list[RegionName]] = Field(
        min_length=1, description="Layer kind -> the layer regions every layer of that kind has, in order "
                                  "(`all` when the model has no layer_pattern).")


class Router(Strict):
    """A router that selects `k` of `experts` routed regions per token."""

    kernel: Id = Field(description="The kernel contract of the routing (a top-k).")
    k: IntOrExpr = Field(description="Experts selected per token.")
    experts: IntOrExpr = Field(description="Experts the router chooses among.")


class Exclusion(Strict):
    patterns: list[TensorPattern] = Field(min_length=1, description="fnmatch patterns of the tensors no region "
                                                                    "owns.")
    reason: str = Field(min_length=1, description="Why these tensors belong to no region.")


class Parity(Strict):
    """What the interpreter's final logits are compared with, by which metrics, within what."""

    fixture: Id = Field(description="The provenance contract of the upstream capture.")
    top1_agreement_min: float = Field(ge=0.0, le=1.0, strict=True, description="Least fraction of positions whose "
                                                                                 "argmax equals upstream's.")
    max_abs_logit_error: float = Field(gt=0.0, strict=True, description="Largest |logit - upstream logit| "
                                                                         "allowed at the captured positions.")
    layer_cosine_min: float | None = Field(None, ge=-1.0, le=1.0, strict=True,
                                           description="Least cosine between the residual stream after each layer "
                                                       "and upstream's, where the fixture captures it.")
    layer_relative_error_max: float | None = Field(None, gt=0.0, strict=True,
                                                   description="Largest max|difference| / max|upstream| of the "
                                                               "residual stream after each layer.")


class RegionsContract(Header):
    kind: Literal["regions"] = Field(description="`regions`: a model as a graph of executable regions over one "
                                                "artifact.")
    model: Id = Field(description="The model contract whose constants the graph uses.")
    artifact: Id = Field(description="The artifact contract whose tensors the regions own.")
    dims: list[Literal["tokens"]] = Field(default_factory=lambda: ["tokens"], description="Free dims of the graph.")
    f1: F1Domain | None = Field(None, description="The F1 interpreter's domain; absent: not executable by F1.")
    precision: dict[str, PrecisionStep] = Field(min_length=1, description="Codec -> how its tensors enter.")
    inputs: dict[Name, ValueType] = Field(min_length=1, description="Explicit caller tensors.")
    edges: dict[Name, ValueType] = Field(default_factory=dict, description="Values crossing region boundaries.")
    outputs: list[Name] = Field(min_length=1, description="The edges the graph returns.", examples=[["logits"]])
    layers: Layers | None = Field(None, description="The layer regions, by layer kind.")
    routers: dict[Name, Router] = Field(default_factory=dict, description="Routers of routed regions, by name.")
    exclusions: dict[Name, Exclusion] = Field(default_factory=dict,
                                              description="Named tensors that belong to no region, with the reason.")
    regions: list[Region] = Field(min_length=1, description="Every region, each owning its tensors once.")
    parity: Parity | None = Field(None, description="What the interpreter's outputs are compared with, and within "
                                                    "what.")

    @model_validator(mode="after")
    def _names(self) -> "RegionsContract":
        names = [r.name for r in self.regions]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise located(("regions", i, "name"), f"region {n!r} is stated twice")
        for n, t in self.edges.items():
            if t.range is not None:
                raise located(("edges", n, "range"), "a range bounds graph inputs only")
        both = sorted(set(self.inputs) & set(self.edges))
        if both:
            raise located(("edges", both[0]), f"{both[0]} is both a graph input and an edge")
        for i, r in enumerate(self.regions):
            for j, n in enumerate(r.consumes):
                if n not in self.inputs and n not in self.edges:
                    raise located(("regions", i, "consumes", j), f"{n!r} is neither a graph input nor an edge")
            for j, n in enumerate(r.produces):
                if n not in self.edges:
                    raise located(("regions", i, "produces", j), f"{n!r} is not an edge")
            for owner_pattern, owner in r.shares.items():
                if owner not in names:
                    raise located(("regions", i, "shares", owner_pattern), f"no region is named {owner!r}")
            if r.activation.decision == "routed" and r.activation.router not in self.routers:
                raise located(("regions", i, "activation", "router"),
                              f"router {r.activation.router!r} is not under routers")
        for i, r in enumerate(self.regions):
            if r.within is not None and (r.within not in names or r.within == r.name):
                raise located(("regions", i, "within"), f"no other region is named {r.within!r}")
            if self.f1 is not None and not r.nodes:
                raise located(("regions", i, "nodes"), f"region {r.name} has no nodes: a graph with an f1 domain "
                                                       "executes every region")
        for j, n in enumerate(self.outputs):
            if n not in self.edges:
                raise located(("outputs", j), f"output {n!r} is not an edge")
        if self.layers is not None:
            for kind, listed in self.layers.regions.items():
                for j, n in enumerate(listed):
                    if n not in names:
                        raise located(("layers", "regions", kind, j), f"no region is named {n!r}")
        return self
