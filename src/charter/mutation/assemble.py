"""A mutated contract's generated checker, executed without compiling what it shares with the others.

Note [Incremental battery]
~~~~~~~~~~~~~~~~~~~~~~~~~~
A contract mutant changes one leaf, and a battery has a few mutants per leaf, so a battery that
redoes the whole pipeline per mutant costs (contract size)^2: a 1,000-tensor contract has 24,000
mutants. Each step therefore does only what the changed leaf changes, and gets the same result as
the whole pipeline would:

* the mutant's document shares every subtree but the changed path with the contract's
  (charter.mutation.contract_ops copies the path, never the document);
* Pydantic validates only the changed part: only the changed items of a list, or the one changed
  top-level field (by the model's own schema: validate_assignment on a copy), are validated, the
  contract's validated models standing in for what they share, and the contract's own validators
  run over the result (charter.mutation.run._reload; a whole validation ran every tensor row's
  validator, even for rows it takes as they are);
* the model is resolved once, and each tensor row once per set of constants (charter.contract.
  resolve, `memo`, which keeps the last few sets), or once for all if it reads none; a mutant of a
  leaf outside the rows reuses the contract's rows whole, one of a dropped row the others (each
  later row is located where it is written: charter.contract.yamlload.DroppedItem), and each
  expression is parsed once per text and place;
* the prediction keys the contract's checks once, and a tensor table row by row
  (charter.mutation.expect._Baseline), and judges a changed table from its changed rows alone
  when the unchanged table holds (expect._changed_tensors); the independence of the prediction from the
  checker is untouched: it still reads the typed checks and the artifact, never the generated code;
* the Python renderer escapes each tensor row and each string once (charter.codegen.python.build.
  _tensor_row, charter.codegen.common.python.py_literal), a table's kept rows looked up in C;
* the checker is rendered with each table argument (`name=(` then one row literal per line)
  replaced by a name (charter.codegen.python.build.build, `tables`), so the text rendered is the
  whole checker but its tables' rows, and the same for every mutant of a tensor row. That text is
  executed piece by piece (here): each top-level statement (the constants, each `check_<stage>`
  function, STAGES) is compiled once per distinct text, and each table's name is bound to the
  tuple of its rows' values, each row literal evaluated once per distinct text. A tuple display
  of literals evaluates to the tuple of their values, so the module behaves as the whole text
  compiled at once (tests/mutation/test_incremental.py runs both).
"""

from __future__ import annotations

import re
import types

from charter.codegen.driver import render_checker_view
from charter.codegen.python.build import CheckerView, build, table_name
from charter.contract.checks import Check
from charter.contract.plan import ArtifactPlan
from charter.memo import IdMemo

# A top-level statement of a generated Python checker starts at column 0 (generated/python/*.py); a
# pattern that starts with a newline is found by a scan for that character, not tried at every one.
_TOP = re.compile(r"\n(?=def |STAGES = )")


class Pieces:
    """Compiled pieces of generated checkers, by their text (one per battery process)."""

    def __init__(self) -> None:
        self.code: dict[str, types.CodeType] = {}
        self.rows: dict[str, object] = {}
        self.tables: dict[int, IdMemo] = {}  # each table's row literal -> value, by the table's index
        self.views: dict[tuple[CheckerView, str], tuple[types.CodeType, ...]] = {}

    def checker(self, plan: ArtifactPlan, header: str, name: str, checks: list[Check] | None = None
                ) -> types.ModuleType:
        """The module of `plan`'s checker, as `exec(compile(render_checker_text(plan, header)))`
        would build it; `checks`: checks_of(plan), if worked out already."""
        tables: list[list[str]] = []
        view = build(plan, tables, checks)
        codes = self.views.get((view, header))
        if codes is None:
            if len(self.views) >= _VIEWS:
                self.views.clear()
            text = render_checker_view(view, header)
            codes = self.views[(view, header)] = tuple(self._compiled(piece, name) for piece in _top_level(text))
        module = types.ModuleType(name)
        namespace = module.__dict__
        for i, rows in enumerate(tables):  # globals of the stage functions, read when they run
            namespace[table_name(i)] = self._rows(i, rows)
        for code in codes:
            exec(code, namespace)
        return module

    def _compiled(self, text: str, name: str) -> types.CodeType:
        code = self.code.get(text)
        if code is None:
            code = self.code[text] = compile(text, name, "exec")
        return code

    def _rows(self, index: int, literals: list[str]) -> tuple:
        """The values of table `index`'s row literals, each evaluated once: the last values of that
        table where the very literal is at the same place (a mutant's table is its neighbour's but
        for a row or two), the others looked up in C (IdMemo.each, one per table)."""
        memo = self.tables.get(index)
        if memo is None:
            memo = self.tables[index] = IdMemo(self._row)
        return memo.each(literals)

    def _row(self, literal: str) -> object:
        """A row literal's value, evaluated once per text (tables of other checkers hold equal texts)."""
        if literal not in self.rows:
            self.rows[literal] = eval(compile(literal, "<row>", "eval"), {})  # a literal (codegen.common.python)
        return self.rows[literal]


_VIEWS = 1 << 12  # the views kept: one per distinct checker but its tables (a few kB each)


def _top_level(text: str) -> list[str]:
    """`text` cut before each line that starts a function or STAGES."""
    cuts = [0, *(m.start() + 1 for m in _TOP.finditer(text)), len(text)]
    return [text[a:b] for a, b in zip(cuts, cuts[1:])]
