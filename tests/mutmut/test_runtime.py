"""The admission runtime, check by check, on hand-made views: each rejection is compared whole
(code, field, message, expected, actual, location, offset), each acceptance is shown to return.

These tests exist to kill mutants of charter/admission/runtime.py (tools/mutmut_gate.py); they
also run with the normal suite and take well under a second.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import signal
import struct
from pathlib import Path

import pytest

from charter.admission import runtime, stores
from charter.admission.runtime import Context, Rejected, _json_type, _same_bits, _show
from charter.language import align_up as _align_up
from charter.language import expand as _expand
from charter.formats.gguf import GGUFValueType as VT
from tests.mutmut.views import array, ctx, diag, meta, rejection, tensor, view

AT = "specs/x.yaml:3:5"
AT2 = "specs/x.yaml:9:1"


# --- helpers ------------------------------------------------------------------------------------


def test_show():
    assert _show(True) == "true"
    assert _show(False) == "false"
    assert _show("ab") == "'ab'"
    assert _show("x" * 80) == repr("x" * 80)
    assert _show("x" * 81) == repr("x" * 77 + "...")
    assert _show(1.5) == "1.5"
    assert _show(0.1) == "0.1"
    assert _show(7) == "7"
    assert _show(None) == "None"
    assert _show([1, 2]) == "[1, 2]"


def test_same_bits():
    f32 = struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert _same_bits("float32", 0.1, f32)
    assert not _same_bits("float64", 0.1, f32)
    assert not _same_bits("float32", 0.0, -0.0)
    assert _same_bits("float64", float("nan"), float("nan"))
    assert _same_bits("float64", 2.5, 2.5)
    assert not _same_bits("float64", 2.5, 2.5000000000000004)


def test_json_type():
    assert _json_type(True) == "bool"
    assert _json_type(False) == "bool"
    assert _json_type(3) == "int64"
    assert _json_type(3.0) == "float64"
    assert _json_type("s") == "string"
    assert _json_type(None) == "null"
    assert _json_type([]) == "list"
    assert _json_type({}) == "dict"


def test_align_up():
    assert _align_up(0, 32) == 0
    assert _align_up(1, 32) == 32
    assert _align_up(32, 32) == 32
    assert _align_up(33, 32) == 64
    assert _align_up(5, 1) == 5


def test_expand():
    assert _expand("a", ()) == ["a"]
    assert _expand("a", None) == ["a"]
    assert _expand("b.{i}.w", (("i", 3),)) == ["b.0.w", "b.1.w", "b.2.w"]
    assert _expand("b.{i}.w", (("i", (1, 5)),)) == ["b.1.w", "b.5.w"]
    assert _expand("e.{i}.{j}", (("i", 2), ("j", 2))) == ["e.0.0", "e.0.1", "e.1.0", "e.1.1"]
    assert _expand("x{i}", (("j", 2),)) == ["x{i}", "x{i}"]


def test_unique_pairs_and_constants():
    assert runtime._unique_pairs([("a", 1), ("b", 2)]) == {"a": 1, "b": 2}
    with pytest.raises(ValueError, match=r"^duplicate key 'a'$"):
        runtime._unique_pairs([("a", 1), ("a", 2)])
    with pytest.raises(ValueError, match=r"^NaN is not JSON$"):
        runtime._no_constant("NaN")


def test_rejected_carries_its_diagnostic():
    c = ctx(view())
    with pytest.raises(Rejected) as info:
        c.fail(runtime.Code.LAYOUT_GAP, "f", "m", None)
    assert info.value.diagnostic.location is None
    assert str(info.value) == "LAYOUT_GAP f: m"


def test_fail_and_mismatch():
    c = ctx(view())
    assert rejection(c.fail, runtime.Code.LAYOUT_GAP, "f", "msg", AT, 1, 2, 9) == diag(
        "LAYOUT_GAP", "f", "msg", "1", "2", AT, 9)
    assert rejection(c.fail, runtime.Code.LAYOUT_GAP, "f", "msg", "", 0, False) == diag(
        "LAYOUT_GAP", "f", "msg", "0", "False", None, None)
    assert rejection(c.mismatch, runtime.Code.LAYOUT_GAP, "f", "a", 2, AT, 7, " (n)") == diag(
        "LAYOUT_GAP", "f", "expected 'a', got 2 (n)", "'a'", "2", AT, 7)
    assert rejection(c.mismatch, runtime.Code.LAYOUT_GAP, "f", True, None, None) == diag(
        "LAYOUT_GAP", "f", "expected true, got None", "true", "None", None, None)


# --- container ----------------------------------------------------------------------------------


def test_container_format():
    c = ctx(view())
    assert c.container_format(format="gguf", at=AT) is None
    assert rejection(c.container_format, "safetensors", AT) == diag(
        "CONTAINER_FORMAT", "format", "expected 'safetensors', got 'gguf'", "'safetensors'", "'gguf'", AT, 0)


def test_container_version():
    c = ctx(view(version=3))
    assert c.container_version(version=3, at=AT) is None
    assert rejection(c.container_version, 2, AT) == diag(
        "CONTAINER_VERSION", "container.version", "expected 2, got 3", "2", "3", AT, 4)


def test_container_alignment():
    c = ctx(view(alignment=32))
    assert c.container_alignment(alignment=32, at=AT) is None
    assert rejection(c.container_alignment, 64, AT) == diag(
        "CONTAINER_ALIGNMENT", "container.alignment", "expected 64, got 32", "64", "32", AT, None)
    c = ctx(view(meta("general.alignment", "uint32", 16, at=300), alignment=16))
    assert rejection(c.container_alignment, 32, AT) == diag(
        "CONTAINER_ALIGNMENT", "container.alignment", "expected 32, got 16", "32", "16", AT, 300)


def test_container_header_aligned():
    c = ctx(view(fmt="safetensors", header_len_aligned=False))
    assert c.container_header_aligned(aligned=False, at=AT) is None
    assert rejection(c.container_header_aligned, True, AT) == diag(
        "CONTAINER_HEADER", "container.header_aligned", "expected true, got false (header length multiple of 8)",
        "true", "false", AT, 0)


# --- identity -----------------------------------------------------------------------------------


def test_identity():
    c = ctx(view(meta("general.architecture", "string", "llama", at=100),
                 meta("general.name", "string", "smol", at=200),
                 meta("general.size", "uint32", 5, at=300)))
    assert c.identity(key="general.architecture", value="llama", at=AT) is None
    assert c.identity(key="general.name", value="smol", at=AT) is None
    assert rejection(c.identity, "general.architecture", "qwen2", AT) == diag(
        "IDENTITY_ARCHITECTURE", "identity.general.architecture", "expected 'qwen2', got 'llama'", "'qwen2'",
        "'llama'", AT, 120)
    assert rejection(c.identity, "general.name", "big", AT) == diag(
        "IDENTITY_MISMATCH", "identity.general.name", "expected 'big', got 'smol'", "'big'", "'smol'", AT, 220)
    assert rejection(c.identity, "general.basename", "smol", AT) == diag(
        "IDENTITY_MISSING", "identity.general.basename", "key 'general.basename' is missing", "smol", "missing", AT)
    assert rejection(c.identity, "general.size", "5", AT) == diag(
        "IDENTITY_MISMATCH", "identity.general.size", "expected 'string', got 'uint32' (type)", "'string'",
        "'uint32'", AT, 300)


# --- metadata -----------------------------------------------------------------------------------


def test_meta_types():
    c = ctx(view(meta("a.n", "uint32", 5, at=100),
                 meta("a.list", "array", array(VT.STRING, ["x"]), element="string", at=200)))
    assert c.meta_types(facts=[("a.n", "uint32", None, AT), ("a.list", "array", "string", AT)]) is None
    assert rejection(c.meta_types, [("a.n", "uint32", None, AT), ("a.m", "uint32", None, AT2)]) == diag(
        "METADATA_MISSING", "metadata.a.m", "key 'a.m' is missing", "uint32", "missing", AT2)
    assert rejection(c.meta_types, [("a.n", "uint32", None, AT), ("a.list", "string", None, AT2)]) == diag(
        "METADATA_TYPE", "metadata.a.list", "expected 'string', got 'array'", "'string'", "'array'", AT2, 210)
    assert rejection(c.meta_types, [("a.n", "uint64", None, AT)]) == diag(
        "METADATA_TYPE", "metadata.a.n", "expected 'uint64', got 'uint32'", "'uint64'", "'uint32'", AT, 110)
    assert rejection(c.meta_types, [("a.list", "array", "int32", AT)]) == diag(
        "METADATA_TYPE", "metadata.a.list.element", "expected 'int32', got 'string'", "'int32'", "'string'", AT,
        220)


def test_meta_key_set():
    v = view(meta("a", "uint32", 1, at=100), meta("b", "uint32", 2, at=200),
             meta("general.alignment", "uint32", 32, at=300))
    c = ctx(v)
    assert c.meta_key_set(pinned=["a", "b"], forbidden=[("c", AT2)], extra="reject", at=AT) is None
    assert c.meta_key_set(pinned=["a"], forbidden=[], extra="allow", at=AT) is None
    assert c.meta_key_set(pinned=(k for k in ["a", "b"]), forbidden=[], extra="reject", at=AT) is None
    assert rejection(c.meta_key_set, ["a", "b"], [("c", AT2), ("b", AT2)], "allow", AT) == diag(
        "METADATA_FORBIDDEN", "metadata.b", "forbidden key 'b' is present", "absent", "present", AT2, 200)
    assert rejection(c.meta_key_set, ["a"], [], "reject", AT) == diag(
        "METADATA_UNEXPECTED", "metadata.b", "key 'b' (uint32) is not in the contract (extra_keys: reject)",
        "absent", "present", AT, 200)
    # general.alignment is a container key in GGUF only
    st = ctx(view(meta("a", "string", "x", at=100), meta("general.alignment", "string", "32", at=300),
                  fmt="safetensors"))
    assert rejection(st.meta_key_set, ["a"], [], "reject", AT) == diag(
        "METADATA_UNEXPECTED", "metadata.general.alignment",
        "key 'general.alignment' (string) is not in the contract (extra_keys: reject)", "absent", "present", AT, 300)


def test_value():
    f32 = struct.unpack("<f", struct.pack("<f", 1e-5))[0]
    c = ctx(view(meta("n", "uint32", 30, at=100), meta("eps", "float32", f32, at=200),
                 meta("d", "float64", 0.5, at=300), meta("flag", "bool", False, at=400),
                 meta("s", "string", "gpt2", at=500)))
    assert c.value(stage="metadata", key="n", ctype="uint32", value=30, at=AT) is None
    assert c.value(stage="metadata", key="eps", ctype="float32", value=1e-5, at=AT) is None
    assert c.value(stage="metadata", key="eps", ctype="float32", value=f32, at=AT) is None
    assert c.value(stage="metadata", key="d", ctype="float64", value=0.5, at=AT) is None
    assert c.value(stage="metadata", key="d", ctype="float64", value=1 / 2, at=AT) is None
    assert c.value(stage="tokenizer", key="flag", ctype="bool", value=False, at=AT) is None
    assert c.value(stage="tokenizer", key="s", ctype="string", value="gpt2", at=AT) is None
    assert rejection(c.value, "metadata", "n", "uint32", 31, AT) == diag(
        "METADATA_VALUE", "metadata.n", "expected 31, got 30", "31", "30", AT, 120)
    assert rejection(c.value, "tokenizer", "n", "uint32", 31, AT) == diag(
        "TOKENIZER_VALUE", "tokenizer.n", "expected 31, got 30", "31", "30", AT, 120)
    assert rejection(c.value, "metadata", "n", "uint32", 30.0, AT) == diag(
        "METADATA_VALUE", "metadata.n", "expected 30.0, got 30", "30.0", "30", AT, 120)
    assert rejection(c.value, "tokenizer", "flag", "bool", 0, AT) == diag(
        "TOKENIZER_VALUE", "tokenizer.flag", "expected 0, got false", "0", "false", AT, 420)
    assert rejection(c.value, "metadata", "eps", "float64", 1e-5, AT)["code"] == "METADATA_VALUE"
    assert rejection(c.value, "metadata", "d", "float64", 0.5000000000000001, AT) == diag(
        "METADATA_VALUE", "metadata.d", "expected 0.5000000000000001, got 0.5", "0.5000000000000001", "0.5", AT, 320)
    assert rejection(c.value, "metadata", "d", "float32", 0.5000001, AT)["code"] == "METADATA_VALUE"


def test_string_digest():
    text = "{% chat %}"
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    other = hashlib.sha256(b"x").hexdigest()
    c = ctx(view(meta("t", "string", text, at=100), meta("u", "string", "é", at=200)))
    assert c.string_digest(stage="tokenizer", key="t", sha256=sha, at=AT) is None
    assert c.string_digest(stage="metadata", key="u", sha256=hashlib.sha256("é".encode()).hexdigest(), at=AT) is None
    assert rejection(c.string_digest, "tokenizer", "t", other, AT) == diag(
        "TOKENIZER_DIGEST", "tokenizer.t.sha256", f"expected '{other}', got '{sha}'", f"'{other}'", f"'{sha}'",
        AT, 120)
    assert rejection(c.string_digest, "metadata", "t", other, AT)["code"] == "METADATA_DIGEST"


def test_array_length_values_and_digest():
    words = array(VT.STRING, ["en", "fr"], at=1000)
    ints = array(VT.INT32, [1, 2, 3], at=2000)
    c = ctx(view(meta("langs", "array", words, "string", at=100), meta("types", "array", ints, "int32", at=200)))
    assert c.array(stage="metadata", key="langs", length=2, values=("en", "fr"), sha256=words.sha256(), at=AT) is None
    assert c.array(stage="tokenizer", key="types", length=3, values=None, sha256=ints.sha256(), at=AT) is None
    assert c.array(stage="tokenizer", key="types", length=3, values=(1, 2, 3), sha256=None, at=AT) is None
    assert rejection(c.array, "metadata", "langs", 3, None, None, AT) == diag(
        "METADATA_ARRAY_LENGTH", "metadata.langs.length", "expected 3, got 2", "3", "2", AT, 1004)
    assert rejection(c.array, "tokenizer", "types", 4, None, None, AT) == diag(
        "TOKENIZER_ARRAY_LENGTH", "tokenizer.types.length", "expected 4, got 3", "4", "3", AT, 2004)
    assert rejection(c.array, "metadata", "langs", 2, ("en", "de"), None, AT) == diag(
        "METADATA_VALUE", "metadata.langs.values[1]", "expected 'de', got 'fr'", "'de'", "'fr'", AT, 1012)
    assert rejection(c.array, "tokenizer", "types", 3, (1, 2, True), None, AT) == diag(
        "TOKENIZER_VALUE", "tokenizer.types.values[2]", "expected true, got 3", "true", "3", AT, 2012)
    assert rejection(c.array, "tokenizer", "types", 3, (1.0, 2, 3), None, AT) == diag(
        "TOKENIZER_VALUE", "tokenizer.types.values[0]", "expected 1.0, got 1", "1.0", "1", AT, 2012)
    bad = hashlib.sha256(b"").hexdigest()
    assert rejection(c.array, "metadata", "langs", 2, None, bad, AT) == diag(
        "METADATA_ARRAY_DIGEST", "metadata.langs.sha256", f"expected '{bad}', got '{words.sha256()}'", f"'{bad}'",
        f"'{words.sha256()}'", AT, 1012)
    assert rejection(c.array, "tokenizer", "types", 3, None, bad, AT)["code"] == "TOKENIZER_ARRAY_DIGEST"


def test_array_of_floats_compares_bits():
    f32 = array(VT.FLOAT32, [0.1, -0.0], at=1000)
    f64 = array(VT.FLOAT64, [0.1], at=2000)
    c = ctx(view(meta("f", "array", f32, "float32", at=100), meta("d", "array", f64, "float64", at=200)))
    assert c.array(stage="metadata", key="f", length=2, values=(0.1, -0.0), sha256=None, at=AT) is None
    assert c.array(stage="metadata", key="d", length=1, values=(0.1,), sha256=None, at=AT) is None
    assert rejection(c.array, "metadata", "f", 2, (0.1, 0.0), None, AT) == diag(
        "METADATA_VALUE", "metadata.f.values[1]", "expected 0.0, got -0.0", "0.0", "-0.0", AT, 1012)
    assert rejection(c.array, "metadata", "d", 1, (0.1000000000000001,), None, AT)["field"] == "metadata.d.values[0]"


# --- companion config ---------------------------------------------------------------------------


@pytest.fixture
def beside(tmp_path):
    artifact = tmp_path / "model.safetensors"
    artifact.write_bytes(b"")

    def write(text: str, name: str = "config.json") -> Context:
        (tmp_path / name).write_text(text, "utf-8")
        return ctx(view(fmt="safetensors"), path=str(artifact))

    return write


def test_config_values(beside):
    c = beside(json.dumps({"a": 1, "b": {"c": 0.5, "d": "x", "e": True}}))
    rows = [("a", "int64", 1, AT), ("b.c", "float64", 0.5, AT), ("b.d", "string", "x", AT), ("b.e", "bool", True, AT)]
    assert c.config(file="config.json", facts=rows, at=AT) is None
    assert c.config(file="config.json", facts=iter(rows), at=AT) is None
    assert c.config(file="config.json", facts=[], at=AT) is None
    assert rejection(c.config, "config.json", [("a", "int64", 2, AT2)], AT) == diag(
        "METADATA_VALUE", "config.a", "expected 2, got 1 (config.json)", "2", "1", AT2)
    assert rejection(c.config, "config.json", [("a", "int64", 1, AT), ("b.d", "int64", 1, AT2)], AT) == diag(
        "METADATA_TYPE", "config.b.d", "expected 'int64', got 'string' (config.json)", "'int64'", "'string'", AT2)
    assert rejection(c.config, "config.json", [("b.x", "int64", 1, AT2)], AT) == diag(
        "METADATA_MISSING", "config.b.x", "config.json has no key 'b.x'", "int64", "missing", AT2)
    assert rejection(c.config, "config.json", [("a.z", "int64", 1, AT2)], AT) == diag(
        "METADATA_MISSING", "config.a.z", "config.json has no key 'a.z'", "int64", "missing", AT2)
    assert rejection(c.config, "config.json", [("b.c", "float64", 0.5000000000000001, AT)], AT)["code"] == \
        "METADATA_VALUE"


def test_config_float_compares_bits(beside):
    c = beside('{"z": 0.0, "n": -0.0}')
    assert c.config(file="config.json", facts=[("z", "float64", 0.0, AT)], at=AT) is None
    assert rejection(c.config, "config.json", [("n", "float64", 0.0, AT)], AT) == diag(
        "METADATA_VALUE", "config.n", "expected 0.0, got -0.0 (config.json)", "0.0", "-0.0", AT)


def test_config_file_errors(beside, monkeypatch):
    c = beside('{"a": 1, "a": 2}')
    assert rejection(c.config, "config.json", [("a", "int64", 1, AT)], AT) == diag(
        "METADATA_CONFIG", "config", "config.json is not valid JSON: duplicate key 'a'", location=AT)
    c = beside('{"a": NaN}')
    assert rejection(c.config, "config.json", [("a", "int64", 1, AT)], AT) == diag(
        "METADATA_CONFIG", "config", "config.json is not valid JSON: NaN is not JSON", location=AT)
    c = beside('{"a": ')
    assert rejection(c.config, "config.json", [("a", "int64", 1, AT)], AT)["message"].startswith(
        "config.json is not valid JSON: Expecting value")
    c = beside("")
    c_path = Path(c.path).parent / "config.json"
    c_path.write_bytes(b'{"a": "\xff"}')
    assert rejection(c.config, "config.json", [("a", "int64", 1, AT)], AT)["message"].startswith(
        "config.json is not valid JSON: 'utf-8' codec can't decode")
    # an unreadable companion breaks the contract's `config.file` (AT2), not its first key (AT)
    assert rejection(c.config, "other.json", [("a", "int64", 1, AT)], AT2) == diag(
        "METADATA_CONFIG", "config", "cannot read other.json beside the artifact: No such file or directory",
        location=AT2)
    c_path.write_text('{"a": 1}')
    monkeypatch.setattr(runtime, "MAX_COMPANION_BYTES", 8)
    assert c.config(file="config.json", facts=[("a", "int64", 1, AT)], at=AT) is None
    c_path.write_text('{"a":  1}')
    assert rejection(c.config, "config.json", [("a", "int64", 1, AT)], AT) == diag(
        "METADATA_CONFIG", "config", "config.json is more than 8 bytes (the limit)", location=AT)
    c_path.unlink()
    os.mkfifo(c_path)  # never opened for writing: a reader that waited on it would hang
    with _deadline(2.0):
        assert rejection(c.config, "config.json", [("a", "int64", 1, AT)], AT) == diag(
            "METADATA_CONFIG", "config", "cannot read config.json beside the artifact: not a regular file",
            location=AT)


@contextlib.contextmanager
def _deadline(seconds: float):
    """Fail, rather than hang, when the code under test blocks (a FIFO opened without O_NONBLOCK)."""
    def expire(signum, frame):
        raise TimeoutError(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_read_companion_reads_one_byte_past_the_limit_whatever_the_chunks(tmp_path, monkeypatch):
    """A companion is read up to MAX_COMPANION_BYTES + 1 bytes (enough to refuse its size) however
    the kernel splits the reads: chunks that land on the limit exactly, and ones that do not."""
    monkeypatch.setattr(runtime, "MAX_COMPANION_BYTES", 8)
    path = tmp_path / "config.json"
    path.write_bytes(b"0123456789abcdef")
    assert runtime.read_companion(path) == b"012345678"
    read = os.read
    for most in (1, 2, 3, 4, 8, 9):
        monkeypatch.setattr(runtime.os, "read", lambda fd, n, most=most: read(fd, min(n, most)))
        assert runtime.read_companion(path) == b"012345678", most
        path.write_bytes(b"0123")
        assert runtime.read_companion(path) == b"0123", most
        path.write_bytes(b"0123456789abcdef")


def test_read_companion_refuses_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        with _deadline(2.0), pytest.raises(OSError) as refused:
            runtime.read_companion(path)
        assert (refused.value.errno, refused.value.strerror) == (errno.EINVAL, "not a regular file")


# --- tokenizer ----------------------------------------------------------------------------------


def test_special_and_stop_ids():
    c = ctx(view(meta("tokenizer.ggml.eos_token_id", "uint32", 2, at=100)))
    assert c.special_id(key="tokenizer.ggml.eos_token_id", name="eos", value=2, at=AT) is None
    assert rejection(c.special_id, "tokenizer.ggml.eos_token_id", "eos", 0, AT) == diag(
        "TOKENIZER_SPECIAL_ID", "tokenizer.special.eos", "expected 0, got 2 (tokenizer.ggml.eos_token_id)", "0", "2",
        AT, 120)
    assert c.stop_id(key="tokenizer.ggml.eos_token_id", ids=(2,), at=AT) is None
    assert c.stop_id(key="tokenizer.ggml.eos_token_id", ids=(0, 2), at=AT) is None
    assert rejection(c.stop_id, "tokenizer.ggml.eos_token_id", (0, 1), AT) == diag(
        "TOKENIZER_STOP_ID", "tokenizer.stop.tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.eos_token_id = 2 is not one of the model's stop ids [0, 1]", "[0, 1]", "2", AT, 120)


def test_token_domain():
    c = ctx(view(meta("tokens", "array", array(VT.STRING, ["a", "b", "c"], at=900), "string", at=100)))
    assert c.token_domain(key="tokens", ids=3, at=AT) is None
    assert rejection(c.token_domain, "tokens", 4, AT) == diag(
        "TOKENIZER_DOMAIN", "tokenizer.ids", "tokens holds 3 tokens, but the model's tokenizer domain is 4 ids", "4",
        "3", AT, 100)


def test_logits_rows():
    c = ctx(view(tensors=[tensor("emb", (8, 100), "F32", 64, 64 + 3200, record=77)]))
    assert c.logits_rows(tensor="emb", axis=1, rows=100, at=AT) is None
    assert c.logits_rows(tensor="missing", axis=1, rows=5, at=AT) is None
    assert c.logits_rows(tensor="emb", axis=2, rows=5, at=AT) is None
    assert rejection(c.logits_rows, "emb", 1, 101, AT) == diag(
        "TOKENIZER_LOGITS_ROWS", "tokenizer.logits_rows",
        "emb has 100 rows on axis 1, but the model's physical logits rows are 101", "101", "100", AT, 77)
    assert rejection(c.logits_rows, "emb", 0, 100, AT)["actual"] == "8"


# --- tensors ------------------------------------------------------------------------------------


def _three():
    return [tensor("a", (32, 4), "F32", 64, 576, record=10), tensor("blk.0.w", (32,), "F16", 576, 640, record=20),
            tensor("blk.1.w", (32,), "F16", 640, 704, record=30)]


TABLE = (("a", (), "emb", (32, 4), "F32", AT), ("blk.{i}.w", (("i", 2),), "norm", (32,), "F16", AT2))


def test_tensor_named():
    c = ctx(view(tensors=_three()))
    assert c.tensor_named("blk.1.w").offset == 30
    assert c.tensor_named("a").offset == 10
    assert c.tensor_named("z") is None


def test_tensors_accepts_the_exact_set():
    c = ctx(view(tensors=_three()))
    assert c.tensors(rows=TABLE, at=None) is None
    assert c.tensors(rows=iter(TABLE), at=AT) is None


def test_tensors_rejects():
    c = ctx(view(tensors=_three()))
    assert rejection(c.tensors, TABLE[:1], "specs/x.yaml:1:1") == diag(
        "TENSOR_UNEXPECTED", "tensors.blk.0.w", "tensor 'blk.0.w' is not in the contract", "absent", "present",
        "specs/x.yaml:1:1", 20)
    assert rejection(c.tensors, TABLE + (("c", (), "x", (1,), "F32", "specs/x.yaml:4:4"),), None) == diag(
        "TENSOR_MISSING", "tensors.c", "tensor 'c' is missing", "present", "missing", "specs/x.yaml:4:4")
    rows = (("a", (), "emb", (32, 4, 1), "F32", AT), TABLE[1])
    assert rejection(c.tensors, rows, None) == diag(
        "TENSOR_RANK", "tensors.a.rank", "expected 3, got 2 (emb)", "3", "2", AT, 10)
    rows = (("a", (), "emb", (32, 5), "F32", AT), TABLE[1])
    assert rejection(c.tensors, rows, None) == diag(
        "TENSOR_SHAPE", "tensors.a.shape[1]", "expected 5, got 4 (emb: expected shape [32, 5], got [32, 4])", "5",
        "4", AT, 10)
    rows = (TABLE[0], ("blk.{i}.w", (("i", 2),), "norm", (32,), "F32", AT2))
    assert rejection(c.tensors, rows, None) == diag(
        "TENSOR_CODEC", "tensors.blk.0.w.codec", "expected 'F32', got 'F16'", "'F32'", "'F16'", AT2, 20)
    dup = ctx(view(tensors=_three() + [tensor("a", (32, 4), "F32", 704, 1216, record=50)]))
    assert rejection(dup.tensors, TABLE, None) == diag(
        "TENSOR_DUPLICATE", "tensors.a", "tensor 'a' appears twice", "1", "2", None, 50)


def test_excluded_tensors_are_left_to_policy():
    c = ctx(view(tensors=_three()))
    c.exclude(patterns=("blk.*",))
    assert c.tensors(rows=TABLE[:1], at=None) is None
    assert c._is_excluded("blk.7.w")
    assert not c._is_excluded("a")
    c.exclude(patterns=iter(["x", "blk.1.*"]))
    assert c._excluded == ("x", "blk.1.*")
    assert rejection(c.tensors, TABLE[:1], None)["field"] == "tensors.blk.0.w"
    c.exclude(patterns=["BLK.*"])
    assert not c._is_excluded("blk.0.w")


# --- codec --------------------------------------------------------------------------------------


def test_codecs():
    ts = [tensor("q", (64, 2), "Q8_0", 64, 200, record=11), tensor("n", (64,), "F32", 200, 456, record=12),
          tensor("o", (5,), "I8", 456, 461, record=13)]
    c = ctx(view(tensors=ts))
    table = (("Q8_0", 32, 34, 0, AT), ("F32", 1, 4, 0, AT2))
    assert c.codecs(rows=table) is None
    assert c.codecs(rows=iter(table)) is None
    assert rejection(c.codecs, (("Q8_0", 32, 35, 0, AT),)) == diag(
        "CODEC_SIZE", "codecs.Q8_0.bytes",
        "q: 128 elements in Q8_0 blocks of 32/35 bytes are 140 bytes, but the extent holds 136", "140", "136", AT, 11)
    assert rejection(c.codecs, (("Q8_0", 32, 34, 0, AT), ("F32", 3, 12, 0, AT2))) == diag(
        "CODEC_BLOCK", "codecs.F32.block", "n: a F32 block of 3 elements does not divide the row width 64", "3", "64",
        AT2, 12)
    assert rejection(c.codecs, (("F32", 0, 4, 0, AT2),))["code"] == "CODEC_BLOCK"
    assert rejection(c.codecs, (("F32", -1, 4, 0, AT2),))["code"] == "CODEC_BLOCK"
    assert c.codecs(rows=(("F32", 64, 256, 0, AT2),)) is None


def test_codecs_row_width_per_format():
    # GGUF: ne[0] is the row; safetensors: the last dim (a scalar counts as one element)
    g = ctx(view(tensors=[tensor("t", (4, 6), "Q", 64, 76)]))
    assert g.codecs(rows=(("Q", 2, 1, 0, AT),)) is None
    assert rejection(g.codecs, (("Q", 3, 1, 0, AT),))["message"].endswith("row width 4")
    s = ctx(view(tensors=[tensor("t", (4, 6), "Q", 64, 72)], fmt="safetensors"))
    assert s.codecs(rows=(("Q", 3, 1, 0, AT),)) is None
    assert rejection(s.codecs, (("Q", 4, 1, 0, AT),))["message"].endswith("row width 6")
    scalar = ctx(view(tensors=[tensor("s", (), "F32", 64, 68)], fmt="safetensors"))
    assert scalar.codecs(rows=(("F32", 1, 4, 0, AT),)) is None
    assert rejection(scalar.codecs, (("F32", 2, 8, 0, AT),))["message"] == \
        "s: a F32 block of 2 elements does not divide the row width 1"



def test_what_the_codec_stage_passes_without_walking():
    """runtime._fits: a tensor of an unlisted codec, or of a codec without row header whose rows are
    whole blocks filling its extent; anything else is walked by the stage."""
    q = tensor("q", (64, 2), "Q8_0", 64, 200)  # 128 elements: 4 blocks of 34 bytes
    geometry = {"Q8_0": (32, 34, 0, AT)}
    assert runtime._fits("gguf", geometry, q) is True
    assert runtime._fits("gguf", {"F32": (1, 4, 0, AT)}, q) is True  # not its codec's row
    assert runtime._fits("gguf", {"Q8_0": (32, 35, 0, AT)}, q) is False  # 140 bytes, not 136
    assert runtime._fits("gguf", {"Q8_0": (32, 34, 2, AT)}, q) is False  # a row header: its room is walked
    assert runtime._fits("gguf", {"Q8_0": (0, 34, 0, AT)}, q) is False
    assert runtime._fits("gguf", {"Q8_0": (-32, -34, 0, AT)}, q) is False
    assert runtime._fits("gguf", {"Q8_0": (3, 1, 0, AT)}, tensor("r", (6, 2), "Q8_0", 64, 68)) is True
    assert runtime._fits("gguf", {"Q8_0": (3, 1, 0, AT)}, tensor("r", (2, 6), "Q8_0", 64, 68)) is False
    assert runtime._fits("safetensors", {"Q8_0": (3, 1, 0, AT)}, tensor("r", (2, 6), "Q8_0", 64, 68)) is True
    assert runtime._fits("safetensors", {"F32": (1, 4, 0, AT)}, tensor("s", (), "F32", 64, 68)) is True
    assert runtime._fits("safetensors", {"F32": (2, 8, 0, AT)}, tensor("s", (), "F32", 64, 68)) is False


def test_the_codec_stage_memo_serves_only_its_geometry_format_and_entries():
    """Each admission is judged afresh where the geometry, the format or a tensor entry differs from
    the last one's (runtime._fitting keeps one geometry's verdicts per entry)."""
    q, n = tensor("q", (6, 2), "Q", 64, 68, record=11), tensor("n", (64,), "F32", 68, 324, record=12)
    good, bad_block = (("Q", 3, 1, 0, AT), ("F32", 1, 4, 0, AT2)), (("Q", 4, 1, 0, AT), ("F32", 1, 4, 0, AT2))
    c = ctx(view(tensors=[q, n]))
    assert c.codecs(rows=good) is None
    assert rejection(c.codecs, bad_block)["code"] == "CODEC_BLOCK"
    assert c.codecs(rows=good) is None
    assert rejection(c.codecs, (("Q", 3, 1, 0, AT), ("F32", 1, 4, 4, AT2)))["code"] == "CODEC_ROW_HEADER"
    assert rejection(ctx(view(tensors=[q, n], fmt="safetensors")).codecs, good)["code"] == "CODEC_BLOCK"  # row 2
    longer = tensor("n", (64,), "F32", 68, 328, record=12)
    assert rejection(ctx(view(tensors=[q, longer])).codecs, good)["field"] == "codecs.F32.bytes"
    assert ctx(view(tensors=[q, n])).codecs(rows=good) is None
    # a GGUF row is ne[0]: 2 elements, not the 6 of a safetensors row
    wide = tensor("w", (2, 6), "Q", 64, 68, record=13)
    assert rejection(ctx(view(tensors=[wide])).codecs, good)["code"] == "CODEC_BLOCK"
    assert ctx(view(tensors=[wide], fmt="safetensors")).codecs(rows=good) is None


def test_layout_facts_of_a_view():
    """runtime._layout_of: what decides whether each of the layout stage's loops runs."""
    packed = view(tensors=[tensor("a", (1,), "F32", 64, 68), tensor("b", (1,), "F32", 96, 100)], data_offset=64)
    assert runtime._layout_of(packed) == runtime.LayoutFacts(32, 64, 100, False, False, 0, 28)
    odd = view(tensors=[tensor("a", (1,), "F32", 100, 120), tensor("b", (1,), "F32", 70, 110),
                        tensor("c", (1,), "F32", 130, 131)], data_offset=64)
    assert runtime._layout_of(odd) == runtime.LayoutFacts(10, 70, 131, True, True, -10, 10)
    assert runtime._layout_of(view(tensors=[])) == runtime.LayoutFacts(0, 0, 0, False, False, 0, 0)


def test_codecs_row_header():
    """Note [Row headers]: 2 rows of 8 elements in IQ4_KSS-like blocks of 4/2 bytes behind a 4-byte
    header are 2 * (4 + 4) = 16 bytes; the next extent must start at least that far after."""
    ts = [tensor("h", (8, 2), "IQ4_KSS", 64, 80, record=11), tensor("z", (1,), "F32", 80, 84, record=12)]
    c = ctx(view(tensors=ts))
    assert rejection(c.codecs, (("IQ4_KSS", 256, 128, 0, AT),))["code"] == "CODEC_BLOCK"
    wrong = (("IQ4_KSS", 4, 2, 3, AT),)
    ok = (("IQ4_KSS", 4, 2, 4, AT),)
    # the GGML table says IQ4_KSS rows carry 4 bytes, so a 3 is the header's fault, not the bytes'
    assert rejection(c.codecs, wrong) == diag(
        "CODEC_ROW_HEADER", "codecs.IQ4_KSS.header",
        "h: 2 rows of a 3-byte header and 2 IQ4_KSS blocks of 2 bytes are 14 bytes, but the extent holds 16 "
        "(IQ4_KSS rows carry a 4-byte header)", "3", "4", AT, 11)
    assert rejection(c.codecs, (("IQ4_KSS", 4, 3, 4, AT),))["code"] == "CODEC_SIZE"
    assert c.codecs(rows=ok) is None
    for start, found in ((76, "6 bytes per row"), (72, "4 bytes per row")):  # 12 and 8 bytes of room
        short = ctx(view(tensors=[ts[0], tensor("z", (1,), "F32", start, start + 4, record=12)]))
        assert rejection(short.codecs, ok) == diag(
            "CODEC_ROW_HEADER", "codecs.IQ4_KSS.header",
            f"h: 2 rows of 8 bytes (a 4-byte header and 2 blocks of 2) need 16 bytes, but the next extent starts "
            f"{start - 64} bytes after it: {found}, a row header short", "8 bytes per row", found, AT, 11)
    # less room than the blocks alone: not a missing header (the layout stage's overlap); the
    # tensors at the same start, or none after: room enough
    for others in ([tensor("z", (1,), "F32", 71, 75)], [tensor("z", (1,), "F32", 64, 68)], []):
        assert ctx(view(tensors=[ts[0], *others])).codecs(rows=ok) is None
    # a safetensors dtype has no header: a stated one is the header's fault
    st = ctx(view(tensors=[tensor("t", (2, 4), "I8", 64, 72)], fmt="safetensors"))
    assert rejection(st.codecs, (("I8", 1, 1, 1, AT),))["code"] == "CODEC_ROW_HEADER"
    assert st.codecs(rows=(("I8", 1, 1, 0, AT),)) is None


# --- layout -------------------------------------------------------------------------------------

LAT = {"alignment_at": "L:1:1", "sorted_at": "L:2:1", "packed_at": "L:3:1", "trailing_at": "L:4:1", "at": "L:5:1"}
NO_LAT = dict.fromkeys(LAT)


def _packed(file_size=None, data_offset=64):
    ts = [tensor("a", (8,), "F32", data_offset, data_offset + 20, record=1),
          tensor("b", (8,), "F32", data_offset + 32, data_offset + 40, record=2)]
    return view(tensors=ts, data_offset=data_offset, file_size=file_size)


def test_layout_accepts_packed_aligned_extents():
    assert ctx(_packed()).layout(alignment=32, sorted=True, packed=True, trailing="reject", **LAT) is None
    assert ctx(_packed(file_size=128)).layout(alignment=32, sorted=True, packed=True, trailing="alignment", **LAT) is None
    assert ctx(_packed(file_size=500)).layout(alignment=32, sorted=True, packed=True, trailing="allow", **LAT) is None
    assert ctx(view(data_offset=64)).layout(alignment=32, sorted=True, packed=True, trailing="reject", **LAT) is None
    # no tensors, no data section to align: a vocab-only GGUF ends where its header does
    assert ctx(view(header_end=61, data_offset=61)).layout(alignment=32, sorted=True, packed=True, trailing="reject", **LAT) is None
    assert ctx(view(header_end=61, data_offset=61, file_size=64)).layout(alignment=32, sorted=True, packed=True, trailing="alignment", **LAT) is None
    # without an alignment, packed means back to back
    ts = [tensor("a", (1,), "U8", 10, 13), tensor("b", (1,), "U8", 13, 20)]
    assert ctx(view(tensors=ts, data_offset=10, alignment=None)).layout(alignment=None, sorted=True, packed=True, trailing="reject", **NO_LAT) is None


def test_layout_alignment():
    assert rejection(ctx(_packed(data_offset=48)).layout, 32, True, True, "reject", LAT) == diag(
        "LAYOUT_DATA_OFFSET", "layout.alignment", "data section starts at 48, not a multiple of 32", "32", "48",
        "L:1:1")
    ts = [tensor("a", (8,), "F32", 64, 84, record=1), tensor("b", (8,), "F32", 100, 108, record=2)]
    assert rejection(ctx(view(tensors=ts)).layout, 32, False, False, "allow", LAT) == diag(
        "LAYOUT_ALIGNMENT", "tensors.b.offset", "b starts at data offset 36, not a multiple of 32", "32", "36",
        "L:1:1", 2)
    assert ctx(view(tensors=ts)).layout(alignment=4, sorted=False, packed=False, trailing="allow", **LAT) is None


def test_layout_bounds():
    ts = [tensor("a", (8,), "F32", 32, 52, record=1)]
    assert rejection(ctx(view(tensors=ts, file_size=100)).layout, None, False, False, "allow", LAT) == diag(
        "LAYOUT_BOUNDS", "tensors.a.offset", "a spans [32, 52), outside the data section [64, 100)", "[64, 100)",
        "[32, 52)", None, 1)
    ts = [tensor("a", (8,), "F32", 64, 120, record=1)]
    assert rejection(ctx(view(tensors=ts, file_size=100)).layout, None, False, False, "allow", LAT)["code"] == \
        "LAYOUT_BOUNDS"
    assert ctx(view(tensors=ts, file_size=120)).layout(alignment=None, sorted=False, packed=False, trailing="allow", **LAT) is None


def test_layout_order_and_overlap():
    ts = [tensor("b", (8,), "F32", 96, 104, record=2), tensor("a", (8,), "F32", 64, 84, record=1)]
    v = view(tensors=ts)
    assert rejection(ctx(v).layout, 32, True, False, "allow", LAT) == diag(
        "LAYOUT_ORDER", "tensors.a.offset", "a starts at 64, before b at 96 (layout.sorted)", ">= 96", "64", "L:2:1",
        1)
    assert ctx(v).layout(alignment=32, sorted=False, packed=True, trailing="reject", **LAT) is None
    ts = [tensor("a", (8,), "F32", 64, 100, record=1), tensor("b", (8,), "F32", 96, 104, record=2)]
    assert rejection(ctx(view(tensors=ts)).layout, 32, True, False, "allow", LAT) == diag(
        "LAYOUT_OVERLAP", "tensors.b.offset", "b [96, 104) overlaps a [64, 100)", ">= 100", "96", "L:5:1", 2)
    same_start = [tensor("a", (8,), "F32", 64, 96, record=1), tensor("b", (8,), "F32", 64, 70, record=2)]
    assert rejection(ctx(view(tensors=same_start)).layout, 32, False, False, "allow", LAT)["field"] == \
        "tensors.a.offset"
    touching = [tensor("a", (8,), "F32", 64, 96, record=1), tensor("b", (8,), "F32", 96, 128, record=2)]
    assert ctx(view(tensors=touching)).layout(alignment=32, sorted=True, packed=True, trailing="reject", **LAT) is None


def test_layout_gap():
    ts = [tensor("a", (8,), "F32", 64, 84, record=1), tensor("b", (8,), "F32", 128, 136, record=2)]
    assert rejection(ctx(view(tensors=ts)).layout, 32, True, True, "allow", LAT) == diag(
        "LAYOUT_GAP", "tensors.b.offset",
        "b starts at 128; packed layout puts it at 96 (unowned bytes beyond alignment padding)", "96", "128",
        "L:3:1", 2)
    assert ctx(view(tensors=ts)).layout(alignment=32, sorted=True, packed=False, trailing="allow", **LAT) is None
    first = [tensor("a", (8,), "F32", 96, 104, record=1)]
    assert rejection(ctx(view(tensors=first)).layout, 32, True, True, "allow", LAT) == diag(
        "LAYOUT_GAP", "tensors.a.offset",
        "a starts at 96; packed layout puts it at 64 (unowned bytes beyond alignment padding)", "64", "96",
        "L:3:1", 1)
    # an unaligned data section: the first tensor may start right at it
    odd = [tensor("a", (8,), "F32", 70, 90, record=1)]
    assert ctx(view(tensors=odd, data_offset=70)).layout(alignment=None, sorted=False, packed=True, trailing="reject", **LAT) is None
    late = [tensor("a", (8,), "F32", 71, 90, record=1)]
    assert rejection(ctx(view(tensors=late, data_offset=70)).layout, None, False, True, "allow", LAT)["expected"] == \
        "70"


def test_layout_trailing():
    assert rejection(ctx(_packed(file_size=105)).layout, 32, True, True, "reject", LAT) == diag(
        "LAYOUT_TRAILING", "layout.trailing", "1 bytes after the last extent", "104", "105", "L:4:1", 104)
    assert rejection(ctx(_packed(file_size=129)).layout, 32, True, True, "alignment", LAT) == diag(
        "LAYOUT_TRAILING", "layout.trailing", "25 bytes after the last extent, more than alignment padding", "128",
        "129", "L:4:1", 104)
    assert rejection(ctx(view(file_size=65)).layout, 32, True, True, "reject", LAT) == diag(
        "LAYOUT_TRAILING", "layout.trailing", "1 bytes after the last extent", "64", "65", "L:4:1", 64)
    assert rejection(ctx(view(file_size=97, alignment=None)).layout, None, True, True, "alignment", NO_LAT) == diag(
        "LAYOUT_TRAILING", "layout.trailing", "33 bytes after the last extent, more than alignment padding", "64",
        "97", None, 64)
    assert ctx(_packed(file_size=128)).layout(alignment=32, sorted=True, packed=True, trailing="allow", **LAT) is None


def test_layout_names_the_first_offender_after_valid_neighbours():
    """Each layout loop runs only when a test in C says it finds something; it then names the first
    tensor that breaks its rule, past others that only touch its limits."""
    # a start off the alignment whose extent ends aligned, after aligned ones
    ts = [tensor("a", (8,), "F32", 64, 96, record=1), tensor("b", (8,), "F32", 96, 128, record=2),
          tensor("c", (8,), "F32", 132, 160, record=3)]
    assert rejection(ctx(view(tensors=ts)).layout, 32, False, False, "allow", LAT)["field"] == "tensors.c.offset"
    # the first tensor starts at the data section and the last ends at the file's end: both inside
    ts = [tensor("a", (8,), "F32", 64, 96, record=1), tensor("b", (8,), "F32", 32, 40, record=2)]
    assert rejection(ctx(view(tensors=ts, file_size=96)).layout, None, False, False, "allow", LAT)["field"] == \
        "tensors.b.offset"
    ts = [tensor("a", (8,), "F32", 64, 96, record=1), tensor("b", (8,), "F32", 96, 200, record=2),
          tensor("c", (8,), "F32", 128, 150, record=3)]
    assert rejection(ctx(view(tensors=ts, file_size=160)).layout, None, False, False, "allow", LAT)["field"] == \
        "tensors.b.offset"
    # equal starts are in order; the one before them is not
    ts = [tensor("a", (8,), "F32", 64, 64, record=1), tensor("b", (8,), "F32", 64, 80, record=2),
          tensor("c", (8,), "F32", 96, 100, record=3), tensor("d", (8,), "F32", 90, 94, record=4)]
    assert rejection(ctx(view(tensors=ts)).layout, None, True, False, "allow", LAT)["field"] == "tensors.d.offset"
    # extents that touch do not overlap; the one after them does
    ts = [tensor("a", (8,), "F32", 64, 74, record=1), tensor("b", (8,), "F32", 74, 84, record=2),
          tensor("c", (8,), "F32", 80, 90, record=3)]
    assert rejection(ctx(view(tensors=ts)).layout, None, True, False, "allow", LAT)["field"] == "tensors.c.offset"


def test_codecs_check_each_tensor_with_a_row_header():
    """A tensor like one that passed (codec, shape, extent) passes too, unless its rows carry a
    header: the room after it depends on where it starts."""
    ok = (("IQ4_KSS", 4, 2, 4, AT),)
    ts = [tensor("h", (8, 2), "IQ4_KSS", 64, 80, record=11), tensor("i", (8, 2), "IQ4_KSS", 80, 96, record=12),
          tensor("z", (1,), "F32", 92, 96, record=13)]
    assert rejection(ctx(view(tensors=ts)).codecs, ok)["message"].startswith("i: 2 rows of 8 bytes")
    like = [tensor("a", (8,), "F32", 64, 96, record=1), tensor("b", (8,), "F32", 96, 128, record=2),
            tensor("c", (8,), "F32", 128, 150, record=3)]
    assert rejection(ctx(view(tensors=like)).codecs, (("F32", 1, 4, 0, AT),))["field"] == "codecs.F32.bytes"
    assert ctx(view(tensors=like[:2])).codecs(rows=(("F32", 1, 4, 0, AT),)) is None


# --- stores -------------------------------------------------------------------------------------


def test_store_checks_delegate(monkeypatch):
    calls = []
    monkeypatch.setattr(stores, "expert_major", lambda *a: calls.append(("em",) + a))
    monkeypatch.setattr(stores, "ple_rows", lambda *a: calls.append(("ple",) + a))
    c = ctx(view())
    assert c.expert_major_store(name="experts", tensor="t", fields=("f",), components=("c",), at=AT) is None
    assert c.ple_store(name="ple", tensor="u", fields=("g",), head_rows=7, at=AT2) is None
    assert calls == [("em", c, "experts", "t", ("f",), ("c",), AT), ("ple", c, "ple", "u", ("g",), 7, AT2)]


def test_read(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(10)))
    c = ctx(view(), path=str(path))
    assert c.read(2, 3) == b"\x02\x03\x04"
    assert c.read(0, 0) == b""
    assert rejection(c.read, 8, 5) == diag(
        "STORE_GEOMETRY", "file", "file ended at 10, before 13", "13", "10", None, 8)
    seen = []

    def reader(offset, length):
        seen.append((offset, length))
        return b"ab"[:length]

    r = ctx(view(), path=str(tmp_path / "absent"), reader=reader)
    assert r.read(5, 2) == b"ab"
    assert rejection(r.read, 4, 3) == diag("STORE_GEOMETRY", "file", "file ended at 6, before 7", "7", "6", None, 4)
    assert seen == [(5, 2), (4, 3)]


# --- policy -------------------------------------------------------------------------------------


def test_exclusions():
    v = view(meta("n_excluded", "uint32", 4, at=100),
             tensors=[tensor("keep", (1,), "F32", 64, 68, record=5), tensor("mtp.0", (1,), "F32", 96, 100, record=6)])
    c = ctx(v)
    assert c.exclusions(rows=(("vision", ("vis.*",), "n_excluded", 4, AT),)) is None
    assert c.exclusions(rows=(("vision", ("vis.*", "img.*"), None, 99, AT),)) is None
    assert c.exclusions(rows=iter([("vision", ("vis.*",), None, None, AT)])) is None
    assert rejection(c.exclusions, (("vision", ("vis.*",), "n_excluded", 5, AT),)) == diag(
        "POLICY_EXCLUSION", "exclusions.vision.source_count", "expected 5, got 4 (n_excluded)", "5", "4", AT, 120)
    assert rejection(c.exclusions, (("vision", ("vis.*",), None, 0, AT), ("mtp", ("x", "mtp.*"), None, 0, AT2))) == \
        diag("POLICY_EXCLUSION", "exclusions.mtp", "tensor 'mtp.0' belongs to the excluded class 'mtp'", "absent",
             "mtp.0", AT2, 6)
    assert c.exclusions(rows=(("mtp", ("MTP.*",), None, 0, AT),)) is None


@pytest.mark.parametrize("required, status, ok", [
    (None, "structural", True), ("", "structural", True),
    ("structural", "structural", True), ("structural", "supported", True),
    ("pinned-not-supported", "structural", False), ("pinned-not-supported", "pinned-not-supported", True),
    ("supported", "pinned-not-supported", False), ("supported", "structural", False), ("supported", "supported", True),
])
def test_status(required, status, ok):
    c = ctx(view(), require_status=required)
    if ok:
        assert c.status(status=status, at=AT) is None
    else:
        assert rejection(c.status, status, AT) == diag(
            "POLICY_STATUS", "status", f"the contract's status is {status!r}; --require-status {required} refuses it",
            required, status, AT)


# --- payload ------------------------------------------------------------------------------------

PAT = {"at": "P:1:1", "padding_at": "P:2:2"}


@pytest.fixture
def artifact(tmp_path):
    """header [0, 50), padding [50, 64), a [64, 80), padding [80, 96), b [96, 100), trailing [100, 104)."""

    def make(pad_byte_at: int | None = None, size: int = 104):
        data = bytearray(b"H" * 50 + bytes(14) + b"A" * 16 + bytes(16) + b"BBBB" + bytes(4))[:size]
        if pad_byte_at is not None:
            data[pad_byte_at] = 7
        path = tmp_path / "p.bin"
        path.write_bytes(bytes(data))
        ts = [tensor("b", (4,), "U8", 96, 100, record=2), tensor("a", (16,), "U8", 64, 80, record=1)]
        v = view(tensors=ts, header_end=50, data_offset=64, file_size=104)
        return ctx(v, path=str(path)), hashlib.sha256(bytes(data)).hexdigest()

    return make


def test_payload_digests(artifact):
    c, whole = artifact()
    a = hashlib.sha256(b"A" * 16).hexdigest()
    b = hashlib.sha256(b"BBBB").hexdigest()
    assert c.payload(file_sha256=whole, tensors=(("a", a, AT), ("b", b, AT2)), padding="zero", **PAT) is None
    assert c.payload(file_sha256=None, tensors=iter([("b", b, AT2)]), padding="any", **PAT) is None
    bad = hashlib.sha256(b"").hexdigest()
    assert rejection(c.payload, bad, (), "zero", PAT) == diag(
        "PAYLOAD_FILE_DIGEST", "payload.file_sha256", f"expected '{bad}', got '{whole}'", f"'{bad}'", f"'{whole}'",
        "P:1:1")
    assert rejection(c.payload, whole, (("a", a, AT), ("b", bad, AT2)), "zero", PAT) == diag(
        "PAYLOAD_DIGEST", "payload.tensors.b", f"expected '{bad}', got '{b}'", f"'{bad}'", f"'{b}'", AT2, 96)
    assert rejection(c.payload, None, (("a", bad, AT),), "any", PAT)["field"] == "payload.tensors.a"


@pytest.mark.parametrize("at", [55, 63, 80, 95, 101, 103])
def test_payload_padding_must_be_zero(artifact, at):
    c, whole = artifact(pad_byte_at=at)
    assert rejection(c.payload, None, (), "zero", PAT) == diag(
        "PAYLOAD_PADDING", "layout.padding", f"padding byte at {at} is not zero", "0", "nonzero", "P:2:2", at)
    assert c.payload(file_sha256=whole, tensors=(), padding="any", **PAT) is None
    assert rejection(c.payload, None, (), "zero", dict.fromkeys(PAT))["location"] is None


def test_payload_header_and_tensor_bytes_are_not_padding(artifact):
    c, whole = artifact(pad_byte_at=10)
    assert c.payload(file_sha256=whole, tensors=(), padding="zero", **PAT) is None
    c, whole = artifact(pad_byte_at=70)
    assert c.payload(file_sha256=whole, tensors=(), padding="zero", **PAT) is None


def test_payload_truncated_file(artifact):
    c, _ = artifact(size=90)
    assert rejection(c.payload, None, (), "any", PAT) == diag(
        "PAYLOAD_DIGEST", "file", "file ended at 90, before 96", "96", "90", None, 90)


def test_payload_streams_in_chunks(artifact, monkeypatch):
    monkeypatch.setattr(runtime, "PAYLOAD_CHUNK", 3)
    c, whole = artifact()
    a = hashlib.sha256(b"A" * 16).hexdigest()
    assert c.payload(file_sha256=whole, tensors=(("a", a, AT),), padding="zero", **PAT) is None
    c, _ = artifact(pad_byte_at=86)
    assert rejection(c.payload, None, (), "zero", PAT)["offset"] == 86


def _resumed(c, end: int, prefix: bytes):
    """`c` starting its payload stage at `end`, with the digest state of `prefix` (Note [Verified prefix])."""
    c._verified_prefix = runtime.VerifiedPrefix(end, hashlib.sha256(prefix))
    return c


def test_payload_resumes_at_a_verified_prefix(artifact):
    c, whole = artifact()
    data = open(c.path, "rb").read()
    a, b = hashlib.sha256(b"A" * 16).hexdigest(), hashlib.sha256(b"BBBB").hexdigest()
    bad = hashlib.sha256(b"").hexdigest()
    resumed = _resumed(c, 96, data[:96])
    # a lies before the prefix: its digest is not compared again; b's and the whole file's are
    assert resumed.payload(file_sha256=whole, tensors=(("a", bad, AT), ("b", b, AT2)), padding="zero", **PAT) is None
    assert rejection(resumed.payload, whole, (("b", bad, AT2),), "zero", PAT)["field"] == "payload.tensors.b"
    assert resumed.payload(file_sha256=None, tensors=(("a", a, AT),), padding="zero", **PAT) is None
    # the whole-file digest continues from the prefix's state, not from nothing
    c, _ = artifact()
    wrong = _resumed(c, 96, b"X" * 96)
    assert rejection(wrong.payload, whole, (), "any", PAT)["code"] == "PAYLOAD_FILE_DIGEST"
    assert hashlib.sha256(b"X" * 96).hexdigest() != whole


@pytest.mark.parametrize("end, at, rejected", [(64, 55, False), (64, 85, True), (96, 85, False), (96, 101, True)])
def test_payload_padding_after_a_verified_prefix(artifact, end, at, rejected):
    c, whole = artifact(pad_byte_at=at)
    c = _resumed(c, end, open(c.path, "rb").read()[:end])
    if rejected:
        assert rejection(c.payload, whole, (), "zero", PAT) == diag(
            "PAYLOAD_PADDING", "layout.padding", f"padding byte at {at} is not zero", "0", "nonzero", "P:2:2", at)
    else:
        assert c.payload(file_sha256=whole, tensors=(), padding="zero", **PAT) is None


def _inside(c, end: int, data: bytes, tensor_state):
    """`c` resuming inside a tensor: the file's state before `end` and the tensor's (Note [Verified prefix])."""
    c._verified_prefix = runtime.VerifiedPrefix(end, hashlib.sha256(data[:end]), tensor_state)
    return c


def test_payload_resumes_inside_a_tensor_or_at_its_end(artifact):
    c, whole = artifact()
    data = open(c.path, "rb").read()
    a, b, bad = (hashlib.sha256(x).hexdigest() for x in (b"A" * 16, b"BBBB", b""))
    both = (("a", a, AT), ("b", b, AT2))
    assert _inside(c, 72, data, hashlib.sha256(b"A" * 8)).payload(file_sha256=whole, tensors=both, padding="zero",
                                                                  **PAT) is None
    # a's digest goes on from the prefix's state of it, not from nothing
    c, _ = artifact()
    got = hashlib.sha256(b"B" * 8 + b"A" * 8).hexdigest()
    assert rejection(_inside(c, 72, data, hashlib.sha256(b"B" * 8)).payload, whole, both, "zero", PAT) == diag(
        "PAYLOAD_DIGEST", "payload.tensors.a", f"expected '{a}', got '{got}'", f"'{a}'", f"'{got}'", AT, 64)
    # a prefix at a tensor's end, or at the file's end, leaves that tensor behind it
    for end in (80, 104):
        c, _ = artifact()
        assert _inside(c, end, data, None).payload(file_sha256=whole, tensors=(("a", bad, AT),), padding="zero",
                                                   **PAT) is None
    c, _ = artifact()
    assert rejection(_inside(c, 104, data, None).payload, bad, (), "zero", PAT)["code"] == "PAYLOAD_FILE_DIGEST"


def test_the_recorder_keeps_the_state_at_each_position_asked(artifact):
    """One pass records the whole file's digest state and the pinned tensor's at every position
    asked for (its reads stop there), the file's end included (Note [Verified prefix])."""
    c, whole = artifact()
    data = open(c.path, "rb").read()
    recorder = runtime.PrefixRecorder([104, 10, 56, 64, 72, 96, 98, 104])
    c._prefixes = recorder
    a = hashlib.sha256(b"A" * 16).hexdigest()
    assert c.payload(file_sha256=whole, tensors=(("a", a, AT),), padding="zero", **PAT) is None
    assert sorted(recorder.prefixes) == [10, 56, 64, 72, 96, 98, 104]
    for end, prefix in recorder.prefixes.items():
        assert prefix.end == end and prefix.sha256.hexdigest() == hashlib.sha256(data[:end]).hexdigest()
    states = {end: p.tensor_sha256 and p.tensor_sha256.hexdigest() for end, p in recorder.prefixes.items()}
    assert states == {10: None, 56: None, 64: hashlib.sha256(b"").hexdigest(),
                      72: hashlib.sha256(b"A" * 8).hexdigest(), 96: None, 98: None, 104: None}
    # no file digest pinned: no file state; resuming from a prefix records nothing before it
    c, _ = artifact()
    c._prefixes = runtime.PrefixRecorder([72, 98])
    _resumed(c, 96, data[:96]).payload(file_sha256=None, tensors=(), padding="any", **PAT)
    assert c._prefixes.prefixes == {98: runtime.VerifiedPrefix(98, None, None)}


def test_admit_view_hands_the_recorder_to_the_payload_stage(tmp_path):
    path = tmp_path / "p.bin"
    path.write_bytes(b"H" * 64 + b"A" * 16)
    v = view(tensors=[tensor("a", (16,), "U8", 64, 80, record=0)], header_end=64, data_offset=64, file_size=80)
    recorder = runtime.PrefixRecorder([70])

    class Checker:
        CONTRACT_ID, SPEC, FORMAT, STATUS = "c-id", "specs/c.yaml", "gguf", "structural"
        STAGES = [("payload", lambda ctx: ctx.payload(file_sha256=None, tensors=(), padding="any", **PAT))]

    runtime.admit_view(v, str(path), Checker, verify_payload=True, prefixes=recorder)
    assert list(recorder.prefixes) == [70]


def test_admit_view_passes_the_verified_prefix(tmp_path):
    path = tmp_path / "p.bin"
    path.write_bytes(b"H" * 64 + b"A" * 16)
    v = view(tensors=[tensor("a", (16,), "U8", 64, 80, record=0)], header_end=64, data_offset=64, file_size=80)
    seen = []

    class Recorder:
        CONTRACT_ID, SPEC, FORMAT, STATUS = "c-id", "specs/c.yaml", "gguf", "structural"
        STAGES = [("payload", lambda ctx: seen.append(ctx._verified_prefix))]

    prefix = runtime.VerifiedPrefix(64, hashlib.sha256(b"H" * 64))
    runtime.admit_view(v, str(path), Recorder, verify_payload=True, verified_prefix=prefix)
    runtime.admit_view(v, str(path), Recorder, verify_payload=True)
    assert seen == [prefix, None]


# --- survivors of earlier gate runs: float64 paths, row width, equal starts ----------------------


def test_float64_compares_bits_not_equality():
    c = ctx(view(meta("z", "float64", -0.0, at=100), meta("n", "float64", float("nan"), at=200),
                 meta("a", "array", array(VT.FLOAT64, [float("nan")], at=900), "float64", at=300)))
    assert rejection(c.value, "metadata", "z", "float64", 0.0, AT)["code"] == "METADATA_VALUE"
    assert c.value(stage="metadata", key="n", ctype="float64", value=float("nan"), at=AT) is None
    assert c.array(stage="metadata", key="a", length=1, values=(float("nan"),), sha256=None, at=AT) is None



def test_codecs_an_empty_row():
    """A tensor whose row is empty (ne[0] = 0) has no rows: no division by its width, no header."""
    empty = ctx(view(tensors=[tensor("e", (0, 3), "IQ4_KSS", 64, 68, record=11)]))
    assert rejection(empty.codecs, (("IQ4_KSS", 4, 2, 3, AT),)) == diag(
        "CODEC_ROW_HEADER", "codecs.IQ4_KSS.header",
        "e: 0 rows of a 3-byte header and 0 IQ4_KSS blocks of 2 bytes are 0 bytes, but the extent holds 4 "
        "(IQ4_KSS rows carry a 4-byte header)", "3", "4", AT, 11)

def test_codecs_safetensors_row_is_the_last_dim():
    s = ctx(view(tensors=[tensor("t", (4, 6, 8), "Q", 64, 88)], fmt="safetensors"))
    assert s.codecs(rows=(("Q", 8, 1, 0, AT),)) is None
    assert rejection(s.codecs, (("Q", 6, 1, 0, AT),))["message"].endswith("row width 8")


def test_layout_equal_starts_are_in_order():
    ts = [tensor("a", (0,), "F32", 64, 64, record=1), tensor("b", (8,), "F32", 64, 96, record=2)]
    assert ctx(view(tensors=ts)).layout(alignment=32, sorted=True, packed=False, trailing="allow", **LAT) is None


# --- admit / admit_view -------------------------------------------------------------------------


class Checker:
    """A stand-in generated checker: stages that record the context they get, one may reject."""

    CONTRACT_ID, SPEC, FORMAT, STATUS = "c-id", "specs/c.yaml", "gguf", "structural"

    def __init__(self, reject_at: str | None = None):
        self.seen = []

        def stage(name):
            def check(c):
                self.seen.append((name, c.path, c.require_status, c._reader, c.view.format))
                if name == reject_at:
                    c.fail(runtime.Code.LAYOUT_GAP, "f", "m", AT, 1, 2, 3)
            return check

        self.STAGES = tuple((s, stage(s)) for s in _stage_names())


def _stage_names():
    from charter.diagnostics import ADMISSION_STAGES

    return [s.value for s in ADMISSION_STAGES]


def _stages(report):
    return [(s.stage, s.result) for s in report.stages]


def test_admit_view_runs_the_stages_in_order(tmp_path):
    names = _stage_names()
    chk = Checker()
    reader = object()
    v = view()
    report = runtime.admit_view(v, "art.gguf", chk, require_status="structural", reader=reader)
    assert report.admitted and report.diagnostic is None
    assert _stages(report) == [(n, "skipped" if n == "payload" else "passed") for n in names]
    assert chk.seen == [(n, "art.gguf", "structural", reader, "gguf") for n in names if n != "payload"]
    assert (report.artifact, report.contract, report.spec, report.format, report.status) == (
        "art.gguf", "c-id", "specs/c.yaml", "gguf", "structural")
    chk = Checker()
    report = runtime.admit_view(v, "art.gguf", chk, verify_payload=True)
    assert _stages(report) == [(n, "passed") for n in names]
    assert chk.seen[-1] == ("payload", "art.gguf", None, None, "gguf")


def test_admit_view_stops_at_the_first_rejection():
    names = _stage_names()
    chk = Checker(reject_at="tensors")
    report = runtime.admit_view(view(), "art.gguf", chk)
    i = names.index("tensors")
    assert not report.admitted
    assert _stages(report) == [(n, "passed") for n in names[:i]] + [("tensors", "failed")] + [
        (n, "not-run") for n in names[i + 1:]]
    assert [s[0] for s in chk.seen] == names[:i + 1]
    d = report.diagnostic
    assert (d.stage, d.code, d.field, d.message, d.expected, d.actual, d.location, d.offset) == (
        "layout", "LAYOUT_GAP", "f", "m", "1", "2", AT, 3)
    report = runtime.admit_view(view(), "art.gguf", Checker(reject_at="payload"))
    assert report.admitted
    report = runtime.admit_view(view(), "art.gguf", Checker(reject_at="payload"), verify_payload=True)
    assert _stages(report)[-1] == ("payload", "failed")


def _small_gguf(path):
    from charter.formats.gguf import GGUFHeader, serialize_gguf_header

    h = GGUFHeader(3, 0, 0, 32, {}, [], 24, 24, 32, 32)
    path.write_bytes(serialize_gguf_header(h))
    return path


def test_admit_reads_the_file_and_passes_the_options(tmp_path):
    path = _small_gguf(tmp_path / "a.gguf")
    chk = Checker()
    report = runtime.admit(path, chk, verify_payload=True, require_status="supported")
    assert report.admitted and report.artifact == str(path)
    assert chk.seen[0] == ("container", str(path), "supported", None, "gguf")
    assert _stages(report)[-1] == ("payload", "passed")
    assert chk.seen[0][4] == "gguf"
    assert _stages(runtime.admit(str(path), Checker()))[-1] == ("payload", "skipped")


def test_admit_reports_a_reader_rejection_at_the_container_stage(tmp_path):
    path = tmp_path / "bad.gguf"
    path.write_bytes(b"GGUF\x09\x00\x00\x00" + bytes(16))
    chk = Checker()
    report = runtime.admit(str(path), chk)
    names = _stage_names()
    assert chk.seen == []
    assert not report.admitted
    assert _stages(report) == [("container", "failed")] + [(n, "not-run") for n in names[1:]]
    assert (report.artifact, report.contract, report.spec, report.format, report.status) == (
        str(path), "c-id", "specs/c.yaml", "gguf", "structural")
    d = report.diagnostic
    assert (d.stage, d.code, d.field, d.offset) == ("container", "CONTAINER_VERSION", "header.version", 4)


def test_admit_passes_its_header_cap_to_the_reader(tmp_path):
    path = _small_gguf(tmp_path / "a.gguf")  # its header is the 24 bytes of the fixed fields
    assert runtime.admit(str(path), Checker(), max_header_bytes=24).admitted
    report = runtime.admit(str(path), Checker(), max_header_bytes=23)
    d = report.diagnostic
    assert not report.admitted and (d.stage, d.code) == ("container", "CONTAINER_HEADER"), d


# --- a bundle's share of the inventory (Context.only, Context.owned_keys) -----------------------


def test_a_shard_is_checked_for_the_tensors_placed_in_it():
    shard = Context(view(tensors=_three()[:2]), "/nonexistent/s.safetensors", only=frozenset({"a", "blk.0.w"}))
    assert shard.only == frozenset({"a", "blk.0.w"}) and shard.owned_keys == frozenset()
    assert shard.tensors(rows=TABLE, at=AT) is None  # blk.1.w is another shard's
    elsewhere = Context(view(tensors=_three()[:1]), "/nonexistent/s.safetensors", only=frozenset({"a", "blk.0.w"}))
    assert rejection(elsewhere.tensors, TABLE, None) == diag(
        "TENSOR_MISSING", "tensors.blk.0.w", "tensor 'blk.0.w' is missing", "present", "missing", AT2)
    alone = ctx(view(tensors=_three()[:2]))
    assert alone.only is None
    assert rejection(alone.tensors, TABLE, None)["field"] == "tensors.blk.1.w"



def test_the_inventory_is_expanded_once_per_tuple():
    expected = runtime._inventory(TABLE)
    assert list(expected) == ["a", "blk.0.w", "blk.1.w"] and expected["blk.1.w"] == ("norm", (32,), "F16", AT2, ((32,), "F16"))
    assert runtime._EXPANDED == [(TABLE, expected)]
    assert runtime._inventory(TABLE) is expected  # the shards of a bundle share it
    rows = [TABLE[0]]  # a list can change under a cache: expanded every time, never kept
    assert list(runtime._inventory(rows)) == ["a"]
    rows.append(TABLE[1])
    assert list(runtime._inventory(rows)) == ["a", "blk.0.w", "blk.1.w"]
    assert runtime._EXPANDED[0][0] is TABLE
    other = (TABLE[0],)
    assert list(runtime._inventory(other)) == ["a"] and runtime._EXPANDED[0][0] is other
    generated = (row for row in TABLE)  # any iterable of rows
    assert runtime._inventory(generated) == expected and runtime._EXPANDED[0][0] is other



@pytest.fixture
def first_file(monkeypatch):
    """runtime._names takes the first file it read as the base of the files that share its entries."""
    monkeypatch.setattr(runtime, "_FIRST_NAMES", [])
    monkeypatch.setattr(runtime, "_by_name", runtime.IdMemo(runtime._names, bound=1))


def test_a_file_like_the_first_is_judged_by_its_own_entries(first_file):
    rows = (("a", (), "x", (4, 2), "F32", AT), ("b", (), "y", (3,), "F16", AT2), ("c", (), "z", (1,), "F32", AT))
    a, b, c = tensor("a", (4, 2), "F32", 64, 96), tensor("b", (3,), "F16", 96, 102), tensor("c", (1,), "F32", 128, 132)
    assert ctx(view(tensors=[a, b, c])).tensors(rows=rows, at=None) is None
    assert runtime._FIRST_NAMES[0][0] == (a, b, c) and runtime._FIRST_NAMES[0][2] is True
    wider = tensor("b", (4,), "F16", 96, 104)
    assert rejection(ctx(view(tensors=[a, wider, c])).tensors, rows, None)["field"] == "tensors.b.shape[0]"
    renamed = tensor("b_", (3,), "F16", 96, 102)
    assert rejection(ctx(view(tensors=[a, renamed, c])).tensors, rows, None)["field"] == "tensors.b"
    assert rejection(ctx(view(tensors=[a, b])).tensors, rows, None)["field"] == "tensors.c"
    assert rejection(ctx(view(tensors=[a, b, c, wider])).tensors, rows, None)["code"] == "TENSOR_DUPLICATE"
    assert ctx(view(tensors=[a, b, tensor("c", (1,), "F32", 132, 136)])).tensors(rows=rows, at=None) is None
    assert runtime._names(view(tensors=[a, wider, c])) == {"a": a, "b": wider, "c": c}
    assert list(runtime._names(view(tensors=[c, b, a]))) == ["c", "b", "a"]


def test_a_first_file_that_names_a_tensor_twice_is_no_base(first_file):
    rows = (("a", (), "x", (4, 2), "F32", AT), ("b", (), "y", (3,), "F16", AT2))
    a, b = tensor("a", (4, 2), "F32", 64, 96), tensor("b", (3,), "F16", 96, 102)
    assert rejection(ctx(view(tensors=[a, b, a])).tensors, rows, None)["code"] == "TENSOR_DUPLICATE"
    assert runtime._FIRST_NAMES[0][2] is False
    other = tensor("a", (4, 2), "F32", 102, 134)
    assert runtime._names(view(tensors=[a, b, other])) == {"a": other, "b": b}
    assert runtime._names(view(tensors=[other, b, a])) == {"a": a, "b": b}



@pytest.fixture
def last_table(monkeypatch):
    """runtime._inventory takes the last table it expanded as the base of a table that shares its rows."""
    monkeypatch.setattr(runtime, "_LAST_INVENTORY", [])
    monkeypatch.setattr(runtime, "_EXPANDED", [])


def _whole(rows) -> list:
    """An inventory built whole, as its items in order."""
    return list({name: fact for row in rows for name, fact in runtime._expand_row(row)}.items())


@pytest.mark.parametrize("twice", [False, True])
def test_a_table_like_the_last_is_expanded_with_its_own_rows(last_table, twice):
    first = (("a", (), "x", (4, 2), "F32", AT), ("blk.{i}.w", (("i", 2),), "y", (3,), "F16", AT2),
             ("c", (), "z", (1,), "F32", AT), *([("a", (), "w", (5,), "F16", AT2)] if twice else []))
    assert list(runtime._inventory(first).items()) == _whole(first)
    assert runtime._LAST_INVENTORY[0][3] is (not twice)
    wider = (first[0], ("blk.{i}.w", (("i", 2),), "y", (4,), "F16", AT2), *first[2:])
    renamed = (first[0], ("blk.{i}.v", (("i", 2),), "y", (3,), "F16", AT2), *first[2:])
    fewer = (first[0], ("blk.{i}.w", (("i", 1),), "y", (3,), "F16", AT2), *first[2:])
    again = (("a", (), "x", (9,), "F32", AT), *first[1:])
    for rows in (wider, renamed, fewer, again, first[:2], (*first, ("d", (), "x", (1,), "F32", AT))):
        for base in (first, wider):  # each after the first table, and after a table made from it
            runtime._inventory(base)
            assert list(runtime._inventory(rows).items()) == _whole(rows), rows
    assert list(runtime._inventory(list(wider)).items()) == _whole(wider)
    runtime._inventory(first)  # made from the last table, list(wider), when that named each tensor once
    assert runtime._LAST_INVENTORY[0][3] is (not twice)
    made = runtime._inventory(wider)
    assert runtime._EXPANDED[0][0] is wider and runtime._EXPANDED[0][1] is made
    assert runtime._LAST_INVENTORY[0][2] is made and runtime._LAST_INVENTORY[0][3] is (not twice)



def test_a_table_like_its_base_is_made_from_the_base(first_file, last_table):
    """What a file or a contract table like the base (all but a position, under the same names)
    gets is the base's own table, patched: a key only the base's table holds shows it is."""
    entries = tuple(tensor(f"t{i}", (i + 1,), "F32", 64 + 4 * i, 68 + 4 * i) for i in range(20))
    runtime._FIRST_NAMES[:] = [(entries, {"base only": None, **{t.name: t for t in entries}}, True,
                                {t.name: (t.shape, t.codec) for t in entries})]
    wider = (*entries[:5], tensor("t5", (7,), "F32", 84, 88), *entries[6:])
    assert runtime._names(view(tensors=wider)) == {"base only": None, **{t.name: t for t in wider}}
    rows = tuple((f"t{i}", (), "x", (i + 1,), "F32", AT) for i in range(20))
    expanded = tuple(runtime._expand_row(r) for r in rows)
    runtime._LAST_INVENTORY[:] = [(rows, expanded, {"base only": None, **dict(e[0] for e in expanded)}, True, None)]
    changed = (*rows[:5], ("t5", (), "x", (7,), "F32", AT), *rows[6:])
    assert runtime._inventory(changed) == {"base only": None, **dict(_whole(changed))}


@pytest.fixture
def compared(first_file, last_table, monkeypatch):
    """runtime._mismatched derives a comparison from the last one (Note [Derived comparison])."""
    monkeypatch.setattr(runtime, "_LAST_COMPARED", [])
    monkeypatch.setattr(runtime, "_pairs", runtime.IdMemo(runtime._pairs_of, bound=1))


def _verdict(rows, tensors, whole: bool = False):
    """The tensors stage's diagnostic field (None: it passes); `whole`: with no last comparison."""
    if whole:
        kept = runtime._LAST_COMPARED[:]
        runtime._LAST_COMPARED.clear()
    try:
        return ctx(view(tensors=tensors)).tensors(rows=rows, at=None)
    except runtime.Rejected as r:
        return r.diagnostic.to_json()["field"]
    finally:
        if whole:
            runtime._LAST_COMPARED[:] = kept


def test_a_comparison_derived_from_the_last_is_the_whole_one(compared):
    """Files like the first and tables patched from the last, one after another, as a battery
    admits them: each verdict is the one a comparison made whole gives, and each is derived."""
    shapes = [(i + 1,) for i in range(8)]
    names = [f"t{7 - i}" for i in range(8)]  # contract order is not the names' order
    base = [tensor(names[i], shapes[i], "F32", 64 + 16 * i, 64 + 16 * i + 4 * (i + 1)) for i in range(8)]
    rows = tuple((names[i], (), "x", shapes[i], "F32", AT) for i in range(8))
    assert _verdict(rows, base) is None and runtime._LAST_COMPARED
    first = runtime._FIRST_NAMES[0][0]

    def file(**changed):  # the first file's entries, those named in `changed` with another shape
        return [t._replace(shape=changed[t.name]) if t.name in changed else t for t in first]

    def table(last, **changed):  # the last table's rows, those named in `changed` with another shape
        return tuple((r[0], r[1], r[2], changed[r[0]], r[4], r[5]) if r[0] in changed else r for r in last)

    t2, t0 = table(rows, t2=(9,)), table(rows, t0=(9,))
    steps = [(rows, file(t3=(9,))), (rows, file(t5=(9,))), (rows, file(t6=(9,), t1=(9,))), (rows, file(t1=(9,))),
             (rows, list(first)), (table(rows, t4=(9,)), list(first)), (t2, list(first)),
             (table(t2, t1=(9,)), list(first)),  # two rows changed from the base, one from the last table
             (t0, file(t0=(9,))), (table(t0, t6=(3,)), file(t0=(9,), t6=(5,))),
             (table(t0, t5=(3,)), file(t0=(9,), t4=(9,)))]  # the file changed where neither the last did nor the table
    fields = []
    for rows_now, tensors in steps:
        expected = runtime._inventory(rows_now)
        derived = runtime._derived(expected, runtime._view_change(view(tensors=tensors))) is not None
        got = _verdict(rows_now, tensors)
        assert got == _verdict(rows_now, tensors, whole=True) and derived
        fields.append(got)
    assert fields == ["tensors.t3.shape[0]", "tensors.t5.shape[0]", "tensors.t6.shape[0]", "tensors.t1.shape[0]",
                      None, "tensors.t4.shape[0]", "tensors.t2.shape[0]", "tensors.t2.shape[0]", None,
                      "tensors.t6.shape[0]", "tensors.t4.shape[0]"]


def test_the_stage_takes_the_derived_comparison(compared):
    """What the last comparison found stands for the names no table changed: told it found no
    mismatch, the stage passes a file a whole comparison rejects."""
    rows = (("a", (), "x", (5,), "F32", AT), ("b", (), "y", (3,), "F16", AT2))
    a, b = tensor("a", (4,), "F32", 64, 80), tensor("b", (3,), "F16", 96, 102)
    assert _verdict(rows, [a, b]) == "tensors.a.shape[0]" and runtime._LAST_COMPARED[0][3] == ("a",)
    runtime._LAST_COMPARED[0] = (*runtime._LAST_COMPARED[0][:3], ())
    assert _verdict(rows, [a, b]) is None
    assert _verdict(rows, [a, b], whole=True) == "tensors.a.shape[0]"


def test_no_comparison_is_derived_for_an_inventory_not_the_last_made(compared):
    rows = (("a", (), "x", (4,), "F32", AT), ("b", (), "y", (3,), "F16", AT2))
    a, b = tensor("a", (4,), "F32", 64, 80), tensor("b", (3,), "F16", 96, 102)
    assert _verdict(rows, [a, b]) is None
    compared_with = runtime._LAST_COMPARED[0][0]
    runtime._inventory((rows[0], ("b", (), "y", (4,), "F16", AT2)))  # patched from the compared one
    assert runtime._LAST_INVENTORY[0][4][0] is compared_with
    assert runtime._derived(dict(compared_with), runtime._view_change(view(tensors=[a, b]))) is None


def test_no_comparison_is_derived_across_other_names(compared):
    rows = (("a", (), "x", (4,), "F32", AT), ("b", (), "y", (3,), "F16", AT2))
    a, b = tensor("a", (4,), "F32", 64, 80), tensor("b", (3,), "F16", 96, 102)
    assert _verdict(rows, [a, b]) is None
    renamed = tensor("c", (3,), "F16", 96, 102)
    not_like_first = runtime._view_change(view(tensors=[a, renamed]))
    assert not_like_first is None and runtime._derived(runtime._inventory(rows), not_like_first) is None
    other = (rows[0], ("c", (), "y", (3,), "F16", AT2))
    assert runtime._derived(runtime._inventory(other), runtime._view_change(view(tensors=[a, b]))) is None  # built anew
    assert _verdict(other, [a, b]) == "tensors.c"
    wider = (rows[0], ("b", (), "y", (4,), "F16", AT2))
    # the last table named another tensor: built anew
    assert runtime._derived(runtime._inventory(wider), runtime._view_change(view(tensors=[a, b]))) is None


def test_a_name_stated_twice_keeps_its_first_place_and_its_last_fact():
    rows = (("a", (), "x", (1,), "F32", AT), ("b", (), "y", (2,), "F32", AT), ("a", (), "z", (3,), "F16", AT2))
    assert list(runtime._inventory(rows).items()) == [("a", ("z", (3,), "F16", AT2, ((3,), "F16"))),
                                                      ("b", ("y", (2,), "F32", AT, ((2,), "F32")))]


def test_a_shard_reports_its_first_missing_tensor_in_contract_order():
    rows = (("z", (), "x", (1,), "F32", AT), ("b", (), "x", (1,), "F32", AT2))
    shard = Context(view(tensors=[]), "/nonexistent/s.safetensors", only=frozenset({"b", "z", "elsewhere"}))
    assert rejection(shard.tensors, rows, None)["field"] == "tensors.z"

def test_stores_are_checked_in_the_shard_that_holds_their_tensor(monkeypatch):
    calls = []
    monkeypatch.setattr(stores, "expert_major", lambda *a: calls.append(("em",) + a[1:]))
    monkeypatch.setattr(stores, "ple_rows", lambda *a: calls.append(("ple",) + a[1:]))
    shard = Context(view(), "/nonexistent/s.safetensors", only=frozenset({"t"}))
    assert shard.expert_major_store(name="experts", tensor="t", fields=(), components=(), at=AT) is None
    assert shard.expert_major_store(name="other", tensor="u", fields=(), components=(), at=AT) is None
    assert shard.ple_store(name="ple", tensor="u", fields=(), head_rows=1, at=AT) is None
    assert shard.ple_store(name="ple", tensor="t", fields=(), head_rows=2, at=AT) is None
    assert calls == [("em", "experts", "t", (), (), AT), ("ple", "ple", "t", (), 2, AT)]
    assert shard._holds("t") and not shard._holds("u") and ctx(view())._holds("anything")


def test_keys_a_bundle_stage_owns_are_not_extra():
    v = view(meta("a", "uint32", 1, at=100), meta("split.no", "uint16", 0, at=200))
    owned = Context(v, "/nonexistent/s.gguf", owned_keys=frozenset({"split.no"}))
    assert owned.meta_key_set(pinned=["a"], forbidden=[], extra="reject", at=AT) is None
    assert rejection(ctx(v).meta_key_set, ["a"], [], "reject", AT)["field"] == "metadata.split.no"


def test_read_companion_takes_a_limit(tmp_path):
    path = tmp_path / "index.json"
    path.write_bytes(b"0123456789abcdef")
    assert runtime.read_companion(path, 4) == b"01234"
    assert runtime.read_companion(path, 100) == b"0123456789abcdef"
