"""Helpers for provenance tests: copies of shipped specs to tamper with, and the CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from charter.cli import main

ROOT = Path(__file__).resolve().parents[2]
PROVENANCE = ROOT / "specs" / "provenance"
SHIPPED = sorted(p.stem for p in PROVENANCE.glob("*.yaml"))


@pytest.fixture
def tamper(tmp_path):
    """Copy a shipped spec and its fixture into tmp_path; return (spec path, edit function)."""

    def copy(stem: str) -> Path:
        for suffix in (".yaml", ".npz"):
            shutil.copy(PROVENANCE / f"{stem}{suffix}", tmp_path / f"{stem}{suffix}")
        return tmp_path / f"{stem}.yaml"

    return copy


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert text.count(old) >= count, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, count))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the CLI with the shipped specs as the search path for referenced contracts."""
    argv = list(argv)
    if argv[:1] == ["fixtures"]:
        argv += ["--search", str(ROOT / "specs" / "models"), "--search", str(ROOT / "specs" / "artifacts")]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err
