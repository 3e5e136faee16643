"""Note [F1 gate]: a conditional, stateful or quantized graph, or a call outside the domain, is
refused before any node runs; the refusal names every reason."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from charter.contract.contractset import load_set
from charter.diagnostics import CharterError
from charter.regions import gate, interpreter
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "regions" / "smollm2-135m-instruct-q4_1.yaml"


@pytest.fixture(scope="module")
def plan():
    cs = load_set([SPEC], [ROOT / "specs"])
    assert cs.diagnostics == []
    return cs.regions["smollm2-135m-instruct-q4_1-regions"]


def _inputs(n: int) -> dict:
    return {"ids": np.arange(n, dtype=np.int32), "positions": interpreter.positions(n)}


def _refused(plan, inputs, weights) -> tuple[list[str], interpreter.Trace]:
    """Run with an implementation table that counts every call: nothing may be called."""
    trace = interpreter.Trace()
    calls = []
    impls = {k: (lambda *a, **kw: calls.append(1)) for k in {n.kernel for i in plan.instances for n in i.nodes}}
    with pytest.raises(CharterError) as exc:
        interpreter.run(plan, inputs, weights, trace=trace, impls=impls)
    assert trace.nodes_run == 0 and calls == []
    return [d.code.value for d in exc.value.diagnostics], trace


def _with_instance(plan, index: int, **changes):
    instances = list(plan.instances)
    instances[index] = dataclasses.replace(instances[index], **changes)
    return dataclasses.replace(plan, instances=tuple(instances))


def test_the_shipped_graph_passes_the_static_gate(plan):
    assert gate.check_graph(plan) == []


def test_conditional_graph_runs_no_node(plan):
    attention = plan.instances[5]
    skipped = dataclasses.replace(attention.activation, decision="skippable", by="draft_verification", skip="no_kv")
    bad = _with_instance(plan, 5, activation=skipped)
    assert [d.code.value for d in gate.check_graph(bad)] == ["F1_CONDITIONAL"]
    codes, _ = _refused(bad, _inputs(8), {})
    assert "F1_CONDITIONAL" in codes


def test_stateful_graph_runs_no_node(plan):
    attention = plan.instances[1]
    kept = (dataclasses.replace(attention.state[0], scope="session"),)
    bad = _with_instance(plan, 1, state=kept)
    assert [d.code.value for d in gate.check_graph(bad)] == ["F1_STATEFUL"]
    recurrent = _with_instance(plan, 2, state=(dataclasses.replace(attention.state[0], kind="recurrent"),))
    assert [d.code.value for d in gate.check_graph(recurrent)] == ["F1_STATEFUL"]
    codes, _ = _refused(bad, _inputs(8), {})
    assert "F1_STATEFUL" in codes


def test_quantized_graph_runs_no_node(plan):
    weights = dict(plan.weights)
    weights["blk.3.ffn_up.weight"] = dataclasses.replace(weights["blk.3.ffn_up.weight"], step="quantized",
                                                         dtype="uint8")
    bad = dataclasses.replace(plan, weights=weights)
    assert [d.code.value for d in gate.check_graph(bad)] == ["F1_QUANTIZED"]
    codes, _ = _refused(bad, _inputs(8), {})
    assert "F1_QUANTIZED" in codes


def test_a_quantized_tensor_never_enters_as_a_bare_array(plan):
    w = plan.weights["blk.0.attn_q.weight"]
    bare = {"blk.0.attn_q.weight": np.zeros(w.shape, np.float32)}
    _, found = gate.check_call(plan, _inputs(8), bare)
    assert [(d.code.value, d.field) for d in found if d.field == "weights.blk.0.attn_q.weight"] == \
        [("F1_QUANTIZED", "weights.blk.0.attn_q.weight")]
    mislabelled = {"blk.0.attn_q.weight": gate.Weight(np.zeros(w.shape, np.float32), "identity", "Q4_1", "x")}
    _, found = gate.check_call(plan, _inputs(8), mislabelled)
    assert ("F1_QUANTIZED", "weights.blk.0.attn_q.weight") in [(d.code.value, d.field) for d in found]
    # an F32 tensor may be a caller's bare float32 array (its step is identity)
    norm = plan.weights["output_norm.weight"]
    _, found = gate.check_call(plan, _inputs(8), {"output_norm.weight": np.ones(norm.shape, np.float32)})
    assert "weights.output_norm.weight" not in [d.field for d in found]
    _, found = gate.check_call(plan, _inputs(8), {"output_norm.weight": np.ones(norm.shape, np.float64)})
    assert ("F1_WEIGHT", "weights.output_norm.weight") in [(d.code.value, d.field) for d in found]


@pytest.mark.parametrize("tokens, refused", [(1, False), (63, False), (64, False), (65, True), (0, True), (4096, True)])
def test_domain_is_the_contracts_expiry_condition(plan, tokens, refused):
    """AFN-011: the last accepted and the first rejected token count, before any node."""
    n, found = gate.check_call(plan, _inputs(tokens), {})
    assert n == tokens
    assert ("F1_DOMAIN" in [d.code.value for d in found]) is refused
    if refused:
        codes, _ = _refused(plan, _inputs(tokens), {})
        assert "F1_DOMAIN" in codes


def test_caller_tensors_are_exact(plan):
    cases = {
        "int64 ids": {"ids": np.arange(8, dtype=np.int64), "positions": interpreter.positions(8)},
        "id outside the tokenizer domain": {"ids": np.full(8, 49152, np.int32), "positions": interpreter.positions(8)},
        "negative position": {"ids": np.arange(8, dtype=np.int32), "positions": np.full(8, -1, np.int32)},
        "token counts differ": {"ids": np.arange(8, dtype=np.int32), "positions": interpreter.positions(7)},
        "missing positions": {"ids": np.arange(8, dtype=np.int32)},
        "extra input": {**_inputs(8), "mask": np.ones(8, np.int32)},
        "strided ids": {"ids": np.arange(16, dtype=np.int32)[::2], "positions": interpreter.positions(8)},
        "a list": {"ids": list(range(8)), "positions": interpreter.positions(8)},
    }
    for name, inputs in cases.items():
        _, found = gate.check_call(plan, inputs, {})
        assert "F1_INPUT" in [d.code.value for d in found], name


def test_a_graph_without_an_f1_domain_is_not_executable(plan):
    bad = dataclasses.replace(plan, max_tokens=None)
    assert [d.code.value for d in gate.check_graph(bad)] == ["F1_UNAVAILABLE"]
