"""The bundle contract: a model folder or a split set, as one exact set of files (docs/bundles.md).

A bundle names the artifact contract that admits every weight file (the tensor inventory is stated
once, there) and says which file holds each tensor (`weights.shards`), so one model contract and one
artifact contract serve every shard and layer patterns fold across shard boundaries.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Union

from pydantic import AfterValidator, Field, StrictBool, StrictFloat, StrictInt, StringConstraints, model_validator

from charter.bundles.json_model import JsonFact
from charter.contract.models import Header, Id, Sha256, Strict, located

# A path inside the bundle folder: relative, '/'-separated, no '.' or '..' segment, no empty
# segment, no backslash or control character (Note [Bundle paths] in charter.bundles.files).
def _no_dot_segments(path: str) -> str:
    if any(part in (".", "..") for part in path.split("/")):
        raise ValueError(f"{path!r}: a bundle path has no '.' or '..' segment")
    return path


BundlePath = Annotated[str, StringConstraints(pattern=r"^[^/\\\x00-\x1f]+(/[^/\\\x00-\x1f]+)*$", max_length=4096),
                       AfterValidator(_no_dot_segments)]
Role = Literal["weights", "index", "companion", "other"]
JsonScalar = Union[StrictBool, StrictInt, StrictFloat, str, None]

# Hugging Face's shard names (huggingface_hub's default filename pattern): 1-based, five digits.
SHARD_NAME = re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.(?P<ext>safetensors|gguf)$")


class BundleFile(Strict):
    """One file of the bundle: what it is for, its size, and its digest."""

    role: Role = Field(description="weights: admitted by the artifact contract; index: the shard index; "
                                   "companion: a JSON file bound under `companions`; other: bound by size "
                                   "and digest only.")
    size: StrictInt | None = Field(None, ge=0, description="File size in bytes (checked at the files stage); "
                                                           "required for weights and other files.")
    sha256: Sha256 | None = Field(None, description="Digest of the whole file: checked at the files stage for "
                                                    "every role but weights, whose bytes are read only by "
                                                    "`--verify-payload` (payload stage). A companion bound "
                                                    "key by key and the index need neither size nor digest.")


class Weights(Strict):
    """How the tensor inventory of the artifact contract is spread over the weight files."""

    index: BundlePath | None = Field(None, description="The shard index (model.safetensors.index.json), a file "
                                                        "of role index.")
    index_metadata: dict[str, JsonScalar] | None = Field(
        None, description="The exact keys and values of the index's `metadata` (total_size included).")
    shards: dict[BundlePath, list[Annotated[str, StringConstraints(max_length=65535)]]] = Field(
        default_factory=dict, description="Weight file -> the names of the tensors it holds (the shard of "
                                          "each tensor is a fact); may be omitted for one weight file.")

    @model_validator(mode="after")
    def _index_and_metadata(self) -> "Weights":
        if (self.index is None) != (self.index_metadata is None):
            raise located(("index_metadata",) if self.index is None else ("index",),
                          "`index` and `index_metadata` go together")
        seen: dict[str, str] = {}
        for shard, names in self.shards.items():
            for i, name in enumerate(names):
                if name in seen:
                    raise located(("shards", shard, i), f"tensor {name!r} is placed in both {seen[name]} and {shard}")
                seen[name] = shard
        return self


class BundleContract(Header):
    kind: Literal["bundle"] = Field(description="`bundle`: a model folder or split set as one exact set of files.")
    model: Id = Field(description="The model contract of the bundle's weights and companions.")
    artifact: Id = Field(description="The artifact contract that admits every weight file.")
    extra_files: Literal["reject", "allow"] = Field(
        "reject", description="A file in the folder that `files` does not list: rejected, or allowed.")
    files: dict[BundlePath, BundleFile] = Field(min_length=1, description="The exact file set, by path "
                                                                          "inside the bundle folder.")
    weights: Weights = Field(Weights(), description="How the artifact contract's tensors are spread over the "
                                                    "weight files, and the index.")
    companions: dict[BundlePath, JsonFact] = Field(
        default_factory=dict, description="Companion file -> the JSON fact of its whole document (every key "
                                          "with its exact JSON type; docs/bundles.md).")

    @model_validator(mode="after")
    def _roles_agree(self) -> "BundleContract":
        weights = [p for p, f in self.files.items() if f.role == "weights"]
        if not weights:
            raise located(("files",), "a bundle holds at least one file of role weights")
        for path, f in self.files.items():
            if f.role == "index" and path != self.weights.index:
                raise located(("files", path, "role"), f"{path} has role index, but weights.index does not name it")
            if f.role in ("weights", "other") and f.size is None:
                raise located(("files", path), f"a file of role {f.role} states its size")
            if (f.role == "companion") != (path in self.companions):
                raise located(("files", path, "role") if f.role == "companion" else ("companions", path),
                              f"{path}: a file of role companion is bound under companions, and only such a file")
        w = self.weights
        if w.index is not None and (w.index not in self.files or self.files[w.index].role != "index"):
            raise located(("weights", "index"), f"weights.index {w.index!r} is not a file of role index")
        if len(weights) > 1 or w.shards:
            unplaced = [p for p in weights if p not in w.shards]
            if unplaced:
                raise located(("weights", "shards"), f"weight file {unplaced[0]} has no entry under weights.shards")
            for shard in w.shards:
                if shard not in weights:
                    raise located(("weights", "shards", shard), f"{shard} is not a file of role weights")
        if w.index is not None:
            _shard_names(sorted(weights))
        stray = [p for p in self.companions if p not in self.files]
        if stray:
            raise located(("companions", stray[0]), f"{stray[0]} is not a file of the bundle")
        return self


def _shard_names(names: list[str]) -> None:
    """Sharded weights are named PREFIX-NNNNN-of-MMMMM.EXT, numbered 1..N of N with one prefix."""
    for n, name in enumerate(names, start=1):
        m = SHARD_NAME.match(name)
        expected = f"-{n:05d}-of-{len(names):05d}."
        if m is None or expected not in name or m["prefix"] != SHARD_NAME.match(names[0])["prefix"]:
            raise located(("files", name), f"sharded weight files are named PREFIX{expected}EXT with one prefix "
                                           f"(shard {n} of {len(names)}); {name!r} is not")
