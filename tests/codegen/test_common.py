"""The layer every code generator shares (charter.codegen.common): one escaper per language with one
policy for lone surrogates and control characters, one comment sanitiser per comment syntax, one
identifier policy, one `@generated` header; and every target uses it."""

from __future__ import annotations

import ast
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charter import __version__
from charter.codegen.common.cpp import cpp_comment, cpp_int64, cpp_str, cpp_sv
from charter.codegen.common.header import MARK, generated_header
from charter.codegen.common.names import identifier
from charter.codegen.common.python import py_comment, py_literal
from charter.codegen.common.text import EscapeError

from .conftest import ROOT, compile_and_run

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)  # any str without lone surrogates

# Strings each escaper must get exactly right: controls before digits and hex letters (a greedy `\x`
# would swallow them), NUL, trigraphs, comment ends, line breaks Python or C++ could read as one.
EDGES = ["", "plain", '"quoted"', "sq'uote", "back\\slash", "trailing\\", "new\nline", "cr\rlf\r\n", "tab\t",
         "nul\0inside", "\0", "\x0012", "\x01" + "7", "\x1fabc", "\x7f9", "\x7ff", "é1", "é\x00", "end*/", "*/*/",
         "/* open", "tri??=graph ??/", "?", "é日本😀", "line\u2028sep", "para\u2029", "nel\x85", "bom\ufeff",
         "rtl\u202e", "\\x41\\101\\u0041", '"); system("x"); //', "\U0010ffff", "x" * 5000]


# --- Python ---------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_python_literal_round_trips_through_literal_eval(s):
    lit = py_literal(s)
    assert ast.literal_eval(lit) == s
    assert lit.isprintable(), "a control character or line break reached the source"


def test_python_literal_round_trips_the_edges():
    for s in EDGES:
        assert ast.literal_eval(py_literal(s)) == s
        assert ast.literal_eval(py_literal((s, {s: (s,)}))) == (s, {s: (s,)})


def test_python_control_characters_have_one_spelling():
    assert py_literal("\0\x01\x1f\x7f\x85\u2028\U000e0001") == r"'\x00\x01\x1f\x7f\x85\u2028\U000e0001'"
    assert py_literal("\n\r\t") == r"'\n\r\t'"


@pytest.mark.parametrize("s", ["\ud800", "caf\udfff", "\ud83d\ude00", ("ok", "\udc80"), {"k": "\ud800"}])
def test_python_refuses_lone_surrogates(s):
    with pytest.raises(EscapeError, match=r"lone surrogate U\+D"):
        py_literal(s)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_python_comment_is_one_printable_line(s):
    c = py_comment(s)
    assert c.isprintable() and len(c) == len(s)


@pytest.mark.parametrize("path", ["specs/coding=unicode_escape/x.yaml", "specs/coding:latin-1/x.yaml",
                                  "a-CODING: utf-16 b", "coding=coding:x"])
def test_python_comment_never_declares_an_encoding(path):
    """PEP 263: `coding[:=]` in a comment on line 1 or 2 sets the file's encoding, so a spec path
    such as `coding=unicode_escape/` in the header would turn every `\\n` of a literal into a line
    break (tests/codegen/test_python.py shows the code that then runs)."""
    line = f"# {py_comment(path)}"
    assert not re.match(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", line, flags=re.IGNORECASE), line


# --- C++ ------------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_cpp_literal_is_one_closed_ascii_line(s):
    lit = cpp_str(s)
    assert lit.isascii() and lit.isprintable()
    assert "*/" not in lit and "??" not in lit
    assert re.fullmatch(r'"(?:[^"\\]|\\[0-7]{3}|\\[^0-7])*"', lit)  # one literal; octal escapes of 3 digits


@pytest.mark.parametrize("s", ["\ud800", "caf\udfff", "\ud83d\ude00"])
def test_cpp_refuses_lone_surrogates(s):
    """A lone surrogate has no UTF-8 bytes: refused, as by the Python escaper (the checker's escaper
    used to write its surrogatepass bytes, the labels' one raised a bare ValueError)."""
    with pytest.raises(EscapeError, match=r"lone surrogate U\+D"):
        cpp_str(s)
    with pytest.raises(EscapeError):
        cpp_sv(s)


def test_cpp_control_characters_have_one_spelling():
    """Three-digit octal: it ends by itself, so the digit after it is a character (`\\x0012` would be
    one escape), and it names a byte, so no execution character set can re-encode it."""
    assert cpp_str("\x0012") == r'"\00012"'
    assert cpp_str("\x01\x1f\x7f\n\r\t") == r'"\001\037\177\n\r\t"'
    assert cpp_str("é") == r'"\303\251"'
    assert cpp_str("a?*/") == r'"a\?*\057"'


def _bytes_program(strings: list[str]) -> str:
    """A program that prints each literal's length and bytes in hex, one line per string."""
    lines = ["#include <cstdio>", "#include <string_view>", "using namespace std::string_view_literals;",
             "static void show(std::string_view v) {", '  std::printf("%zu:", v.size());',
             '  for (unsigned char c : v) std::printf("%02x", c);', '  std::printf("\\n");', "}", "int main() {"]
    lines += [f"  show({cpp_sv(s)});" for s in strings]
    lines += ["}", ""]
    return "\n".join(lines)


def _expected(strings: list[str]) -> list[str]:
    return [f"{len(b)}:{b.hex()}" for b in (s.encode("utf-8") for s in strings)]


@pytest.mark.parametrize("flags", [(), ("-trigraphs", "-fexec-charset=ISO-8859-1")],
                         ids=["utf8", "trigraphs-latin1"])
def test_cpp_literals_compile_to_the_exact_utf8_bytes(tmp_path, flags):
    """g++ reads every literal back as exactly the string's UTF-8 bytes, length included, even with
    trigraphs on and an execution character set that is not UTF-8 (where a `\\u00e9` would become
    one byte: what the labels' escaper wrote before)."""
    assert compile_and_run(_bytes_program(EDGES), tmp_path, *flags) == _expected(EDGES)


@settings(max_examples=4, deadline=None)
@given(st.lists(TEXT, min_size=100, max_size=200))
def test_any_text_compiles_to_its_utf8_bytes(strings):
    """Property: hundreds of strings per translation unit, one compile per example."""
    with tempfile.TemporaryDirectory() as tmp:
        assert compile_and_run(_bytes_program(strings), Path(tmp)) == _expected(strings)


def test_cpp_comments_never_reach_the_next_line(tmp_path):
    """A sanitised `//` comment cannot splice the next line into itself (a trailing `\\`, or `??/`
    under -trigraphs): every marker line after a hostile comment still compiles and runs."""
    hostile = ["x\\", "x??/", "a\nb", "a\rb", "é\\", "*/ /*", "\u2028", "\\\u00a0", "??/\n", "ok"]
    body = [f"  // {cpp_comment(s)}\n  std::printf(\"{i}\\n\");" for i, s in enumerate(hostile)]
    source = "#include <cstdio>\nint main() {\n" + "\n".join(body) + "\n}\n"
    assert compile_and_run(source, tmp_path, "-trigraphs") == [str(i) for i in range(len(hostile))]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_cpp_comment_is_one_inert_ascii_line(s):
    c = cpp_comment(s)
    assert c.isascii() and c.isprintable() and "\\" not in c and "?" not in c and len(c) == len(s)


def test_cpp_int64():
    assert cpp_int64(-(2**63) + 1) == "-9223372036854775807" and cpp_int64(2**63 - 1) == "9223372036854775807"
    for bad in (2**63, -(2**63)):
        with pytest.raises(ValueError):
            cpp_int64(bad)
    with pytest.raises(TypeError):
        cpp_int64(True)


# --- names ----------------------------------------------------------------------------------------


def test_identifier():
    assert identifier("smollm2-135m-instruct-q4_1") == "smollm2_135m_instruct_q4_1"
    assert identifier("a..b") == "a_b" and identifier("a--b") == "a_b" and identifier("9x") == "c_9x"
    assert identifier("int") == "int_" and identifier("class") == "class_" and identifier("kernel") == "kernel_"


# --- header ---------------------------------------------------------------------------------------


def test_header_names_the_spec_and_sorted_inputs():
    text = generated_header("//", ("specs/a.yaml", "1" * 64), {"specs/z.yaml": "3" * 64, "specs/m.yaml": "2" * 64})
    assert text.splitlines() == [
        f"// {MARK} {__version__} from specs/a.yaml (sha256:{'1' * 64}) \u2014 do not edit",
        f"// with specs/m.yaml (sha256:{'2' * 64})",
        f"// with specs/z.yaml (sha256:{'3' * 64})",
    ]
    assert generated_header("#", None, {"k.yaml": "0" * 64}).startswith(f"# {MARK} {__version__} from the contracts")


def test_header_paths_go_through_the_comment_sanitiser():
    cpp = generated_header("//", ('ev"il\n\\??/é.yaml', "0" * 64), {"x\\\n": "1" * 64})
    py = generated_header("#", ("coding=unicode_escape/\n.yaml", "0" * 64))
    assert len(cpp.splitlines()) == 2 and len(py.splitlines()) == 1
    assert "\\" not in cpp and "??" not in cpp and "é" not in cpp
    assert "coding=" not in py


def test_every_generated_file_starts_with_the_header():
    """The committed tree: every file but the manifest (JSON has no comments) opens with the one
    header, in its language's comment syntax."""
    files = [p for p in sorted((ROOT / "generated").rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    assert len(files) > 20
    pattern = re.compile(rf"^(#|//) {re.escape(MARK)} {re.escape(__version__)} from \S.* \u2014 do not edit$")
    for p in files:
        if p.name == "manifest.json":
            continue
        first = p.read_text("utf-8").split("\n", 1)[0]
        assert pattern.match(first), (p, first)
        assert first.startswith("# " if p.suffix == ".py" else "// "), p


# --- every target uses the layer -------------------------------------------------------------------


CODEGEN = ROOT / "src" / "charter" / "codegen"


def _target_sources() -> dict[str, str]:
    return {p.relative_to(CODEGEN).as_posix(): p.read_text("utf-8") for p in sorted(CODEGEN.rglob("*"))
            if p.suffix in (".py", ".jinja") and "common" not in p.parts}


def test_no_target_builds_its_own_header_escaper_or_keyword_list():
    """One `@generated` builder, one escaper per language, one identifier policy: a target that
    writes the mark, repr()s a string, calls the `keyword` module or defines its own sanitiser
    fails here."""
    for rel, text in _target_sources().items():
        assert "@generated by" not in text, rel
        assert not re.search(r"^import keyword|keyword\.is", text, flags=re.M), rel
        assert not re.search(r"def (identifier|\w*comment|\w*escape|cpp_str|cpp_sv|py_str|py_literal)\(", text), rel
        assert "repr(" not in text, rel


LAYOUT_FILTERS = {"length", "indent"}  # a count, and the indentation of a ready-made statement


def test_templates_call_no_function():
    """The view hands every value escaped for its target: a template that calls a function
    (`lit(view.spec)`) is doing the escaping itself."""
    for rel, text in _target_sources().items():
        if rel.endswith(".jinja"):
            for expr in re.findall(r"\{\{(.*?)\}\}", text):
                value = expr.split("|")[0]
                assert not re.search(r"[\w\]\)]\s*\(", value), (rel, expr)


def test_one_stage_view_and_one_inputs_function_serve_both_checker_targets():
    for rel, text in _target_sources().items():
        if rel.endswith(".py"):
            assert not re.search(r"^class Stage\b|^def (inputs_of|checker_inputs)\(", text, flags=re.M), rel
    from charter.codegen.cpp import build as cpp
    from charter.codegen.python import build as py

    assert cpp.CheckerView.__annotations__["stages"] == py.CheckerView.__annotations__["stages"] == \
        "tuple[StageView, ...]"


def test_templates_never_slice_or_escape_values():
    """Templates only loop and substitute: no slicing of a value (`x[1:-3]`) and no filter that
    changes its text (`replace`, `e`, `format`, ...)."""
    for rel, text in _target_sources().items():
        if rel.endswith(".jinja"):
            for expr in re.findall(r"\{\{(.*?)\}\}", text):
                assert not re.search(r"\[[^\]]*:[^\]]*\]", expr), (rel, expr)
                filters = {f.strip().split("(")[0] for f in expr.split("|")[1:]}
                assert filters <= LAYOUT_FILTERS, (rel, expr)
