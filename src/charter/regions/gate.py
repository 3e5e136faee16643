"""The F1 gate: everything the reference interpreter refuses, decided before any node runs.

Note [F1 gate]: the first F1 increment executes a verified, fixed-shape, FP32, always-active graph
from explicit caller tensors. Anything else needs machinery F1 does not have (a region scheduler,
typed state that outlives a call, quantized arithmetic), and running it anyway would be an
accidental dense fallback. So the gate refuses, with every reason at once and before the first
node is evaluated:

  F1_UNAVAILABLE  the contract states no f1 domain;
  F1_CONDITIONAL  a region that is routed or skippable (its decision is not `always`);
  F1_STATEFUL     state that outlives the call (`scope: session`) or recurrent state;
  F1_QUANTIZED    a tensor still quantized (`step: quantized`), a node input that is not float32
                  and not a graph input, a weight that is not the output of its codec's declared
                  step (a Q4_1 tensor handed over as a bare array is refused: it enters only through
                  the labelled dequantization, charter.regions.weights);
  F1_DOMAIN       a token count outside [1, f1.max_tokens] (the oracle's expiry condition:
                  AFN-011; dense attention is O(T^2) and authoritative only that far);
  F1_INPUT        caller tensors not exactly the graph's inputs, dtypes, shapes and ranges;
  F1_WEIGHT       weights not exactly the graph's tensors, shapes, float32 and finite.

`check_graph` is the static half (the plan alone), `check_call` the half that needs the caller's
tensors; the interpreter runs both, then the nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from charter.diagnostics import CharterError, Code, Diagnostic, Location
from charter.regions.plan import TOKENS, RegionsPlan


@dataclass(frozen=True)
class Weight:
    """A weight as the interpreter takes it: the array, the precision step that produced it, the
    stored codec, and the provenance statement of the array (derived_metadata for a dequantization)."""

    array: np.ndarray
    step: str  # identity | dequantize
    codec: str
    label: str


def _d(code: Code, field: str, message: str, at: Location | None, expected=None, actual=None) -> Diagnostic:
    return Diagnostic(code, field, message, None if expected is None else str(expected),
                      None if actual is None else str(actual), location=at)


def check_graph(plan: RegionsPlan) -> list[Diagnostic]:
    """The static gate: what makes this graph one F1 cannot run, whatever the caller passes."""
    out: list[Diagnostic] = []
    if plan.max_tokens is None:
        out.append(_d(Code.F1_UNAVAILABLE, "f1", f"regions contract {plan.id} states no f1 domain: its graph is not "
                                                 "executable by the F1 reference interpreter", None))
    if plan.compute not in (None, "float32"):
        out.append(_d(Code.F1_QUANTIZED, "f1.compute", f"F1 computes in float32, not {plan.compute}", None))
    for inst in plan.instances:
        a = inst.activation
        if a.decision != "always":
            out.append(_d(Code.F1_CONDITIONAL, f"{inst.name}.activation.decision",
                          f"{inst.name} is {a.decision}: F1 executes always-active graphs only (a conditional "
                          "graph needs the region scheduler)", a.at, "always", a.decision))
        for s in inst.state:
            if s.scope != "call" or s.kind == "recurrent":
                out.append(_d(Code.F1_STATEFUL, f"{inst.name}.state.{s.name}",
                              f"{inst.name} keeps {s.kind} state {s.name} ({s.scope} scope): F1 runs one call from "
                              "empty state and keeps nothing", s.at, "call-scoped kv_append", f"{s.scope} {s.kind}"))
        for node in inst.nodes:
            for b in node.inputs:
                if b.type.dtype != "float32" and b.kind != "input":
                    out.append(_d(Code.F1_QUANTIZED, f"{inst.name}.nodes[{node.index}].{b.arg}",
                                  f"{inst.name} node {node.index} ({node.kernel}) takes {b.name} as {b.type.render()}: "
                                  "F1 nodes compute in float32", node.at, "float32", b.type.dtype))
    for w in plan.weights.values():
        if w.step == "quantized":
            out.append(_d(Code.F1_QUANTIZED, f"weights.{w.name}",
                          f"{w.name} ({w.codec}) would enter the graph still quantized: F1 takes quantized weights "
                          "only through an explicit dequantization step", None, "dequantize", "quantized"))
    return out


def check_call(plan: RegionsPlan, inputs: Mapping[str, object], weights: Mapping[str, object]) -> tuple[int, list[Diagnostic]]:
    """The caller's half: (token count, findings)."""
    out: list[Diagnostic] = []
    tokens: int | None = None
    for name in sorted(set(inputs) - set(plan.inputs)):
        out.append(_d(Code.F1_INPUT, f"inputs.{name}", f"{name} is not an input of {plan.id}", None))
    for name, t in plan.inputs.items():
        value = inputs.get(name)
        if value is None:
            out.append(_d(Code.F1_INPUT, f"inputs.{name}", f"input {name} ({t.render()}) is missing", None))
            continue
        if not isinstance(value, np.ndarray) or value.dtype != np.dtype(t.dtype) or value.ndim != len(t.shape):
            got = f"{value.dtype}[{value.ndim}-d]" if isinstance(value, np.ndarray) else type(value).__name__
            out.append(_d(Code.F1_INPUT, f"inputs.{name}", f"input {name} must be {t.render()}, got {got}", None,
                          t.render(), got))
            continue
        if not value.flags.c_contiguous:
            out.append(_d(Code.F1_INPUT, f"inputs.{name}", f"input {name} is not C-contiguous (nothing is copied "
                                                           "or converted)", None))
            continue
        for j, d in enumerate(t.shape):
            if d == TOKENS:
                if tokens is None:
                    tokens = int(value.shape[j])
                elif value.shape[j] != tokens:
                    out.append(_d(Code.F1_INPUT, f"inputs.{name}", f"input {name} has {value.shape[j]} tokens, an "
                                                                   f"earlier input {tokens}", None, tokens,
                                  value.shape[j]))
            elif value.shape[j] != d:
                out.append(_d(Code.F1_INPUT, f"inputs.{name}", f"input {name} dim {j} is {value.shape[j]}, "
                                                               f"{t.render()} says {d}", None, d, value.shape[j]))
        lo, hi = plan.input_ranges.get(name, (None, None))
        if lo is not None and value.size and (int(value.min()) < lo or int(value.max()) >= hi):
            out.append(_d(Code.F1_INPUT, f"inputs.{name}", f"input {name} holds values outside [{lo}, {hi}): "
                                                           f"[{int(value.min())}, {int(value.max())}]", None,
                          f"[{lo}, {hi})", f"[{int(value.min())}, {int(value.max())}]"))
    if plan.max_tokens is not None and tokens is not None and not 1 <= tokens <= plan.max_tokens:
        out.append(_d(Code.F1_DOMAIN, "f1.max_tokens",
                      f"{tokens} tokens: the F1 oracle is authoritative for 1 to {plan.max_tokens} tokens only "
                      "(dense attention; the domain is the contract's f1.max_tokens)", plan.max_tokens_at,
                      f"1..{plan.max_tokens}", tokens))
    for name in sorted(set(weights) - set(plan.weights)):
        out.append(_d(Code.F1_WEIGHT, f"weights.{name}", f"{name} is not a tensor the graph reads", None))
    for name, w in plan.weights.items():
        given = weights.get(name)
        if given is None:
            out.append(_d(Code.F1_WEIGHT, f"weights.{name}", f"weight {name} is missing", None))
            continue
        if isinstance(given, Weight):
            if given.step != w.step or given.codec != w.codec or not given.label:
                out.append(_d(Code.F1_QUANTIZED, f"weights.{name}",
                              f"{name} ({w.codec}) enters through step {w.step}; this array is labelled "
                              f"{given.step} of {given.codec}", None, f"{w.step} {w.codec}",
                              f"{given.step} {given.codec}"))
                continue
            array = given.array
        elif w.step == "identity" and isinstance(given, np.ndarray):
            array = given
        else:
            out.append(_d(Code.F1_QUANTIZED, f"weights.{name}",
                          f"{name} is stored as {w.codec}: it enters only through its labelled {w.step} step "
                          "(charter.regions.weights), never as a bare array", None, f"Weight({w.step})",
                          type(given).__name__))
            continue
        if not isinstance(array, np.ndarray) or array.dtype != np.float32 or tuple(array.shape) != w.shape:
            got = f"{array.dtype}{list(array.shape)}" if isinstance(array, np.ndarray) else type(array).__name__
            out.append(_d(Code.F1_WEIGHT, f"weights.{name}", f"weight {name} must be float32{list(w.shape)}, got {got}",
                          None, f"float32{list(w.shape)}", got))
        elif not array.flags.c_contiguous or not np.isfinite(array).all():
            out.append(_d(Code.F1_WEIGHT, f"weights.{name}", f"weight {name} is not C-contiguous and finite", None))
    return (tokens or 0), out


def refuse(diagnostics: list[Diagnostic]) -> None:
    if diagnostics:
        raise CharterError(diagnostics)
