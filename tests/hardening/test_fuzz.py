"""Item 3 of the hardening issue: fuzzing in the normal suite (bounded examples).

* Byte edits of valid files never crash the readers: the only exception is a CharterError with
  one CONTAINER_* diagnostic.
* An edit of a contract-covered byte is never admitted. With header-only admission the covered
  bytes are the header: for GGUF every byte before the alignment padding, for safetensors the
  length prefix and every byte of the JSON that is not insignificant whitespace. The padding and
  the tensor bytes are covered only by the payload stage, so with `--verify-payload` and a pinned
  file digest every byte is covered. Single-byte edits are checked exhaustively (every bit of every
  byte), multi-byte edits by hypothesis, where "admitted" must mean "every fact the contract
  pins is unchanged" (two same-shaped tensors can trade names and extents: docs/security.md).
* The YAML loader, the contract loader and the expression parser raise nothing but their own
  diagnostics, whatever the text.

bench/fuzz/ holds the atheris harnesses for longer, coverage-guided runs of the same properties.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from charter.admission.runtime import admit, admit_view
from charter.admission.view import ArtifactView, parse_view
from charter.console import search_paths
from charter.engines.choose import python_checker
from charter.diagnostics import CharterError, Code, Stage
from charter.formats.gguf import GGUFArray
from charter.contract import expr
from charter.contract.contractset import load_set
from charter.contract.load import load_contract_text
from charter.contract.yamlload import load_text
from tests.hardening import corpus

FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

BASE = {"gguf": corpus.base_gguf(), "safetensors": corpus.base_safetensors()}


def _checker(path: Path):
    cs = load_set([path], search_paths([str(path)], None))
    assert not cs.diagnostics, cs.diagnostics
    (cid,) = cs.artifacts
    return python_checker(cs, cid, Path("/nonexistent-generated"))[0]


@pytest.fixture(scope="module")
def checkers(contracts):
    return {key: _checker(path) for key, path in contracts.items()}


@pytest.fixture(scope="module")
def payload_checkers(tmp_path_factory):
    """The base contracts plus `payload: {file_sha256: ...}` of the base files: every byte pinned."""
    root = tmp_path_factory.mktemp("payload-contracts")
    paths = corpus.write_contracts(root)
    out = {}
    for fmt in ("gguf", "safetensors"):
        path = paths[fmt]
        path.write_text(path.read_text("utf-8") + f"payload: {{file_sha256: {corpus.sha256(BASE[fmt])}}}\n", "utf-8")
        out[fmt] = _checker(path)
    return out


def covered(fmt: str) -> list[int]:
    """Byte positions of the base file that header-only admission covers."""
    data = BASE[fmt]
    if fmt == "gguf":
        _, marks = corpus.build_gguf(corpus.base_gguf_spec())
        return list(range(next(m.start for m in marks if m.kind == "padding")))
    n = int.from_bytes(data[:8], "little")
    return list(range(8)) + [8 + i for i, b in enumerate(data[8:8 + n]) if b not in b" \t\r\n"]


def view_or_diagnostic(data: bytes, fmt: str) -> ArtifactView | None:
    """The view of `data`, or None after checking the reader's one CONTAINER_* diagnostic."""
    try:
        return parse_view(data, len(data), fmt)
    except CharterError as exc:
        assert len(exc.diagnostics) == 1, exc.diagnostics
        d = exc.diagnostics[0]
        assert d.stage is Stage.CONTAINER and d.field and d.message and isinstance(d.offset, int), d
        return None


def facts(view: ArtifactView):
    """Everything the corpus's contracts pin about an artifact (the header's length is not pinned,
    so the data section is described by its own length)."""
    meta = {k: (e.type, e.element, e.value.raw if isinstance(e.value, GGUFArray) else e.value)
            for k, e in view.meta.items()}
    tensors = sorted((t.name, t.shape, t.codec, t.end - t.start) for t in view.tensors)
    return (view.format, view.version, view.alignment, view.header_len_aligned, meta, tensors,
            view.file_size - view.data_offset)


BASE_FACTS = {fmt: facts(parse_view(data, len(data), fmt)) for fmt, data in BASE.items()}


# --- exhaustive single-byte edits -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["gguf", "safetensors"])
def test_every_bit_flip_of_a_covered_byte_is_rejected(fmt, checkers):
    data = BASE[fmt]
    cover = set(covered(fmt))
    admitted_outside = 0
    for i in range(len(data)):
        for bit in range(8):
            buf = bytearray(data)
            buf[i] ^= 1 << bit
            view = view_or_diagnostic(bytes(buf), fmt)
            if view is None:
                continue
            report = admit_view(view, "<memory>", checkers[fmt])
            if i in cover:
                assert not report.admitted, f"flipping bit {bit} of covered byte {i} was admitted"
            else:
                admitted_outside += report.admitted
    assert admitted_outside > 0  # the uncovered bytes are really uncovered (payload stage not run)


@pytest.mark.parametrize("fmt", ["gguf", "safetensors"])
@pytest.mark.parametrize("value", [0x00, 0xFF, 0x20])
def test_every_covered_byte_set_to_a_constant_is_rejected(fmt, value, checkers):
    data = BASE[fmt]
    for i in covered(fmt):
        if data[i] == value:
            continue
        buf = bytearray(data)
        buf[i] = value
        view = view_or_diagnostic(bytes(buf), fmt)
        assert view is None or not admit_view(view, "<memory>", checkers[fmt]).admitted, (i, value)


def spaced_safetensors() -> bytes:
    """The base safetensors file with JSON whitespace around every token (json.dumps(indent=1)):
    the same facts, and whitespace before every number."""
    return corpus.st_file(json.dumps(corpus.st_header(), indent=1))


def test_whitespace_matters_only_as_whitespace(checkers):
    """The other half of "every non-whitespace header byte is covered": a whitespace byte of the
    JSON may become other whitespace, and nothing else without a rejection. Every whitespace byte
    of the spaced header is set to every other byte value; before Note [Safetensors numbers], a
    space before a 0 set to `-` (`-0`) was admitted."""
    data = spaced_safetensors()
    view = parse_view(data, len(data), "safetensors")
    assert admit_view(view, "<memory>", checkers["safetensors"]).admitted
    n = int.from_bytes(data[:8], "little")
    spaces = [8 + i for i, b in enumerate(data[8:8 + n]) if b in b" \t\r\n"]
    assert len(spaces) > 100
    admitted = []
    for i in spaces:
        for value in range(256):
            if value in b" \t\r\n":
                continue
            buf = bytearray(data)
            buf[i] = value
            view = view_or_diagnostic(bytes(buf), "safetensors")
            if view is not None and admit_view(view, "<memory>", checkers["safetensors"]).admitted:
                admitted.append((i, chr(value)))
    assert not admitted, admitted[:10]


@pytest.mark.parametrize("fmt", ["gguf", "safetensors"])
def test_with_the_payload_stage_every_byte_is_covered(fmt, payload_checkers, tmp_path):
    """One bit flip per byte (bit i % 8), every byte of the file, admitted with --verify-payload."""
    data = BASE[fmt]
    path = tmp_path / f"flip.{fmt}"
    path.write_bytes(data)
    assert admit(str(path), payload_checkers[fmt], verify_payload=True).admitted
    for i in range(len(data)):
        buf = bytearray(data)
        buf[i] ^= 1 << (i % 8)
        path.write_bytes(buf)
        assert not admit(str(path), payload_checkers[fmt], verify_payload=True).admitted, i


# --- random multi-byte edits (hypothesis) -----------------------------------------------------------


def edits(fmt: str):
    """Replacements at random positions (half of them in the covered header), then maybe a cut or
    an extension."""
    n = len(BASE[fmt])
    cover = covered(fmt)
    position = st.one_of(st.integers(0, n - 1), st.sampled_from(cover))
    replacement = st.tuples(position, st.integers(0, 255))
    tail = st.one_of(st.none(), st.integers(0, n - 1), st.binary(min_size=1, max_size=64))
    return st.tuples(st.lists(replacement, min_size=1, max_size=6), tail)


def apply(data: bytes, edit) -> bytes:
    replacements, tail = edit
    buf = bytearray(data)
    for i, b in replacements:
        buf[i] = b
    if isinstance(tail, int):
        del buf[tail:]
    elif isinstance(tail, bytes):
        buf += tail
    return bytes(buf)


def check_edit(fmt: str, edit, checker) -> None:
    data = apply(BASE[fmt], edit)
    assume(data != BASE[fmt])
    view = view_or_diagnostic(data, fmt)
    if view is None:
        return
    report = admit_view(view, "<memory>", checker)
    if report.admitted:
        assert facts(view) == BASE_FACTS[fmt], "admitted a file whose pinned facts changed"
    else:
        d = report.diagnostic
        assert d.code in Code.__members__ and Code(d.code).stage.value == d.stage


@FUZZ
@given(edit=edits("gguf"))
def test_gguf_random_edits(edit, checkers):
    check_edit("gguf", edit, checkers["gguf"])


@FUZZ
@given(edit=edits("safetensors"))
def test_safetensors_random_edits(edit, checkers):
    check_edit("safetensors", edit, checkers["safetensors"])


@FUZZ
@given(header=st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20), data_len=st.integers(0, 96))
def test_safetensors_arbitrary_json_headers(header, data_len, checkers):
    """Any JSON document as a header (plus the base's entries, to get past the easy rejections)."""
    doc = {**corpus.st_header(), **header} if isinstance(header, dict) else header
    try:
        text = json.dumps(doc, allow_nan=True)
    except (ValueError, UnicodeEncodeError):
        return
    data = corpus.st_file(text.encode("utf-8", "surrogatepass"), data_len)
    view = view_or_diagnostic(data, "safetensors")
    if view is not None:
        report = admit_view(view, "<memory>", checkers["safetensors"])
        assert not report.admitted or facts(view) == BASE_FACTS["safetensors"]


def test_tensors_of_one_shape_can_trade_names_unseen_by_a_header_only_contract(checkers, payload_checkers, tmp_path):
    """Why the multi-byte property compares facts, not bytes: renaming a to b and b to a swaps
    which extent holds which tensor. Every pinned fact is unchanged, so header-only admission
    passes; the payload stage (pinned digests) rejects it (docs/security.md)."""
    g = corpus.base_gguf_spec()
    swapped = g.with_tensor("a", name=b"X").with_tensor("b", name=b"a").with_tensor("X", name=b"b")
    data = corpus.build_gguf(swapped)[0]
    assert data != BASE["gguf"] and len(data) == len(BASE["gguf"])
    view = parse_view(data, len(data), "gguf")
    assert facts(view) == BASE_FACTS["gguf"]
    assert admit_view(view, "<memory>", checkers["gguf"]).admitted
    path = tmp_path / "swapped.gguf"
    path.write_bytes(data)
    report = admit(str(path), payload_checkers["gguf"], verify_payload=True)
    assert not report.admitted and report.diagnostic.code == "PAYLOAD_FILE_DIGEST"


# --- contracts: YAML, the contract loader, expressions ------------------------------------------------

YAML_CHARS = st.sampled_from(list("ab:-_ {}[],&*!|>'\"#%@`?\n\t 019.e+x\\\u2028\ufeff\x85\x00\u00e9\U0001F600<="))
OWN_CODES = {c.value for c in Code if c.stage is Stage.SPEC}


def own_diagnostics(exc: CharterError) -> None:
    assert exc.diagnostics
    for d in exc.diagnostics:
        assert d.code.value in OWN_CODES and d.message, d


@FUZZ
@given(st.text(YAML_CHARS, max_size=200))
def test_yaml_loader_raises_only_its_diagnostics(text):
    try:
        load_text(text)
    except CharterError as exc:
        own_diagnostics(exc)


def contract_edits():
    """Small edits of a real contract: its lines, characters deleted, duplicated or replaced."""
    text = corpus.CONTRACTS["gguf"][1]
    n = len(text)
    op = st.one_of(
        st.tuples(st.just("del"), st.integers(0, n - 1), st.integers(1, 8)),
        st.tuples(st.just("dup"), st.integers(0, n - 1), st.integers(1, 40)),
        st.tuples(st.just("put"), st.integers(0, n - 1), st.text(YAML_CHARS, min_size=1, max_size=6)),
    )
    return st.lists(op, min_size=1, max_size=4)


def edit_text(text: str, ops) -> str:
    for kind, at, arg in ops:
        at = min(at, len(text))
        if kind == "del":
            text = text[:at] + text[at + arg:]
        elif kind == "dup":
            text = text[:at] + text[at:at + arg] + text[at:]
        else:
            text = text[:at] + arg + text[at + 1:]
    return text


@FUZZ
@given(ops=contract_edits())
def test_contract_loader_raises_only_its_diagnostics(ops):
    try:
        load_contract_text(edit_text(corpus.CONTRACTS["gguf"][1], ops), "mutant.yaml")
    except CharterError as exc:
        own_diagnostics(exc)


@settings(FUZZ, max_examples=40)
@given(ops=contract_edits())
def test_edited_contracts_resolve_or_report(ops, tmp_path_factory):
    """The whole set (load, references, resolution) either reports diagnostics or resolves, and
    a resolved artifact contract renders a checker that imports."""
    root = tmp_path_factory.mktemp("mutant")
    paths = corpus.write_contracts(root)
    path = paths["gguf"]
    path.write_text(edit_text(corpus.CONTRACTS["gguf"][1], ops), "utf-8")
    cs = load_set([path], search_paths([str(path)], None))
    if cs.diagnostics:
        for d in cs.diagnostics:
            assert d.code.value in OWN_CODES, d
        return
    for cid in cs.artifacts:
        checker, _ = python_checker(cs, cid, root / "generated")
        assert checker.CONTRACT_ID == cid


EXPR_CHARS = st.sampled_from(list("abcxyz_019.e+-*/%()<>=!, \tminaxlg_up") + ["align_up", "min", "max", "and",
                                                                                "or", "not", "**", "//", "1e999"])


@FUZZ
@given(st.lists(EXPR_CHARS, max_size=40).map("".join))
def test_expression_parser_raises_only_its_diagnostics(text):
    try:
        e = expr.parse(text)
    except CharterError as exc:
        own_diagnostics(exc)
        return
    try:
        e.evaluate({"a": 3, "b": 2**200, "c": 0, "x": 1.5, "y": -1, "z": 10**9})
    except CharterError as exc:
        own_diagnostics(exc)


@FUZZ
@given(st.text(max_size=60))
def test_expression_parser_any_text(text):
    try:
        expr.parse(text)
    except CharterError as exc:
        own_diagnostics(exc)


def test_expression_names_stay_names():
    """Nothing in an expression reaches Python's namespace: dunder names are unknown constants."""
    for text in ["__import__", "__builtins__", "__class__", "globals"]:
        with pytest.raises(CharterError) as info:
            expr.parse(text).evaluate({})
        assert info.value.diagnostics[0].code is Code.EXPR_NAME
