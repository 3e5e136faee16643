"""What every command shares: exit codes, path arguments, the diagnostics printer, and where
referenced contracts are looked up. charter.cli and each command module import these from here,
so no command module imports back from the command line that dispatches to it.

Exit codes are an interface (docs/cli.md):

0  success (contracts valid, artifact admitted, generated code fresh, no survivors)
1  rejected (an artifact failed admission, generated code is stale, a mutant survived)
2  usage or contract error (bad arguments, invalid contracts, unreadable files)
3  internal error (a bug in charter; set CHARTER_DEBUG=1 for the traceback)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from charter.diagnostics import Diagnostic

EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def not_a_file(path) -> str:
    """Why `path` cannot be an artifact, for the `charter: PATH: ...` line: it does not exist, or it
    is a directory, FIFO or device (never opened: a FIFO would be waited on, a device read forever)."""
    return "not a regular file" if Path(path).exists() else "no such file"


def path_arg(text: str) -> str:
    """argparse type of every path argument: an empty path is a usage error, never the current
    directory (`--contract ""` would otherwise load every YAML file below it)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no file (write . for the current directory)")
    return text


def print_diagnostics(diagnostics: list[Diagnostic], fmt: str, stream=None) -> None:
    stream = stream or sys.stdout
    if fmt == "json":
        print(json.dumps([d.to_json() for d in diagnostics], indent=2, sort_keys=True), file=stream)
    else:
        for d in diagnostics:
            print(d.render(), file=stream)


def search_paths(paths: list[str], explicit: list[str] | None) -> list[str]:
    """Where referenced contracts are looked up: --search, else each path's enclosing `specs/`
    tree; outside one, the tree `charter freeze` writes (out/artifacts/x.yaml -> out/) or else the
    contract's own folder, never a folder above it (/tmp/x.yaml would search the whole disk)."""
    if explicit:
        return list(explicit)
    found: list[str] = []
    for p in map(Path, paths):
        tree = next((d for d in [p.resolve(), *p.resolve().parents] if d.name == "specs" and d.is_dir()), None)
        if tree is None and p.is_file():
            folder = p.resolve().parent
            tree = folder.parent if folder.name in KIND_FOLDERS else folder
        found.append(str(tree or p.resolve()))
    return found


# The folders of a contract tree, one per kind (specs/ and what `charter freeze -o DIR` writes).
KIND_FOLDERS = ("models", "artifacts", "kernels", "provenance", "bundles")
