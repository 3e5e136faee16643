"""The contract's words for Pydantic's and PyYAML's errors (Note [Messages for people] in
charter.contract.messages) and one root cause for a contract that does not validate (Note [Root
causes] in charter.contract.contractset). tests/invalid/ holds the golden files of each."""

from __future__ import annotations

import shutil

import pytest

from charter.cli import main
from charter.contract.load import load_contract_text
from charter.diagnostics import CharterError
from tests.conftest import ROOT

ARTIFACT = (ROOT / "specs" / "artifacts" / "tiny-llama-gguf.yaml").read_text("utf-8")


def refused(text: str) -> list[str]:
    with pytest.raises(CharterError) as exc:
        load_contract_text(text, "a.yaml")
    return [d.render() for d in exc.value.diagnostics]


@pytest.mark.parametrize("old, new, expected", [
    # the example: what `repeat` takes, with an example
    ("repeat: {i: layers}, role: attn_norm", "repeat: layers, role: attn_norm",
     "a.yaml:97:48: SPEC_SCHEMA tensors[1].repeat: expected a mapping (Placeholder -> count: range(count)), "
     "got the string 'layers'; for example `repeat: {i: layers}`"),
    ("llama.block_count: {type: uint32, value: layers}", "llama.block_count: layers",
     "a.yaml:26:24: SPEC_SCHEMA metadata.keys.llama.block_count: expected a mapping with the key type (Metadata "
     "key -> its exact type and value. With `extra_keys: reject`, these and the identity and tokenizer keys are "
     "the only keys the artifact may hold), got the string 'layers'; for example "
     "`llama.block_count: {type: uint32, value: layers}`"),
    # a list item: the example is the list
    ("shape: [hidden], codec: F32", "shape: [[hidden]], codec: F32",
     "a.yaml:97:86: SPEC_SCHEMA tensors[1].shape[0]: expected an integer or an expression (Dims in the "
     "container's own order ([] for a safetensors scalar)), got a list; for example `shape: [hidden]`"),
    ("{type: uint32, value: layers}", "{type: uint32, vaule: layers}",
     "a.yaml:26:46: SPEC_SCHEMA metadata.keys.llama.block_count.vaule: unknown key (not part of the contract "
     "language); did you mean value?"),
    ("\nlayout:", "\nlayuot:", "a.yaml:113:3: SPEC_SCHEMA layuot: unknown key (not part of the contract language); "
                           "did you mean layout?"),
    ("    llama.block_count:", "\tllama.block_count:", "a.yaml:26:1: YAML_SYNTAX: a tab: YAML indents with spaces only"),
    ("shape: [hidden], codec: F32}", "shape: [hidden, codec: F32}",
     "a.yaml:97:104: YAML_SYNTAX: a flow list `[...]` is not closed before this, or two of its items lack a comma"),
])
def test_messages(old, new, expected):
    assert old in ARTIFACT
    assert refused(ARTIFACT.replace(old, new, 1)) == [expected]


def test_a_misspelt_required_key_is_one_diagnostic():
    text = ARTIFACT.replace("format: gguf", "fromat: gguf")
    assert refused(text) == ["a.yaml:12:9: SPEC_SCHEMA fromat: unknown key (not part of the contract language); "
                             "did you mean format?"]


def test_a_model_on_the_search_path_that_does_not_validate_is_reported_once(tmp_path, capsys, monkeypatch):
    """Not REF_DANGLING in each artifact that names it: the model's own diagnostic, once."""
    for kind in ("models", "artifacts"):
        (tmp_path / "specs" / kind).mkdir(parents=True)
    model = (ROOT / "specs" / "models" / "tiny-llama.yaml").read_text("utf-8")
    (tmp_path / "specs" / "models" / "tiny-llama.yaml").write_text(model.replace("family: tiny-llama", "famliy: x"))
    shutil.copy(ROOT / "specs" / "artifacts" / "tiny-llama-gguf.yaml", tmp_path / "specs" / "artifacts" / "one.yaml")
    (tmp_path / "specs" / "artifacts" / "two.yaml").write_text(ARTIFACT.replace("id: tiny-llama-gguf", "id: two"))
    monkeypatch.chdir(tmp_path)
    assert main(["check", "specs/artifacts/one.yaml", "specs/artifacts/two.yaml"]) == 2
    out = capsys.readouterr().out
    assert out == ("specs/models/tiny-llama.yaml:18:9: SPEC_SCHEMA famliy: unknown key (not part of the contract "
                   "language); did you mean family?\n"), out
