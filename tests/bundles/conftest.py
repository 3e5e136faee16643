"""The real MiniLM folders (charter.conforming.folders), built once per session, and the means to
make a mutant of one without touching it: a copy of hard links whose changed files are new files."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
import yaml

from charter.contract.yamldump import dump
from tests.conftest import ROOT

BUNDLES = ROOT / "specs" / "bundles"
CONTRACTS = {1: BUNDLES / "all-minilm-l6-v2.yaml", 2: BUNDLES / "all-minilm-l6-v2-2-shards.yaml",
             5: BUNDLES / "all-minilm-l6-v2-5-shards.yaml"}


@pytest.fixture(scope="session")
def minilm_folders(tmp_path_factory) -> dict[int, Path]:
    """Shards -> the folder: the real one (1), and its 2- and 5-shard copies."""
    from charter.conforming.folders import extract_minilm, shard_folder

    base = tmp_path_factory.mktemp("minilm")
    real = extract_minilm(base / "minilm")
    return {1: real, 2: shard_folder(real, base / "minilm-2", 2), 5: shard_folder(real, base / "minilm-5", 5)}


def linked_copy(folder: Path, target: Path) -> Path:
    """A copy of `folder` made of hard links: cheap, and safe as long as changed files are replaced
    (`replace`), never written in place."""
    shutil.copytree(folder, target, copy_function=os.link)
    return target


def replace(path: Path, data: bytes) -> None:
    """Give `path` new bytes as a new file (the linked original stays as it was)."""
    path.unlink()
    path.write_bytes(data)


def repinned(contract: Path, folder: Path, target: Path, edit=None) -> Path:
    """The bundle contract with every listed file's size and sha256 re-pinned to `folder` (what an
    author who re-froze only the digests would have), `edit(data)` applied, written to `target`."""
    data = yaml.safe_load(contract.read_text())
    for path, f in data["files"].items():
        if (folder / path).is_file():
            f["size"] = (folder / path).stat().st_size
            f["sha256"] = hashlib.sha256((folder / path).read_bytes()).hexdigest()
    if edit is not None:
        edit(data)
    target.write_text(dump(data))
    return target
