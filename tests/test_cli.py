"""Usage rules every command shares: an empty path is a usage error (exit 2), never the current
directory (`--contract ""` used to load every YAML file below it, tests/invalid/ included)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from charter.cli import build_parser, main
from charter.console import path_arg
from tests.conftest import ROOT

SPEC = "specs/artifacts/tiny-llama-gguf.yaml"
EMPTY_PATHS = [
    ["check", ""],
    ["check", "--search", "", "specs"],
    ["schema", "-o", ""],
    ["generate", ""],
    ["generate", "specs", "-o", ""],
    ["admit", "--contract", ""],
    ["admit", "", "--contract", SPEC],
    ["admit", "x.gguf", "--contract", SPEC, "--search", ""],
    ["admit", "x.gguf", "--contract", SPEC, "--generated", ""],
    ["locate", ""],
    ["freeze", "", "--id", "x"],
    ["freeze", "x.gguf", "--id", "x", "-o", ""],
    ["mutate", "--contract", ""],
    ["mutate", "--contract", SPEC, "--artifact", ""],
    ["mutate", "--contract", SPEC, "--search", ""],
    ["mutate", "--contract", SPEC, "--json", ""],
    ["mutate", "--contract", SPEC, "--html", ""],
    ["fixtures", "verify", ""],
    ["fixtures", "verify", "specs/provenance", "--search", ""],
    ["fixtures", "capture", ""],
    ["fixtures", "capture", "specs/provenance/rmsnorm-seeded.yaml", "-o", ""],
]


@pytest.mark.parametrize("argv", EMPTY_PATHS, ids=" ".join)
def test_an_empty_path_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "an empty path names no file" in err, err


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                for inner, deeper in _subparsers(sub):
                    yield f"{name} {inner}", deeper


def test_a_named_command_builds_its_own_parser_alone():
    """`charter admit` imports no other command's module; no command, or an unknown one, builds
    them all (for the help and the error that lists the choices)."""
    assert set(build_parser("admit")._subparsers._group_actions[0].choices) == {"check", "schema", "admit"}
    every = {"check", "schema", "admit", "locate", "freeze", "generate", "fixtures", "mutate", "check-changed", "diff"}
    assert set(build_parser()._subparsers._group_actions[0].choices) == every
    assert set(build_parser("admti")._subparsers._group_actions[0].choices) == every


def test_every_path_argument_refuses_an_empty_path():
    """Every argument that takes a value is a path (type path_arg, or folder_arg for an output
    folder), a choice, a number, `--id`, or diff's git revision and ID=FILE pair (each refusing an
    empty value): a command added later cannot forget the rule."""
    from charter.console import folder_arg
    from charter.diff.commands import artifact_arg, revision_arg
    from charter.mutation.commands import jobs_arg
    from charter.mutation.shard import shard_arg

    unchecked = []
    for name, sub in _subparsers(build_parser()):
        for action in sub._actions:
            takes_value = action.nargs != 0 and not isinstance(action, argparse._HelpAction)
            if not takes_value or action.choices is not None or action.type in (int, jobs_arg, shard_arg) or action.dest == "id":
                continue
            if action.type not in (path_arg, folder_arg, revision_arg, artifact_arg):
                unchecked.append(f"charter {name} {action.option_strings or action.dest}")
    assert not unchecked, unchecked


def test_mutate_with_an_empty_contract_loads_nothing():
    """The reported case, as a user runs it from the repository root."""
    proc = subprocess.run([sys.executable, "-m", "charter", "mutate", "--contract", ""], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout[-2000:]
    assert proc.stdout == "" and "--contract: an empty path names no file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_loose_contract_is_searched_for_in_its_own_folder_only(tmp_path):
    """Outside a specs/ tree, a contract's references are looked up in the tree `charter freeze`
    writes (DIR/artifacts/x.yaml -> DIR) or in its own folder: /tmp/x.yaml once searched all of /."""
    from charter.console import search_paths

    loose = tmp_path / "loose" / "x.yaml"
    frozen = tmp_path / "out" / "artifacts" / "x.yaml"
    for p in (loose, frozen):
        p.parent.mkdir(parents=True)
        p.write_text("charter: 1\n", "utf-8")
    assert search_paths([str(loose)], None) == [str(loose.parent.resolve())]
    assert search_paths([str(frozen)], None) == [str((tmp_path / "out").resolve())]


def test_admit_locate_and_freeze_each_have_their_own_command_module():
    """One module per command, registering it; none imports back from charter.cli."""
    import importlib
    import re
    from pathlib import Path

    from charter.cli import COMMAND_MODULES

    owners = {}
    for name in COMMAND_MODULES.values():
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(name).register(sub)
        for command in sub.choices:
            owners[command] = name
    assert owners == COMMAND_MODULES  # each module adds exactly the command it is listed under
    assert owners["admit"] == "charter.admission.commands"
    assert owners["locate"] == "charter.admission.locate_command"
    assert owners["freeze"] == "charter.freeze.commands"
    src = Path(__file__).resolve().parents[1] / "src" / "charter"
    for path in src.rglob("*.py"):
        if path.name != "__main__.py":
            assert not re.search(r"^\s*(from charter\.cli import|import charter\.cli|from charter import cli)",
                                 path.read_text("utf-8"), flags=re.M), path


@pytest.mark.parametrize("handler", [False, True])
def test_the_command_exits_with_its_code_and_output_and_runs_exit_handlers(tmp_path, handler):
    """charter.cli.entry ends the process without the interpreter's teardown only when nothing is
    left to run at exit: the output is flushed, the code kept, an atexit handler still runs."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: artifact\n", "utf-8")
    script = ("import atexit, sys\nfrom charter.cli import entry\n"
              + ("atexit.register(print, 'handler ran')\n" if handler else "")
              + f"sys.argv = ['charter', 'check', {str(bad)!r}]\nentry()\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "bad.yaml" in proc.stdout + proc.stderr
    assert ("handler ran" in proc.stdout) is handler
