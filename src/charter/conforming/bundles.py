"""Build the model folder a bundle contract describes (Note [Conforming fixtures] for each file).

Each weight file is the conforming file of the bundle's artifact contract over the tensors the
contract places in it (contract order), sparse by default: its header is written and the file
truncated to its full size, so a 131-shard, 360 GB source costs a few MB of disk. The index is
written as huggingface_hub writes one (`json.dump(..., indent=2)` of the contract's
`index_metadata` and the placement as `weight_map`), each companion from its JSON fact. A fact the
builder cannot reproduce (a companion or another file pinned only by its digest, a size the built
file does not have) is a FixtureError before anything is written.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from charter import atomic
from charter.bundles.json_facts import ResolvedJson
from charter.bundles.plan import BundlePlan
from charter.conforming.builder import FixtureError, Payload, build, plan_fixture
from charter.formats.safetensors import DTYPE_BITS


def build_bundle(plan: BundlePlan, target: Path, *, payload: Payload = "sparse") -> Path:
    """Write the folder `plan` states into `target` (created; must not exist); return `target`."""
    shares = {shard: shard_plan(plan, shard) for shard in plan.weights}
    documents = {path: (json.dumps(json_value(fact, path), indent=2) + "\n").encode() for path, fact in plan.companions}
    if plan.index is not None:
        documents[plan.index.path] = index_text(plan).encode()
    for f in plan.files:
        if f.role == "weights":
            size = plan_fixture(shares[f.path]).size
        elif f.path in documents:
            size = len(documents[f.path])
        else:
            raise FixtureError(f"{plan.id}: {f.path} (role {f.role}) is pinned by its digest only; no builder "
                               "can reproduce it")
        if f.size is not None and f.size != size:
            raise FixtureError(f"{plan.id}: {f.path} would be {size} bytes, the contract says {f.size}")
    target.mkdir(parents=True)
    for shard, share in shares.items():
        build(share, target / shard, payload=payload)
    for path, data in documents.items():
        atomic.write_bytes(target / path, data)
    return target


def shard_plan(plan: BundlePlan, shard: str):
    """The artifact plan of one weight file: the tensors the contract places in it, in contract order."""
    return _share(plan.artifact, plan.held_by(shard))


def _share(artifact, held) -> object:
    return dataclasses.replace(artifact, tensors=tuple(t for t in artifact.tensors if t.name in held))


def index_text(plan: BundlePlan) -> str:
    """The shard index as huggingface_hub writes it: metadata, then tensor -> shard in inventory order."""
    metadata = {key: fact.value for key, fact in plan.index_metadata.items()}
    weight_map = {t.name: plan.placement[t.name].value for t in plan.artifact.tensors}
    return json.dumps({"metadata": metadata, "weight_map": weight_map}, indent=2)


def json_value(fact: ResolvedJson, file: str):
    """The JSON value a fact pins, node by node (FixtureError: a node pinned by its digest only)."""
    if fact.sha256 is not None:
        raise FixtureError(f"{file}: a node pinned by its sha256 only cannot be rebuilt")
    if fact.type == "object":
        return {key: json_value(sub, file) for key, sub in fact.keys}
    if fact.type == "list" and fact.items is not None:
        return [json_value(sub, file) for sub in fact.items]
    return _thawed(fact.value)


def _thawed(value):
    return [_thawed(v) for v in value] if isinstance(value, tuple) else value


def sharded_bundle(artifact, *, bundle_id: str, shards: int, order: list[str], alone: list[list[str]],
                   companions: dict) -> dict:
    """A bundle contract (as a document) for the inventory of `artifact` in exactly `shards` shards:
    each group of `alone` in a shard of its own, the other tensors split by huggingface_hub's own
    splitter (in `order`, at the smallest `max_shard_size` that gives the shards left); shards
    numbered by their first tensor in `order`, named as huggingface_hub names them, with an index
    and the `companions` (file -> JSON fact). Each weight file's size is the conforming file's."""
    from huggingface_hub import split_state_dict_into_shards_factory

    sizes = {t.name: math.prod(t.shape) * DTYPE_BITS[t.codec] // 8 for t in artifact.tensors}
    grouped = {name for group in alone for name in group}
    rest = {name: sizes[name] for name in order if name not in grouped}
    wanted = shards - len(alone)

    def split(limit: int) -> list[list[str]]:
        found = split_state_dict_into_shards_factory(rest, get_storage_size=lambda n: n, max_shard_size=limit,
                                                     filename_pattern="model{suffix}.safetensors")
        return [list(names) for names in found.filename_to_tensors.values()]

    low, high = 1, sum(rest.values())  # fewer shards as the limit grows: the smallest limit giving `wanted`
    while low < high:
        mid = (low + high) // 2
        low, high = (mid + 1, high) if len(split(mid)) > wanted else (low, mid)
    groups = split(low) + alone
    if len(groups) != shards:
        raise FixtureError(f"{artifact.id}: huggingface_hub's splitter gives no {wanted} shards of the rest")
    position = {name: i for i, name in enumerate(order)}
    groups.sort(key=lambda names: min(position[n] for n in names))
    placement = {f"model-{k + 1:05d}-of-{shards:05d}.safetensors": sorted(names, key=position.__getitem__)
                 for k, names in enumerate(groups)}
    index = "model.safetensors.index.json"
    files: dict[str, dict] = {path: {"role": "companion"} for path in companions}
    files[index] = {"role": "index"}
    for shard, names in placement.items():
        files[shard] = {"role": "weights", "size": plan_fixture(_share(artifact, set(names))).size}
    return {"charter": 1, "kind": "bundle", "id": bundle_id, "status": artifact.status, "model": artifact.model,
            "artifact": artifact.id, "extra_files": "reject", "files": dict(sorted(files.items())),
            "weights": {"index": index, "index_metadata": {"total_size": sum(sizes.values())},
                        "shards": placement}, "companions": companions}
