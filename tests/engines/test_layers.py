"""Data flows one way (CONVENTIONS.md): codegen renders and never runs a checker, the admission
runtime never looks at codegen or the engines that call it, and the engines never reach up into
the commands or the battery. Checked over every import in src/charter, function-level ones included."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

SRC = ROOT / "src" / "charter"
TARGETS = ("python", "cpp", "bindings", "labels", "metal")
# Imports of one codegen target by another that item 3 of issue 13 removes (the common codegen
# layer: one escaper per language). Not a licence: the rule below holds for the rest.
PENDING = {("bindings", "labels"), ("metal", "labels")}


def _module(path: Path) -> str:
    return ".".join(("charter", *path.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__")


def _imports() -> dict[str, set[str]]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{a.name}" for a in node.names)
        out[_module(path)] = {n for n in names if n == "charter" or n.startswith("charter.")}
    return out


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_import_graph_flows_one_way():
    graph = _imports()
    assert "charter.engines.cpp" in graph and "charter.native" not in graph
    wrong = []
    for module, names in graph.items():
        for name in names:
            if _under(module, "charter.codegen") and (_under(name, "charter.engines") or name == "charter.native"):
                wrong.append(f"{module} runs checkers ({name}): codegen only renders")
            if _under(module, "charter.admission") and not module.endswith(".commands") and (
                    _under(name, "charter.engines") or _under(name, "charter.codegen")):
                wrong.append(f"{module} reaches up into {name}")
            if _under(module, "charter.engines") and (
                    _under(name, "charter.cli") or _under(name, "charter.mutation") or name.endswith(".commands")):
                wrong.append(f"{module} reaches up into {name}")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_codegen_target_imports_another():
    graph = _imports()
    wrong = set()
    for module, names in graph.items():
        for target in TARGETS:
            if not _under(module, f"charter.codegen.{target}"):
                continue
            for other in TARGETS:
                if other != target and any(_under(n, f"charter.codegen.{other}") for n in names):
                    wrong.add((target, other))
    assert wrong <= PENDING, sorted(wrong - PENDING)
