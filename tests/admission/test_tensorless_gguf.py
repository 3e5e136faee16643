"""Tensor-less GGUFs (llama.cpp's vocab-only files) through every stage, payload included, with both
engines: the data offset is the header end, and what follows it is trailing bytes (Note
[Tensor-less GGUF] in charter.formats.gguf)."""

from __future__ import annotations

import shutil

import pytest

from charter.formats.gguf import read_gguf

from .conftest import admit, assert_admitted, patch_bytes

ENGINES = ["python", "cpp"]


@pytest.fixture(scope="module")
def frozen(frozen_cpp):
    """{name: (artifact, contract frozen from it)} for the vocab-only and the padded file, their C++
    checkers compiled once per session (tests/frozen.py)."""
    return {name: (frozen_cpp[name].artifact, frozen_cpp[name].contract) for name in ("vocab", "padded")}


def _copy(tmp_path, artifact):
    dst = tmp_path / artifact.name
    shutil.copyfile(artifact, dst)
    return dst


def _rejected(run, stage: str, code: str, field: str, offset: int) -> None:
    assert run.code == 1, (run.out, run.err)
    d = run.report["diagnostic"]
    assert (d["stage"], d["code"], d["field"], d["offset"]) == (stage, code, field, offset), d


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["vocab", "padded"])
def test_admitted_with_payload_and_unaligned_header(capsys, frozen, name, engine):
    artifact, contract = frozen[name]
    assert read_gguf(artifact).header_end % 32  # the layout stage must not ask the header end to align
    r = assert_admitted(admit(capsys, artifact, contract, "--verify-payload", "--engine", engine))
    assert all(s["result"] == "passed" for s in r["stages"])


@pytest.mark.parametrize("engine", ENGINES)
def test_nonzero_padding_after_the_header_is_rejected(tmp_path, capsys, frozen, engine):
    artifact, contract = frozen["padded"]
    mutant = _copy(tmp_path, artifact)
    at = read_gguf(artifact).header_end + 3
    patch_bytes(mutant, at, b"\x07")
    _rejected(admit(capsys, mutant, contract, "--verify-payload", "--engine", engine), "payload",
              "PAYLOAD_PADDING", "layout.padding", at)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name, extra", [("vocab", 1), ("padded", 32)])
def test_bytes_after_the_header_beyond_the_policy_are_trailing(tmp_path, capsys, frozen, name, extra, engine):
    """vocab-only: `trailing: reject`, one byte is too many; padded: `trailing: alignment`, another
    alignment's worth is too many."""
    artifact, contract = frozen[name]
    mutant = _copy(tmp_path, artifact)
    with open(mutant, "ab") as f:
        f.write(bytes(extra))
    _rejected(admit(capsys, mutant, contract, "--engine", engine), "layout", "LAYOUT_TRAILING", "layout.trailing",
              read_gguf(artifact).header_end)
