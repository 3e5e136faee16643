"""The region mutation battery: change one fact of a regions contract, expect the rejection at the
code and field that own it (Note [Region battery]).

Note [Region battery]: each mutant edits the parsed contract (one ownership pattern, an edge's dim
or dtype, a state effect, a decision or provenance, a node's kernel or binding, the layer plan,
the precision profile, the status) and is written back as YAML and resolved against the unchanged
model, artifact and kernel contracts, exactly as `charter check` would. It is killed when the first
diagnostic has the expected code and its field starts with the expected field; admitted, it is a
survivor; rejected otherwise, a diagnostic regression. Gate mutants resolve cleanly and must then
be refused by the F1 gate (charter.regions.gate) with the expected code, before any node runs.

Some edits keep every type and every ownership and change only the numbers a node computes (a
norm swapped for the zero-centred norm, a residual added from the wrong value): no structural
check can see them. They are listed as `numeric` mutants with the reason, never silently dropped,
and the parity run (tests/regions/test_smollm2_parity.py, slow) is what rejects them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from charter.contract.contractset import ContractSet, load_set
from charter.contract.load import load_contract_text
from charter.contract.yamlload import load_file
from charter.diagnostics import CharterError, Code, Diagnostic
from charter.regions import gate
from charter.regions.plan import kernel_and_provenance, resolve_regions


@dataclass(frozen=True)
class Mutant:
    name: str
    edit: Callable[[dict], None]
    code: str
    field: str
    side: str = "contract"  # contract | gate | numeric


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    verdict: str  # killed | survived | regression | numeric
    first: Diagnostic | None


def _region(data: dict, name: str) -> dict:
    return next(r for r in data["regions"] if r["name"] == name)


def _index(data: dict, name: str) -> int:
    return next(i for i, r in enumerate(data["regions"]) if r["name"] == name)


def _set(name: str, key: str, value) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        _region(data, name)[key] = copy.deepcopy(value)
    return edit


def _node(name: str, n: int, **changes) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        node = _region(data, name)["nodes"][n]
        for k, v in changes.items():
            if v is None:
                node.pop(k, None)
            else:
                node[k] = copy.deepcopy(v)
    return edit


def _top(path: tuple, value) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        target = data
        for p in path[:-1]:
            target = target[p]
        if value is None:
            target.pop(path[-1])
        else:
            target[path[-1]] = copy.deepcopy(value)
    return edit


def _both(*edits: Callable[[dict], None]) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        for e in edits:
            e(data)
    return edit


def _move(name: str, to: int) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        r = data["regions"].pop(_index(data, name))
        data["regions"].insert(to, r)
    return edit


def smollm2_mutants() -> list[Mutant]:
    """The battery of specs/regions/smollm2-135m-instruct-q4_1.yaml (regions 0 embedding, 1 attention,
    2 mlp, 3 final_norm, 4 output_head)."""
    kv = {"kind": "kv_append", "width": "kv_width", "rows_per_token": 1, "scope": "call"}
    m = Mutant
    return [
        # --- ownership -------------------------------------------------------------------------
        m("ownership: attn_norm moved to the mlp region",
          _both(_set("attention", "tensors", ["blk.{i}.attn_[!n]*"]),
                _set("mlp", "tensors", ["blk.{i}.ffn_*", "blk.{i}.attn_norm.weight"])),
          "REGION_FOREIGN_TENSOR", "regions.1.nodes.0.weights.w"),
        m("ownership: final norm dropped", _set("final_norm", "tensors", []), "REGION_UNOWNED", "regions"),
        m("ownership: ffn_down dropped from mlp", _set("mlp", "tensors", ["blk.{i}.ffn_[!d]*"]),
          "REGION_UNOWNED", "regions"),
        m("ownership: a layer tensor owned twice",
          _set("embedding", "tensors", ["token_embd.weight", "blk.0.attn_q.weight"]),
          "REGION_OWNERSHIP", "regions.1.tensors.0"),
        m("ownership: a pattern that owns nothing", _set("attention", "tensors", ["blk.{i}.attn_*", "blk.{i}.ssm_*"]),
          "REGION_PATTERN_UNUSED", "regions.1.tensors.1"),
        m("ownership: owned and excluded",
          _top(("exclusions",), {"norm": {"patterns": ["output_norm.weight"], "reason": "mutant"}}),
          "REGION_OWNERSHIP", "exclusions.norm.patterns.0"),
        m("ownership: tied head no longer shares", _set("output_head", "shares", {}),
          "REGION_FOREIGN_TENSOR", "regions.4.nodes.0.weights.w"),
        m("ownership: tied head names the wrong owner", _set("output_head", "shares", {"token_embd.weight": "final_norm"}),
          "REGION_SHARE", "regions.4.shares.token_embd.weight"),
        m("ownership: a node reads another layer's tensor",
          _node("attention", 1, weights={"w": "blk.0.attn_q.weight"}), "REGION_FOREIGN_TENSOR",
          "regions.1.nodes.1.weights.w"),
        # --- layers ------------------------------------------------------------------------------
        m("layers: count 29", _top(("layers", "count"), 29), "REGION_LAYERS", "layers.count"),
        m("layers: count layers - 1", _top(("layers", "count"), "layers - 1"), "REGION_LAYERS", "layers.count"),
        m("layers: mlp dropped from the layer plan", _top(("layers", "regions"), {"all": ["attention"]}),
          "REGION_LAYERS", "layers.regions.all"),
        m("layers: regions swapped in the layer plan", _top(("layers", "regions"), {"all": ["mlp", "attention"]}),
          "REGION_LAYERS", "layers.regions.all"),
        m("layers: a layer kind the model lacks", _top(("layers", "regions"), {"GDN": ["attention", "mlp"]}),
          "REGION_LAYERS", "layers.regions"),
        m("layers: a model region between layer regions", _move("final_norm", 2), "REGION_ORDER", "regions.2"),
        # --- edges -------------------------------------------------------------------------------
        m("edge: hidden dim changed", _top(("edges", "hidden", "shape"), ["tokens", "ffn"]),
          "REGION_EDGE_TYPE", "regions.0.nodes.0.out.y"),
        m("edge: hidden dim + 1", _top(("edges", "hidden", "shape"), ["tokens", "hidden + 1"]),
          "REGION_EDGE_TYPE", "regions.0.nodes.0.out.y"),
        m("edge: hidden dtype", _top(("edges", "hidden", "dtype"), "int32"), "REGION_EDGE_TYPE",
          "regions.0.nodes.0.out.y"),
        m("edge: logits width", _top(("edges", "logits", "shape"), ["tokens", "tokenizer_ids + 1"]),
          "REGION_EDGE_TYPE", "regions.4.nodes.0.out.y"),
        m("edge: positions no longer consumed", _set("attention", "consumes", ["hidden"]),
          "REGION_VALUE_UNDEFINED", "regions.1.nodes.4.in.positions"),
        m("edge: embedding no longer produces hidden", _set("embedding", "produces", []),
          "REGION_EDGE_UNPRODUCED", "regions.0.nodes.0.out.y"),
        m("edge: positions input as float", _top(("inputs", "positions", "dtype"), "float32"), "SPEC_SCHEMA",
          "inputs.positions.range"),
        # --- state -------------------------------------------------------------------------------
        m("state: attention's kv_append removed", _set("attention", "state", {}), "REGION_STATE", "regions.1.state"),
        m("state: kv width", _set("attention", "state", {"kv": {**kv, "width": "hidden"}}), "REGION_STATE",
          "regions.1.state.kv.width"),
        m("state: mlp given a kv_append", _set("mlp", "state", {"kv": kv}), "REGION_STATE", "regions.2.state.kv"),
        # --- activation ----------------------------------------------------------------------------
        m("activation: skip by label", _set("attention", "activation",
                                            {"decision": "skippable", "by": "label", "skip": "no_kv"}),
          "SPEC_SCHEMA", "regions.1.activation.by"),
        m("activation: predictor skip claimed exact", _set("attention", "activation",
                                                           {"decision": "skippable", "by": "predictor", "skip": "no_kv"}),
          "SPEC_SCHEMA", "regions.1.activation.provenance"),
        m("activation: quality-bounded without controls",
          _set("mlp", "activation", {"decision": "skippable", "by": "predictor", "provenance": "quality_bounded",
                                     "skip": "passthrough"}),
          "SPEC_SCHEMA", "regions.2.activation.controls"),
        m("activation: quality-bounded missing the static control",
          _set("mlp", "activation", {"decision": "skippable", "by": "predictor", "provenance": "quality_bounded",
                                     "controls": ["full", "random", "learned"], "skip": "passthrough"}),
          "SPEC_SCHEMA", "regions.2.activation.controls"),
        m("activation: skipped attention that keeps its K/V",
          _set("attention", "activation", {"decision": "skippable", "by": "predictor", "provenance": "quality_bounded",
                                           "controls": ["full", "random", "static", "learned"],
                                           "skip": "passthrough"}),
          "REGION_SKIP", "regions.1.activation.skip"),
        m("activation: no_kv on the mlp",
          _set("mlp", "activation", {"decision": "skippable", "by": "predictor", "provenance": "quality_bounded",
                                     "controls": ["full", "random", "static", "learned"], "skip": "no_kv"}),
          "REGION_SKIP", "regions.2.activation.skip"),
        m("activation: skippable without skip semantics",
          _set("mlp", "activation", {"decision": "skippable", "by": "draft_verification"}),
          "SPEC_SCHEMA", "regions.2.activation.skip"),
        m("activation: routed without sub-regions",
          _set("mlp", "activation", {"decision": "routed", "router": "experts", "k": 2, "skip": "passthrough"}),
          "SPEC_SCHEMA", "regions.2.activation.decision"),
        m("activation: routed by a router that does not exist",
          _both(_set("mlp", "activation", {"decision": "routed", "router": "experts", "k": 2, "skip": "passthrough"}),
                _set("mlp", "records", {"store": "expert_major", "per_layer": 512})),
          "SPEC_SCHEMA", "regions.2.activation.router"),
        # --- nodes -------------------------------------------------------------------------------
        m("node: q projection's kernel swapped for swiglu", _node("attention", 1, call="swiglu"),
          "REGION_SIGNATURE", "regions.1.nodes.1.in"),
        m("node: attention kernel swapped for linear", _node("attention", 6, call="linear"),
          "REGION_SIGNATURE", "regions.1.nodes.6.in"),
        m("node: a kernel that does not exist", _node("attention", 6, call="attention-dense"),
          "REF_DANGLING", "regions.1.nodes.6.call"),
        m("node: a kernel not stated over the model", _node("final_norm", 0, call="masked-argmax"),
          "REGION_SIGNATURE", "regions.3.nodes.0.call"),
        m("node: rmsnorm without eps", _node("final_norm", 0, attrs=None), "REGION_SIGNATURE", "regions.3.nodes.0.attrs"),
        m("node: a fixed attribute restated", _node("attention", 6, attrs={"heads": 8}), "REGION_SIGNATURE",
          "regions.1.nodes.6.attrs.heads"),
        m("node: k projection read as the query", _node("attention", 6, **{"in": {"q": "kr", "k": "kr", "v": "v"}}),
          "REGION_SIGNATURE", "regions.1.nodes.6.in.q"),
        m("node: a value read before it is written", _node("attention", 1, **{"in": {"x": "att"}}),
          "REGION_VALUE_UNDEFINED", "regions.1.nodes.1.in.x"),
        m("node: the mlp's nodes removed", _set("mlp", "nodes", None), "SPEC_SCHEMA", "regions.2.nodes"),
        # --- precision and status ----------------------------------------------------------------
        m("precision: Q4_1 step dropped", _top(("precision", "Q4_1"), None), "REGION_PRECISION", "precision"),
        m("precision: Q4_1 as identity", _top(("precision", "Q4_1"), {"step": "identity"}), "REGION_PRECISION",
          "precision.Q4_1.step"),
        m("precision: Q8_0 without its label", _top(("precision", "Q8_0"), {"step": "dequantize",
                                                                           "kernel": "dequantize-q8-0"}),
          "SPEC_SCHEMA", "precision.Q8_0.step"),
        m("status: supported", _top(("status",), "supported"), "REGION_STATUS", "status"),
        m("model: another model", _top(("model",), "qwen4exp"), "SPEC_INVALID", "model"),
        # --- the F1 gate: valid contracts the interpreter must refuse before any node -------------
        m("gate: attention skippable (draft-verified, exact)",
          _set("attention", "activation", {"decision": "skippable", "by": "draft_verification", "skip": "no_kv"}),
          "F1_CONDITIONAL", "attention.0.activation.decision", "gate"),
        m("gate: kv state kept across calls", _set("attention", "state", {"kv": {**kv, "scope": "session"}}),
          "F1_STATEFUL", "attention.0.state.kv", "gate"),
        m("gate: no f1 domain", _top(("f1",), None), "F1_UNAVAILABLE", "f1", "gate"),
        # --- numeric: type-correct edits only the parity run can reject --------------------------
        m("numeric: final norm swapped for the zero-centred norm", _node("final_norm", 0, call="rmsnorm-zero-centred"),
          "F1_PARITY", "logits", "numeric"),
        m("numeric: residual added from the normalized input", _node("mlp", 5, **{"in": {"a": "xn", "b": "down"}}),
          "F1_PARITY", "logits", "numeric"),
    ]


def qwen4exp_mutants() -> list[Mutant]:
    """The battery of specs/regions/qwen4exp-text.yaml (structural: regions 0 embedding,
    1 per_layer_embedding, 2 gdn_mixer, 3 qsa_mixer, 4 moe, 5 experts, 6 final_norm, 7 output_head)."""
    m = Mutant
    routed = {"decision": "routed", "router": "experts", "k": "experts_per_token", "provenance": "exact",
              "skip": "passthrough"}
    return [
        m("layers: experts dropped from GDN layers", _top(("layers", "regions", "GDN"), ["gdn_mixer", "moe"]),
          "REGION_LAYERS", "layers.regions.GDN"),
        m("layers: the GDN mixer on QSA layers", _set("gdn_mixer", "layer_kinds", ["QSA"]), "REGION_LAYERS",
          "layers.regions"),
        m("layers: a layer kind the model lacks", _top(("layers", "regions", "MLA"), ["moe"]), "REGION_LAYERS",
          "layers.regions.MLA"),
        m("ownership: the QSA indexer dropped", _set("qsa_mixer", "tensors", ["blk.{i}.attn_[!i]*", "blk.{i}.hc_mix.weight"]),
          "REGION_UNOWNED", "regions"),
        m("ownership: the expert store also owned by pattern",
          _set("per_layer_embedding", "tensors", ["ple.store", "expert_major.store"]), "REGION_OWNERSHIP",
          "regions.5.records.store"),
        m("ownership: router weights owned twice", _set("gdn_mixer", "tensors",
                                                        ["blk.{i}.attn_norm.weight", "blk.{i}.hc_mix.weight",
                                                         "blk.{i}.ssm_*", "blk.{i}.ffn_gate_inp.weight"]),
          "REGION_OWNERSHIP", "regions.4.tensors.1"),
        m("records: 511 experts per layer", _set("experts", "records", {"store": "expert_major", "per_layer": 511}),
          "REGION_STORE", "regions.5.records.per_layer"),
        m("records: the PLE store has no expert records", _set("experts", "records", {"store": "ple", "per_layer": 512}),
          "REGION_STORE", "regions.5.records.store"),
        m("records: a store that does not exist", _set("experts", "records", {"store": "experts", "per_layer": 512}),
          "REGION_STORE", "regions.5.records.store"),
        m("router: k 9", _top(("routers", "experts", "k"), 9), "REGION_ROUTER", "routers.experts.k"),
        m("router: 256 experts", _top(("routers", "experts", "experts"), 256), "REGION_ROUTER", "routers.experts.experts"),
        m("router: the argmax kernel", _top(("routers", "experts", "kernel"), "masked-argmax"), "REGION_ROUTER",
          "routers.experts.experts"),
        m("router: a kernel not over the model", _top(("routers", "experts", "kernel"), "rope-norm"), "REGION_ROUTER",
          "routers.experts.kernel"),
        m("activation: experts run k + 1", _set("experts", "activation", {**routed, "k": "experts_per_token + 1"}),
          "REGION_ROUTER", "regions.5.activation.k"),
        m("activation: routed experts quality-bounded without controls",
          _set("experts", "activation", {**routed, "provenance": "quality_bounded"}), "SPEC_SCHEMA",
          "regions.5.activation.controls"),
        m("activation: experts skipped by label",
          _set("experts", "activation", {"decision": "skippable", "by": "label", "skip": "passthrough"}),
          "SPEC_SCHEMA", "regions.5.activation.by"),
        m("activation: routed experts without sub-regions", _set("experts", "records", None), "SPEC_SCHEMA",
          "regions.5.activation.decision"),
        m("structure: experts within a region that does not exist", _set("experts", "within", "ffn"), "SPEC_SCHEMA",
          "regions.5.within"),
        m("structure: an f1 domain over nodeless regions", _top(("f1",), {"max_tokens": 8}), "SPEC_SCHEMA",
          "regions.0.nodes"),
        m("status: more than the artifact", _top(("status",), "pinned-not-supported"), "REGION_STATUS", "status"),
    ]


MUTANTS = {"smollm2-135m-instruct-q4_1-regions": smollm2_mutants, "qwen4exp-text-regions": qwen4exp_mutants}


def mutants_of(spec: Path) -> list[Mutant]:
    return MUTANTS[base_data(spec)["id"]]()


def base_data(spec: Path) -> dict:
    return copy.deepcopy(load_file(spec).data)


def contract_set(spec: Path) -> ContractSet:
    cs = load_set([spec], [spec.parent.parent])
    cs.raise_if_failed()
    return cs


def resolve_text(text: str, cs: ContractSet, file: str = "<mutant>"):
    lc = load_contract_text(text, file)
    rc = lc.contract
    kernels, provenance = kernel_and_provenance(cs.contracts)
    model = cs.models.get(rc.model)
    if model is None:
        raise CharterError([Diagnostic(Code.REF_DANGLING, "model", f"no model {rc.model!r}",
                                       location=lc.doc.where(("model",)))])
    found = cs.contracts.get(rc.artifact)
    if found is None or found.kind != "artifact":
        raise CharterError([Diagnostic(Code.REF_DANGLING, "artifact", f"no artifact {rc.artifact!r}",
                                       location=lc.doc.where(("artifact",)))])
    artifact = cs.artifacts.get(rc.artifact) or _artifact(cs, rc.artifact)
    return resolve_regions(lc, model, artifact, kernels, provenance, found)


def _artifact(cs: ContractSet, aid: str):
    from charter.contract.resolve import resolve_artifact

    lc = cs.contracts[aid]
    return resolve_artifact(lc, cs.models[lc.contract.model])


def run_mutant(mutant: Mutant, data: dict, cs: ContractSet) -> Outcome:
    mutated = copy.deepcopy(data)
    mutant.edit(mutated)
    text = yaml.safe_dump(mutated, sort_keys=False, allow_unicode=True)
    if mutant.side == "numeric":
        try:
            resolve_text(text, cs)
        except CharterError as exc:
            return Outcome(mutant, "regression", exc.diagnostics[0])
        return Outcome(mutant, "numeric", None)
    try:
        plan = resolve_text(text, cs)
    except CharterError as exc:
        first = exc.diagnostics[0]
        ok = mutant.side == "contract" and first.code.value == mutant.code and _field(first).startswith(mutant.field)
        return Outcome(mutant, "killed" if ok else "regression", first)
    if mutant.side != "gate":
        return Outcome(mutant, "survived", None)
    found = gate.check_graph(plan)
    if not found:
        return Outcome(mutant, "survived", None)
    first = found[0]
    ok = first.code.value == mutant.code and _field(first).startswith(mutant.field)
    return Outcome(mutant, "killed" if ok else "regression", first)


def _field(d: Diagnostic) -> str:
    """`regions[1].nodes[0].in.x` as the battery states it, `regions.1.nodes.0.in.x`."""
    return d.field.replace("[", ".").replace("]", "")


def run_battery(spec: Path) -> list[Outcome]:
    cs = contract_set(spec)
    data = base_data(spec)
    return [run_mutant(m, data, cs) for m in mutants_of(spec)]


def run_command(args, spec: Path) -> int:
    """`charter mutate --contract <regions contract> [--only contract|artifact] [--artifact FILE]`:
    the contract side, then the artifact side (charter.regions.artifact_battery) where the contract
    has one; --report writes every outcome. The region checks have no C++ engine: --engine both is
    refused."""
    import sys

    if args.engine != "python":
        print("charter: a region battery runs the Python engine only (the region checks have no C++ side)",
              file=sys.stderr)
        return 2
    return main([str(spec)], json_path=args.report, only=args.only,
                artifact=Path(args.artifact) if args.artifact else None)


def main(argv: list[str] | None = None, json_path: str | None = None, only: str | None = None,
         artifact: Path | None = None) -> int:
    import json
    import sys

    from charter.console import print_or_write
    from charter.regions import artifact_battery

    argv = sys.argv[1:] if argv is None else argv
    spec = Path(argv[0] if argv else "specs/regions/smollm2-135m-instruct-q4_1.yaml")
    if not spec.is_file() or base_data(spec).get("id") not in MUTANTS:
        print(f"no region battery for {spec} (batteries: {', '.join(MUTANTS)})", file=sys.stderr)
        return 2
    has_artifact = artifact_battery.has_artifact_side(spec)
    if (only == "artifact" or artifact is not None) and not has_artifact:
        print(f"charter: the region battery of {spec} has no artifact side (artifact mutants: "
              f"{', '.join(artifact_battery.ARTIFACT_MUTANTS)})", file=sys.stderr)
        return 2
    ok = True
    records: list[dict] = []
    if only in (None, "contract"):
        outcomes = run_battery(spec)
        structural = [o for o in outcomes if o.mutant.side != "numeric"]
        for o in outcomes:
            if o.verdict not in ("killed", "numeric"):
                got = o.first.render() if o.first else "admitted"
                print(f"{o.verdict}: {o.mutant.name}: expected {o.mutant.code} {o.mutant.field}, got {got}")
        by_code: dict[str, int] = {}
        for o in structural:
            by_code[o.mutant.code] = by_code.get(o.mutant.code, 0) + (o.verdict == "killed")
        for code, n in sorted(by_code.items()):
            print(f"  {code:<24} {n}")
        killed = sum(o.verdict == "killed" for o in structural)
        numeric = [o for o in outcomes if o.mutant.side == "numeric"]
        print(f"{killed}/{len(structural)} region mutations rejected "
              f"({sum(o.mutant.side == 'gate' for o in structural)} by the F1 gate before any node); "
              f"{len(numeric)} numeric mutant(s) left to the parity run")
        ok = killed == len(structural) and all(o.verdict == "numeric" for o in numeric)
        records += [{"mutant": o.mutant.name, "side": o.mutant.side,
                     "expected": {"code": o.mutant.code, "field": o.mutant.field},
                     "verdict": o.verdict, "got": o.first.to_json() if o.first else None} for o in outcomes]
    if only in (None, "artifact") and has_artifact:
        found = artifact_battery.run_artifact_battery(spec, artifact)
        text, passed = artifact_battery.report(found)
        print(text)
        ok = ok and passed
        for o in found:
            m = o.mutant
            records.append({
                "mutant": m.name if m else "control: the unchanged file", "side": "artifact",
                "expected": ({"stage": m.admission.stage, "code": m.admission.code, "field": m.admission.field,
                              "regions": {"code": m.regions[0], "field": m.regions[1]}} if m else "admitted"),
                "verdict": o.verdict, "got": o.admission.to_json() if o.admission else None,
                "regions": o.regions.to_json() if o.regions else None})
    if json_path is not None:
        print_or_write(json_path, json.dumps(records, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
