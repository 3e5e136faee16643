"""Golden negatives: each file in tests/invalid/ names its exact diagnostic in `# expect:` lines.

A case is a single .yaml file, or a directory whose files together form one contract set.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

from charter.cli import main
from tests.conftest import ROOT

INVALID = ROOT / "tests" / "invalid"
CASES = sorted([p for p in INVALID.glob("*.yaml")] + [p for p in INVALID.iterdir() if p.is_dir()])


def expected_lines(case: Path) -> list[str]:
    files = sorted(case.glob("*.yaml")) if case.is_dir() else [case]
    out = []
    for f in files:
        for line in f.read_bytes().decode("utf-8", "replace").splitlines():
            if line.startswith("# expect: "):
                out.append(line[len("# expect: "):])
    return out


def test_there_are_enough_golden_negatives():
    assert len(CASES) >= 30


@pytest.fixture(scope="module")
def shipped_specs_parsed_once():
    """Every case searches specs/ (its 36 files parsed each time were most of this module's cost):
    the shipped contracts are parsed once per module; a case's own files are parsed every time."""
    from charter.contract import contractset

    load, shipped = contractset.load_file, (ROOT / "specs").resolve()
    cached = functools.lru_cache(maxsize=None)(load)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(contractset, "load_file", lambda path, display=None: (
            cached(path, display) if Path(path).resolve().is_relative_to(shipped) else load(path, display)))
        yield


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_golden_negative(case: Path, capsys, shipped_specs_parsed_once):
    expected = expected_lines(case)
    assert expected, f"{case} has no '# expect:' line"
    code = main(["check", "--search", "specs", str(case.relative_to(ROOT))])
    out = capsys.readouterr()
    assert code == 2
    assert [line for line in out.out.splitlines() if line] == expected
    assert "Traceback" not in out.err


def test_no_traceback_from_the_real_command():
    """`python -m charter` in a subprocess over every case at once (one set: ids collide, which is fine)."""
    args = [str(c.relative_to(ROOT)) for c in CASES]
    proc = subprocess.run([sys.executable, "-m", "charter", "check", "--search", "specs", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.stdout.count("\n") >= len(CASES)
