"""The F1 reference interpreter: executes a verified regions graph, node by node, with the numpy
oracles of the kernel contracts its nodes call.

The graph is the RegionsPlan `charter check` verified (charter.regions.plan); there is no other
description of the model beside it: the order of regions, the values each node reads and writes,
the weights and the attributes all come from the plan, and each node runs its kernel contract's
`oracle`. Note [F1 gate] (charter.regions.gate) is applied first, whole: a conditional, stateful
or quantized graph, or a call outside the domain, is refused before the first node runs.

Note [Native mode]: `run(..., kernels="native")` executes the same graph with the C++ reference
kernels instead: each node calls the generated binding (charter._native, one function per kernel
contract with a `backends.cpp`) of the kernel contract it names, with the same arrays and the
attributes the contract leaves to the call (a fixed attribute is built into the binding from the
same contract). A node whose kernel has no native binding refuses the whole run before any node
runs (F1_NODE), so a native run never quietly mixes in an oracle. `impls` still swaps one kernel
(the bench's emulations). What native parity proves is in docs/regions.md ("Native kernels").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from charter.diagnostics import CharterError, Code, Diagnostic
from charter.regions import gate
from charter.regions.plan import NodePlan, RegionInstance, RegionsPlan

ORACLES = "charter.oracles."


@dataclass
class Trace:
    """What a run did: how many nodes ran (0 when the gate refused), and per kernel how many."""

    nodes_run: int = 0
    by_kernel: dict[str, int] = field(default_factory=dict)


def oracle_of(node: NodePlan) -> Callable:
    """The kernel contract's oracle; only a function of charter.oracles may define a node."""
    module, _, name = node.oracle.partition(":")
    if not module.startswith(ORACLES):
        raise CharterError([Diagnostic(Code.F1_NODE, node.kernel, f"oracle {node.oracle} is not in charter.oracles",
                                       location=node.at)])
    return getattr(importlib.import_module(module), name)


def native_impls(plan: RegionsPlan) -> dict[str, Callable]:
    """The native binding of every kernel the graph calls (Note [Native mode]), by kernel id;
    CharterError (F1_NODE, one per kernel) if any has none."""
    from charter.codegen.common.names import identifier

    try:
        from charter import _native
    except ImportError as exc:  # pragma: no cover - make install builds it
        raise CharterError([Diagnostic(Code.F1_NODE, "kernels", f"charter._native is not built: {exc}")]) from None
    out: dict[str, Callable] = {}
    missing: list[Diagnostic] = []
    for inst in plan.instances:
        for node in inst.nodes:
            if node.kernel in out or any(d.field == node.kernel for d in missing):
                continue
            fn = getattr(_native, identifier(node.kernel), None) if node.native is not None else None
            if fn is None:
                missing.append(Diagnostic(Code.F1_NODE, node.kernel,
                                          f"{inst.name} node {node.index} calls {node.kernel}, which has no native "
                                          "binding (its kernel contract states no backends.cpp)", location=node.at))
                continue
            out[node.kernel] = _native_call(fn, frozenset(node.fixed))
    gate.refuse(missing)
    return out


def _native_call(fn: Callable, fixed: frozenset[str]) -> Callable:
    def call(**kwargs):
        return fn(**{k: v for k, v in kwargs.items() if k not in fixed})
    call.__name__ = getattr(fn, "__name__", "native")
    return call


def run(plan: RegionsPlan, inputs: Mapping[str, np.ndarray], weights: Mapping[str, object], *,
        trace: Trace | None = None, impls: Mapping[str, Callable] | None = None, kernels: str = "oracle",
        on_node: Callable[[RegionInstance, NodePlan, dict[str, np.ndarray], np.ndarray], None] | None = None,
        ) -> dict[str, np.ndarray]:
    """The graph's outputs for explicit caller tensors, every node by its kernel contract's oracle
    (`kernels="oracle"`) or its native binding (`"native"`, Note [Native mode]). CharterError
    (F1_*) if the gate refuses (then no node ran) or a node's result is not what its kernel
    contract states."""
    if kernels not in ("oracle", "native"):
        raise ValueError(f"kernels is 'oracle' or 'native', not {kernels!r}")
    trace = trace if trace is not None else Trace()
    problems = gate.check_graph(plan)
    tokens, call = gate.check_call(plan, inputs, weights)
    gate.refuse(problems + call)
    impls = {**(native_impls(plan) if kernels == "native" else {}), **(impls or {})}
    fns = {n.kernel: impls.get(n.kernel) or oracle_of(n) for inst in plan.instances for n in inst.nodes}
    arrays = {name: (w.array if isinstance(w, gate.Weight) else w) for name, w in weights.items()}
    values: dict[str, np.ndarray] = {n: inputs[n] for n in plan.inputs}
    for inst in plan.instances:
        local = {n: values[n] for n in inst.consumes}
        for node in inst.nodes:
            args = {b.arg: (arrays[b.name] if b.kind == "tensor" else local[b.name]) for b in node.inputs}
            try:
                result = fns[node.kernel](**args, **dict(node.attrs))
            except (ValueError, TypeError) as exc:
                raise CharterError([Diagnostic(Code.F1_NODE, f"{inst.name}.nodes[{node.index}]",
                                               f"{inst.name} node {node.index} ({node.kernel}) refused its inputs: "
                                               f"{exc}", location=node.at)]) from None
            results = result if isinstance(result, tuple) else (result,)
            if len(results) != len(node.outputs):
                raise CharterError([Diagnostic(Code.F1_NODE, f"{inst.name}.nodes[{node.index}]",
                                               f"{node.kernel} returned {len(results)} results, its contract states "
                                               f"{len(node.outputs)}", location=node.at)])
            for b, out in zip(node.outputs, results):
                want = b.type.concrete(tokens)
                if not isinstance(out, np.ndarray) or out.dtype != np.dtype(b.type.dtype) or out.shape != want:
                    got = f"{out.dtype}{list(out.shape)}" if isinstance(out, np.ndarray) else type(out).__name__
                    raise CharterError([Diagnostic(Code.F1_NODE, f"{inst.name}.nodes[{node.index}].{b.arg}",
                                                   f"{node.kernel} returned {got} for {b.arg}, its contract states "
                                                   f"{b.type.dtype}{list(want)}", f"{b.type.dtype}{list(want)}", got,
                                                   location=node.at)])
                local[b.name] = out
            trace.nodes_run += 1
            trace.by_kernel[node.kernel] = trace.by_kernel.get(node.kernel, 0) + 1
            if on_node is not None:
                on_node(inst, node, args, results[0])
        for n in inst.produces:
            values[n] = local[n]
    return {n: values[n] for n in plan.outputs}


def positions(tokens: int) -> np.ndarray:
    """Positions 0..tokens-1 of one call from empty state (the only call F1 makes)."""
    return np.arange(tokens, dtype=np.int32)
