"""The shipped SmolLM2 regions contract: it resolves against its artifact inventory and kernel
contracts, every fact is where the plan says, and bad input is a located diagnostic."""

from __future__ import annotations

import pytest

from charter.cli import main
from charter.contract.contractset import load_set
from charter.contract.load import load_contract
from charter.regions.contract import RegionsContract
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "regions" / "smollm2-135m-instruct-q4_1.yaml"


@pytest.fixture(scope="module")
def cs():
    cs = load_set([SPEC], [ROOT / "specs"])
    assert cs.diagnostics == []
    return cs


@pytest.fixture(scope="module")
def plan(cs):
    return cs.regions["smollm2-135m-instruct-q4_1-regions"]


def test_thirty_layers_of_attention_and_mlp(plan):
    names = [i.name for i in plan.instances]
    assert names[0] == "embedding" and names[-2:] == ["final_norm", "output_head"]
    assert names[1:-2] == [f"{r}.{i}" for i in range(30) for r in ("attention", "mlp")]
    assert len(plan.instances) == 63 and plan.node_count == 1 + 30 * (9 + 6) + 1 + 1


def test_every_tensor_owned_once_and_read(cs, plan):
    inventory = {t.name for t in _artifact(cs).tensors}
    owned = [n for i in plan.instances for n in i.tensors]
    assert sorted(owned) == sorted(inventory) and len(owned) == 272
    assert set(plan.weights) == inventory
    head = plan.instances[-1]
    assert head.tensors == () and head.shares == (("token_embd.weight", "embedding"),)


def _artifact(cs):
    from charter.contract.resolve import resolve_artifact

    lc = cs.contracts["smollm2-135m-instruct-q4_1"]
    return resolve_artifact(lc, cs.models["smollm2-135m-instruct"])


def test_edges_and_state_are_typed_from_model_constants(plan):
    hidden = plan.edges["hidden"]
    assert hidden.render() == "float32[tokens, 576]"
    assert hidden.bytes_per_token() == 576 * 4  # one hidden vector per token crosses a layer boundary
    assert plan.edges["logits"].render() == "float32[tokens, 49152]"
    attention, mlp = plan.instances[1], plan.instances[2]
    assert [(s.kind, s.width, s.scope) for s in attention.state] == [("kv_append", 192, "call")]
    assert mlp.state == ()
    assert all(i.activation.decision == "always" and i.activation.provenance == "exact" for i in plan.instances)
    assert plan.input_ranges == {"ids": (0, 49152), "positions": (0, 8192)}


def test_weights_enter_through_their_precision_step(plan):
    steps = {(w.codec, w.step, w.kernel) for w in plan.weights.values()}
    assert steps == {("F32", "identity", None), ("Q8_0", "dequantize", "dequantize-q8-0"),
                     ("Q4_1", "dequantize", "dequantize-q4-1")}
    q = plan.weights["blk.0.attn_q.weight"]
    assert q.stored_shape == (576, 576) and q.shape == (576, 576)
    k = plan.weights["blk.0.attn_k.weight"]
    assert k.stored_shape == (576, 192) and k.shape == (192, 576)  # GGUF ne[0] first; rows are outputs


def test_round_trip():
    lc = load_contract(SPEC)
    again = RegionsContract.model_validate(lc.contract.model_dump(by_alias=True))
    assert again == lc.contract


BAD = """charter: 1
kind: regions
id: bad
status: structural
model: smollm2-135m-instruct
artifact: smollm2-135m-instruct-q4_1
precision: {F32: {step: identity}}
inputs: {ids: {dtype: int32, shape: [tokens]}}
outputs: [ids]
regions:
  - name: embedding
    scope: model
    activation: {decision: always, skip: no_kv}
    nodes: [{call: linear, out: {y: h}}]
"""


def test_bad_contract_is_a_located_diagnostic(tmp_path, capsys):
    (tmp_path / "regions").mkdir()
    spec = tmp_path / "regions" / "bad.yaml"
    spec.write_text(BAD)
    code = main(["check", "--search", str(ROOT / "specs"), str(spec)])
    out = capsys.readouterr().out.splitlines()
    assert code == 2
    assert any(":13:" in line and "SPEC_SCHEMA regions[0].activation.skip: an always-active region has no skip" in line
               for line in out), out
    assert "Traceback" not in capsys.readouterr().err


def test_check_counts_the_regions_kind(capsys):
    assert main(["check", str(SPEC)]) == 0
    assert " regions" in capsys.readouterr().out.split("(", 1)[1]


QWEN = ROOT / "specs" / "regions" / "qwen4exp-text.yaml"


def test_qwen4exp_structural_regions():
    """48 layers of a GDN or QSA mixer, an MoE MLP and its 512 routed experts (top 10, exact) owning
    the ExpertMajor store's records; every tensor owned once; not executable by F1."""
    from charter.regions import gate

    cs = load_set([QWEN], [ROOT / "specs"])
    assert cs.diagnostics == []
    plan = cs.regions["qwen4exp-text-regions"]
    layers = [i for i in plan.instances if i.layer is not None]
    assert len(layers) == 48 * 3 and len(plan.instances) == 4 + 144
    kinds = ["GDN", "GDN", "GDN", "QSA"] * 12
    assert [i.region for i in layers if i.region.endswith("mixer")] == \
        [("qsa_mixer" if k == "QSA" else "gdn_mixer") for k in kinds]
    experts = [i for i in layers if i.region == "experts"]
    assert [i.records for i in experts] == [("expert_major", 512 * n, 512 * (n + 1)) for n in range(48)]
    assert all(i.within == "moe" and i.activation.decision == "routed" and i.activation.k == 10
               and i.activation.provenance == "exact" and i.activation.skip == "passthrough" for i in experts)
    owned = sorted(n for i in plan.instances for n in i.tensors)
    assert len(owned) == len(set(owned)) == 364 and "expert_major.store" not in owned  # the store: by its records
    assert len(plan.codecs) == 365
    assert plan.edges["streams"].bytes_per_token() == 4 * 2560 * 4
    qsa = next(i for i in layers if i.region == "qsa_mixer")
    assert [(s.kind, s.width, s.scope) for s in qsa.state] == [("kv_append", 512, "session")]
    codes = {d.code.value for d in gate.check_graph(plan)}
    assert codes == {"F1_UNAVAILABLE", "F1_STATEFUL", "F1_CONDITIONAL"}
