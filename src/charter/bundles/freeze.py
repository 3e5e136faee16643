"""`charter freeze DIR --id ID`: one model, one artifact and one bundle contract for a model folder
or a GGUF split set.

The artifact contract states the inventory of all weight files at once (layer patterns fold across
shards) and nothing that only one file can have (no `source`, no whole-file digest). The bundle
contract lists every file: weights and other files with their size and sha256, companion JSON files
bound key by key under `companions` (config.json's numbers that are model constants by their
names), the index by its metadata and the shard of each tensor. As for one file, the contracts are
checked to admit the folder before anything is written (charter.freeze.bundle_admits_its_input):
a folder that contradicts itself is rejected, and a frozen contract that rejects a consistent
folder is a bug (exit 3).
"""

from __future__ import annotations

from pathlib import Path

from charter.bundles.files import BundleRejected, file_sha256, walk
from charter.bundles.json_facts import freeze_json
from charter.bundles.plan import FilePlan
from charter.bundles.shards import read_index

WEIGHT_SUFFIXES = {".safetensors": "safetensors", ".gguf": "gguf"}
INDEX_SUFFIX = ".index.json"


def classify(path: str) -> str:
    """A file's role by its name, as loaders find them."""
    if path.endswith(INDEX_SUFFIX):
        return "index"
    if Path(path).suffix in WEIGHT_SUFFIXES and "/" not in path:
        return "weights"
    return "companion" if path.endswith(".json") else "other"


def freeze_bundle(root: Path, bundle_id: str) -> dict[str, dict]:
    """The three contracts of the folder `root`, by kind: model, artifact, bundle (ids ID-model,
    ID-FORMAT, ID). Raises FreezeRefused for a folder one bundle contract cannot state."""
    from charter.formats.safetensors import read_safetensors
    from charter.freeze import FreezeRefused
    from charter.freeze.safetensors import freeze_safetensors_set

    try:
        paths = walk(root)
    except BundleRejected as r:  # a folder past the walk's bounds
        raise FreezeRefused(f"{root}: {r.diagnostic.message}") from None
    roles = {p: classify(p) for p in paths}
    weights = sorted(p for p, r in roles.items() if r == "weights")
    formats = {WEIGHT_SUFFIXES[Path(p).suffix] for p in weights}
    if not weights:
        raise FreezeRefused(f"{root}: no weight file (*.safetensors or *.gguf) at the top of the folder")
    if len(formats) != 1:
        raise FreezeRefused(f"{root}: holds both GGUF and safetensors weight files; a bundle has one format")
    if formats == {"gguf"}:
        return _freeze_split_set(root, bundle_id, paths, roles, weights)
    indexes = [p for p, r in roles.items() if r == "index"]
    if len(indexes) > 1 or (len(weights) > 1 and not indexes):
        raise FreezeRefused(f"{root}: {len(weights)} weight files need exactly one *{INDEX_SUFFIX}, found "
                            f"{len(indexes)}")
    headers = [(str(root / p), read_safetensors(root / p)) for p in weights]  # CharterError: a bad shard
    artifact_id, model_id = f"{bundle_id}-safetensors", f"{bundle_id}-model"
    try:
        model, artifact = freeze_safetensors_set(headers, artifact_id, model_id)
    except ValueError as exc:
        raise FreezeRefused(str(exc)) from None
    # config.json is bound once, in the bundle: its numbers that name model constants stay names
    config = artifact.pop("config", {"keys": {}})
    names = {(key, ): fact["value"] for key, fact in config["keys"].items()}
    documents: dict[str, object] = {}
    bundle = _bundle(root, bundle_id, model_id, artifact_id, paths, roles, names, documents)
    model = _with_vocabulary(documents.get("tokenizer.json"), model)
    if len(weights) > 1 or indexes:
        bundle["weights"] = _weights(root, indexes, weights, headers)
    return {"model": model, "artifact": artifact, "bundle": _ordered(bundle)}


def _freeze_split_set(root: Path, bundle_id: str, paths: list[str], roles: dict, weights: list[str]) -> dict:
    """A GGUF file or split set (Note [GGUF split sets]): the set's metadata is its first split's,
    without the split keys (the shards stage owns them); its inventory, all splits' tensors."""
    import dataclasses

    from charter.bundles.gguf_split import SPLIT_KEYS
    from charter.formats.gguf import read_gguf
    from charter.freeze.common import strictest_common
    from charter.freeze.gguf import freeze_gguf, gguf_layout

    headers = [read_gguf(root / p) for p in weights]  # CharterError: a bad split
    first = headers[0]
    merged = dataclasses.replace(first, kvs={k: kv for k, kv in first.kvs.items() if k not in SPLIT_KEYS},
                                 tensors=[t for h in headers for t in h.tensors])
    layout = strictest_common([gguf_layout(str(root / p), h) for p, h in zip(weights, headers)])
    artifact_id, model_id = f"{bundle_id}-gguf", f"{bundle_id}-model"
    model, artifact = freeze_gguf(merged, artifact_id, model_id, str(root / weights[0]), layout)
    bundle = _bundle(root, bundle_id, model_id, artifact_id, paths, roles, {})
    if len(weights) > 1:
        bundle["weights"] = {"shards": {p: [t.name for t in h.tensors] for p, h in zip(weights, headers)}}
    return {"model": model, "artifact": artifact, "bundle": _ordered(bundle)}


def _with_vocabulary(tokenizer: object, model: dict) -> dict:
    """The model with its tokenizer facts when the folder states both (Note [Special ids across
    files]): the ids of tokenizer.json (its parsed document, or None) and config.json's
    `vocab_size`, the embedding rows. A tokenizer with more ids than rows is left to admission,
    which rejects it."""
    from charter.bundles.special_ids import tokenizer_size

    rows = model.get("constants", {}).get("vocab_size")
    if not isinstance(rows, int):
        return model
    ids = tokenizer_size(tokenizer)
    if ids is None or ids > rows:
        return model
    items = list(model.items())
    at = [key for key, _ in items].index("constants") + 1  # where the model contract states it
    return dict(items[:at] + [("tokenizer", {"ids": ids, "logits_rows": "vocab_size"})] + items[at:])


_BUNDLE_ORDER = ("charter", "kind", "id", "status", "model", "artifact", "extra_files", "files", "weights",
                 "companions")


def _ordered(bundle: dict) -> dict:
    return {k: bundle[k] for k in _BUNDLE_ORDER if k in bundle}


def _bundle(root: Path, bundle_id: str, model_id: str, artifact_id: str, paths: list[str], roles: dict,
            names: dict, documents: dict | None = None) -> dict:
    """The bundle's file set and companion facts (`names`: config.json paths -> model constants);
    `documents` receives each companion's parsed JSON."""
    companions = {}
    for p in [p for p in paths if roles[p] == "companion"]:
        document = _document(root / p)
        if document is _UNREADABLE:
            roles[p] = "other"  # not strict JSON: bound by size and digest instead
        else:
            companions[p] = freeze_json(document, names=names if p == "config.json" else None)
            if documents is not None:
                documents[p] = document
    files = {p: {"role": roles[p]} if roles[p] in ("companion", "index") else _pinned(root, p, roles[p]) for p in paths}
    bundle: dict = {"charter": 1, "kind": "bundle", "id": bundle_id, "status": "structural", "model": model_id,
                    "artifact": artifact_id, "extra_files": "reject", "files": files}
    if companions:
        bundle["companions"] = companions
    return bundle


def _pinned(root: Path, path: str, role: str) -> dict:
    """A weight or other file by its size and sha256 (FreezeRefused: not a regular file, unreadable)."""
    from charter.freeze import FreezeRefused

    try:
        return {"role": role, "size": (root / path).stat().st_size, "sha256": file_sha256(root / path)}
    except OSError as exc:
        raise FreezeRefused(f"{root / path}: {exc.strerror or 'not a regular file'}") from None


_UNREADABLE = object()


def _document(path: Path) -> object:
    """A companion's JSON as admission reads it, or _UNREADABLE."""
    from charter.admission.runtime import parse_companion, read_companion
    from charter.bundles.admit import MAX_COMPANION_BYTES

    try:
        raw = read_companion(path, MAX_COMPANION_BYTES)
        return _UNREADABLE if len(raw) > MAX_COMPANION_BYTES else parse_companion(raw)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return _UNREADABLE


def _weights(root: Path, indexes: list[str], weights: list[str], headers) -> dict:
    from charter.freeze import FreezeRefused

    out: dict = {}
    if indexes:
        metadata = _index_metadata(root, indexes[0])
        if any(isinstance(v, (dict, list)) for v in metadata.values()):
            raise FreezeRefused(f"{root / indexes[0]}: its metadata holds a nested value, which index_metadata "
                                "cannot state")
        out["index"] = indexes[0]
        out["index_metadata"] = metadata
    out["shards"] = {p: [t.name for t in h.tensors] for p, (_, h) in zip(weights, headers)}
    return out


def _index_metadata(root: Path, index: str) -> dict:
    """The index's metadata, read as admission reads the index (what SHARD_INDEX refuses, refused)."""
    from charter.freeze import FreezeRefused

    try:
        return read_index(root, FilePlan(index, "index", 0, None, None, None, None))["metadata"]
    except BundleRejected as r:
        raise FreezeRefused(r.diagnostic.message) from None
