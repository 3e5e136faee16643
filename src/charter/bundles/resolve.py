"""Resolve a loaded bundle contract against its artifact contract into a BundlePlan."""

from __future__ import annotations

from charter.bundles.contract import BundleContract
from charter.bundles.json_facts import resolve_json_fact
from charter.bundles.plan import BundlePlan, FilePlan
from charter.contract.load import LoadedContract
from charter.contract.plan import ArtifactPlan, Located, ModelPlan
from charter.diagnostics import CharterError, Code, Diagnostic, Location

WEIGHT_SUFFIX = {"safetensors": ".safetensors", "gguf": ".gguf"}


def resolve_bundle(loaded: LoadedContract, artifact: ArtifactPlan, model: ModelPlan) -> BundlePlan:
    """The bundle's facts, located, companion expressions over the `model`'s constants; its
    placement must cover the artifact's inventory exactly."""
    constants = model.constants
    b = loaded.contract
    assert isinstance(b, BundleContract)
    where = loaded.doc.where
    problems: list[Diagnostic] = []

    def error(path: tuple, message: str) -> None:
        problems.append(Diagnostic(Code.SPEC_INVALID, ".".join(map(str, path)), message, location=where(path)))

    files = tuple(FilePlan(path, f.role, f.size, f.sha256, where(("files", path)),
                           where(("files", path, "size")) if f.size is not None else None,
                           where(("files", path, "sha256")) if f.sha256 else None) for path, f in b.files.items())
    weights = tuple(sorted(f.path for f in files if f.role == "weights"))
    suffix = WEIGHT_SUFFIX[artifact.format]
    for path in weights:
        if not path.endswith(suffix):
            error(("files", path), f"weight file {path} does not end in {suffix} (artifact {artifact.id} is "
                                   f"{artifact.format})")
    names = [t.name for t in artifact.tensors]
    placement: dict[str, Located[str]] = {}
    if b.weights.shards:
        for shard, listed in b.weights.shards.items():
            for i, name in enumerate(listed):
                placement[name] = Located(shard, where(("weights", "shards", shard, i)))
        known = set(names)
        for name, at in placement.items():
            if name not in known:
                error(("weights", "shards", at.value), f"tensor {name!r} is not in the inventory of {artifact.id}")
        unplaced = [n for n in names if n not in placement]
        if unplaced:
            error(("weights", "shards"), f"{len(unplaced)} tensor(s) of {artifact.id} are placed in no weight "
                                         f"file, first {unplaced[0]!r}")
    else:
        placement = {name: Located(weights[0], None) for name in names}
    if len(weights) > 1 and artifact.payload is not None and artifact.payload.file_sha256 is not None:
        error(("artifact",), f"artifact {artifact.id} pins one file's sha256 (payload.file_sha256), which no "
                             "shard of several has: pin each file's sha256 under `files`")
    companions = []
    for path, fact in b.companions.items():
        try:
            companions.append((path, resolve_json_fact(fact, constants, where, ("companions", path))))
        except CharterError as exc:
            problems.extend(exc.diagnostics)
    if problems:
        raise CharterError(problems)
    index = next((f for f in files if f.path == b.weights.index), None)
    metadata = {key: Located(value, where(("weights", "index_metadata", key)))
                for key, value in (b.weights.index_metadata or {}).items()}
    return BundlePlan(
        id=b.id, status=b.status.value, status_at=where(("status",)), spec_path=loaded.doc.file, artifact=artifact,
        extra_files=Located(b.extra_files, where(("extra_files",))), files=files, weights=weights, index=index,
        index_metadata=metadata, index_metadata_at=where(("weights", "index_metadata")) if index else None,
        placement=placement, shards_at=where(("weights", "shards")) if b.weights.shards else None,
        companions=tuple(companions), holdings=_holdings(placement),
        tokenizer_ids=_fact(model, "tokenizer.ids", model.tokenizer_ids),
        logits_rows=_fact(model, "tokenizer.logits_rows", model.logits_rows))


def _fact(model: ModelPlan, name: str, value: int | None) -> Located[int] | None:
    return None if value is None else Located(value, model.locations.get(name))


def _holdings(placement: dict[str, Located[str]]) -> dict[str, frozenset[str]]:
    by_file: dict[str, set[str]] = {}
    for name, where in placement.items():
        by_file.setdefault(where.value, set()).add(name)
    return {shard: frozenset(names) for shard, names in by_file.items()}
