"""Note [Format sniff]: what a file is, from its first bytes, on real files of every format charter
is handed by mistake; a damaged file of the expected format still gets its reader's diagnostic."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from safetensors.numpy import save_file

from charter.admission.view import parse_view, read_view
from charter.diagnostics import Code
from charter.formats.sniff import SNIFF_BYTES, require_format, sniff
from tests.hardening import corpus

from .conftest import expect, plain_id, st_bytes

FORMAT_CASES = corpus.format_cases()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("sniff") / "model.safetensors"
    save_file({"w": np.zeros((2, 3), np.float32)}, str(path), metadata={"format": "pt"})
    return path


def test_real_files_of_each_format(saved, rich_bytes):
    assert sniff(rich_bytes[:SNIFF_BYTES]) == "gguf"
    assert sniff(saved.read_bytes()[:SNIFF_BYTES]) == "safetensors"
    for name, (make, found) in corpus.OTHER_FORMATS.items():
        assert sniff(make()[:SNIFF_BYTES]) == found, name


def test_the_smollm2_checkpoint_is_gguf(smollm2_path):
    with open(smollm2_path, "rb") as f:
        assert sniff(f.read(SNIFF_BYTES)) == "gguf"


def test_the_ctranslate2_file_of_the_issue():
    """The header length of the issue's report, and what charter says now instead."""
    data = corpus.ctranslate2_model_bin()
    assert int.from_bytes(data[:8], "little") == 7518478154457939974
    d = expect(Code.CONTAINER_FORMAT, require_format, data[:SNIFF_BYTES], len(data), "safetensors")
    assert d.message.startswith("this is no format charter knows (it starts 06 00 00 00 0c 00 57 68")
    assert d.message.endswith("; the contract expects safetensors")
    assert (d.field, d.offset, d.expected, d.actual) == ("format", 0, "'safetensors'", "'unknown'")


@pytest.mark.parametrize("case", FORMAT_CASES, ids=lambda c: c.name)
def test_foreign_files_are_rejected_before_the_reader(case, tmp_path):
    path = tmp_path / "artifact"
    path.write_bytes(case.data)
    for view in (lambda: read_view(str(path), case.format), lambda: parse_view(case.data, len(case.data), case.format)):
        d = expect(Code(case.code), view)
        assert d.field == case.field and d.offset == 0


def test_the_message_names_both_formats(saved, rich_bytes):
    d = expect(Code.CONTAINER_FORMAT, parse_view, rich_bytes, len(rich_bytes), "safetensors")
    assert d.message == "this is a GGUF file; the contract expects safetensors"
    data = saved.read_bytes()
    d = expect(Code.CONTAINER_FORMAT, parse_view, data, len(data), "gguf")
    assert d.message == "this is a safetensors file; the contract expects gguf"


@pytest.mark.parametrize("data,fmt,code,field", [
    (b"GGML" + bytes(60), "gguf", Code.CONTAINER_MAGIC, "header.magic"),  # unknown: GGUF's own magic check
    (b"\0" * 64, "gguf", Code.CONTAINER_MAGIC, "header.magic"),
    (b"GGU", "gguf", Code.CONTAINER_TRUNCATED, "header.magic"),
    (b"\x08" * 7, "safetensors", Code.CONTAINER_TRUNCATED, "header.length"),  # too short to tell
    (st_bytes("[]"), "safetensors", Code.CONTAINER_JSON, "header"),  # a length within the cap
    (st_bytes("hello world"), "safetensors", Code.CONTAINER_JSON, "header"),
    (struct.pack("<Q", 0) + bytes(16), "safetensors", Code.CONTAINER_JSON, "header"),
    (struct.pack("<Q", 2**64 - 1) + b"{}", "safetensors", Code.CONTAINER_HEADER, "header.length"),  # then `{`
    (struct.pack("<Q", 64) + b"{}      ", "safetensors", Code.CONTAINER_TRUNCATED, "header.length"),
], ids=plain_id)
def test_damaged_files_of_the_expected_format_keep_their_reader_diagnostic(data, fmt, code, field):
    d = expect(code, parse_view, data, len(data), fmt)
    assert d.field == field


def test_freeze_reads_what_the_bytes_name(saved, rich_bytes):
    assert require_format(rich_bytes[:SNIFF_BYTES], len(rich_bytes)) == "gguf"
    assert require_format(saved.read_bytes()[:SNIFF_BYTES], 100) == "safetensors"
    assert require_format(b"\x08" * 7, 7) == "safetensors"  # too short: the reader says it is truncated
    d = expect(Code.CONTAINER_FORMAT, require_format, corpus.torch_zip()[:SNIFF_BYTES], 1000)
    assert d.message.endswith("; charter reads GGUF and safetensors files")
    assert d.expected == "'gguf' or 'safetensors'"


def test_a_buffer_shorter_than_the_window_is_truncated_not_guessed():
    """The verdict does not depend on how much of the file a caller holds: with fewer bytes than
    the window of a longer file, the sniff does not guess (the C++ engine asks for more)."""
    data = corpus.base_safetensors()
    for n in range(SNIFF_BYTES):
        d = expect(Code.CONTAINER_TRUNCATED, parse_view, data[:n], len(data), "safetensors")
        assert d.field == "format" and d.offset == 0
    parse_view(data, len(data), "safetensors")


def test_json_text():
    for text in ('{"a": 1}', "[1, 2]", ' \n\t{"a"', "\ufeff{}", "{}", "["):
        assert sniff(text.encode()[:SNIFF_BYTES]) == "json", text
    for text in ("", "   ", "a{", "{\x00", "1", '"x"'):
        assert sniff(text.encode()[:SNIFF_BYTES]) != "json", text
    assert json.loads(corpus.safetensors_index())["weight_map"]
