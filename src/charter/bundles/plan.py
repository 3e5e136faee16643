"""A bundle contract resolved against its artifact contract: every fact with its contract location
(charter.bundles.resolve makes it; plain data, so admitting from a plan imports no pydantic)."""

from __future__ import annotations

from dataclasses import dataclass, field

from charter.bundles.json_facts import ResolvedJson
from charter.contract.plan import ArtifactPlan, Located
from charter.diagnostics import Location


@dataclass(frozen=True)
class FilePlan:
    path: str
    role: str
    size: int | None
    sha256: str | None
    at: Location  # the file's entry under `files`
    size_at: Location | None
    sha256_at: Location | None


@dataclass(frozen=True)
class BundlePlan:
    id: str
    status: str
    status_at: Location
    spec_path: str
    artifact: ArtifactPlan
    extra_files: Located[str]
    files: tuple[FilePlan, ...]  # in contract order
    weights: tuple[str, ...]  # the weight files, in name order (split and shard order)
    index: FilePlan | None
    index_metadata: dict[str, Located[object]]
    index_metadata_at: Location | None
    placement: dict[str, Located[str]]  # tensor -> its weight file, at its entry under weights.shards
    shards_at: Location | None
    companions: tuple[tuple[str, ResolvedJson], ...] = ()  # file -> the fact of its document, in contract order
    holdings: dict[str, frozenset[str]] = field(default_factory=dict)  # weight file -> its tensors (placement)
    tokenizer_ids: Located[int] | None = None  # the model's tokenizer id domain, if it states one
    logits_rows: Located[int] | None = None  # ... and its physical logits rows

    def file(self, path: str) -> FilePlan:
        return next(f for f in self.files if f.path == path)

    def held_by(self, shard: str) -> frozenset[str]:
        """The tensors the contract places in `shard`."""
        return self.holdings.get(shard, frozenset())
