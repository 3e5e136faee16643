"""Note [Safetensors numbers]: the number grammar of a safetensors header, cross-checked with the crate.

Every spelling of an integer that JSON allows but the format does not (`-0`, `0.0`, `1e2`, `1E2`,
`8.0`, huge exponents, values beyond u64), and those JSON does not allow (`+1`, leading zeros), in
shapes, in data_offsets and in `__metadata__`: the hostile corpus holds one file per (place,
spelling) (tests/hardening/corpus.py, class "numbers"). The safetensors package (0.8, the Rust
crate) must refuse each file, and charter must reject it at its place with its code, field and
offset, on the fast path and on the positional walker alike. The spellings the format allows are
accepted by both.
"""

from __future__ import annotations

import json

import pytest
from safetensors import SafetensorError, safe_open

from charter.diagnostics import Code
from charter.formats.safetensors import _parse, parse_safetensors
from tests.hardening import corpus

from .conftest import expect

CASES = [c for c in corpus.all_cases() if c.klass == "numbers"]


def crate_verdict(data: bytes, tmp_path) -> str | None:
    """None when the crate reads the header (every tensor's shape and dtype, the metadata), else
    its error (as bench/hostile.py asks it)."""
    path = tmp_path / "n.safetensors"
    path.write_bytes(data)
    try:
        with safe_open(str(path), framework="numpy") as f:
            f.metadata()
            for name in f.keys():
                s = f.get_slice(name)
                s.get_shape(), s.get_dtype()
    except SafetensorError as exc:
        return str(exc)
    return None


def test_the_corpus_holds_every_place_and_spelling():
    names = {c.name for c in CASES}
    for place in ("dim", "begin", "end", "metadata"):
        assert any(n.startswith(f"safetensors/number-{place}-") for n in names), place
    for name in ("dim-minus-0", "begin-minus-0", "begin-0.0", "dim-8e0", "dim-8E0", "end-32E0", "dim-plus-8",
                 "dim-08", "end-1e400", "end-32e999999999", "dim-2**64", "end-2**64", "metadata-minus-0",
                 "metadata-1e2", "metadata-plus-1", "metadata-01"):
        assert f"safetensors/number-{name}" in names, name


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rejected_at_its_place_as_the_crate_rejects_it(case, tmp_path):
    assert crate_verdict(case.data, tmp_path) is not None, "the crate reads it: charter may not be stricter here"
    fast = expect(Code(case.code), _parse, case.data, len(case.data), True)
    walked = expect(Code(case.code), _parse, case.data, len(case.data), False)
    assert fast.field == walked.field == case.field
    assert fast.offset == walked.offset


def test_minus_zero_is_the_float_the_crate_says(tmp_path):
    """The crate's words for `-0`: a floating point -0.0, not the integer 0."""
    case = next(c for c in CASES if c.name == "safetensors/number-begin-minus-0")
    assert "floating point `-0.0`" in crate_verdict(case.data, tmp_path)
    d = expect(Code.CONTAINER_OFFSET, parse_safetensors, case.data, len(case.data))
    assert d.actual == "[-0.0, 32]"
    assert d.offset == 8 + case.data[8:].index(b"[-0,32]")


def _respelled(entry_text: str, metadata: dict | None = None) -> bytes:
    header = json.dumps(corpus.st_header(metadata or corpus.ST_METADATA), separators=(",", ":"))
    return corpus.st_file(header.replace(corpus._A_ENTRY, entry_text))


ALLOWED = {  # spellings of a's entry the format allows: whitespace around the integers is JSON's
    "plain": '"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}',
    "spaces": '"a" : { "dtype" : "F32" , "shape" : [ 8 ] , "data_offsets" : [ 0 , 32 ] }',
    "newlines-tabs": '"a":{"dtype":"F32","shape":[\n\t8\r\n],"data_offsets":[\t0,\n32 ]}',
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_allowed_spellings_are_read_by_both(name, tmp_path):
    data = _respelled(ALLOWED[name])
    assert crate_verdict(data, tmp_path) is None
    for fast in (True, False):
        h = _parse(data, len(data), fast)
        assert [(t.name, t.shape, t.begin, t.end) for t in h.tensors[:1]] == [("a", (8,), 0, 32)]


@pytest.mark.parametrize("text", ["2024-01-01", "a,-0", "[-0]", "x: -0", "-0"])
def test_minus_zero_inside_a_string_is_text(text, tmp_path):
    """`-0` after `[`, `,` or `:` inside a string sends the fast path to the walker, which reads the
    string as a string: the file is admitted, as the crate admits it."""
    data = _respelled(ALLOWED["plain"], {**corpus.ST_METADATA, "general.basename": text})
    assert crate_verdict(data, tmp_path) is None
    assert _parse(data, len(data), True).metadata["general.basename"] == text
    assert _parse(data, len(data), False).metadata["general.basename"] == text
