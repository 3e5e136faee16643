"""Item 4 of the hardening issue: contracts are untrusted text too. Alias bombs, deep nesting,
huge scalars and hostile Unicode in YAML are refused with one clear diagnostic (exit 2); the
expensive ones also as `charter check` in a subprocess under an address-space limit and a
timeout. Their CPU time is not asserted: on a shared machine it is no verdict (bench/ measures)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from charter.cli import main
from tests.conftest import ROOT
from tests.hardening import corpus
from tests.hardening.conftest import limit_memory

MODEL = corpus.MODEL_YAML


def billion_laughs(levels: int = 9) -> str:
    lines = [MODEL + 'x0: &l0 "lol"']
    for i in range(1, levels + 1):
        refs = ", ".join([f"*l{i - 1}"] * 10)
        lines.append(f"x{i}: &l{i} [{refs}]")
    return "\n".join(lines) + "\n"


def quadratic_aliases(items: int = 20_000, refs: int = 16) -> str:
    big = "[" + ", ".join(["1"] * items) + "]"
    return MODEL + f"big: &big {big}\n" + "".join(f"r{i}: *big\n" for i in range(refs))


def deep_block(levels: int) -> str:
    return MODEL + "".join("  " * i + f"k{i}:\n" for i in range(levels)) + "  " * levels + "v: 1\n"


# (name, contract text or bytes, expected code)
HAZARDS: list[tuple[str, str | bytes, str]] = [
    ("billion-laughs", billion_laughs(), "YAML_ALIAS_LIMIT"),
    ("alias-quadratic-blowup", quadratic_aliases(), "YAML_ALIAS_LIMIT"),
    ("seventeen-aliases", MODEL + "a: &a 1\n" + "".join(f"b{i}: *a\n" for i in range(17)), "YAML_ALIAS_LIMIT"),
    ("merge-key", MODEL + "base: &b {x: 1}\nconstants:\n  <<: *b\n", "YAML_MERGE_KEY"),
    ("python-tag", MODEL + "constants: !!python/object/apply:os.system [true]\n", "YAML_TAG"),
    ("deep-block-nesting", deep_block(200), "YAML_TOO_DEEP"),
    ("deep-flow-sequence", MODEL + "x: " + "[" * 100_000 + "]" * 100_000 + "\n", "YAML_TOO_DEEP"),
    ("deep-flow-mapping", MODEL + "x: " + "{a: " * 20_000 + "1" + "}" * 20_000 + "\n", "YAML_TOO_DEEP"),
    ("file-over-16-mib", MODEL + "#" + "x" * (16 * 2**20) + "\n", "YAML_TOO_LARGE"),
    ("two-documents", MODEL + "---\n" + MODEL, "YAML_MULTI_DOCUMENT"),
    ("simple-key-of-70000-chars", corpus.CONTRACTS["gguf"][1].replace("test.u32:", "t" * 70_000 + ":"),
     "YAML_SYNTAX"),  # PyYAML: a simple key is at most 1024 characters
    ("explicit-key-of-70000-chars", corpus.CONTRACTS["gguf"][1].replace(
        "    test.u32: {type: uint32, value: 42}", "    ? " + "t" * 70_000 + "\n    : {type: uint32, value: 42}"),
     "SPEC_SCHEMA"),  # a metadata key is at most 65535 characters
    ("float-overflow-constant", MODEL + "constants:\n  x: 1e400\n", "EXPR_RANGE"),
    ("derived-overflow", MODEL + "constants:\n  x: 1000000000000000000000000000000\nderived:\n  y: "
     + "*".join(["x"] * 9) + "\n", "EXPR_RANGE"),
    ("expression-nested-300-deep", MODEL + "constants:\n  x: 2\nderived:\n  y: " + "*".join(["x"] * 300) + "\n",
     "EXPR_SYNTAX"),
    ("expression-of-5000-chars", MODEL + "constants:\n  x: 2\nderived:\n  y: " + "+".join(["x"] * 2500) + "\n",
     "SPEC_SCHEMA"),  # longer than an expression may be
    ("yaml-1.1-octal", MODEL + "constants:\n  x: 0777\n", "YAML_AMBIGUOUS_SCALAR"),
    ("yaml-1.1-bool", MODEL + "constants:\n  x: yes\n", "YAML_AMBIGUOUS_SCALAR"),
    # hostile Unicode
    ("nul-character", MODEL + "description: a\x00b\n", "YAML_SYNTAX"),
    ("not-utf8", MODEL.encode() + b"description: caf\xe9\n", "YAML_SYNTAX"),
    ("utf16", MODEL.encode("utf-16"), "YAML_SYNTAX"),
    ("line-separator-in-plain-scalar", MODEL + "notes: a\u2028b\n", "YAML_SYNTAX"),
    ("next-line-in-plain-scalar", MODEL + "notes: a\x85b\n", "YAML_SYNTAX"),
    ("rtl-override-in-id", MODEL.replace("id: hostile", "id: hostile\u202egpj.exe"), "SPEC_SCHEMA"),
    ("homoglyph-id", MODEL.replace("id: hostile", "id: h\u043estile"), "SPEC_SCHEMA"),
    ("zero-width-in-constant-name", MODEL + "constants:\n  he\u200bads: 2\n", "SPEC_SCHEMA"),
    ("fullwidth-in-expression", MODEL + "constants:\n  heads: 2\nderived:\n  x: \uff48eads * 2\n", "EXPR_SYNTAX"),
    ("lone-surrogate-in-name", MODEL + 'constants:\n  "\\ud800": 2\n', "YAML_SYNTAX"),
    ("lone-surrogate-tensor-name",
     corpus.CONTRACTS["gguf"][1].replace("{name: a,", '{name: "a\\udc80",'), "YAML_SYNTAX"),
    ("lone-surrogate-metadata-value",  # a string value: the contract language itself would take it
     corpus.CONTRACTS["gguf"][1].replace("test.u32: {type: uint32, value: 42}",
                                         'test.s: {type: string, value: "caf\\ud800"}'), "YAML_SYNTAX"),
    ("lone-surrogate-metadata-key",
     corpus.CONTRACTS["gguf"][1].replace("test.u32:", '"test.\\udfff":'), "YAML_SYNTAX"),
]

# The ones that cost the most: also run as a subprocess under RLIMIT_AS and a timeout. The timeout
# catches a hang, not slowness: a busy 2-core machine runs the costliest in about 20 s.
HANG = 120
SUBPROCESS = {"billion-laughs", "alias-quadratic-blowup", "deep-flow-sequence", "deep-flow-mapping", "file-over-16-mib"}


def write(tmp_path, name: str, text: str | bytes):
    """The hazard as a contract in a specs/ tree beside the corpus's model (for artifact ones)."""
    specs = tmp_path / "specs"
    (specs / "models").mkdir(parents=True, exist_ok=True)
    (specs / "artifacts").mkdir(parents=True, exist_ok=True)
    is_artifact = (text.decode("utf-8", "replace") if isinstance(text, bytes) else text).count("kind: artifact")
    if is_artifact:
        (specs / "models" / "hostile.yaml").write_text(MODEL, "utf-8")
    path = specs / ("artifacts" if is_artifact else "models") / f"{name}.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    return path


def check(capsys, path) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["check", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name,text,code", HAZARDS, ids=[h[0] for h in HAZARDS])
def test_hazard_is_one_clear_diagnostic(name, text, code, tmp_path, capsys):
    path = write(tmp_path, name, text)
    exit_code, out, err = check(capsys, path)
    assert "Traceback" not in out + err and "internal error" not in err, err
    assert exit_code == 2, (out, err)
    lines = out.strip().splitlines()
    assert lines and f": {code}" in lines[0], out[:500]
    message = lines[0].split(f": {code}", 1)[1].split(": ", 1)[-1]
    assert len(message) < 1000, "the message quotes the hazard at length"


@pytest.mark.parametrize("name", [n if n == "billion-laughs" else pytest.param(n, marks=pytest.mark.slow)
                                  for n in sorted(SUBPROCESS)])  # one in every run, the others in the slow set
def test_hazard_in_a_subprocess_under_memory_limit(name, tmp_path):
    text = dict((h[0], h[1]) for h in HAZARDS)[name]
    code = dict((h[0], h[2]) for h in HAZARDS)[name]
    path = write(tmp_path, name, text)
    proc = subprocess.run([sys.executable, "-m", "charter", "check", str(path)], capture_output=True, text=True,
                          timeout=HANG, preexec_fn=limit_memory, cwd=ROOT,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == 2, (proc.returncode, proc.stdout[:500], proc.stderr[-500:])
    assert f": {code}" in proc.stdout


def test_bom_and_crlf_are_plain_text(tmp_path, capsys):
    """Not hazards: a UTF-8 BOM and CRLF line ends load as the same contract."""
    path = write(tmp_path, "bom", "\ufeff" + MODEL.replace("\n", "\r\n"))
    assert check(capsys, path)[0] == 0


# --- found by this suite, fixed in 375c996 -------------------------------------------------------------


def test_integer_literal_beyond_the_int_string_limit_is_a_diagnostic(tmp_path, capsys):
    """A 5000-digit integer: Python's int() refuses more than 4300 digits with a ValueError,
    which must become a diagnostic, not an internal error (exit 3)."""
    path = write(tmp_path, "huge-int", MODEL + "constants:\n  x: " + "9" * 5000 + "\n")
    exit_code, out, err = check(capsys, path)
    assert "internal error" not in err, err
    assert exit_code == 2 and ": YAML_TOO_LARGE constants.x:" in out, (out, err)


def test_invalid_model_found_by_search_is_reported(tmp_path, capsys):
    """`charter check ARTIFACT` (and `admit`) with a model beside it that fails to resolve (a float
    constant that overflows to inf): the model's diagnostic must be reported, not dropped, and
    admission must not fall back to 'not an artifact contract'."""
    paths = corpus.write_contracts(tmp_path)
    model = paths["gguf"].parent.parent / "models" / "hostile.yaml"
    model.write_text(MODEL + "constants:\n  x: 1e400\n", "utf-8")
    exit_code, out, err = check(capsys, paths["gguf"])
    assert exit_code == 2 and "EXPR_RANGE" in out, (exit_code, out, err)
    artifact = tmp_path / "base.gguf"
    artifact.write_bytes(corpus.base_gguf())
    capsys.readouterr()
    assert main(["admit", str(artifact), "--contract", str(paths["gguf"])]) == 2
    out, err = capsys.readouterr()
    assert "EXPR_RANGE" in out, (out, err)


@pytest.mark.slow  # composes a million YAML nodes before the limit stops it
def test_many_nodes_without_aliases_are_bounded(tmp_path):
    """A flow sequence of 4 million one-character items (8 MiB, under the 16 MiB file limit):
    the node limit must stop composition, not run after PyYAML has built every node (minutes
    and gigabytes)."""
    path = write(tmp_path, "many-nodes", MODEL + "x: [" + "1," * (4 * 2**20) + "1]\n")
    proc = subprocess.run([sys.executable, "-m", "charter", "check", str(path)], capture_output=True, text=True,
                          timeout=HANG, preexec_fn=limit_memory, cwd=ROOT,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == 2 and "YAML_TOO_LARGE" in proc.stdout, (proc.returncode, proc.stdout[:300],
                                                                       proc.stderr[-300:])


def test_invisible_line_break_cannot_hide_a_key(tmp_path, capsys):
    """YAML 1.1 (PyYAML) reads U+2028 LINE SEPARATOR as a line break, but editors and diffs show
    one line: `description: ...<U+2028>layout: {...}` reads as a description and silently sets the
    layout policy. A raw U+2028/U+2029/U+0085 outside an escape must be refused (YAML_SYNTAX)."""
    text = corpus.CONTRACTS["gguf"][1]
    layout = next(line for line in text.splitlines() if line.startswith("layout:"))
    hidden = text.replace(layout + "\n", "").replace(
        "status: structural\n",
        "status: structural\ndescription: Hostile corpus\u2028layout: {sorted: false, packed: false, trailing: allow}\n")
    paths = corpus.write_contracts(tmp_path)
    paths["gguf"].write_text(hidden, "utf-8")
    exit_code, out, err = check(capsys, paths["gguf"])
    assert exit_code == 2 and "YAML_SYNTAX" in out, (exit_code, out, err)


def test_model_that_fails_to_load_is_named(tmp_path, capsys):
    """A model beside the artifact that does not even load (a YAML 1.1 `yes`): the artifact's
    dangling reference must say which file failed and why, not only 'no contract has that id'."""
    paths = corpus.write_contracts(tmp_path)
    model = paths["gguf"].parent.parent / "models" / "hostile.yaml"
    model.write_text(MODEL + "constants: {a: yes}\n", "utf-8")
    exit_code, out, err = check(capsys, paths["gguf"])
    assert exit_code == 2, (out, err)
    assert "YAML_AMBIGUOUS_SCALAR" in out and "hostile.yaml" in out, out


def test_checking_contracts_imports_no_reader_and_no_numpy():
    """The contract loader reads the codec tables (charter.formats.ggml_types, safetensors dtypes),
    not the GGUF reader: numpy's address space alone would take `charter check` past the 256 MiB
    limit of the hazards above."""
    code = ("import sys; from charter.cli import main; rc = main(['check', 'specs']); "
            "bad = sorted(m for m in ('numpy', 'charter.formats.gguf') if m in sys.modules); "
            "print(rc, bad); sys.exit(rc or bool(bad))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, (proc.stdout, proc.stderr[-2000:])
