"""Note [Format sniff] (charter/formats/sniff.py) rule by rule, at each rule's edges, and every
diagnostic compared whole: the sniff is the first check any file meets, before either reader
(tools/mutmut_gate.py)."""

from __future__ import annotations

import struct

import pytest

from charter.formats.safetensors import MAX_HEADER_BYTES
from charter.formats.sniff import SNIFF_BYTES, read_head, require_format, sniff
from tests.mutmut.gguf_bytes import error

LENGTH = struct.Struct("<Q")

SNIFFED = [
    (b"GGUF" + bytes(12), "gguf"),
    (b"PK\x03\x04" + bytes(12), "zip"),
    (b"PK\x05\x06" + bytes(12), "zip"),
    (b"PK\x03\x05" + bytes(12), "unknown"),
    (b"\x80\x02", "pickle"),  # the shortest pickle head
    (b"\x80\x05" + bytes(14), "pickle"),
    (b"\x80\x01" + bytes(14), "unknown"),
    (b"\x80\x06" + bytes(14), "unknown"),
    (b"\x81\x02" + bytes(14), "unknown"),
    (b"\x80\x09\x03" + bytes(13), "unknown"),  # the protocol is the second byte, not the third
    (b"\x01\x03" + bytes(14), "unknown"),  # a protocol byte without the 0x80 before it
    (b'{"a": 1}', "json"),
    (b"[1, 2]", "json"),
    (b' \t\n\r{"a"', "json"),
    (b"\xef\xbb\xbf{}", "json"),
    (b"{", "json"),
    (b"  ", "unknown"),
    (b"a{", "unknown"),
    (b"{\x00", "unknown"),
    (b"{\x1f", "unknown"),
    (b"{\x0b", "unknown"),  # a vertical tab is no JSON whitespace
    (b" {\x0c", "unknown"),
    (b'"x"', "unknown"),
    (b"\xef\xbb\xbf\xef\xbb\xbf{}", "unknown"),  # one byte order mark, not two
    (LENGTH.pack(24) + b'{"a":', "safetensors"),
    (LENGTH.pack(24) + b'["a":', "unknown"),
    (LENGTH.pack(24) + b' {"a":', "unknown"),
]


@pytest.mark.parametrize("head, found", SNIFFED, ids=[head.hex() for head, _ in SNIFFED])
def test_each_rule_names_its_format(head, found):
    assert sniff(head) == found


def diagnostic(code: str, message: str, expected: str, actual: str) -> dict:
    return {"code": code, "field": "format", "message": message, "expected": expected, "actual": actual,
            "offset": 0}


def test_a_buffer_shorter_than_the_window_is_truncated():
    assert error(require_format, b"GGUF\x03", 100, "gguf") == diagnostic(
        "CONTAINER_TRUNCATED", "the provided buffer holds 5 bytes; telling the format needs the first 16",
        ">= 16 bytes", "5")
    assert error(require_format, b"GGUF\x03", 6, "gguf") == diagnostic(
        "CONTAINER_TRUNCATED", "the provided buffer holds 5 bytes; telling the format needs the first 6",
        ">= 6 bytes", "5")
    assert require_format(b"", 0, "gguf") == "gguf"  # an empty file: its reader says it is empty
    assert require_format(b"", -1, "gguf") == "gguf"


def test_another_format_than_the_contracts_is_named():
    zipped = b"PK\x03\x04" + bytes(12)
    assert error(require_format, zipped, 100, "gguf") == diagnostic(
        "CONTAINER_FORMAT", "this is a zip archive (torch.save writes one: pytorch_model.bin, *.pt); the contract "
        "expects gguf", "'gguf'", "'zip'")
    assert error(require_format, b"GGUF" + bytes(12), 100, "safetensors") == diagnostic(
        "CONTAINER_FORMAT", "this is a GGUF file; the contract expects safetensors", "'safetensors'", "'gguf'")


def test_freeze_reads_what_the_bytes_name_and_refuses_the_rest():
    assert require_format(b"GGUF" + bytes(12), 100) == "gguf"
    assert require_format(LENGTH.pack(24) + b'{"a":' + bytes(3), 100) == "safetensors"
    assert require_format(b"\x08" * 7, 7) == "safetensors"  # too short to tell: safetensors says truncated
    assert error(require_format, b"\x80\x02" + bytes(14), 100) == diagnostic(
        "CONTAINER_FORMAT", "this is a Python pickle (a legacy torch.save file; charter never unpickles); charter "
        "reads GGUF and safetensors files", "'gguf' or 'safetensors'", "'pickle'")


def test_a_damaged_file_of_the_expected_format_goes_to_its_reader():
    at_limit, over = LENGTH.pack(MAX_HEADER_BYTES), LENGTH.pack(MAX_HEADER_BYTES + 1)
    assert require_format(b"\xff" * 16, 100, "gguf") == "gguf"  # GGUF's own magic check says "not GGUF"
    assert require_format(b"\x08" * 7, 7, "safetensors") == "safetensors"  # no whole length to judge
    assert require_format(at_limit + b"\x01" * 8, 100, "safetensors") == "safetensors"  # a length within the cap
    assert require_format(at_limit, 8, "safetensors") == "safetensors"
    start = "this is no format charter knows (it starts "
    assert error(require_format, over + b"\x01" * 8, 100, "safetensors") == diagnostic(
        "CONTAINER_FORMAT", f"{start}01 e1 f5 05 00 00 00 00: no GGUF magic, and as a safetensors header length "
        f"100000001 is over the 100000000-byte limit); the contract expects safetensors", "'safetensors'",
        "'unknown'")
    assert error(require_format, b"\x09" * 8, 8, "safetensors")["actual"] == "'unknown'"
    assert error(require_format, b"\xff" * 16, 100)["message"] == (
        f"{start}ff ff ff ff ff ff ff ff: no GGUF magic, and as a safetensors header length 18446744073709551615 "
        "is over the 100000000-byte limit); charter reads GGUF and safetensors files")


def test_read_head_reads_the_window_and_the_size(tmp_path):
    path = tmp_path / "m.bin"
    path.write_bytes(bytes(range(40)))
    assert read_head(path) == (bytes(range(SNIFF_BYTES)), 40)
    assert read_head(tmp_path / "absent") is None
