"""Note [Reference header]: a C++ run given the conforming header parsed once says exactly what a
run without it says, over that header and over headers that differ from it (a changed array or
string gets its own digest, not the reference's), and a reference for other parse inputs is not
used as the parse."""

from __future__ import annotations

import dataclasses

import pytest

from charter.engines import cpp as engine

from tests.conftest import need_checker

from .conftest import SMOLLM2, load_battery_for


@pytest.fixture(scope="module")
def smollm2(native, tmp_path_factory):
    cid, b = load_battery_for(SMOLLM2, tmp_path_factory.mktemp("smollm2"))
    need_checker(native, cid)
    return cid, b, engine.reference("gguf", b.raw_header, b.view.file_size)


def _both(cid, header, size, ref, options=engine.Options()):
    plain = engine._detail(cid, header, size, options, None)
    assert engine._detail(cid, header, size, options, None, reference=ref) == plain
    return plain


def _upper(header: bytes, at: int) -> bytes:
    """The header with the first lower-case ASCII letter from `at` on in upper case (the same length)."""
    out = bytearray(header)
    at = next(i for i in range(at, len(out)) if 0x61 <= out[i] <= 0x7A)
    out[at] ^= 0x20
    return bytes(out)


def test_the_conforming_header_is_admitted_through_its_reference(smollm2):
    cid, b, ref = smollm2
    assert ref is not None
    assert _both(cid, b.raw_header, b.view.file_size, ref)["admitted"]


@pytest.mark.parametrize("key, code", [("tokenizer.ggml.merges", "TOKENIZER_ARRAY_DIGEST"),
                                       ("tokenizer.ggml.tokens", "TOKENIZER_ARRAY_DIGEST"),
                                       ("tokenizer.chat_template", "TOKENIZER_DIGEST")])
def test_a_changed_value_is_hashed_again(smollm2, key, code):
    cid, b, ref = smollm2
    at = b.raw_header.index(key.encode()) + len(key) + 200  # inside the value, past its tag and length
    said = _both(cid, _upper(b.raw_header, at), b.view.file_size, ref)
    assert (said["code"], said["field"].removesuffix(".sha256")) == (code, f"tokenizer.{key}")


def test_a_header_the_reference_is_not_is_parsed(smollm2):
    cid, b, ref = smollm2
    size = b.view.file_size
    assert not _both(cid, b.raw_header, size + 1, ref)["admitted"]  # another file size
    assert not _both(cid, b.raw_header[:-1], size, ref)["admitted"]  # another span
    tight = dataclasses.replace(engine.Options(), max_header_bytes=len(b.raw_header) // 2)
    assert _both(cid, b.raw_header, size, ref, tight)["code"] == "CONTAINER_HEADER"


def test_no_reference_for_a_header_the_reader_rejects(smollm2):
    cid, b, ref = smollm2
    assert engine.reference("gguf", b.raw_header[:100], b.view.file_size) is None
    assert engine.reference("safetensors", b.raw_header, b.view.file_size) is None
