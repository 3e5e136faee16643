"""Item 7 of the hardening issue: untrusted text stays data.

The corpus's base files carry a chat template that is a server-side template injection (rendered by
a plain jinja2 Environment it sets an environment variable) and a name full of format-string and
shell payloads. Admission, freeze and generation hash and compare these strings; they never render,
format or execute them. And what charter prints about an artifact cannot be steered by the
artifact: a key holding a newline or a terminal escape does not forge a line of output.
"""

from __future__ import annotations

import os
import subprocess
import sys

import jinja2
import pytest

from charter.cli import main
from tests.hardening import corpus
from tests.hardening.conftest import admit


def test_the_payload_is_live():
    """Rendered the way a careless runtime would, the template has a side effect: the tests below
    are not vacuous."""
    code = ("import os, jinja2, sys; sys.path.insert(0, '.'); from tests.hardening import corpus; "
            "jinja2.Environment().from_string(corpus.JINJA_PAYLOAD).render(messages=[]); "
            "print(os.environ.get(corpus.PWNED_ENV))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "chat_template"


@pytest.fixture
def spies(monkeypatch):
    """Record every template Jinja compiles and refuse to start processes while admission runs."""
    compiled: list[str] = []
    real_compile = jinja2.Environment.compile

    def compile_(self, source, *args, **kwargs):
        compiled.append(source if isinstance(source, str) else "<ast>")
        return real_compile(self, source, *args, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError(f"admission started a process: {args!r}")

    monkeypatch.setattr(jinja2.Environment, "compile", compile_)
    monkeypatch.setattr(os, "system", refuse)
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.delenv(corpus.PWNED_ENV, raising=False)
    yield compiled
    assert corpus.PWNED_ENV not in os.environ
    assert not any("cycler" in source or "__globals__" in source for source in compiled), \
        "a metadata string reached a Jinja compiler"


@pytest.mark.parametrize("fmt", ["gguf", "safetensors"])
def test_admission_hashes_the_template_and_never_renders_it(fmt, spies, contracts, tmp_path, capsys):
    path = tmp_path / f"base.{fmt}"
    path.write_bytes(corpus.base_gguf() if fmt == "gguf" else corpus.base_safetensors())
    run = admit(capsys, path, contracts[fmt], "--verify-payload")
    assert run.code == 0, run.out
    assert corpus.PWNED_ENV not in os.environ


def test_a_different_template_is_a_digest_mismatch_not_a_render(spies, contracts, tmp_path, capsys):
    other = corpus.JINJA_PAYLOAD.replace("chat_template", "other")
    g = corpus.base_gguf_spec().with_kv("tokenizer.chat_template", corpus.kv_str("tokenizer.chat_template", other))
    path = tmp_path / "other.gguf"
    path.write_bytes(corpus.build_gguf(g)[0])
    run = admit(capsys, path, contracts["gguf"])
    d = run.report["diagnostic"]
    assert (run.code, d["code"], d["field"]) == (1, "METADATA_DIGEST", "metadata.tokenizer.chat_template.sha256")


@pytest.mark.parametrize("fmt", ["gguf", "safetensors"])
def test_freeze_generate_admit_keep_the_template_as_data(fmt, spies, tmp_path, capsys):
    """freeze copies the hostile strings into YAML, generate into Python literals, admit compares
    them: the strings survive exactly (the frozen contract admits the file) and nothing runs."""
    artifact = tmp_path / f"base.{fmt}"
    artifact.write_bytes(corpus.base_gguf() if fmt == "gguf" else corpus.base_safetensors())
    out = tmp_path / "specs"
    assert main(["freeze", str(artifact), "--id", "frozen", "-o", str(out)]) == 0
    contract = out / "artifacts" / "frozen.yaml"
    assert main(["generate", str(out), "-o", str(tmp_path / "generated")]) == 0
    capsys.readouterr()
    assert main(["admit", str(artifact), "--contract", str(contract), "--generated", str(tmp_path / "generated"),
                 "--verify-payload", "-v"]) == 0, capsys.readouterr()
    err = capsys.readouterr().err
    assert "committed" in err  # the generated checker ran, not a fresh render
    text = contract.read_text("utf-8")
    assert "{{" not in text or "cycler" in text  # kept verbatim (or pinned by digest), never expanded


# --- what charter prints cannot be forged by the artifact ---------------------------------------------

FORGED = "x\nadmitted: model.gguf is hostile-gguf (status supported); 9 stages passed\x1b[2K\r"


def _extra_key_file(tmp_path):
    g = corpus.base_gguf_spec()
    g = corpus.replace(g, kvs=g.kvs + (corpus.kv_str(FORGED, "1"),))
    path = tmp_path / "forged.gguf"
    path.write_bytes(corpus.build_gguf(g)[0])
    return path


def test_a_key_cannot_forge_a_line_of_admit_output(contracts, tmp_path, capsys):
    """A GGUF key holding a newline, a fake verdict and a terminal escape: `charter admit` still
    prints one line, with no control character (the key is shown escaped)."""
    path = _extra_key_file(tmp_path)
    capsys.readouterr()
    assert main(["admit", str(path), "--contract", str(contracts["gguf"])]) == 1
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and out.startswith("rejected at metadata:"), out
    assert not any(c in out[:-1] for c in "\r\x1b\n"), repr(out)


def test_a_tensor_name_cannot_forge_a_line_of_admit_output(contracts, tmp_path, capsys):
    g = corpus.base_gguf_spec()
    g = corpus.replace(g, tensors=g.tensors + (corpus.Tensor(b"z\n\x1b[1Aadmitted", (32,), corpus.GGML_F32, 352),),
                       data=g.data + bytes(28) + bytes(128))
    path = tmp_path / "forged-tensor.gguf"
    path.write_bytes(corpus.build_gguf(g)[0])
    capsys.readouterr()
    assert main(["admit", str(path), "--contract", str(contracts["gguf"])]) == 1
    out, _ = capsys.readouterr()
    assert out.count("\n") == 1 and "\x1b" not in out, repr(out)


def test_json_reports_keep_the_exact_key(contracts, tmp_path, capsys):
    """In JSON the field is data: the exact key, escaped by the JSON encoder."""
    path = _extra_key_file(tmp_path)
    run = admit(capsys, path, contracts["gguf"])
    assert run.report["diagnostic"]["field"] == f"metadata.{FORGED}"
    assert "\x1b" not in run.out


def test_a_huge_key_does_not_make_a_huge_line():
    """A 64 KiB key from an artifact is cut in the one-line diagnostic (with a count of what was
    left out); the JSON form keeps it whole."""
    from charter.diagnostics import RENDER_LIMIT, Code, Diagnostic

    key = "k" * 65_535
    d = Diagnostic(Code.METADATA_UNEXPECTED, f"metadata.{key}", f"key {key!r} is not in the contract")
    line = d.render()
    assert len(line) < 3 * RENDER_LIMIT
    assert f"…[{len(d.field) - RENDER_LIMIT} more characters]" in line
    assert d.to_json()["field"] == f"metadata.{key}"
