"""The `charter` command line: the parser, `check` and `schema`, and the mapping of every failure
to an exit code (charter.console states the codes; docs/cli.md documents them)."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import signal
import sys
import threading
from pathlib import Path

from charter import __version__
from charter.config import FORMATS, Config, ConfigError, activate, active, discover
from charter.console import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    Output,
    current,
    folder_arg,
    path_arg,
    search_paths,
    start,
    wants_colour,
)
from charter.contract.paths import shown
from charter.docs import docs_folder, schemas_folder
from charter.diagnostics import CharterError


def cmd_check(args: argparse.Namespace) -> int:
    from charter.contract.contractset import load_set

    out = current()
    cs = load_set(args.paths, search_paths(args.paths, args.search))
    if out.contract_errors(cs):
        return EXIT_USAGE
    kinds: dict[str, int] = {}
    for c in cs.contracts.values():
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    summary = ", ".join(f"{n} {k}{'s' if n != 1 and not k.endswith('s') else ''}" for k, n in sorted(kinds.items()))
    out.verdict(f"ok: {len(cs.contracts)} contracts valid ({summary})", True)
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from charter.contract.schema import write_schemas

    out = current()
    changed = write_schemas(Path(args.output))
    out.result = {"written": [shown(p) for p in changed]}
    for p in changed:
        out.say(f"wrote {shown(p)}")
    if not changed:
        out.say(f"schemas in {shown(args.output)} are up to date")
    return EXIT_OK


def add_common_options(p: argparse.ArgumentParser, top: bool = False) -> None:
    """The options every command takes, before or after its name (Note [One output per run]);
    after it they are SUPPRESSed when absent, so they never undo the ones given before it."""
    default = (lambda value: value) if top else (lambda value: argparse.SUPPRESS)
    group = p.add_argument_group("output options (any command)")
    group.add_argument("--format", choices=FORMATS, default=default(None),
                       help="text (default; [tool.charter] format), json (one object, schemas/output.schema.json), "
                            "or github (diagnostics as GitHub Actions annotations)")
    group.add_argument("-q", "--quiet", action="store_true", default=default(False),
                       help="no progress or context lines on stderr")
    group.add_argument("-v", "--verbose", action="store_true", default=default(False),
                       help="say more (admit: which checker ran)")
    group.add_argument("--color", choices=("auto", "always", "never"), default=default("auto"),
                       help="colour text output: auto (a terminal, unless NO_COLOR is set), always, never")


def _with_common_options(parser: argparse.ArgumentParser) -> None:
    """Every command gets the shared options and an epilog saying where the docs/ pages its help
    names are (installed with charter, charter.docs)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                if any(not isinstance(a, (argparse._SubParsersAction, argparse._HelpAction)) for a in sub._actions):
                    add_common_options(sub)  # a command with options of its own (mutate, beside mutate merge)
                if sub.epilog is None:
                    sub.epilog = (f"docs/ pages named here are installed in {docs_folder()}; "
                                  f"this command's JSON: {schemas_folder() / 'output.schema.json'}")
                _with_common_options(sub)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or, given the command the user named, of that one alone (its
    module is the only one imported: `charter admit` pays for no other command's set-up)."""
    parser = argparse.ArgumentParser(
        prog="charter",
        description="Contracts that make a model artifact fail closed.",
        # Raw, so argparse never wraps the docs path (it breaks lines at a hyphen of the path).
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 ok, 1 rejected/stale/survivor, 2 usage or contract error, 3 internal error.\n"
               "Settings: [tool.charter] in pyproject.toml.\n"
               f"Every docs/ page named in these help texts is installed with charter:\n  {docs_folder()}",
    )
    parser.add_argument("--version", action="version", version=f"charter {__version__}")
    add_common_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("check", help="validate contracts (YAML, schema, expressions, references)")
    p.add_argument("paths", nargs="*", default=None, type=path_arg,
                   help="spec files or directories (default: specs; [tool.charter] specs)")
    p.add_argument("--search", action="append", metavar="DIR", type=path_arg,
                   help="where referenced contracts are found (default: the enclosing specs/ directory; "
                        "[tool.charter] search)")
    p.set_defaults(func=cmd_check, default_paths=True)

    p = sub.add_parser("schema", help="write the JSON Schema of each contract kind and of every command's JSON")
    p.add_argument("-o", "--output", default="schemas", type=folder_arg, help="output directory (default: schemas)")
    p.set_defaults(func=cmd_schema)

    modules = [COMMAND_MODULES[command]] if command in COMMAND_MODULES else COMMAND_MODULES.values()
    for module in modules:
        importlib.import_module(module).register(sub)
    _with_common_options(parser)
    return parser


# The commands that modules add, by name: each module has `register(subparsers)`, which adds the
# command of that name, and keeps its imports lazy (tests/test_cli.py checks the names).
COMMAND_MODULES = {
    "admit": "charter.admission.commands",
    "locate": "charter.admission.locate_command",
    "freeze": "charter.freeze.commands",
    "generate": "charter.codegen.commands",
    "fixtures": "charter.provenance.commands",
    "mutate": "charter.mutation.commands",
    "check-changed": "charter.precommit",
    "diff": "charter.diff.commands",
}


class Terminated(BaseException):
    """A termination signal, turned into an exception so that temporary files are cleaned up."""


def _terminate(signum, _frame):
    raise Terminated(signum)


def configure(args: argparse.Namespace, config: Config) -> None:
    """Fill what the command line left out from `[tool.charter]` (the command line wins)."""
    if getattr(args, "default_paths", False) and not args.paths:
        args.paths = [config.specs]
    for name, value in (("search", list(config.search) or None), ("generated", config.generated),
                        ("require_status", config.require_status), ("jobs", config.jobs)):
        if hasattr(args, name) and getattr(args, name) is None:
            setattr(args, name, value)
    if hasattr(args, "engine") and args.engine is None:
        args.engine = config.battery_engine if args.command == "mutate" else config.engine
    if hasattr(args, "output") and args.output is None and args.command == "generate":
        args.output = config.generated
    if args.format is None:
        args.format = config.format


def _anchors(args: argparse.Namespace) -> list[str]:
    """The paths a command was given: the project roots its diagnostics' spec names resolve against."""
    found: list[str] = []
    for name in ("contract", "artifact", "paths", "files"):
        value = getattr(args, name, None)
        found.extend(value if isinstance(value, list) else [value] if value else [])
    return found or ["."]


def _command_named(argv: list[str]) -> str | None:
    """The command among `argv`, past the global options before it (`--format json admit ...`)."""
    valued = {"--format", "--color"}
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a in valued:
            skip = True
        elif not a.startswith("-"):
            return a
    return None


def entry() -> None:
    """The `charter` command and `python -m charter`: main() in a process of its own. Once its
    output is flushed, the process ends without tearing the interpreter down (freeing every module
    and object costs a cold `charter admit` about 5 ms of its 90: bench/admit_cold.py), unless
    something still has work to do at exit (an atexit handler, another thread)."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe: the interpreter's own exit reports it, as for any command
        sys.exit(code)
    if getattr(atexit, "_ncallbacks", lambda: 1)() == 0 and threading.active_count() == 1:
        os._exit(code)
    sys.exit(code)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(_command_named(argv))
    args = parser.parse_args(argv)
    try:
        config = discover()
    except ConfigError as exc:
        parser.error(str(exc))
    previous = active(), current()
    activate(config)
    try:
        return _main(parser, args, config)
    finally:  # in process (tests, the pytest plugin), the next run starts from the defaults
        activate(previous[0])
        start(previous[1])


def _main(parser: argparse.ArgumentParser, args: argparse.Namespace, config: Config) -> int:
    configure(args, config)
    to_stdout = [name for name in getattr(args, "stdout_files", ()) if getattr(args, name, None) == "-"]
    if len(to_stdout) > 1 or (to_stdout and args.format == "json"):
        parser.error("only one output can be standard output: " + ", ".join(
            [f"--{n.replace('_', '-')} -" for n in to_stdout] + (["--format json"] if args.format == "json" else [])))
    command = " ".join(filter(None, (args.command, getattr(args, "fixtures_command", None))))
    out = start(Output(command, args.format, quiet=args.quiet, verbose=args.verbose,
                       colour=args.format != "json" and wants_colour(args.color, sys.stdout),
                       anchors=_anchors(args), stdout=sys.stdout))
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _terminate)
    code = _run(args) if args.format != "json" and not to_stdout else _run_beside_stdout(args)
    if args.format == "json" and code < 128:  # not after a signal or Ctrl-C
        out.emit(out.envelope(code))
    return code


def _run_beside_stdout(args: argparse.Namespace) -> int:
    """Run the command with its human lines on stderr: stdout is the JSON or the report (`-`)."""
    with contextlib.redirect_stdout(sys.stderr):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        return args.func(args)
    except Terminated as exc:
        print(f"charter: terminated by signal {exc.args[0]}", file=sys.stderr)
        return 128 + exc.args[0]
    except CharterError as exc:
        current().diagnostics(exc.diagnostics)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("charter: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug in charter, never bad input: say so, without a traceback
        if os.environ.get("CHARTER_DEBUG"):
            import traceback

            traceback.print_exc()
        print(f"charter: internal error: {type(exc).__name__}: {exc} (set CHARTER_DEBUG=1 for details)",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
