"""ArtifactPlan -> the view the Python checker template renders.

Which checks run, in which order, with which literals, is decided once in charter.contract.checks
(Note [Typed checks]); here each check becomes one keyword call of admission.runtime.Context,
every literal through charter.codegen.common.python. The template only loops and substitutes.
"""

from __future__ import annotations

from dataclasses import dataclass

from charter.codegen.common.python import py_docstring
from charter.codegen.common.python import py_literal as lit
from charter.codegen.common.stages import StageView, stage_views
from charter.diagnostics import Location
from charter.diagnostics import Stage as AdmissionStage
from charter.contract.checks import Check, TensorFact, Tensors, arguments, checks_of, text_of
from charter.contract.plan import ArtifactPlan
from charter.memo import IdMemo


@dataclass(frozen=True)
class CheckerView:
    """The checker module, every value ready to paste: Python literals, and docstring-safe text."""

    about: str  # docstring text: "<format> artifact contract <id>"
    contract_id: str  # a Python literal, as every field below
    model_id: str
    spec: str
    format: str
    status: str
    source: str  # the contract's `source` as a dict literal (charter.contract.plan.PinnedSource), or None
    stages: tuple[StageView, ...]


def build(plan: ArtifactPlan, tables: list[list[str]] | None = None, checks: list[Check] | None = None
          ) -> CheckerView:
    """The checker's view; with `tables`, each table argument is rendered as a name
    (`table_name(i)`) and its row literals appended to `tables`: the mutation battery binds that
    name to the rows' values instead of rendering, then parsing, a table per mutant (Note
    [Incremental battery] in charter.mutation.assemble); `checks`: checks_of(plan), if the caller
    has them."""
    checks = checks_of(plan) if checks is None else checks
    stages = stage_views(((c.stage, render_call(c, tables)) for c in checks), lit)
    return CheckerView(py_docstring(f"{plan.format} artifact contract {plan.id}"), lit(plan.id), lit(plan.model),
                       lit(plan.spec_path), lit(plan.format), lit(plan.status),
                       lit(plan.source._asdict() if plan.source else None), stages)


def render_call(check: Check, tables: list[list[str]] | None = None) -> str:
    """`ctx.method(name=literal, ...)` on one line when it fits, else one argument per line and a
    table (a tuple of rows) one row per line, or its name (`build`'s `tables`). A mutation battery
    renders the same few dozen checks in every mutant's checker, so a call is rendered once per
    text of its check (charter.contract.checks.text_of), but a tensor table's, whose
    rows are escaped once each (`_row_literals`)."""
    if type(check) is Tensors:
        return _render_call(check, tables)
    key = (text_of(check), None if tables is None else len(tables))
    kept = _CALLS.get(key)
    if kept is None:
        before = 0 if tables is None else len(tables)
        statement = _render_call(check, tables)
        if len(_CALLS) >= _CALLS_KEPT:
            _CALLS.clear()
        kept = _CALLS[key] = (statement, () if tables is None else tuple(tables[before:]))
    elif tables is not None:
        tables.extend(kept[1])
    return kept[0]


_CALLS: dict[tuple[str, int | None], tuple[str, tuple]] = {}  # (check text, tables before) -> call, its tables
_CALLS_KEPT = 1 << 12


def _render_call(check: Check, tables: list[list[str]] | None) -> str:
    args = arguments(check)
    if not any(isinstance(v, tuple) and len(v) > _WIDTH // 3 for v in args.values()):  # else it cannot fit
        line = f"ctx.{check.method}({', '.join(f'{k}={_literal(v)}' for k, v in args.items())})"
        if len(line) <= _WIDTH:
            return line
    parts = "".join(f"    {k}={_block(v, tables)},\n" for k, v in args.items())
    return f"ctx.{check.method}(\n{parts})"


_WIDTH = 116  # the line length of the project (120) less the statement indent


def table_name(index: int) -> str:
    """The name a hoisted table is bound to in the checker's module (`build`'s `tables`)."""
    return f"__charter_table_{index}__"


def _block(value, tables: list[list[str]] | None) -> str:
    rows = _row_literals(value)
    if rows is None:
        return _literal(value)
    if tables is None:
        return "(\n" + "".join(map("        {},\n".format, rows)) + "    )"
    tables.append(rows)
    return table_name(len(tables) - 1)


def _row_literals(value) -> list[str] | None:
    """The row literals of a table argument (a tuple of rows), None for any other value. A tensor
    table grows with the model and a mutation battery renders it once per mutant, so each of its
    rows is escaped once (Note [Identity memo] in charter.memo)."""
    if type(value) is tuple and value and isinstance(value[0], TensorFact):
        return _tensor_row.each(value)
    if isinstance(value, tuple) and value and all(isinstance(r, tuple) for r in value):
        return [_literal(r) for r in value]
    return None


def _literal(value) -> str:
    """`lit(python_value(value))`, with each row of a tensor table written once per process."""
    if isinstance(value, TensorFact):
        return _tensor_row(value)
    if type(value) is tuple and value and isinstance(value[0], TensorFact):
        items = ", ".join(_literal(v) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    return lit(python_value(value))


_tensor_row = IdMemo(lambda row: lit(python_value(row)))


def python_value(value):
    """A check value as generated Python states it: locations as `file:line:col` text, stages by
    name, rows as plain tuples."""
    if isinstance(value, Location):
        return str(value)
    if isinstance(value, AdmissionStage):
        return value.value
    if isinstance(value, tuple):
        return tuple(python_value(v) for v in value)
    return value
