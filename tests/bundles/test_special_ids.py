"""Note [Special ids across files]: special token ids that disagree between the files of a bundle
are rejected at the tokenizer stage, naming the key; a folder that disagrees is not frozen."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
import yaml

from charter.bundles.admit import admit_bundle
from charter.bundles.files import BundleRejected
from charter.bundles.json_facts import freeze_json
from charter.bundles.special_ids import check_special_ids
from charter.cli import main
from charter.conforming.gguf_split import split_gguf
from charter.contract.contractset import load_set
from charter.contract.plan import Located
from charter.diagnostics import Code
from charter.engines import choose
from tests.conftest import smollm2_gguf

from .conftest import CONTRACTS, linked_copy, replace, repinned
from .test_minilm_bundles import admit, rejected


def _edited(minilm_folders, tmp_path, file: str, edit):
    """A MiniLM folder whose `file` (a JSON companion) is edited, and the contract that binds the
    edited file exactly: only the cross-file rule can object."""
    folder = linked_copy(minilm_folders[1], tmp_path / "f")
    path = folder / file
    data = json.loads(path.read_bytes()) if path.exists() else {}
    edit(data)
    if path.exists():
        path.unlink()
    path.write_text(json.dumps(data))

    def bind(contract):
        contract["files"][file] = {"role": "companion"}
        contract["companions"][file] = freeze_json(data)

    return folder, repinned(CONTRACTS[1], folder, tmp_path / "b.yaml", bind)


def test_an_id_in_config_that_is_not_its_tokens(minilm_folders, tmp_path):
    folder, contract = _edited(minilm_folders, tmp_path, "config.json", lambda d: d.update(pad_token_id=1))
    d = rejected(admit(folder, contract), "tokenizer", "TOKENIZER_SPECIAL_MISMATCH", "config.json")
    assert (d.field, d.expected, d.actual) == ('companions.config.json["pad_token_id"]', "0", "1")
    assert "the id of \"[PAD]\" in tokenizer.json is 0" in d.message


def test_generation_config_disagrees(minilm_folders, tmp_path):
    folder, contract = _edited(minilm_folders, tmp_path, "generation_config.json",
                               lambda d: d.update(sep_token_id=[101, 103]))
    d = rejected(admit(folder, contract), "tokenizer", "TOKENIZER_SPECIAL_MISMATCH", "generation_config.json")
    assert (d.field, d.expected) == ('companions.generation_config.json["sep_token_id"]', "102")
    folder, contract = _edited(minilm_folders, tmp_path / "ok", "generation_config.json",
                               lambda d: d.update(sep_token_id=[101, 102]))
    assert admit(folder, contract).admitted  # a list holds the reference


def test_a_special_token_the_tokenizer_does_not_have(minilm_folders, tmp_path):
    folder, contract = _edited(minilm_folders, tmp_path, "tokenizer_config.json",
                               lambda d: d.update(mask_token="[MASKED]"))
    d = rejected(admit(folder, contract), "tokenizer", "TOKENIZER_SPECIAL_UNKNOWN", "tokenizer_config.json")
    assert d.field == 'companions.tokenizer_config.json["mask_token"]'


def test_tokenizer_config_wins_over_the_special_tokens_map(minilm_folders, tmp_path):
    folder, contract = _edited(minilm_folders, tmp_path, "special_tokens_map.json",
                               lambda d: d.update(pad_token="[UNK]"))
    assert admit(folder, contract).admitted  # tokenizer_config.json says [PAD], id 0, as config.json does


def test_an_id_beyond_the_tokenizer(minilm_folders, tmp_path):
    folder, contract = _edited(minilm_folders, tmp_path, "config.json", lambda d: d.update(bos_token_id=30522))
    d = rejected(admit(folder, contract), "tokenizer", "TOKENIZER_SPECIAL_RANGE", "config.json")
    assert (d.field, d.expected, d.actual) == ('companions.config.json["bos_token_id"]', "below 30522", "30522")


def test_freeze_refuses_a_folder_whose_ids_disagree(minilm_folders, tmp_path, capsys):
    folder = linked_copy(minilm_folders[1], tmp_path / "f")
    data = json.loads((folder / "config.json").read_bytes())
    replace(folder / "config.json", json.dumps({**data, "pad_token_id": 100}).encode())
    assert main(["freeze", str(folder), "--id", "m", "-o", str(tmp_path / "out")]) == 1
    assert "TOKENIZER_SPECIAL_MISMATCH" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_the_weights_disagree_with_config(tmp_path, capsys):
    """A GGUF states its eos id in its metadata: a config.json beside it must agree."""
    split_gguf(smollm2_gguf(), tmp_path / "set", max_tensors=300, prefix="smollm2")
    (tmp_path / "set" / "config.json").write_text(json.dumps({"eos_token_id": 3}))
    assert main(["freeze", str(tmp_path / "set"), "--id", "sm", "-o", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "TOKENIZER_SPECIAL_MISMATCH" in out and "smollm2-00001-of-00001.gguf" in out


# --- the vocabulary: token ids, embedding rows and the model's two facts (the padded-logits rule) ---


def _added_token(tokenizer: dict, id_: int) -> None:
    tokenizer["added_tokens"].append({"id": id_, "content": f"<extra_{id_}>", "single_word": False,
                                      "lstrip": False, "rstrip": False, "normalized": False, "special": True})


def test_a_token_id_without_an_embedding_row(minilm_folders, tmp_path):
    folder, contract = _edited(minilm_folders, tmp_path, "tokenizer.json", lambda d: _added_token(d, 30522))
    d = rejected(admit(folder, contract), "tokenizer", "TOKENIZER_LOGITS_ROWS", "config.json")
    assert (d.field, d.expected, d.actual) == ('companions.config.json["vocab_size"]', ">= 30523", "30522")


def _specs_copy(tmp_path, edit_model) -> Path:
    """specs/ of models, artifacts and bundles copied, the MiniLM model contract edited; its bundle."""
    specs = tmp_path / "specs"
    shutil.copytree(CONTRACTS[1].parents[1], specs, ignore=shutil.ignore_patterns("kernels", "provenance"))
    model = specs / "models" / "all-minilm-l6-v2.yaml"
    model.write_text(edit_model(model.read_text()))
    return specs / "bundles" / CONTRACTS[1].name


def _admit_in(folder, contract):
    cs = load_set([contract], [contract.parents[1]])
    assert not cs.diagnostics, [d.render() for d in cs.diagnostics]
    plan = next(iter(cs.bundles.values()))
    return admit_bundle(folder, plan, choose.python_checker(cs, plan.artifact.id, tmp_generated()).module)


def tmp_generated():
    return CONTRACTS[1].parents[2] / "generated"


def test_the_tokenizer_is_the_models_id_domain(minilm_folders, tmp_path):
    contract = _specs_copy(tmp_path, lambda text: text.replace("  ids: 30522\n", "  ids: 30521\n"))
    d = rejected(_admit_in(minilm_folders[1], contract), "tokenizer", "TOKENIZER_DOMAIN", "tokenizer.json")
    assert (d.field, d.expected, d.actual) == ("tokenizer.ids", "30521", "30522")
    assert str(d.location).split(":")[0].endswith("models/all-minilm-l6-v2.yaml")


def test_the_embedding_rows_are_the_models_logits_rows(minilm_folders, tmp_path):
    contract = _specs_copy(tmp_path, lambda text: text.replace("  logits_rows: vocab_size\n", "  logits_rows: 30523\n"))
    d = rejected(_admit_in(minilm_folders[1], contract), "tokenizer", "TOKENIZER_LOGITS_ROWS", "config.json")
    assert (d.field, d.expected, d.actual) == ("tokenizer.logits_rows", "30523", "30522")


def test_an_id_in_the_padded_rows_is_no_token(minilm_folders):
    """Rows past the tokenizer's ids are padding (Qwen4Exp: 243 of them): an id there is out of range."""
    cs = load_set([CONTRACTS[1]], [CONTRACTS[1].parents[1]])
    plan = next(iter(cs.bundles.values()))
    documents = {"config.json": {"vocab_size": 30522, "eos_token_id": 30100}}
    padded = dataclasses.replace(plan, tokenizer_ids=Located(30000, None), logits_rows=None)
    with pytest.raises(BundleRejected) as r:
        check_special_ids(padded, documents, {})
    d = r.value.diagnostic
    assert (d.code, d.field, d.expected, d.actual) == (Code.TOKENIZER_SPECIAL_RANGE,
                                                       'companions.config.json["eos_token_id"]', "below 30000", "30100")
    check_special_ids(plan, documents, {})  # within the 30,522 ids the shipped model states


def test_freeze_states_the_vocabulary(minilm_folders, tmp_path, capsys):
    assert main(["freeze", str(minilm_folders[2]), "--id", "m", "-o", str(tmp_path / "out")]) == 0
    model = yaml.safe_load((tmp_path / "out" / "models" / "m-model.yaml").read_text())
    assert model["tokenizer"] == {"ids": 30522, "logits_rows": "vocab_size"}
