"""Write specs/bundles/qwen4exp-source.yaml: the Qwen4Exp source checkpoint as it ships, 131 shards
of the inventory of specs/artifacts/qwen4exp-source-safetensors.yaml (the placement rule: EXPERTS
below), its index and its config.json. Deterministic: tests/bundles/test_qwen4exp_source.py checks that the
shipped file is what this writes.

Run:  .venv/bin/python tools/qwen4exp_source.py [--check]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "bundles" / "qwen4exp-source.yaml"
SHARDS = 131  # the design notes' shard count (AFN-001)

HEADER = """\
# yaml-language-server: $schema=../../schemas/bundle.schema.json
# Qwen4Exp's source checkpoint as it ships (design notes AFN-001/AFN-004): 131 shards, an index whose
# total_size is the notes' 359,999,963,128 indexed bytes, and its config.json. Written by
# tools/qwen4exp_source.py (do not edit by hand): the inventory of
# specs/artifacts/qwen4exp-source-safetensors.yaml, each layer's routed-expert group and each PLE table in a shard of its own, the rest placed by
# huggingface_hub's own splitter; each shard's size is that of the conforming file
# charter.conforming.bundles builds (sparse: a ~10 MB folder). STRUCTURAL, as that contract is: the
# placement, like the names and the placeholder dims, is charter's, not the real checkpoint's.
"""

CONFIG = {"type": "object", "keys": {
    "architectures": {"type": "list", "value": ["Qwen4ExpForConditionalGeneration"]},
    "model_type": {"type": "string", "value": "qwen4exp"},
    "text_config": {"type": "object", "keys": {
        "num_hidden_layers": {"type": "int", "value": "layers"},
        "hidden_size": {"type": "int", "value": "hidden"},
        "num_experts": {"type": "int", "value": "routed_experts"},
        "num_experts_per_tok": {"type": "int", "value": "experts_per_token"},
        "moe_intermediate_size": {"type": "int", "value": "expert_width"},
        "max_position_embeddings": {"type": "int", "value": "context"},
        "vocab_size": {"type": "int", "value": "logits_rows"},
        "layer_types": {"type": "list", "value": ["GDN", "GDN", "GDN", "QSA"] * 12},
    }},
}}


# A layer's routed experts of one group (256 experts: gate, up, down) and each PLE table are the
# payloads the text profile collapses into its ExpertMajor and PLE stores: each is a shard of its own
# (98 + 16); huggingface_hub's splitter places the rest, in module order, in the 17 shards left.
EXPERTS = re.compile(r"(.*layers\.\d+)\.mlp\.experts\.(\d+)\.\w+")


def _module_order(name: str) -> tuple:
    """The order a model's modules list their tensors: the language model, layer by layer, then the
    vision tower, then MTP."""
    layer = re.search(r"\.layers\.(\d+)\.", name)
    part = 2 if name.startswith("mtp.") else 1 if name.startswith("model.visual.") else 0
    return part, int(layer.group(1)) if layer else -1, name


def text() -> str:
    from charter.conforming.bundles import sharded_bundle
    from charter.contract.contractset import load_set
    from charter.contract.yamldump import dump

    cs = load_set([str(ROOT / "specs" / "artifacts" / "qwen4exp-source-safetensors.yaml")], [str(ROOT / "specs")])
    if cs.diagnostics:
        raise SystemExit("\n".join(d.render() for d in cs.diagnostics))
    artifact = cs.artifacts["qwen4exp-source-safetensors"]
    names = [t.name for t in artifact.tensors]
    order = sorted(names, key=_module_order)
    experts = {}
    for name in names:
        found = EXPERTS.fullmatch(name)
        if found:
            experts.setdefault(found.group(1, 2), []).append(name)
    alone = list(experts.values()) + [[n] for n in names if ".ple.embed." in n]
    document = sharded_bundle(artifact, bundle_id="qwen4exp-source", shards=SHARDS, order=order, alone=alone,
                              companions={"config.json": CONFIG})
    return HEADER + dump(document)


def main(argv: list[str]) -> int:
    new = text()
    if "--check" in argv:
        same = SPEC.exists() and SPEC.read_text() == new
        print(f"{SPEC}: {'up to date' if same else 'stale: run tools/qwen4exp_source.py'}")
        return 0 if same else 1
    SPEC.write_text(new)
    print(f"wrote {SPEC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
