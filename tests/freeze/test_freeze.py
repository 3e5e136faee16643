"""`charter freeze` then `charter admit`: the frozen contract admits its artifact and nothing else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from charter.cli import main
from charter.formats.gguf import read_gguf
from tests.frozen import write_safetensors
from tests.hardening import corpus


def freeze(artifact: Path, out: Path, cid: str = "frozen") -> Path:
    assert main(["freeze", str(artifact), "--id", cid, "-o", str(out)]) == 0
    return out / "artifacts" / f"{cid}.yaml"


def admit(artifact: Path, contract: Path, capsys, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["admit", str(artifact), "--contract", str(contract), "--generated", str(contract.parent / "gen"),
                 *extra])
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def header_copy(tmp_path_factory, smollm2_path):
    """The real file's header plus a sparse tail: the same header facts, tiny on disk."""
    h = read_gguf(smollm2_path)
    path = tmp_path_factory.mktemp("hdr") / "smol.gguf"
    with open(smollm2_path, "rb") as src, open(path, "wb") as dst:
        dst.write(src.read(h.data_offset))
        dst.truncate(h.file_size)
    return path


def test_frozen_real_file_is_admitted_with_payload(tmp_path, smollm2_path, capsys):
    contract = freeze(smollm2_path, tmp_path)
    code, out = admit(smollm2_path, contract, capsys, "--verify-payload")
    assert code == 0, out
    assert out.startswith("admitted:")


@pytest.mark.parametrize("which", ["tensorless_gguf", "tensorless_padded_gguf"])
def test_frozen_file_admits_itself_with_payload(tmp_path, capsys, request, which):
    """A tensor-less file (vocab-only, or padded as gguf.cpp writes it): each is admitted, payload
    included, by the contract frozen from it (Note [Tensor-less GGUF]). The C++ engine on the
    tensor-less files: tests/admission/test_tensorless_gguf.py; on the real file: the test below."""
    artifact = request.getfixturevalue(which)
    contract = freeze(artifact, tmp_path)
    code, out = admit(artifact, contract, capsys, "--verify-payload")
    assert code == 0, out
    assert out.startswith("admitted:") and "10 stages passed" in out


def test_frozen_real_file_admits_itself_with_payload_in_cpp(capsys, frozen_cpp):
    """The real file, whose header and data both end on the alignment, admitted with payload by
    the C++ checker of the contract frozen from it (tests/frozen.py: compiled once per session)."""
    f = frozen_cpp["smollm2"]
    code, out = admit(f.artifact, f.contract, capsys, "--verify-payload", "--engine", "cpp")
    assert code == 0, out
    assert out.startswith("admitted:") and "10 stages passed" in out


def test_frozen_tensorless_contract_pins_where_the_file_ends(tmp_path, tensorless_gguf, tensorless_padded_gguf):
    """Nothing follows a vocab-only header (trailing: reject); gguf.cpp's padding is trailing
    alignment padding, and zero."""
    vocab = freeze(tensorless_gguf, tmp_path / "vocab").read_text()
    padded = freeze(tensorless_padded_gguf, tmp_path / "padded").read_text()
    assert "trailing: reject" in vocab and "tensors: []" in vocab
    assert "trailing: alignment" in padded and "padding: zero" in padded


def test_freeze_refuses_to_overwrite(tmp_path, header_copy, capsys):
    freeze(header_copy, tmp_path)
    assert main(["freeze", str(header_copy), "--id", "frozen", "-o", str(tmp_path)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(corpus.OTHER_FORMATS))
def test_freeze_says_what_a_non_model_file_is(name, tmp_path, capsys):
    """Note [Format sniff]: exit 1 (a rejected file, as for any other bad file), one line naming
    the format, nothing written. Was `CONTAINER_HEADER header.length: header length ... exceeds`."""
    make, found = corpus.OTHER_FORMATS[name]
    path = tmp_path / {"zip": "pytorch_model.bin", "pickle": "pytorch_model.bin", "json": "model.safetensors.index.json",
                       "unknown": "model.bin"}[found]
    path.write_bytes(make())
    capsys.readouterr()
    assert main(["freeze", str(path), "--id", "frozen", "-o", str(tmp_path / "out")]) == 1
    out, err = capsys.readouterr()
    (line,) = out.splitlines()
    assert line.startswith("CONTAINER_FORMAT format: this is ") and "; charter reads GGUF and safetensors files" in line
    assert {"zip": "a zip archive", "pickle": "a Python pickle", "json": "JSON text",
            "unknown": "no format charter knows"}[found] in line
    assert err == "" and not (tmp_path / "out").exists()


def test_freeze_of_a_truncated_file_is_rejected_the_same_way(tmp_path, capsys):
    path = tmp_path / "cut.safetensors"
    path.write_bytes(b"\x08" * 7)
    capsys.readouterr()
    assert main(["freeze", str(path), "--id", "frozen", "-o", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().out.startswith("CONTAINER_TRUNCATED header.length:")


def test_freeze_is_deterministic(tmp_path, header_copy):
    a = freeze(header_copy, tmp_path / "a").read_text()
    b = freeze(header_copy, tmp_path / "b").read_text()
    assert a == b


def test_frozen_contract_folds_layers_and_names_constants(tmp_path, header_copy):
    text = freeze(header_copy, tmp_path).read_text()
    assert "name: blk.{i}.attn_q.weight" in text
    assert "i: block_count" in text
    assert "value: block_count" in text
    assert text.count("name: blk.") == 9  # 30 layers x 9 tensors folded into 9 rows


@pytest.mark.parametrize("edit, code", [
    (lambda h, b: b.__setitem__(slice(h.kvs["llama.block_count"].value_offset,
                                      h.kvs["llama.block_count"].value_offset + 4), (31).to_bytes(4, "little")),
     "METADATA_VALUE"),
    (lambda h, b: b.__setitem__(h.kvs["tokenizer.ggml.bos_token_id"].value_offset, 7), "TOKENIZER_SPECIAL_ID"),
    (lambda h, b: b.__setitem__(h.tensors[5].dims_offset, 0x41), "TENSOR_SHAPE"),
])
def test_changing_a_pinned_fact_is_rejected(tmp_path, header_copy, capsys, edit, code):
    contract = freeze(header_copy, tmp_path)
    h = read_gguf(header_copy)
    data = bytearray(header_copy.read_bytes()[: h.data_offset])
    edit(h, data)
    mutant = tmp_path / "mutant.gguf"
    with open(mutant, "wb") as f:
        f.write(data)
        f.truncate(h.file_size)
    status, out = admit(mutant, contract, capsys)
    assert status == 1
    assert code in out


def test_safetensors_freeze_binds_config_to_dims(tmp_path, capsys):
    weights = write_safetensors(tmp_path / "model", hidden=16)
    contract = freeze(weights, tmp_path / "specs")
    text = contract.read_text()
    assert "hidden_size" in text and "model.layers.{i}.mlp.up_proj.weight" in text
    code, out = admit(weights, contract, capsys, "--verify-payload")
    assert code == 0, out
    # A config.json that disagrees with the weights is rejected: a cross-artifact constraint.
    config = json.loads((weights.parent / "config.json").read_text())
    config["hidden_size"] = 32
    (weights.parent / "config.json").write_text(json.dumps(config))
    code, out = admit(weights, contract, capsys)
    assert code == 1
    assert "METADATA_VALUE config.hidden_size" in out


def test_safetensors_weights_that_disagree_with_config_are_rejected(tmp_path, capsys):
    weights = write_safetensors(tmp_path / "model", hidden=16)
    contract = freeze(weights, tmp_path / "specs")
    other = write_safetensors(tmp_path / "other", hidden=16)
    save_file({"model.embed_tokens.weight": np.zeros((32, 8), np.float32)}, str(other))
    shutil.copy(weights.parent / "config.json", other.parent / "config.json")
    code, out = admit(other, contract, capsys)
    assert code == 1
    assert "rejected at" in out


# --- the frozen contract finds its own file (source) ------------------------------------------------


def _no_traceback(capsys) -> tuple[str, str]:
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return out, err


def test_frozen_contract_finds_its_file_from_another_directory(tmp_path, header_copy, capsys, monkeypatch):
    contract = freeze(header_copy, tmp_path / "specs")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["admit", "--contract", str(contract)]) == 0
    out, _ = _no_traceback(capsys)
    assert out.startswith("admitted:")
    assert main(["locate", str(contract)]) == 0
    out, _ = _no_traceback(capsys)
    assert Path(out.strip()).resolve() == header_copy.resolve()


def test_frozen_source_is_relative_to_the_contract_with_size_and_sha256(tmp_path, header_copy):
    import hashlib

    from charter.contract.load import load_contract

    contract = freeze(header_copy, tmp_path / "specs")
    source = load_contract(contract).contract.source
    assert not Path(source.path).is_absolute()
    assert (contract.parent / source.path).resolve() == header_copy.resolve()
    assert source.size == header_copy.stat().st_size
    assert source.sha256 == hashlib.sha256(header_copy.read_bytes()).hexdigest()
    assert source.package is None


def test_a_moved_artifact_says_how_to_pass_the_file(tmp_path, header_copy, capsys):
    moved = tmp_path / "model.gguf"
    shutil.copy(header_copy, moved)
    contract = freeze(moved, tmp_path / "specs")
    moved.rename(tmp_path / "moved.gguf")
    capsys.readouterr()
    for argv in (["admit", "--contract", str(contract)], ["locate", str(contract)]):
        assert main(argv) == 2
        out, err = _no_traceback(capsys)
        text = out + err
        assert "FILE_UNREADABLE source.path" in text and "pass the file explicitly" in text, text
    assert main(["admit", str(tmp_path / "moved.gguf"), "--contract", str(contract)]) == 0


def test_an_edited_artifact_is_not_taken_for_the_pinned_one(tmp_path, header_copy, capsys):
    artifact = tmp_path / "model.gguf"
    shutil.copy(header_copy, artifact)
    contract = freeze(artifact, tmp_path / "specs")
    size = artifact.stat().st_size
    with open(artifact, "ab") as f:  # grown: the size says so at once
        f.write(b"\0")
    capsys.readouterr()
    assert main(["admit", "--contract", str(contract)]) == 2
    out, err = _no_traceback(capsys)
    assert "SOURCE_MISMATCH source.size" in out + err and f"source.size pins {size}" in out + err
    with open(artifact, "r+b") as f:  # same size, one payload byte changed: the sha256 says so
        f.truncate(size)
        f.seek(size - 1)
        f.write(b"\1")
    for argv in (["locate", str(contract)], ["admit", "--contract", str(contract), "--verify-payload"]):
        assert main(argv) == 2
        out, err = _no_traceback(capsys)
        assert "SOURCE_MISMATCH source.sha256" in out + err, out + err


def test_model_source_is_left_to_the_author(tmp_path, capsys):
    """general.name is a display name (sometimes a git hash), never a repository."""
    import gguf

    path = tmp_path / "m.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("3f2c1a9e0b7d4c6a8e5f1b2d3c4a5e6f7a8b9c0d")
    w.add_tensor("t", np.zeros(4, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    freeze(path, tmp_path / "specs")
    text = (tmp_path / "specs" / "models" / "frozen-model.yaml").read_text()
    assert "3f2c1a9e" not in text and "\nsource:" not in text
    assert "# source: left for you to fill in" in text
    from charter.contract.load import load_contract

    assert load_contract(tmp_path / "specs" / "models" / "frozen-model.yaml").contract.source is None


def test_the_shipped_contract_still_finds_its_file_inside_the_installed_wheel(capsys, smollm2_path):
    assert main(["locate", "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"]) == 0
    out, _ = _no_traceback(capsys)
    assert Path(out.strip()) == smollm2_path


# --- the library function takes typed arguments; the command adapts argparse to it ----------------


def test_freeze_is_a_function_of_paths_and_an_id(tmp_path, header_copy):
    from charter.freeze import freeze as freeze_library

    written = freeze_library(header_copy, "typed", tmp_path / "out")
    assert written == [tmp_path / "out" / "models" / "typed-model.yaml", tmp_path / "out" / "artifacts" / "typed.yaml"]
    assert all(p.is_file() for p in written)
    assert freeze_library(header_copy, "typed", tmp_path / "out", force=True) == written


@pytest.mark.parametrize("problem", ["no file", "bad id", "files in the way"])
def test_freeze_refuses_a_request_it_cannot_carry_out_and_writes_nothing(tmp_path, header_copy, problem):
    from charter.freeze import FreezeRefused
    from charter.freeze import freeze as freeze_library

    out = tmp_path / "out"
    if problem == "files in the way":
        freeze_library(header_copy, "taken", out)
    before = sorted(out.rglob("*")) if out.exists() else []
    args = {"no file": (tmp_path / "missing.gguf", "x"), "bad id": (header_copy, "Not An Id"),
            "files in the way": (header_copy, "taken")}[problem]
    with pytest.raises(FreezeRefused):
        freeze_library(*args, out)
    assert (sorted(out.rglob("*")) if out.exists() else []) == before


def test_freeze_raises_the_reader_diagnostic_for_a_bad_artifact(tmp_path):
    from charter.diagnostics import CharterError, Code
    from charter.freeze import freeze as freeze_library

    bad = tmp_path / "cut.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00")
    with pytest.raises(CharterError) as exc:
        freeze_library(bad, "cut", tmp_path / "out")
    assert exc.value.diagnostics[0].code is Code.CONTAINER_TRUNCATED and not (tmp_path / "out").exists()
