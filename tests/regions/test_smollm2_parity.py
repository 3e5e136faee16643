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
    """The same graph with charter._native's rmsnorm (the one node kernel with a native backend)
    in its 61 rmsnorm nodes: node for node the oracle's result, so the same logits bit for bit."""
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
