"""The typed check layer (Note [Typed checks] in charter.contract.checks): every kind of check is
handled by every consumer, and the Python target's calls are the runtime's signatures."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from pathlib import Path

import pytest

from charter.admission.runtime import Context
from charter.codegen.cpp import build as cpp
from charter.codegen.python.build import render_call
from charter.mutation import expect, run
from charter.contract import checks
from charter.contract.contractset import load_set

ROOT = Path(__file__).resolve().parents[2]
KIND_NAMES = {k.__name__ for k in checks.KINDS}


@pytest.fixture(scope="module")
def every_check() -> list[checks.Check]:
    """The checks of every shipped contract, and a companion config (no shipped contract binds one)."""
    cs = load_set(sorted((ROOT / "specs").rglob("*.yaml")), [ROOT / "specs"])
    cs.raise_if_failed()
    found = [c for plan in cs.artifacts.values() for c in checks.checks_of(plan)]
    config = checks.Config(file="config.json", facts=(checks.ConfigFact("hidden_size", "int64", 576, None),), at=None)
    return found + [config]


def test_every_kind_is_a_frozen_keyword_dataclass_with_a_stage():
    for kind in checks.KINDS:
        params = kind.__dataclass_params__
        assert params.frozen and kind.__dataclass_fields__, kind
        assert all(f.kw_only for f in dataclasses.fields(kind)), kind
        assert kind.method and kind.method == kind.method.lower(), kind


def test_every_kind_occurs(every_check):
    assert {type(c).__name__ for c in every_check} == KIND_NAMES


def _matched(function) -> set[str]:
    """The check kinds a function's `match` statements name in their class patterns."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.MatchClass) and isinstance(node.cls, ast.Attribute):
            names.add(node.cls.attr)
    return names


@pytest.mark.parametrize("consumer", [cpp._statement, expect._evaluate, run._subject],
                         ids=["cpp-renderer", "prediction", "trace"])
def test_each_consumer_matches_every_kind(consumer):
    """A kind a consumer forgets would reach its `assert_never` on the first contract that uses it."""
    assert _matched(consumer) == KIND_NAMES


def test_python_calls_are_the_runtime_signatures(every_check):
    """Each check renders as `ctx.<method>(<field>=...)`, and Context's method takes exactly those
    keyword-only arguments: a field the runtime does not read cannot be added silently."""
    for c in every_check:
        call = ast.parse(render_call(c), mode="eval").body
        assert isinstance(call, ast.Call) and not call.args
        assert ast.unparse(call.func) == f"ctx.{c.method}"
        names = [f.name for f in dataclasses.fields(c)]
        assert [k.arg for k in call.keywords] == names
        params = inspect.signature(getattr(Context, c.method)).parameters.values()
        assert [p.name for p in params if p.kind is p.KEYWORD_ONLY] == names, c.method
        assert [p.name for p in params if p.kind is not p.KEYWORD_ONLY] == ["self"], c.method


def test_cpp_statements_call_the_method(every_check):
    tables = cpp._Tables()
    for c in every_check:
        assert f"ctx.{c.method}(" in cpp._statement(c, tables)


def test_equal_cpp_tables_are_declared_once():
    tables = cpp._Tables()
    first = tables.add("Shape", "rt::Int", ["rt::Int(1ull)"], label="1")
    again = tables.add("Shape", "rt::Int", ["rt::Int(1ull)"], label="1")
    other = tables.add("Shape", "rt::Int", ["rt::Int(2ull)"], label="1")
    assert first == again == "rt::span(kShape_1)" and other == "rt::span(kShape_1_2)"
    assert len(tables.decls) == 2


def test_prediction_ignores_a_moved_fact(every_check):
    """Moving a fact in its file (a new location, the same literals) changes no check."""
    c = next(c for c in every_check if isinstance(c, checks.Value))
    moved = dataclasses.replace(c, at=dataclasses.replace(c.at, line=c.at.line + 1))
    assert expect._key(moved) == expect._key(c)
    assert expect._key(dataclasses.replace(c, value=f"not {c.value!r}")) != expect._key(c)


def test_the_status_enum_is_the_language_order():
    from charter.language import STATUSES
    from charter.contract.models import Status

    assert tuple(s.value for s in Status) == STATUSES
    assert [s.rank for s in Status] == [0, 1, 2]
