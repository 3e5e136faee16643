"""The shards stage: which weight file holds each tensor, checked in every direction.

Note [Shard index]
~~~~~~~~~~~~~~~~~~
Loaders trust `model.safetensors.index.json` one way: they look a tensor up in `weight_map` and
read it from the shard named there, so a tensor that sits in a shard but not in the index (a stale
copy left by a re-save, vllm#54230) is either loaded over the right one or silently ignored. Here
the index is read as strictly as a safetensors header (at most MAX_INDEX_BYTES, UTF-8, no duplicate
key, no NaN; an object of exactly `metadata` and `weight_map`; `weight_map` maps strings to
strings) and checked both ways against the shard headers: no tensor in two shards, every tensor of
every shard indexed to that shard, every index entry held by the shard it names, and
`metadata.total_size` the sum of the tensors' byte extents, as huggingface_hub computes it
(split_state_dict_into_shards_factory: the storage size of each tensor, shared storage once).
Then the contract's own fact, the shard of each tensor (`weights.shards`), is compared with where
each tensor is. A tensor missing from every shard is left to the tensors stage of the shard the
contract places it in (TENSOR_MISSING, naming that file).
"""

from __future__ import annotations

import json
from pathlib import Path

from charter.admission.runtime import parse_companion, read_companion
from charter.admission.view import ArtifactView
from charter.bundles.files import reject
from charter.bundles.plan import BundlePlan, FilePlan
from charter.diagnostics import Code

MAX_INDEX_BYTES = 100_000_000  # the safetensors header cap (charter.formats.safetensors)


def read_index(root: Path, f: FilePlan) -> dict:
    """The index file `f` as a checked object (SHARD_INDEX otherwise)."""

    def bad(message: str, field: str = "") -> None:
        raise reject(Code.SHARD_INDEX, f"weights.index{field}", f"{f.path}: {message}", f.at, file=f.path)

    try:
        raw = read_companion(root / f.path, MAX_INDEX_BYTES)
    except OSError as exc:
        bad(f"cannot be read: {exc.strerror}")
    if len(raw) > MAX_INDEX_BYTES:
        bad(f"more than {MAX_INDEX_BYTES} bytes")
    try:
        data = parse_companion(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        bad(f"not valid JSON: {exc}")
    if not isinstance(data, dict) or set(data) != {"metadata", "weight_map"}:
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        bad(f"an index is an object of exactly 'metadata' and 'weight_map', got {keys}")
    if not isinstance(data["metadata"], dict):
        bad("'metadata' is not an object", ".metadata")
    weight_map = data["weight_map"]
    if not isinstance(weight_map, dict):
        bad("'weight_map' is not an object", ".weight_map")
    for name, shard in weight_map.items():
        if not isinstance(shard, str):
            bad(f"weight_map entry {name!r} is {json.dumps(shard)}, not a file name", f".weight_map.{name}")
    return data


def check_shards(root: Path, plan: BundlePlan, views: dict[str, ArtifactView]) -> None:
    """The shard of every tensor: unique over the set, as the index says both ways, as the contract says."""
    held: dict[str, str] = {}
    for shard in plan.weights:
        for t in views[shard].tensors:
            if t.name in held:
                raise reject(Code.SHARD_DUPLICATE, f"tensors.{t.name}", f"tensor {t.name!r} is in both "
                             f"{held[t.name]} and {shard}", plan.placement[t.name].at if t.name in plan.placement
                             else plan.shards_at, held[t.name], f"{held[t.name]} and {shard}", shard)
            held[t.name] = shard
    if plan.index is not None:
        _against_index(root, plan, views, held)
    for name, shard in held.items():
        where = plan.placement.get(name)
        if where is not None and where.value != shard:
            raise reject(Code.SHARD_PLACEMENT, f"weights.shards.{name}", f"tensor {name!r} is in {shard}, but the "
                         f"contract places it in {where.value}", where.at, where.value, shard, shard)


def _against_index(root: Path, plan: BundlePlan, views: dict[str, ArtifactView], held: dict[str, str]) -> None:
    index = read_index(root, plan.index)
    at = plan.index.at
    name = plan.index.path
    metadata = index["metadata"]
    for key, fact in plan.index_metadata.items():
        if key not in metadata:
            raise reject(Code.SHARD_INDEX_METADATA, f"weights.index_metadata.{key}", f"{name} has no "
                         f"metadata.{key}", fact.at, json.dumps(fact.value), "missing", name)
        if not _same_json(metadata[key], fact.value):
            raise reject(Code.SHARD_INDEX_METADATA, f"weights.index_metadata.{key}", f"{name} states "
                         f"metadata.{key} = {json.dumps(metadata[key])}, expected {json.dumps(fact.value)}",
                         fact.at, json.dumps(fact.value), json.dumps(metadata[key]), name)
    for key in metadata:
        if key not in plan.index_metadata:
            raise reject(Code.SHARD_INDEX_METADATA, f"weights.index_metadata.{key}", f"{name} states "
                         f"metadata.{key}, which the contract does not", plan.index_metadata_at, "absent", "present", name)
    weight_map = index["weight_map"]
    for shard in plan.weights:
        for t in views[shard].tensors:
            indexed = weight_map.get(t.name)
            if indexed is None:
                raise reject(Code.SHARD_UNINDEXED, f"tensors.{t.name}", f"tensor {t.name!r} is in {shard} but not "
                             f"in {name} (a stale tensor loaders would skip or load over the indexed one)", at,
                             "indexed", "unindexed", shard)
            if indexed != shard:
                raise reject(Code.SHARD_INDEX_STALE, f"weights.index.weight_map.{t.name}", f"{name} says "
                             f"{t.name!r} is in {indexed}, but {shard} holds it", at, shard, indexed, name)
    for tensor, shard in weight_map.items():
        if held.get(tensor) != shard:
            where = f"in {held[tensor]}" if tensor in held else "in no shard"
            raise reject(Code.SHARD_INDEX_STALE, f"weights.index.weight_map.{tensor}", f"{name} says {tensor!r} "
                         f"is in {shard}, but it is {where}", at, held.get(tensor, "absent"), shard, name)
    total = sum(t.end - t.start for shard in plan.weights for t in views[shard].tensors)
    stated = metadata.get("total_size")
    if stated is not None and (isinstance(stated, bool) or stated != total):
        raise reject(Code.SHARD_TOTAL_SIZE, "weights.index_metadata.total_size", f"{name} states total_size "
                     f"{json.dumps(stated)}, but the shards' tensors hold {total} bytes",
                     plan.index_metadata.get("total_size").at if "total_size" in plan.index_metadata else at,
                     total, json.dumps(stated), name)


def _same_json(a: object, b: object) -> bool:
    """Equal as JSON values of one type: 1, 1.0 and true differ."""
    return type(a) is type(b) and a == b
