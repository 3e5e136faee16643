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


def folder_arg(text: str) -> str:
    """argparse type of an output folder: a folder of files cannot be standard output."""
    if text == "-":
        raise argparse.ArgumentTypeError("- (standard output) names no folder; this option writes several files")
    return path_arg(text)


def print_or_write(path: str, text: str) -> None:
    """For every file option (a path_arg): write `text` to the file `path` atomically, or to standard output when `path` is `-`."""
    if path == "-":
        current().emit(text)
        return
    from charter import atomic

    atomic.write_text(path, text)


# --- the run's output (Note [One output per run]) ------------------------------------------------

# Note [One output per run]: every command prints through the one Output charter.cli makes from
# the global options (--format, -q, -v, --color) and the command's own paths. Diagnostics go
# through `diagnostics()`, which prints them as text lines, GitHub Actions annotations, or keeps
# them for the JSON envelope; locations are shown from where the user stands (Note [Spec names and
# shown paths] in charter.contract.paths). Under --format json the command's human lines go to
# stderr and stdout holds one JSON object (schemas/output.schema.json):
#   {"charter": VERSION, "command": NAME, "exit": CODE, "diagnostics": [...], "result": {...} | null}

_ANSI = {"bold": "1", "red": "1;31", "green": "1;32", "yellow": "1;33"}


class Output:
    """How this run prints (Note [One output per run])."""

    def __init__(self, command: str = "", fmt: str = "text", *, quiet: bool = False, verbose: bool = False,
                 colour: bool = False, anchors: list[str] | tuple[str, ...] = (), stdout=None) -> None:
        self.command, self.format, self.quiet, self.verbose, self.colour = command, fmt, quiet, verbose, colour
        self.anchors = list(anchors)
        self.stdout = stdout  # where emit() writes (JSON, a report to `-`); None: sys.stdout when written
        self.collected: list[dict] = []
        self.result: object = None

    # what a location shows
    def place(self, location) -> str:
        """A location (Location or `file:line:col` text) as the user reads it."""
        from charter.diagnostics import Location

        loc = location if isinstance(location, Location) else Location.parse(str(location))
        return str(Location(self.file(loc.file), loc.line, loc.col))

    def file(self, name: str) -> str:
        from charter.contract.paths import resolve_name, shown

        return shown(resolve_name(name, self.anchors)) if name else name

    def location_json(self, location) -> dict | None:
        """The published form of a location: an object, its file shown from where the user stands."""
        from charter.diagnostics import Location

        if location is None or location == "":
            return None
        loc = location if isinstance(location, Location) else Location.parse(str(location))
        return {"file": self.file(loc.file), "line": loc.line or None, "column": loc.col or None}

    def publish(self, data):
        """`data` (JSON-able) with every `location` text as a location object (the published form)."""
        if isinstance(data, dict):
            return {k: self.location_json(v) if k == "location" and (v is None or isinstance(v, str))
                    else self.publish(v) for k, v in data.items()}
        if isinstance(data, list):
            return [self.publish(v) for v in data]
        return data

    # printing
    def paint(self, text: str, style: str) -> str:
        return f"\x1b[{_ANSI[style]}m{text}\x1b[0m" if self.colour else text

    def emit(self, text: str) -> None:
        """Text for standard output as it is (a report written to `-`)."""
        stream = self.stdout or sys.stdout
        stream.write(text)
        stream.flush()

    def say(self, line: str) -> None:
        """A result line on stdout (under --format json it goes to stderr)."""
        print(line)

    def info(self, line: str) -> None:
        """A progress or context line on stderr; -q silences it."""
        if not self.quiet:
            print(line, file=sys.stderr)

    def verdict(self, line: str, ok: bool) -> None:
        """The line a command ends with (`admitted: ...`, `rejected at ...`, `ok: ...`)."""
        head, sep, rest = line.partition(":")
        self.say(f"{self.paint(head, 'green' if ok else 'red')}{sep}{rest}" if sep else line)

    def diagnostics(self, diagnostics, stream=None) -> None:
        """Print (or, for JSON, keep) diagnostics: Diagnostic objects or report DiagnosticModels."""
        items = [as_diagnostic(d) for d in diagnostics]
        if self.format == "json":
            self.collected.extend(self.publish(d.to_json()) for d in items)
            return
        stream = stream or sys.stdout
        for d in items:
            print(self.github(d) if self.format == "github" else self.line(d), file=stream)

    def contract_errors(self, cs) -> bool:
        """Keep a loaded contract set's verdict as the run's result; print its diagnostics and
        their count if it has any (then True: the command exits 2)."""
        self.result = {"valid": not cs.diagnostics, "contracts": [] if cs.diagnostics else sorted(cs.contracts)}
        if not cs.diagnostics:
            return False
        self.diagnostics(cs.diagnostics)
        n = len(cs.diagnostics)
        self.info(f"{n} error{'s' if n != 1 else ''} in contracts")
        return True

    def line(self, d) -> str:
        """The ruff/mypy-style line of one Diagnostic, its location shown from the working directory."""
        where = self.place(d.location) if d.location else None
        text = d.render(where=where)
        if not self.colour:
            return text
        if where:
            text = text.replace(where, self.paint(where, "bold"), 1)
        return text.replace(d.code.value, self.paint(d.code.value, "red"), 1)

    def github(self, d, level: str = "error") -> str:
        """One GitHub Actions workflow command: `::error file=F,line=L,col=C::CODE field: message`
        (`level`: error, warning or notice)."""
        return self.github_line(d.location, d.render(where=""), level)

    def github_line(self, location, text: str, level: str = "error") -> str:
        """The workflow command `::LEVEL file=F,line=L,col=C::text` of a location (or none)."""
        props = []
        if location:
            loc = self.location_json(location)
            props.append(f"file={_gh_property(loc['file'])}")
            if loc["line"]:
                props.append(f"line={loc['line']}")
            if loc["column"]:
                props.append(f"col={loc['column']}")
        return f"::{level} {','.join(props)}::{_gh_data(text)}" if props else f"::{level}::{_gh_data(text)}"

    def annotation(self, file: str, message: str) -> str:
        """A GitHub Actions annotation about a whole file (a stale generated one, say)."""
        return f"::error file={_gh_property(file)}::{_gh_data(message)}"

    def envelope(self, code: int) -> str:
        """The one JSON object a run prints under --format json (schemas/output.schema.json)."""
        from charter import __version__

        body = {"charter": __version__, "command": self.command, "exit": code, "diagnostics": self.collected,
                "result": self.publish(self.result)}
        return json.dumps(body, indent=2, sort_keys=True) + "\n"


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def as_diagnostic(d) -> Diagnostic:
    """A Diagnostic from a Diagnostic or from a report's DiagnosticModel (a code, a location text)."""
    if isinstance(d, Diagnostic):
        return d
    from charter.diagnostics import Code, Location

    return Diagnostic(Code(d.code), d.field, d.message, d.expected, d.actual,
                      Location.parse(d.location) if d.location else None, d.offset)


_current = Output()


def current() -> Output:
    """This run's Output (charter.cli sets it; outside a command line: text, no colour)."""
    return _current


def start(output: Output) -> Output:
    global _current
    _current = output
    return output


def print_diagnostics(diagnostics, stream=None) -> None:
    """Print diagnostics as this run prints them (Note [One output per run])."""
    current().diagnostics(diagnostics, stream)


def wants_colour(choice: str, stream) -> bool:
    """--color: always, never, or auto (a terminal, NO_COLOR unset or empty, TERM not dumb)."""
    import os

    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def search_paths(paths: list[str], explicit: list[str] | None) -> list[str]:
    """Where referenced contracts are looked up: --search, else each path's enclosing `specs/`
    tree; outside one, the tree `charter freeze` writes (out/artifacts/x.yaml -> out/) or else the
    contract's own folder, never a folder above it (/tmp/x.yaml would search the whole disk).
    `[tool.charter] search` stands for --search when none is given."""
    from charter.config import active
    from charter.contract.paths import specs_tree

    if explicit:
        return list(explicit)
    if active().search:
        return list(active().search)
    found: list[str] = []
    for p in map(Path, paths):
        tree = specs_tree(p)
        if tree is None and p.is_file():
            folder = p.resolve().parent
            tree = folder.parent if folder.name in KIND_FOLDERS else folder
        found.append(str(tree or p.resolve()))
    return found


# The folders of a contract tree, one per kind (specs/ and what `charter freeze -o DIR` writes).
KIND_FOLDERS = ("models", "artifacts", "kernels", "provenance", "bundles")
