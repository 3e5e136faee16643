"""Region tables (charter.codegen.regions): the committed Python module and C++ header say what the
plan says, the C++ compiles with its static_asserts, and the F1 gate is generated from the contract."""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess

import pytest

from charter.codegen import regions as target
from charter.contract.contractset import load_set
from charter.toolchain import compiler
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "regions" / "smollm2-135m-instruct-q4_1.yaml"
PY = ROOT / "generated" / "python" / "regions" / "smollm2_135m_instruct_q4_1_regions.py"
HPP = ROOT / "generated" / "cpp" / "regions" / "smollm2-135m-instruct-q4_1-regions.hpp"


@pytest.fixture(scope="module")
def cs():
    cs = load_set([ROOT / "specs"])
    assert cs.diagnostics == []
    return cs


@pytest.fixture(scope="module")
def plan(cs):
    return cs.regions["smollm2-135m-instruct-q4_1-regions"]


def _module(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_qwen4exp_tables(cs):
    plan = cs.regions["qwen4exp-text-regions"]
    rendered = dict(target.render(cs, plan))
    py = ROOT / "generated" / "python" / "regions" / "qwen4exp_text_regions.py"
    assert rendered["python/regions/qwen4exp_text_regions.py"] == py.read_text()
    m = _module(py)
    assert m.F1_EXECUTABLE is False and m.F1_REASONS[0].startswith("F1_UNAVAILABLE")
    assert len(m.RECORDS) == 48 and m.RECORDS[-1][1:] == ("expert_major", 24064, 24576)
    assert ("experts", "layer", "routed", "exact", "passthrough", 0) in m.REGIONS


def test_committed_tables_are_the_plans(cs, plan):
    rendered = dict(target.render(cs, plan))
    assert rendered[f"python/regions/{PY.name}"] == PY.read_text()
    assert rendered[f"cpp/regions/{HPP.name}"] == HPP.read_text()
    m = _module(PY)
    assert m.F1_EXECUTABLE is True and m.F1_REASONS == () and m.F1_MAX_TOKENS == 64
    assert [i[0] for i in m.INSTANCES] == [i.name for i in plan.instances]
    assert {t: m.INSTANCES[k][0] for t, k, _, _ in m.OWNERSHIP} == \
        {t: i.name for i in plan.instances for t in i.tensors}
    assert m.owner("blk.7.ffn_down.weight") == "mlp.7" and m.owner("token_embd.weight") == "embedding"
    assert ("hidden", "edge", "float32", (m.TOKENS, 576), 2304) in m.EDGES
    assert m.STATE == (("attention", "kv", "kv_append", 192, "call"),)
    assert m.f1_admits(64) and not m.f1_admits(65) and not m.f1_admits(0)


def test_header_compiles_and_agrees(tmp_path):
    src = tmp_path / "t.cpp"
    src.write_text(
        '#include "regions/smollm2-135m-instruct-q4_1-regions.hpp"\n'
        "namespace r = charter::regions::smollm2_135m_instruct_q4_1_regions;\n"
        "static_assert(r::kInstances.size() == 63 && r::kOwnership.size() == 272 && r::kNodes.size() == 18);\n"
        "static_assert(r::f1_admits(64) && !r::f1_admits(65) && !r::f1_admits(0) && r::kF1Reasons.empty());\n"
        "static_assert(r::kEdges[2].name == \"hidden\" && r::kEdges[2].bytes_per_token == 2304);\n"
        "int main() { return 0; }\n")
    subprocess.run([compiler(), "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I", str(ROOT / "generated" / "cpp"),
                    str(src)], check=True, capture_output=True, timeout=120)


def test_the_gate_is_generated_from_the_contract(cs, plan, tmp_path):
    """A conditional graph's tables say it is not F1-executable, and why; so does its header."""
    instances = list(plan.instances)
    a = dataclasses.replace(instances[1].activation, decision="skippable", by="draft_verification", skip="no_kv")
    instances[1] = dataclasses.replace(instances[1], activation=a)
    rendered = dict(target.render(cs, dataclasses.replace(plan, instances=tuple(instances))))
    py = tmp_path / "m.py"
    py.write_text(rendered[f"python/regions/{PY.name}"])
    m = _module(py)
    assert m.F1_EXECUTABLE is False and not m.f1_admits(8)
    assert len(m.F1_REASONS) == 1 and m.F1_REASONS[0].startswith("F1_CONDITIONAL attention.0.activation.decision")
    (tmp_path / "regions").mkdir()
    (tmp_path / "regions" / "x.hpp").write_text(rendered[f"cpp/regions/{HPP.name}"])
    src = tmp_path / "t.cpp"
    src.write_text('#include "regions/x.hpp"\nnamespace r = charter::regions::smollm2_135m_instruct_q4_1_regions;\n'
                   "static_assert(!r::kF1Executable && !r::f1_admits(8) && r::kF1Reasons.size() == 1);\n")
    subprocess.run([compiler(), "-std=c++17", "-fsyntax-only", "-I", str(tmp_path), str(src)], check=True,
                   capture_output=True, timeout=120)
