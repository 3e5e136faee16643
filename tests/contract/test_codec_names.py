"""Codec names are checked per format when a contract loads: GGUF codecs are ggml type names,
safetensors codecs are its dtypes. A name no file can state (`f32`) used to pass `charter check`
and make `charter mutate` exit 3 (internal error) when it built the fixture."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from charter.cli import main
from charter.console import search_paths
from charter.formats.ggml_types import GGML_TYPES_BY_NAME
from charter.formats.safetensors import DTYPE_BITS
from charter.contract.contractset import load_set
from charter.contract.resolve import CODEC_NAMES
from tests.conftest import ROOT


def tree(tmp_path: Path, artifact: str, edit=lambda text: text) -> Path:
    """tiny-llama's model and one of its artifact contracts, edited, in a specs/ tree of its own."""
    specs = tmp_path / "specs"
    (specs / "models").mkdir(parents=True)
    (specs / "artifacts").mkdir(parents=True)
    shutil.copy(ROOT / "specs" / "models" / "tiny-llama.yaml", specs / "models")
    text = (ROOT / "specs" / "artifacts" / artifact).read_text("utf-8")
    path = specs / "artifacts" / artifact
    path.write_text(edit(text), "utf-8")
    return path


def lower_f32(text: str) -> str:
    return text.replace("codec: F32}", "codec: f32}").replace("  F32: {", "  f32: {")


def test_a_codec_that_is_no_ggml_type_is_refused_where_it_is_written(tmp_path, capsys):
    path = tree(tmp_path, "tiny-llama-gguf.yaml", lower_f32)
    capsys.readouterr()
    assert main(["check", str(path)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3  # the three tensor rows that state it
    first = lines[0]
    assert "tiny-llama-gguf.yaml:97:" in first and "SPEC_INVALID tensors[1].codec:" in first, first
    assert "'f32' is not a ggml type name (did you mean F32?)" in first
    assert "GGUF codecs are ggml type names: F32, F16, Q4_0" in first and "Q1_0" in first


def test_mutate_on_such_a_contract_is_a_contract_error_not_an_internal_one(tmp_path, capsys):
    path = tree(tmp_path, "tiny-llama-gguf.yaml", lower_f32)
    capsys.readouterr()
    assert main(["mutate", "--contract", str(path), "-j", "1", "-q"]) == 2
    out, err = capsys.readouterr()
    assert "SPEC_INVALID" in out and "internal error" not in err, (out, err)


@pytest.mark.parametrize("wrong, hint", [("float32", None), ("Q8_0", None), ("bf16", "BF16"), ("f8_e5m2", "F8_E5M2"), ("BF61", "BF16")])
def test_a_codec_that_is_no_safetensors_dtype_is_refused(tmp_path, wrong, hint):
    path = tree(tmp_path, "tiny-llama-safetensors.yaml",
                lambda text: text.replace("codec: BF16}", f"codec: {wrong}}}").replace("  BF16: {", f"  {wrong}: {{"))
    cs = load_set([path], search_paths([str(path)], None))
    messages = [d.message for d in cs.diagnostics]
    assert messages and all(d.code.value == "SPEC_INVALID" and d.field.endswith(".codec") for d in cs.diagnostics)
    assert f"{wrong!r} is not a safetensors dtype" in messages[0]
    assert (f"(did you mean {hint}?)" in messages[0]) == (hint is not None), messages[0]
    assert "safetensors codecs are its dtypes: BOOL, F4" in messages[0]


@pytest.mark.parametrize("fmt", ["gguf", "safetensors"])
def test_every_name_of_the_format_is_accepted(tmp_path, fmt):
    """No valid name is refused: one tensor per codec name (geometry is not stated, so nothing
    else is checked at load)."""
    rows = "\n".join(f"  - {{name: t{i}, role: x, shape: [256], codec: {name}}}" for i, name in enumerate(CODEC_NAMES[fmt]))
    text = (f"charter: 1\nkind: artifact\nid: every-codec\nstatus: structural\nmodel: tiny-llama\nformat: {fmt}\n"
            f"tensors:\n{rows}\n")
    specs = tmp_path / "specs"
    (specs / "models").mkdir(parents=True)
    shutil.copy(ROOT / "specs" / "models" / "tiny-llama.yaml", specs / "models")
    (specs / "every-codec.yaml").write_text(text, "utf-8")
    cs = load_set([specs])
    assert not cs.diagnostics, [d.render() for d in cs.diagnostics]


def test_the_names_are_those_both_engines_read(native):
    assert set(CODEC_NAMES["gguf"]) == set(GGML_TYPES_BY_NAME) == {name for _, name, *_ in native.ggml_types()}
    assert set(CODEC_NAMES["safetensors"]) == set(DTYPE_BITS) == set(native.safetensors_dtypes())
