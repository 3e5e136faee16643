"""Contracts written by `charter freeze` that the C++ engine tests admit, and one checker library for
all of them.

charter._native holds no checker of a frozen contract, so `charter admit --engine cpp` compiles one
(charter.engines.choose.cpp_checker, -O2: half a minute on two cores, most of it the
runtime headers). The `frozen_cpp` session fixture (tests/conftest.py) freezes each contract here
once per test session, in a folder every xdist worker of the session shares, and compiles all their
checkers in one translation unit, unoptimized (-O0 compiles in a third of the time, and a
checker's key digests its rendering, not its flags); each worker loads that one library, and
cpp_checker, and so `admit --engine cpp` in the test's process, then finds each checker loaded
under its key instead of compiling it again. The first worker writes and compiles under a file lock; the
others wait and read (the contracts' paths, hence the checkers' keys, are the same for all).
Tests never write to these files: they copy an artifact before changing it.
"""

from __future__ import annotations

import fcntl
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from charter.cli import main
from charter.contract.contractset import load_set


@dataclass
class FrozenContract:
    artifact: Path
    contract: Path
    plan: object


def freeze(artifact: Path, out: Path, cid: str) -> Path:
    assert main(["freeze", str(artifact), "--id", cid, "-o", str(out)]) == 0
    return out / "artifacts" / f"{cid}.yaml"


def load(artifact: Path, contract: Path) -> FrozenContract:
    cs = load_set([contract], [contract.parents[1]])
    cs.raise_if_failed()
    (cid,) = [i for i in cs.primary if i in cs.artifacts]
    return FrozenContract(artifact, contract, cs.artifacts[cid])


def write_safetensors(folder: Path, hidden: int) -> Path:
    """A small Llama-shaped safetensors file and its config.json (hidden size `hidden`)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    tensors = {"model.embed_tokens.weight": rng.standard_normal((32, 16)).astype(np.float32)}
    for i in range(3):
        tensors[f"model.layers.{i}.mlp.up_proj.weight"] = rng.standard_normal((24, 16)).astype(np.float32)
        tensors[f"model.layers.{i}.input_layernorm.weight"] = np.ones(16, np.float32)
    path = folder / "model.safetensors"
    save_file(tensors, str(path), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
        "intermediate_size": 24, "vocab_size": 32, "num_hidden_layers": 3, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": True}))
    return path


# Two more facts than `charter freeze` binds, so that strings and bools are compared too.
EXTRA_FACTS = """\
    model_type:
      type: string
      value: llama
    tie_word_embeddings:
      type: bool
      value: true
"""


def write_config_contract(root: Path) -> tuple[Path, Path]:
    """(weights, contract): a frozen safetensors contract whose `config:` binds config.json, with
    EXTRA_FACTS (tests/native/test_companion_cpp.py)."""
    weights = write_safetensors(root / "model", hidden=16)
    spec = freeze(weights, root / "specs", "frozen-config")
    binding = "config:\n  file: config.json\n  keys:\n"
    assert binding in spec.read_text()
    spec.write_text(spec.read_text().replace(binding, binding + EXTRA_FACTS, 1))
    return weights, spec


def _write(root: Path, smollm2: Path) -> dict[str, tuple[Path, Path]]:
    from tests.conftest import write_tensorless_gguf

    vocab = write_tensorless_gguf(smollm2, root / "vocab.gguf")
    padded = write_tensorless_gguf(smollm2, root / "padded.gguf", padded=True)
    return {"smollm2": (smollm2, freeze(smollm2, root / "smollm2", "frozen")),
            "vocab": (vocab, freeze(vocab, root / "vocab", "tensorless-vocab")),
            "padded": (padded, freeze(padded, root / "padded", "tensorless-padded")),
            "config": write_config_contract(root / "companion")}


def frozen_cpp(root: Path, smollm2: Path) -> dict[str, FrozenContract]:
    """{name: FrozenContract} for the real SmolLM2 file, a vocab-only and a padded tensor-less file
    made from it, and a safetensors contract with a config, written in `root` once; their C++
    checkers compiled into one library in root/cache and loaded into charter._native."""
    from charter.engines import cpp, library

    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        index = root / "index.json"
        if not index.is_file():
            written = _write(root, smollm2)
            index.write_text(json.dumps({k: [str(a), str(c)] for k, (a, c) in written.items()}))
        out = {k: load(Path(a), Path(c)) for k, (a, c) in json.loads(index.read_text()).items()}
        plans = {library.checker_key(f.plan): f.plan for f in out.values()}
        built = library.build_checkers(plans, root / "cache", jobs=1)
    cpp.load_library(built)
    return out
