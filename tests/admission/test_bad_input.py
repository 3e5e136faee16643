"""Bad input to `charter admit`: usage errors exit 2, hostile or foreign files exit 1 with one
CONTAINER_* diagnostic, and nothing prints a traceback."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from tests.hardening import corpus

from .conftest import SMOLLM2_CONTRACT, TINY_ST_CONTRACT, admit, assert_rejected


def test_missing_artifact_file_is_a_usage_error(capsys, tmp_path):
    run = admit(capsys, tmp_path / "nope.gguf", json_out=False)
    assert run.code == 2 and run.out == ""
    assert run.err.strip() == f"charter: {tmp_path / 'nope.gguf'}: no such file"


def test_fifo_and_device_are_usage_errors(capsys, tmp_path):
    """Never opened: a FIFO would be waited on, a device read without end."""
    os.mkfifo(tmp_path / "fifo.gguf")
    for path in (tmp_path / "fifo.gguf", Path("/dev/zero")):
        run = admit(capsys, path, json_out=False)
        assert run.code == 2 and run.out == ""
        assert run.err.strip() == f"charter: {path}: not a regular file"


def test_a_folder_against_an_artifact_contract_is_a_usage_error(capsys, tmp_path):
    """A folder is a bundle: it is admitted against a bundle contract, never searched for a file."""
    run = admit(capsys, tmp_path, json_out=False)
    assert run.code == 2 and run.out == ""
    assert run.err.strip() == (f"charter: {tmp_path} is a folder, and specs/artifacts/smollm2-135m-instruct-q4_1.yaml "
                               "is not a bundle contract (a folder is admitted against one)")


def test_missing_contract_is_a_usage_error(capsys, tmp_path, smollm2_path):
    run = admit(capsys, smollm2_path, tmp_path / "absent.yaml", json_out=False)
    assert run.code == 2


def test_model_contract_is_not_an_artifact_contract(capsys, smollm2_path):
    run = admit(capsys, smollm2_path, "specs/models/smollm2-135m-instruct.yaml", json_out=False)
    assert run.code == 2
    assert "not an artifact contract" in run.err


def test_not_a_gguf_file(capsys, tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGML this is an old ggml file, not a GGUF" + bytes(64))
    d = assert_rejected(admit(capsys, path), "container", "CONTAINER_MAGIC", "header.magic", located=False)
    assert d["offset"] == 0


def test_a_zip_is_named(capsys, tmp_path):
    """Note [Format sniff]: a torch.save checkpoint given to a GGUF contract."""
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(corpus.torch_zip())
    d = assert_rejected(admit(capsys, path), "container", "CONTAINER_FORMAT", "format", located=False)
    assert d["message"].startswith("this is a zip archive (torch.save writes one")
    assert d["message"].endswith("; the contract expects gguf") and d["offset"] == 0


def test_empty_file(capsys, tmp_path):
    path = tmp_path / "empty.gguf"
    path.write_bytes(b"")
    assert_rejected(admit(capsys, path), "container", "CONTAINER_TRUNCATED", located=False)


def test_fifty_byte_gguf_declaring_a_2_62_element_array(capsys, tmp_path):
    """The count is bounded by the bytes that remain before anything is allocated or walked."""
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)  # version 3, no tensors, one kv
    data += struct.pack("<Q", 1) + b"a" + struct.pack("<IIQ", 9, 0, 2**62)  # key "a": array of 2**62 uint8
    data += b"\x00"
    assert len(data) == 50
    path = tmp_path / "bomb.gguf"
    path.write_bytes(data)
    d = assert_rejected(admit(capsys, path), "container", "CONTAINER_COUNT", "metadata.a", located=False)
    assert d["offset"] is not None


def test_huge_tensor_count(capsys, tmp_path):
    path = tmp_path / "count.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 2**63, 0) + bytes(40))
    assert_rejected(admit(capsys, path), "container", "CONTAINER_COUNT", "header.tensor_count", located=False)


def test_safetensors_file_given_to_a_gguf_contract(capsys, tmp_path):
    header = b'{"__metadata__":{"format":"pt"}}'
    path = tmp_path / "model.gguf"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    d = assert_rejected(admit(capsys, path), "container", "CONTAINER_FORMAT", "format", located=False)
    assert d["message"] == "this is a safetensors file; the contract expects gguf"


@pytest.mark.parametrize("engine", ["python", "cpp"])
def test_gguf_file_given_to_a_safetensors_contract(capsys, smollm2_path, engine):
    """Was CONTAINER_HEADER: the first 8 bytes of a GGUF read as a header length of ~2**32."""
    run = admit(capsys, smollm2_path, TINY_ST_CONTRACT, "--engine", engine)
    d = assert_rejected(run, "container", "CONTAINER_FORMAT", "format", located=False)
    assert (d["message"], d["offset"]) == ("this is a GGUF file; the contract expects safetensors", 0)
    assert (d["expected"], d["actual"]) == ("'safetensors'", "'gguf'")


def test_json_flag_on_usage_errors_still_exits_2(capsys, tmp_path):
    run = admit(capsys, tmp_path / "nope.gguf", SMOLLM2_CONTRACT)
    assert run.code == 2
