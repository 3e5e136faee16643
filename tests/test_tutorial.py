"""docs/tutorial.md is run, block by block, so it cannot rot.

The tutorial is a sequence of fenced blocks, each of one of four sorts, run in order in a fresh
directory laid out like a charter checkout (`specs/`, `schemas/` and `generated/` linked from this
repository, the installed `charter` on PATH, an empty charter cache):

* ```console: each `$ ` line is a command; the lines up to the next command are what it prints,
  stdout and stderr together, compared exactly. A `<!-- exit: N -->` line right above the block
  gives the exit status of the block's last command; every other command exits 0. A plain
  `charter ARGS` runs in this process through `charter.cli.main`, the console script's own entry
  point (a Python started per command would cost a second each under load); any other command,
  `$(charter ...)` included, runs with bash.
* ```diff: a hand edit, applied to the file its `---`/`+++` lines name. Each `@@` hunk's context and
  removed lines must occur exactly once in the file, and are replaced by its context and added lines.
* ```yaml under `<!-- file: PATH -->`: the whole file, byte for byte, at that point.
* ```yaml under `<!-- excerpt: PATH -->`: runs of lines of the file, in order, separated in the
  block by lines reading `# ...`.

The one tolerance: the directory of installed packages (sysconfig's purelib) prints as
`…/site-packages`, as the tutorial says. `python tests/test_tutorial.py --update` rewrites the shown
outputs from a fresh run (after a deliberate change of wording), and prints what changed.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

if __name__ == "__main__":  # run as a script: the repository root on sys.path, as pytest has it
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import ROOT

TUTORIAL = ROOT / "docs" / "tutorial.md"
BIN = Path(sys.executable).parent
SITE_PACKAGES = sysconfig.get_paths()["purelib"]
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```\n", re.M | re.S)
MARK = re.compile(r"<!-- (exit|file|excerpt): (\S+) -->\n\Z")


@dataclass
class Block:
    sort: str  # console | diff | file | excerpt
    body: str
    start: int  # offset of the body in the tutorial's text
    end: int
    mark: str | None  # the exit status, or the file path


def blocks(text: str) -> list[Block]:
    out = []
    for match in FENCE.finditer(text):
        lang, body = match[1], match[2]
        mark = MARK.search(text[:match.start()])
        if lang == "console":
            sort = "console"
        elif lang == "diff":
            sort = "diff"
        elif lang == "yaml" and mark and mark[1] in ("file", "excerpt"):
            sort = mark[1]
        else:
            raise AssertionError(f"docs/tutorial.md: a ```{lang} block at offset {match.start()} is neither run, "
                                 "applied nor compared (see tests/test_tutorial.py)")
        if sort == "console" and mark and mark[1] != "exit":
            raise AssertionError(f"docs/tutorial.md: a console block under <!-- {mark[1]}: --> at {match.start()}")
        out.append(Block(sort, body, match.start(2), match.end(2), mark[2] if mark else None))
    return out


def commands(body: str) -> list[tuple[str, str]]:
    """(command, expected output) of each `$ ` line of a console block."""
    out: list[tuple[str, list[str]]] = []
    for line in body.splitlines(keepends=True):
        if line.startswith("$ "):
            out.append((line[2:].rstrip("\n"), []))
        else:
            assert out, f"output before any command: {line!r}"
            out[-1][1].append(line)
    return [(cmd, "".join(lines)) for cmd, lines in out]


def apply_diff(workdir: Path, body: str) -> None:
    lines = body.splitlines(keepends=True)
    assert lines[0].startswith("--- ") and lines[1].startswith("+++ "), "a diff block starts with ---/+++"
    name = lines[0][4:].strip()
    assert lines[1][4:].strip() == name, "a diff edits one file"
    path = workdir / name
    text = path.read_text()
    hunks: list[list[str]] = []
    for line in lines[2:]:
        if line.startswith("@@"):
            hunks.append([])
        else:
            assert hunks, f"diff line before a @@ hunk: {line!r}"
            hunks[-1].append(line)
    for hunk in hunks:
        old = "".join(line[1:] for line in hunk if line[0] in " -")
        new = "".join(line[1:] for line in hunk if line[0] in " +")
        assert all(line[0] in " -+" for line in hunk), hunk
        assert text.count(old) == 1, f"{name}: the hunk's old text occurs {text.count(old)} times:\n{old}"
        text = text.replace(old, new)
    path.write_text(text)


def check_excerpt(path: Path, body: str) -> None:
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    at = 0
    for run in re.split(r"^# \.\.\.\n", body, flags=re.M):
        if not run:
            continue
        want = run.splitlines(keepends=True)
        for i in range(at, len(lines) - len(want) + 1):
            if lines[i:i + len(want)] == want:
                at = i + len(want)
                break
        else:
            raise AssertionError(f"{path.name}: these lines are not in the file (after line {at}):\n{run}")


def workspace(into: Path) -> Path:
    for name in ("specs", "schemas", "generated"):
        (into / name).symlink_to(ROOT / name)
    return into


PLAIN_CHARTER = re.compile(r"charter( [^$`|;&<>()\\'\"*?]*)?")


def run(command: str, workdir: Path) -> tuple[int, str]:
    env = {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "XDG_CACHE_HOME": str(workdir / ".cache"),
           "PYTHONUNBUFFERED": "1", "CHARTER_DEBUG": None}
    saved = {name: os.environ.get(name) for name in env}
    here = Path.cwd()
    try:
        for name, value in env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        os.chdir(workdir)
        if PLAIN_CHARTER.fullmatch(command):
            from charter.cli import main

            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                status = main(shlex.split(command)[1:])
            printed = out.getvalue()
        else:
            proc = subprocess.run(["bash", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=300)
            status, printed = proc.returncode, proc.stdout
    finally:
        os.chdir(here)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return status, printed.replace(SITE_PACKAGES, "…/site-packages")


def replay(text: str, workdir: Path) -> tuple[list[str], str]:
    """Run the tutorial in `workdir`: (every mismatch, the tutorial with the outputs as printed)."""
    problems: list[str] = []
    updated, last = [], 0
    for block in blocks(text):
        if block.sort == "diff":
            apply_diff(workdir, block.body)
        elif block.sort == "file":
            actual = (workdir / block.mark).read_text()
            if actual != block.body:
                problems.append(f"{block.mark} differs from the tutorial:\n" + "".join(
                    difflib.unified_diff(block.body.splitlines(True), actual.splitlines(True), "tutorial", "file")))
        elif block.sort == "excerpt":
            try:
                check_excerpt(workdir / block.mark, block.body)
            except AssertionError as exc:
                problems.append(str(exc))
        else:
            steps = commands(block.body)
            shown = []
            for i, (command, expected) in enumerate(steps):
                status, output = run(command, workdir)
                want = int(block.mark) if block.mark is not None and i == len(steps) - 1 else 0
                if status != want:
                    problems.append(f"$ {command}\nexited {status}, the tutorial says {want}:\n{output}")
                if output != expected:
                    problems.append(f"$ {command}\n" + "".join(difflib.unified_diff(
                        expected.splitlines(True), output.splitlines(True), "tutorial", "printed")))
                shown.append(f"$ {command}\n{output}")
            updated += [text[last:block.start], "".join(shown)]
            last = block.end
    return problems, "".join(updated) + text[last:]


def test_tutorial_runs_as_written(tmp_path):
    problems, _ = replay(TUTORIAL.read_text(), workspace(tmp_path))
    assert not problems, "\n\n".join(problems)


def test_every_block_is_checked():
    found = blocks(TUTORIAL.read_text())
    assert {b.sort for b in found} == {"console", "diff", "file", "excerpt"}
    assert sum(len(commands(b.body)) for b in found if b.sort == "console") >= 10


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_tutorial.py --update")
    with tempfile.TemporaryDirectory() as tmp:
        problems, text = replay(TUTORIAL.read_text(), workspace(Path(tmp)))
    for problem in problems:
        print(problem, end="\n\n")
    TUTORIAL.write_text(text)
    print(f"{TUTORIAL}: {len(problems)} difference(s) written back" if problems else f"{TUTORIAL}: up to date")
