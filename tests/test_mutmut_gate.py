"""tools/mutmut_gate.py's own rules, without running mutmut: what counts as detected, and that a
mutant hidden by `# pragma: no mutate` is hidden for a stated reason."""

from __future__ import annotations

import importlib.util
from collections import Counter

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("mutmut_gate", ROOT / "tools" / "mutmut_gate.py")
gate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gate)


def test_a_pragma_needs_its_reason(tmp_path):
    code = tmp_path / "m.py"
    code.write_text("a = 1  # pragma: no mutate -- the codec lookup ignores case\n"
                    "b = 2  # pragma: no mutate\n"
                    "c = 3  # pragma: no mutate -- ok\n"
                    "d = 4  # nothing\n")
    count, bare = gate.unexplained_pragmas([code])
    assert count == 3
    assert [line.split(": ", 1)[0].rsplit(":", 1)[1] for line in bare] == ["2", "3"]


def test_the_mutated_files_explain_every_pragma():
    files = gate.mutated_files()
    assert files and all(f.is_file() for f in files)
    assert gate.unexplained_pragmas(files)[1] == []


def test_timeouts_are_detected_survivors_are_not():
    assert gate.score_of(Counter({"killed": 8, "timeout": 1, "survived": 1, "skipped": 5})) == (9, 10, 0.9)
    assert gate.score_of(Counter({"no tests": 1, "killed": 1})) == (1, 2, 0.5)
