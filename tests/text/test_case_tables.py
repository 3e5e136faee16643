"""The generated case tables (generated/python/text, generated/cpp/text) hold the contracts' cases."""

from __future__ import annotations

import importlib.util
import subprocess

import pytest

from charter.toolchain import compiler
from tests.conftest import ROOT


def _module(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "generated" / "python" / "text" / f"{name}.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_python_tables_are_the_contract(smollm2):
    lc, _ = smollm2
    c = lc.contract
    m = _module("smollm2_135m_instruct_text")
    assert [e.ids for e in m.ENCODE] == [tuple(e.ids or ()) for e in c.encode]
    assert [e.input for e in m.ENCODE] == [e.input if isinstance(e.input, bytes) else e.input.encode() for e in c.encode]
    assert [d.cls for d in m.DECODE] == [d.cls for d in c.decode]
    assert [(a.id, a.content, a.special) for a in m.ADDED] == [(t.id, t.content, t.special) for t in c.tokenizer.added]
    assert [ch.rendered for ch in m.CHAT] == [x.rendered for x in c.chat.cases]
    assert all("".join(t for _, t in ch.segments) == ch.rendered for ch in m.CHAT if ch.rendered is not None)
    assert m.IDS == c.tokenizer.ids and m.LOGITS_ROWS == c.tokenizer.logits.rows
    assert all(x.where.startswith("specs/text/smollm2-135m-instruct-text.yaml:") for x in m.ENCODE + m.CHAT)
    assert len(m.upstream(m.CHAT)) == 36


def test_cpp_tables_compile_and_agree(tmp_path):
    src = tmp_path / "t.cpp"
    src.write_text("""
#include "text/smollm2-135m-instruct-text.hpp"
#include "text/all-minilm-l6-v2-text.hpp"
namespace s = charter::text_cases::smollm2_135m_instruct_text;
namespace m = charter::text_cases::all_minilm_l6_v2_text;
using charter::text_cases::CaseClass;
constexpr bool spans_inside() {
  for (const auto& c : s::kEncode) if (c.ids.offset + c.ids.count > s::kIdPool.size()) return false;
  for (const auto& c : s::kChat) if (c.segments.offset + c.segments.count > s::kSegmentPool.size()) return false;
  return true;
}
static_assert(spans_inside());
static_assert(s::kIds == 49152 && s::kLogitsRows == 49152 && m::kIds == 30522);
static_assert(s::kAdded.size() == 17 && m::kAdded.size() == 5);
static_assert(s::kChat.size() == 41 && s::kChat[36].cls == CaseClass::ContractControl && s::kChat[36].failed);
static_assert(m::kDecode[0].output_hex == "5b434c535d2068656c6c6f2c20776f726c6421205b5345505d");
""")
    proc = subprocess.run([compiler(), "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                           f"-I{ROOT / 'generated' / 'cpp'}", str(src)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
