"""The stage functions both checker targets render: one view, built once from the typed checks."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from charter.diagnostics import ADMISSION_STAGES, Stage
from charter.contract.checks import STAGE_DOCS


@dataclass(frozen=True)
class StageView:
    """One `check_<name>` function of a generated checker."""

    name: str  # the stage's name: a plain word, so `check_<name>` is an identifier in every target
    literal: str  # the name as a string literal of the target language (the checker's stage table)
    doc: str  # the function's one-line docstring or comment (STAGE_DOCS: charter's text, not a contract's)
    statements: tuple[str, ...]


def stage_views(statements: Iterable[tuple[Stage, str]], literal: Callable[[str], str]) -> tuple[StageView, ...]:
    """Every admission stage in order, each with its statements (ready-made target code) in the
    order given; `literal` is the target's string escaper."""
    by_stage: dict[Stage, list[str]] = {s: [] for s in ADMISSION_STAGES}
    for stage, statement in statements:
        by_stage[stage].append(statement)
    return tuple(StageView(s.value, literal(s.value), STAGE_DOCS[s.value], tuple(lines))
                 for s, lines in by_stage.items())
