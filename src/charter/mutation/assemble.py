"""A mutated contract's generated checker, executed without compiling what it shares with the others.

Note [Incremental battery]
~~~~~~~~~~~~~~~~~~~~~~~~~~
A contract mutant changes one leaf, and a battery has a few mutants per leaf, so a battery that
redoes the whole pipeline per mutant costs (contract size)^2: a 1,000-tensor contract has 24,000
mutants. Each step therefore does only what the changed leaf changes, and gets the same result as
the whole pipeline would:

* the mutant's document shares every subtree but the changed path with the contract's
  (charter.mutation.contract_ops copies the path, never the document);
* Pydantic validates only the changed part: the contract's validated models stand in for the
  shared subtrees, or only the changed items of a list are validated and the contract's own
  validators run over the result (charter.mutation.run._reload);
* the model is resolved once, and each tensor row once per set of constants (charter.contract.
  resolve, `memo`, which keeps the last few sets); a mutant of a leaf outside the rows reuses the
  contract's rows whole, and each expression is parsed once per text and place;
* the prediction keys the contract's checks once, and a tensor table row by row
  (charter.mutation.expect._Baseline); the independence of the prediction from the checker is
  untouched: it still reads the typed checks and the artifact, never the generated code;
* the Python renderer escapes each tensor row and each string once (charter.codegen.python.build.
  _tensor_row, charter.codegen.common.python.py_literal), a table's kept rows looked up in C; the
  text rendered is the whole checker, byte for byte;
* that text is executed piece by piece (here): each top-level statement (the constants, each
  `check_<stage>` function, STAGES) is compiled once per distinct text, and a table of rows
  inside a function (`name=(` then one row literal per line) is compiled with its rows replaced by
  one name bound to the tuple of the rows' values, each row literal compiled once per distinct
  text. A tuple display of literals evaluates to the tuple of their values, so the module behaves
  as the whole text compiled at once (tests/mutation/test_incremental.py runs both).
"""

from __future__ import annotations

import itertools
import operator
import re
import types

# A top-level statement of a generated Python checker starts at column 0 (generated/python/*.py); a
# pattern that starts with a newline is found by a scan for that character, not tried at every one.
_TOP = re.compile(r"\n(?=def |STAGES = )")
# A table argument of a multi-line call inside a stage function (charter.codegen.python.build._block).
_TABLE = re.compile(r"(?m)^(        [A-Za-z_][A-Za-z0-9_]*=)\(\n((?:            .*,\n)+)        \),$")
_ROW_INDENT = 12


class Pieces:
    """Compiled pieces of generated checkers, by their text (one per battery process)."""

    def __init__(self) -> None:
        self.code: dict[str, types.CodeType] = {}
        self.rows: dict[str, object] = {}

    def module(self, text: str, name: str) -> types.ModuleType:
        """The module `text` defines, as `exec(compile(text))` would build it."""
        module = types.ModuleType(name)
        namespace = module.__dict__
        for piece in _top_level(text):
            owner = _function_name(piece)
            tables: list[tuple] = []

            def hoist(match: re.Match) -> str:
                tables.append(self._rows(match.group(2)))
                return f"{match.group(1)}__charter_{owner}_table_{len(tables) - 1}__,"

            skeleton = _TABLE.sub(hoist, piece)
            for i, table in enumerate(tables):  # globals of the function, read when it runs
                namespace[f"__charter_{owner}_table_{i}__"] = table
            exec(self._compiled(skeleton, name), namespace)
        return module

    def _compiled(self, text: str, name: str) -> types.CodeType:
        code = self.code.get(text)
        if code is None:
            code = self.code[text] = compile(text, name, "exec")
        return code

    def _rows(self, lines: str) -> tuple:
        """The values of a table's row lines (`            literal,`), each literal evaluated once."""
        literals = list(map(operator.itemgetter(slice(_ROW_INDENT, -1)), lines.splitlines()))
        values = list(map(self.rows.get, literals, itertools.repeat(_NEW)))
        for i in itertools.compress(itertools.count(), map(operator.is_, values, itertools.repeat(_NEW))):
            values[i] = self._row(literals[i])
        return tuple(values)

    def _row(self, literal: str) -> object:
        if literal not in self.rows:
            self.rows[literal] = eval(compile(literal, "<row>", "eval"), {})  # a literal (codegen.common.python)
        return self.rows[literal]


_NEW = object()  # a row literal not evaluated before (a row's value may be None)


def _top_level(text: str) -> list[str]:
    """`text` cut before each line that starts a function or STAGES."""
    cuts = [0, *(m.start() + 1 for m in _TOP.finditer(text)), len(text)]
    return [text[a:b] for a, b in zip(cuts, cuts[1:])]


def _function_name(text: str) -> str:
    """The function a top-level piece defines ("module" for the constants and STAGES)."""
    match = re.match(r"def ([A-Za-z_][A-Za-z0-9_]*)\(", text)
    return match.group(1) if match else "module"
