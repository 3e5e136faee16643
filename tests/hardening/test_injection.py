"""Item 5 of the hardening issue: injection-proof code generation.

A contract whose metadata keys, string values and tensor names hold quotes, backslashes, newlines,
triple quotes, `*/`, `#include`, NUL, U+2028, code that would touch a marker file if it ever ran,
and a 100,000-character string:

* the generated Python checker imports (and runs nothing: the marker file never appears), and the
  generated C++ checker compiles (g++ -fsyntax-only) and, built into a small driver, runs;
* both admit the GGUF that holds exactly those strings, and reject every near miss (one character
  dropped or added, the string cut at its NUL as C would, U+2028 read as a newline, ...);
* file names derived from contract ids cannot leave the output directory.
"""

from __future__ import annotations

import importlib.util
import subprocess
import unicodedata
from pathlib import Path

import pytest

from charter.admission.runtime import admit_view
from charter.admission.view import parse_view
from charter.cli import main
from charter.codegen.common.names import module_name
from charter.codegen.cpp.build import render_cpp_checkers
from charter.console import search_paths
from charter.engines.choose import python_checker
from charter.contract.contractset import load_set
from charter.contract.load import load_contract
from charter.toolchain import compiler
from tests.conftest import ROOT
from tests.hardening import corpus

INCLUDE = ROOT / "native" / "include"
CONTRACT_ID = "hostile-injection"


def hostile_strings(marker: Path) -> list[str]:
    m = str(marker)
    return [
        'dq"uote', "sq'uote", "back\\slash", "trailing backslash\\", "new\nline", "cr\rlf\r\n", "tab\t",
        'triple"""quote', "triple'''quote", "*/ comment end", "/* comment start", "// line comment",
        "#include <cstdlib>", "#define admitted true", "nul\0byte", "\0", "line\u2028separator",
        "para\u2029separator", "nel\x85", "bom\ufeff", "trigraph ??/ ??= ??'", "{{ 7*7 }} {% if x %}",
        "$(id) `id` ${HOME}", "emoji \U0001F600", "rtl \u202egpj.exe", "esc \x1b[2J bell \x07",
        "\\u0041\\x41\\101\\N{LATIN SMALL LETTER A}", 'R"x(raw)x"', 'u8"x" L"y"', " leading space",
        "trailing space ", "%s %n {0} {0.__class__}", "caf\u00e9 vs cafe\u0301",
        f'"); open({m!r}, "w"); ("', f"'''); open({m!r}, 'w'); ('''", f'"""); open({m!r}, "w"); ("""',
        f'\nopen({m!r}, "w")\n', f'*/ }} int x = std::system("touch {m}"); {{ /*',
        f'"sv); std::system("touch {m}"); (void)("', "x" * 100_000 + '"""\\\n',
    ]


def tensor_name(i: int, s: str) -> str:
    """`t<i>.` and as much of `s` as fits GGUF's 63 bytes (braces dropped: `{x}` is a placeholder
    in the contract language, not a literal)."""
    out = f"t{i}."
    for c in s.replace("{", "(").replace("}", ")"):
        if len((out + c).encode()) > 63:
            break
        out += c
    return out


def yaml_dq(s: str) -> str:
    """A YAML double-quoted scalar holding exactly `s`: printable ASCII as is, everything else
    escaped (a raw U+2028 or NEL would be a line break to a YAML 1.1 reader)."""
    out = ['"']
    for c in s:
        o = ord(c)
        if c in '"\\':
            out.append("\\" + c)
        elif 0x20 <= o < 0x7F:
            out.append(c)
        elif o <= 0xFF:
            out.append(f"\\x{o:02x}")
        elif o <= 0xFFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    out.append('"')
    return "".join(out)


class Hostile:
    """The hostile contract, its GGUF, and near misses of each string."""

    def __init__(self, root: Path):
        self.marker = root / "pwned"
        self.strings = hostile_strings(self.marker)
        # keys are at most 65535 characters in the contract language: the long one is cut there
        self.keys = {f"k{i}.{s}"[:65535]: s for i, s in enumerate(self.strings)}
        self.tensors = [tensor_name(i, s) for i, s in enumerate(self.strings)]
        self.spec = self._write_contract(root)

    def _write_contract(self, root: Path) -> Path:
        lines = [
            "charter: 1", "kind: artifact", f"id: {CONTRACT_ID}", "status: structural", "model: hostile",
            "format: gguf", "container: {version: 3, alignment: 32}",
            'identity:\n  general.architecture: "{model.architecture}"',
            "metadata:\n  extra_keys: reject\n  keys:",
        ]
        for key, value in self.keys.items():
            lines.append(f"    ? {yaml_dq(key)}\n    : {{type: string, value: {yaml_dq(value)}}}")
        lines.append("tensors:")
        for name in self.tensors:
            lines.append(f"  - {{name: {yaml_dq(name)}, role: x, shape: [32], codec: F32}}")
        lines.append("codecs:\n  F32: {block: 1, bytes: 4}")
        lines.append("layout: {sorted: true, packed: true, trailing: reject}")
        specs = root / "specs"
        (specs / "models").mkdir(parents=True)
        (specs / "artifacts").mkdir(parents=True)
        (specs / "models" / "hostile.yaml").write_text(corpus.MODEL_YAML, "utf-8")
        path = specs / "artifacts" / f"{CONTRACT_ID}.yaml"
        path.write_text("\n".join(lines) + "\n", "utf-8")
        return path

    def gguf(self, keys: dict[str, str] | None = None, tensors: list[str] | None = None) -> bytes:
        keys = self.keys if keys is None else keys
        tensors = self.tensors if tensors is None else tensors
        g = corpus.GGUF(
            kvs=(corpus.kv_str("general.architecture", "llama"),)
            + tuple(corpus.kv_str(k, v) for k, v in keys.items()),
            tensors=tuple(corpus.Tensor(n.encode(), (32,), corpus.GGML_F32, 128 * i) for i, n in enumerate(tensors)),
            data=bytes(128 * len(tensors)))
        return corpus.build_gguf(g)[0]

    def near_misses(self):
        """(what, gguf bytes, expected code) for every string: values, keys and tensor names."""
        for key, value in self.keys.items():
            for how, other in _variants(value):
                yield f"value {how} of {key[:20]!r}", self.gguf({**self.keys, key: other}), "METADATA_VALUE"
            for how, other in _variants(key):
                keys = {(other if k == key else k): v for k, v in self.keys.items()}
                if len(keys) == len(self.keys) and other:
                    yield f"key {how} of {key[:20]!r}", self.gguf(keys), "METADATA_MISSING"
        for i, name in enumerate(self.tensors):
            for how, other in _variants(name):
                if other and len(other.encode()) <= 63 and other not in self.tensors:
                    yield f"tensor {how} of {name!r}", self.gguf(tensors=self.tensors[:i] + [other]
                                                               + self.tensors[i + 1:]), "TENSOR_MISSING"


def _variants(s: str):
    """Strings one slip away from `s` that a careless generator or runtime could confuse with it."""
    seen = {s}
    cands = [("minus last char", s[:-1]), ("plus a space", s + " "), ("first char changed", "Z" + s[1:]),
             ("cut at NUL", s.split("\0")[0]), ("U+2028 as newline", s.replace("\u2028", "\n")),
             ("CRLF as LF", s.replace("\r\n", "\n")), ("backslashes doubled", s.replace("\\", "\\\\")),
             ("quotes escaped", s.replace('"', '\\"')), ("NFC", unicodedata.normalize("NFC", s)),
             ("NFKC", unicodedata.normalize("NFKC", s)), ("BOM dropped", s.replace("\ufeff", "")),
             ("emoji as escape text", s.replace("\U0001F600", "\\ud83d\\ude00"))]
    for how, other in cands:
        if other not in seen:
            seen.add(other)
            yield how, other


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return Hostile(tmp_path_factory.mktemp("injection"))


@pytest.fixture(scope="module")
def generated(hostile, tmp_path_factory):
    """`charter generate` of the hostile contract: the directory, and the set it came from."""
    out = tmp_path_factory.mktemp("generated")
    specs = hostile.spec.parent.parent
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(specs.parent)
        assert main(["generate", "specs", "-o", str(out)]) == 0
        cs = load_set(["specs/artifacts/" + hostile.spec.name], search_paths([str(hostile.spec)], None))
    assert not cs.diagnostics, cs.diagnostics
    return out, cs


def test_contract_states_the_exact_strings(hostile):
    """The YAML written for the contract reads back to exactly the hostile strings."""
    c = load_contract(hostile.spec).contract
    assert {k: f.value for k, f in c.metadata.keys.items()} == hostile.keys
    assert [t.name for t in c.tensors] == hostile.tensors


def test_generated_python_imports_and_runs_nothing(hostile, generated):
    out, _ = generated
    path = out / "python" / f"{module_name(CONTRACT_ID)}.py"
    text = path.read_text("utf-8")
    compile(text, str(path), "exec")
    spec = importlib.util.spec_from_file_location("hostile_injection_checker", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.CONTRACT_ID == CONTRACT_ID and len(module.STAGES) == 10
    assert not hostile.marker.exists()
    assert all(line.isprintable() for line in text.splitlines()), "a control character reached the source"


def test_python_checker_enforces_the_exact_strings(hostile, generated, capsys):
    out, cs = generated
    checker, origin = python_checker(cs, CONTRACT_ID, out)
    assert origin.startswith("committed"), origin  # the generated file, not a re-render
    data = hostile.gguf()
    report = admit_view(parse_view(data, len(data), "gguf"), "<memory>", checker)
    assert report.admitted, report.diagnostic
    misses = 0
    for what, miss, code in hostile.near_misses():
        r = admit_view(parse_view(miss, len(miss), "gguf"), "<memory>", checker)
        assert not r.admitted and r.diagnostic.code == code, (what, r.diagnostic)
        misses += 1
    assert misses > 150
    assert not hostile.marker.exists()


def test_cli_admits_the_hostile_file(hostile, generated, tmp_path, capsys):
    out, _ = generated
    path = tmp_path / "hostile.gguf"
    path.write_bytes(hostile.gguf())
    capsys.readouterr()
    code = main(["admit", str(path), "--contract", str(hostile.spec), "--generated", str(out), "-v"])
    assert code == 0, capsys.readouterr()


# --- C++ ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cpp_header(generated, tmp_path_factory):
    _, cs = generated
    outputs = {path: text for path, text, *_ in render_cpp_checkers(cs)}
    (path,) = [p for p in outputs if Path(p).stem == CONTRACT_ID]
    out = tmp_path_factory.mktemp("cpp")
    header = out / Path(path).name
    header.write_text(outputs[path], "utf-8")
    return header


def test_generated_cpp_compiles(cpp_header):
    text = cpp_header.read_text("utf-8")
    assert text.replace("—", "").isascii()
    proc = subprocess.run([compiler(), "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-x", "c++", f"-I{INCLUDE}",
                           str(cpp_header)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]


DRIVER = r"""
#include <cstdio>
#include <vector>
#include "HEADER"
int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::FILE* f = std::fopen(argv[i], "rb");
    if (!f) return 2;
    std::vector<unsigned char> buf;
    unsigned char chunk[65536];
    std::size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) buf.insert(buf.end(), chunk, chunk + n);
    std::fclose(f);
    auto r = charter::checkers::NAMESPACE::admit(buf.data(), buf.size(), buf.size());
    auto code = charter::rt::code_name(r.diagnostic.code);
    std::printf("%d %.*s\n", r.admitted ? 1 : 0, static_cast<int>(code.size()), code.data());
  }
  return 0;
}
"""


@pytest.mark.slow  # compiles and runs a driver over every near miss
def test_cpp_checker_enforces_the_exact_strings(cpp_header, hostile, tmp_path):
    from charter.codegen.common.names import identifier

    driver = tmp_path / "driver.cpp"
    driver.write_text(DRIVER.replace("HEADER", cpp_header.name).replace("NAMESPACE", identifier(CONTRACT_ID)))
    exe = tmp_path / "driver"
    proc = subprocess.run([compiler(), "-std=c++17", "-O0", f"-I{INCLUDE}", f"-I{cpp_header.parent}", str(driver), "-o",
                           str(exe)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files, expected = [], []
    base = tmp_path / "hostile.gguf"
    base.write_bytes(hostile.gguf())
    files.append(base)
    expected.append("1 ")
    for k, (what, miss, code) in enumerate(hostile.near_misses()):
        p = tmp_path / f"miss{k}.gguf"
        p.write_bytes(miss)
        files.append(p)
        expected.append(f"0 {code}")
    proc = subprocess.run([str(exe), *map(str, files)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = proc.stdout.splitlines()
    assert got[0].startswith("1 "), got[0]
    assert got[1:] == expected[1:]
    assert not hostile.marker.exists()


# --- file names derived from ids ------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["../evil", "a/b", "a\\b", ".hidden", "a\nb", "A", "-x", "a b", "", "x" * 129,
                                 "a\0b", "\u0430bc", "..", "/abs"])
def test_an_id_that_could_name_a_path_is_refused(bad, tmp_path, capsys):
    """Contract ids are [a-z0-9][a-z0-9._-]{0,127}: no separator, no leading dot, no control
    character; module_name refuses anything else, and a contract stating one is SPEC_SCHEMA."""
    with pytest.raises(ValueError):
        module_name(bad)
    text = corpus.CONTRACTS["gguf"][1].replace("id: hostile-gguf", f"id: {yaml_dq(bad)}")
    paths = corpus.write_contracts(tmp_path)
    paths["gguf"].write_text(text, "utf-8")
    capsys.readouterr()
    assert main(["check", str(paths["gguf"])]) == 2
    assert "SPEC_SCHEMA" in capsys.readouterr().out


@pytest.mark.parametrize("good", ["a..", "a...b", "0", "a-", "a_", "nul", "con.txt", "a.py", "x" * 128])
def test_generated_paths_stay_in_the_output_directory(good, tmp_path):
    out = (tmp_path / "out").resolve()
    from charter.codegen.common.manifest import python_checker_path
    from charter.codegen.cpp.build import cpp_checker_path

    paths = [python_checker_path(good), f"cpp/labels/{good}.hpp", cpp_checker_path(good)]
    for rel in paths:
        target = (out / rel).resolve()
        assert target.is_relative_to(out) and target.parent != out.parent, rel
        assert "/" not in Path(rel).name


@pytest.mark.parametrize("bad", ["../../escaped", "/tmp/abs", "a/../../b", "x\ny"])
def test_freeze_ids_cannot_write_outside_the_output_directory(bad, tmp_path, capsys):
    artifact = tmp_path / "base.gguf"
    artifact.write_bytes(corpus.base_gguf())
    out = tmp_path / "deep" / "out"
    before = {p for p in tmp_path.rglob("*")}
    capsys.readouterr()
    code = main(["freeze", str(artifact), "--id", bad, "-o", str(out)])
    assert code != 0, capsys.readouterr()
    after = {p for p in tmp_path.rglob("*")}
    assert after == before, after - before


def test_freeze_invalid_id_is_a_usage_error(tmp_path, capsys):
    """An --id that is not a contract id is a usage error (exit 2, docs/diagnostics.md), said in
    terms of the argument, not a rejection (exit 1) located in an internal `<string>:3:5`."""
    artifact = tmp_path / "base.gguf"
    artifact.write_bytes(corpus.base_gguf())
    capsys.readouterr()
    code = main(["freeze", str(artifact), "--id", "../../escaped", "-o", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2 and "<string>" not in out + err, (code, out, err)


def test_hostile_spec_path_reaches_generated_code_as_data(tmp_path):
    """The spec's own path (quotes, a newline, `*/`, `\"\"\"`) is quoted in literals and sanitised in
    comments of both generated files."""
    paths = corpus.write_contracts(tmp_path)
    folder = paths["gguf"].parent / 'evil"""\n*'  # with the file name below: `*/` in the path
    folder.mkdir()
    name = ' #include <x> \\ ?? .yaml'
    spec = folder / name
    paths["gguf"].rename(spec)
    cs = load_set([spec], search_paths([str(spec)], None))
    assert not cs.diagnostics, cs.diagnostics
    from charter.codegen.driver import render_python_checker

    text = render_python_checker(cs, cs.artifacts["hostile-gguf"]).text
    namespace: dict = {}
    exec(compile(text, "<generated>", "exec"), namespace)  # noqa: S102 - generated code under test
    assert namespace["SPEC"].endswith(name)
    (cpp,) = [t for p, t, *_ in render_cpp_checkers(cs)]
    header = tmp_path / "h.hpp"
    header.write_text(cpp, "utf-8")
    proc = subprocess.run([compiler(), "-std=c++17", "-fsyntax-only", "-x", "c++", f"-I{INCLUDE}", str(header)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_python_literals_round_trip_every_hostile_string(tmp_path):
    from charter.codegen.common.python import py_literal

    for s in hostile_strings(tmp_path / "m"):
        lit = py_literal(s)
        assert "\n" not in lit and "\r" not in lit and "\u2028" not in lit and "\x85" not in lit
        assert eval(lit, {"__builtins__": {}}) == s  # noqa: S307 - a literal, evaluated without builtins
