"""The F1 interpreter on the real SmolLM2 GGUF against llama.cpp's captured logits (Note [What the
parity measures]). The default run executes one short sequence; the whole parity (8 sequences),
the numeric mutants and the re-tokenization are in the slow set."""

from __future__ import annotations


import numpy as np
import pytest
import yaml

from charter.contract.contractset import load_set
from charter.provenance import controls
from charter.regions import battery, capture, interpreter, parity
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "regions" / "smollm2-135m-instruct-q4_1.yaml"
SHORTEST = 5  # the 8-token prompt


@pytest.fixture(scope="module")
def run_short():
    plan, result, weights = parity.run(SPEC, sequences=[SHORTEST])
    return plan, result, weights


def test_short_sequence_matches_llama_cpp(run_short):
    plan, result, _ = run_short
    (s,) = result.sequences
    assert s.length == 8 and s.agree == 8 and s.ours_last == s.upstream_last
    assert s.max_abs_last <= plan.parity.max_abs_logit_error
    assert parity.judge(plan, result) == []
    # the 8-token sequence is one of the two whose residual stream llama.cpp's eval callback captured
    assert [r.layer for r in result.layers] == list(range(30))
    assert min(r.cosine for r in result.layers) >= plan.parity.layer_cosine_min


def test_weights_are_labelled_by_their_step(run_short):
    _, _, weights = run_short
    q = weights["blk.0.attn_q.weight"]
    assert q.step == "dequantize" and q.codec == "Q4_1"
    assert q.label.startswith("derived_metadata: artifact smollm2-135m-instruct-q4_1 sha256:b179c952")
    assert "gguf.quants.dequantize (gguf 0.19.0)" in q.label
    assert weights["output_norm.weight"].step == "identity"
    assert q.array.dtype == np.float32 and q.array.shape == (576, 576)


def test_capture_adapter_pins_the_artifact_contracts_file():
    cs = load_set([ROOT / "specs" / "artifacts" / "smollm2-135m-instruct-q4_1.yaml"], [ROOT / "specs"])
    s = cs.contracts["smollm2-135m-instruct-q4_1"].contract.source
    assert (s.package, s.path, s.sha256, s.size) == tuple(capture.PINNED)


def test_prompts_are_eight_lengths_of_at_least_eight():
    lengths = [len(ids) for _, ids in controls.SMOLLM2_PROMPTS]
    assert len(lengths) == 8 and len(set(lengths)) == 8 and min(lengths) >= 8 and max(lengths) == 64


@pytest.mark.slow
def test_whole_parity_within_the_declared_tolerance(run_short):
    plan, _, weights = run_short
    _, result, _ = parity.run(SPEC, weights=weights)
    assert len(result.sequences) == 8 and result.positions == 180
    assert parity.judge(plan, result) == [], parity.report(result)


@pytest.mark.slow
@pytest.mark.parametrize("mutant", [m for m in battery.smollm2_mutants() if m.side == "numeric"], ids=lambda m: m.name)
def test_numeric_mutants_fail_the_parity(run_short, mutant):
    plan, _, weights = run_short
    data, cs = battery.base_data(SPEC), battery.contract_set(SPEC)
    mutant.edit(data)
    mutated = battery.resolve_text(yaml.safe_dump(data, sort_keys=False), cs)
    fx = parity.upstream(cs, plan.parity.fixture)
    n, start = int(fx["lengths"][SHORTEST]), int(np.sum(fx["lengths"][:SHORTEST]))
    ids = np.ascontiguousarray(fx["token_ids"][start:start + n])
    logits = interpreter.run(mutated, {"ids": ids, "positions": interpreter.positions(n)}, weights)["logits"]
    error = float(np.abs(logits[-1] - fx["last_logits"][SHORTEST]).max())
    agree = float((logits.argmax(axis=1) == fx["argmax"][start:start + n]).mean())
    assert error > plan.parity.max_abs_logit_error or agree < plan.parity.top1_agreement_min


@pytest.mark.capture
def test_prompt_ids_are_llama_cpps_tokenization():
    from llama_cpp import Llama

    from charter.admission.locate import locate

    llm = Llama(model_path=str(locate(capture.PINNED, ROOT, digest=True)), n_ctx=128, vocab_only=True, verbose=False)
    for text, ids in controls.SMOLLM2_PROMPTS:
        assert tuple(llm.tokenize(text.encode(), add_bos=False, special=True))[:64] == ids


def _rope_neox(x, positions, head_dim, theta):
    """Rotate-half pairing (j, j + head_dim/2): right for HF weights, wrong for llama GGUF rows."""
    half = head_dim // 2
    inv = np.float32(theta) ** (-np.arange(half, dtype=np.float32) * np.float32(2.0 / head_dim))
    angles = positions.astype(np.float32)[:, None] * inv[None]
    c, s = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    h = x.reshape(x.shape[0], -1, head_dim)
    a, b = h[..., :half], h[..., half:]
    return np.concatenate([a * c - b * s, a * s + b * c], -1).reshape(x.shape).astype(np.float32)


def _gqa_interleaved(q, k, v, heads, kv_heads, head_dim):
    """Query head h reading KV head h % kv_heads instead of h // (heads / kv_heads)."""
    from charter.oracles.transformer import attention_causal_gqa

    t, order = q.shape[0], [h % kv_heads for h in range(heads)]
    kk = k.reshape(t, kv_heads, head_dim)[:, order].reshape(t, heads * head_dim)
    vv = v.reshape(t, kv_heads, head_dim)[:, order].reshape(t, heads * head_dim)
    return attention_causal_gqa(q, kk, vv, heads, heads, head_dim)


@pytest.mark.slow
@pytest.mark.parametrize("impls", [{"rope-norm": _rope_neox}, {"attention-causal-gqa": _gqa_interleaved}],
                         ids=["rope rotate-half pairing", "gqa interleaved grouping"])
def test_a_plausible_wrong_kernel_fails_the_parity(run_short, impls):
    plan, _, weights = run_short
    _, result, _ = parity.run(SPEC, sequences=[SHORTEST, 7], weights=weights, impls=impls)
    assert parity.judge(plan, result) != [], parity.report(result)


def test_native_rmsnorm_nodes_give_the_oracles_logits(run_short):
    """The same graph with charter._native's rmsnorm in its 61 rmsnorm nodes (every other node by its
    oracle): node for node the oracle's result, so the same logits bit for bit."""
    from charter import _native

    plan, _, weights = run_short
    fx = parity.upstream(battery.contract_set(SPEC), plan.parity.fixture)
    n, start = int(fx["lengths"][SHORTEST]), int(np.sum(fx["lengths"][:SHORTEST]))
    inputs = {"ids": np.ascontiguousarray(fx["token_ids"][start:start + n]), "positions": interpreter.positions(n)}
    seen = []

    def compare(inst, node, args, result):
        if node.kernel == "rmsnorm":
            native = _native.rmsnorm(np.ascontiguousarray(args["x"]), args["w"], dict(node.attrs)["eps"])
            seen.append(np.array_equal(native.view(np.uint32), result.view(np.uint32)))

    oracle = interpreter.run(plan, inputs, weights, on_node=compare)["logits"]
    native = interpreter.run(plan, inputs, weights, impls={"rmsnorm": _native.rmsnorm})["logits"]
    assert len(seen) == 61 and all(seen)
    assert np.array_equal(oracle.view(np.uint32), native.view(np.uint32))


# --- native mode: every node by its C++ reference kernel (docs/regions.md, "Native kernels") ---------

# Kernels whose native result is the oracle's bit for bit (the same float32 operations in the same order).
BIT_IDENTICAL = {"embedding-lookup", "rmsnorm", "residual-add"}
U = 2.0 ** -24  # float32 unit roundoff
# The whole forward pass, native against oracle (measured: 6.1e-5 over the 8-token sequence, 8.8e-5 over
# the 64-token one): every logit within this, and the same argmax wherever the oracle's top two are
# further apart than twice it.
FORWARD_MAX_ABS_LOGIT = 1.0e-3


def _short_inputs(plan, seq: int = SHORTEST):
    fx = parity.upstream(battery.contract_set(SPEC), plan.parity.fixture)
    n, start = int(fx["lengths"][seq]), int(np.sum(fx["lengths"][:seq]))
    return {"ids": np.ascontiguousarray(fx["token_ids"][start:start + n]), "positions": interpreter.positions(n)}


def node_excess(kernel: str, args: dict, native: np.ndarray, oracle: np.ndarray, tolerance) -> float:
    """How far the native result of one node is outside its declared tolerance (<= 0: inside).
    Bit-identical kernels: any differing bit counts 1. Every other kernel: the contract's
    |d| <= atol + rtol |oracle|; linear also (n_in + 2) * 2^-24 * sum |x w| (the float32 error
    bound of the oracle's sum; the native sum in double is exact to far less). sum |x w| is summed
    in float32 (non-negative terms: relative error below n_in * 2^-24), so it is taken 0.1% larger."""
    if kernel in BIT_IDENTICAL:
        return 0.0 if np.array_equal(native.view(np.uint32), oracle.view(np.uint32)) else 1.0
    d = np.abs(native.astype(np.float64) - oracle.astype(np.float64))
    excess = float((d - (tolerance.atol + tolerance.rtol * np.abs(oracle.astype(np.float64)))).max())
    if kernel == "linear":
        x, w = args["x"], args["w"]
        bound = (x.shape[1] + 2) * U * 1.001 * (np.abs(x) @ np.abs(w).T).astype(np.float64)
        excess = max(excess, float((d - bound).max()))
    return excess


class NativeRun:
    """One oracle pass of the 8-token sequence, every node also computed by its native kernel from
    the oracle's own inputs (worst excess per kernel, node counts), then the native-mode pass."""

    def __init__(self, plan, weights, seq: int = SHORTEST):
        cs = battery.contract_set(SPEC)
        impls = interpreter.native_impls(plan)
        self.worst: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.perturbed: dict[str, float] = {}

        def compare(inst, node, args, result):
            native = impls[node.kernel](**args, **dict(node.attrs))
            tol = cs.contracts[node.kernel].contract.tolerance
            excess = node_excess(node.kernel, args, native, result, tol)
            self.worst[node.kernel] = max(self.worst.get(node.kernel, -np.inf), excess)
            self.counts[node.kernel] = self.counts.get(node.kernel, 0) + 1
            if self.counts[node.kernel] == 1:  # a test of the test: a perturbed native result is outside
                off = native.copy()
                flat = off.reshape(-1)
                i = int(np.argmax(np.abs(flat)))
                flat[i] = np.nextafter(flat[i], np.inf) if node.kernel in BIT_IDENTICAL else flat[i] * np.float32(1.001)
                self.perturbed[node.kernel] = node_excess(node.kernel, args, off, result, tol)

        inputs = _short_inputs(plan, seq)
        self.oracle = interpreter.run(plan, inputs, weights, on_node=compare)["logits"]
        self.trace = interpreter.Trace()
        self.native = interpreter.run(plan, inputs, weights, kernels="native", trace=self.trace)["logits"]


@pytest.fixture(scope="module")
def native_run(run_short):
    plan, _, weights = run_short
    return NativeRun(plan, weights)


def test_native_mode_runs_every_node_natively(run_short):
    """Note [Native mode]: every kernel the graph calls resolves to its generated binding."""
    from charter import _native

    plan, _, _ = run_short
    impls = interpreter.native_impls(plan)
    assert set(impls) == {n.kernel for i in plan.instances for n in i.nodes} == {
        "embedding-lookup", "rmsnorm", "linear", "rope-norm", "attention-causal-gqa", "swiglu", "residual-add"}
    assert all(n.native is not None for i in plan.instances for n in i.nodes)
    assert impls["rope-norm"].__name__ == _native.rope_norm.__name__


def test_native_nodes_match_the_oracles_node_by_node(native_run):
    """Each of the 453 nodes of the 8-token pass, given the oracle run's own inputs (real weights, real
    activations), computed again by its native kernel: inside the declared tolerance; and the same
    comparison fails for a native result one ulp (bit-identical kernels) or 0.1% (the others) off."""
    assert native_run.counts == {"embedding-lookup": 1, "rmsnorm": 61, "linear": 211, "rope-norm": 60,
                                 "attention-causal-gqa": 30, "residual-add": 60, "swiglu": 30}
    assert all(v <= 0 for v in native_run.worst.values()), native_run.worst
    assert set(native_run.perturbed) == set(native_run.counts) and all(v > 0 for v in native_run.perturbed.values())


def test_native_forward_matches_the_oracle_forward(run_short, native_run):
    """The whole pass in native mode (all 453 nodes native) against the oracle pass: logits within
    FORWARD_MAX_ABS_LOGIT, and the same next token wherever the oracle's margin exceeds twice that."""
    plan, _, _ = run_short
    native, oracle = native_run.native, native_run.oracle
    assert native_run.trace.nodes_run == plan.node_count == 453
    assert float(np.abs(native - oracle).max()) <= FORWARD_MAX_ABS_LOGIT
    top2 = np.sort(oracle, axis=1)[:, -2:]
    decided = (top2[:, 1] - top2[:, 0]) > 2 * FORWARD_MAX_ABS_LOGIT
    assert decided.all() and np.array_equal(native.argmax(axis=1)[decided], oracle.argmax(axis=1)[decided])
    assert not np.array_equal(native.view(np.uint32), oracle.view(np.uint32))  # linear sums differ: not the oracle


@pytest.mark.slow
def test_native_nodes_and_forward_on_the_64_token_sequence(run_short):
    """The same node-by-node and whole-pass comparison over the longest sequence (64 tokens, the
    F1 domain's end), where attention reads the most rows."""
    plan, _, weights = run_short
    r = NativeRun(plan, weights, seq=7)
    assert all(v <= 0 for v in r.worst.values()), r.worst
    assert all(v > 0 for v in r.perturbed.values())
    assert float(np.abs(r.native - r.oracle).max()) <= FORWARD_MAX_ABS_LOGIT
    top2 = np.sort(r.oracle, axis=1)[:, -2:]
    decided = (top2[:, 1] - top2[:, 0]) > 2 * FORWARD_MAX_ABS_LOGIT
    assert np.array_equal(r.native.argmax(axis=1)[decided], r.oracle.argmax(axis=1)[decided])


def test_native_mode_refuses_a_graph_with_an_oracle_only_kernel(run_short, monkeypatch):
    """A node without a native binding refuses the native run before any node runs (F1_NODE)."""
    import dataclasses

    from charter.diagnostics import CharterError

    plan, _, weights = run_short
    first = plan.instances[0]
    stripped = dataclasses.replace(first, nodes=tuple(dataclasses.replace(n, native=None) for n in first.nodes))
    oracle_only = dataclasses.replace(plan, instances=(stripped, *plan.instances[1:]))
    trace = interpreter.Trace()
    with pytest.raises(CharterError) as exc:
        interpreter.run(oracle_only, _short_inputs(plan), weights, kernels="native", trace=trace)
    assert [(d.code.value, d.field) for d in exc.value.diagnostics] == [("F1_NODE", "embedding-lookup")]
    assert trace.nodes_run == 0


@pytest.mark.slow
def test_native_parity_on_every_sequence(run_short):
    """All 8 sequences in native mode: judged against llama.cpp by the contract's tolerances, and each
    pass within FORWARD_MAX_ABS_LOGIT of the oracle pass."""
    plan, _, weights = run_short
    _, native, _ = parity.run(SPEC, weights=weights, impls=interpreter.native_impls(plan))
    _, shipped, _ = parity.run(SPEC, weights=weights)
    assert parity.judge(plan, native) == [], parity.report(native)
    assert native.positions == shipped.positions == 180
    assert abs(native.max_abs_logit_error - shipped.max_abs_logit_error) <= FORWARD_MAX_ABS_LOGIT
