"""The `charter` command line: the parser, `check` and `schema`, and the mapping of every failure
to an exit code (charter.console states the codes; docs/cli.md documents them)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import threading
from pathlib import Path

from charter import __version__
from charter.console import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    path_arg,
    print_diagnostics,
    search_paths,
)
from charter.diagnostics import CharterError


def cmd_check(args: argparse.Namespace) -> int:
    from charter.contract.contractset import load_set

    cs = load_set(args.paths, search_paths(args.paths, args.search))
    if cs.diagnostics:
        print_diagnostics(cs.diagnostics, args.format)
        if args.format == "text":
            n = len(cs.diagnostics)
            print(f"{n} error{'s' if n != 1 else ''} in contracts", file=sys.stderr)
        return EXIT_USAGE
    kinds: dict[str, int] = {}
    for c in cs.contracts.values():
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    summary = ", ".join(f"{n} {k}{'s' if n != 1 and not k.endswith('s') else ''}" for k, n in sorted(kinds.items()))
    if args.format == "json":
        print(json.dumps({"valid": True, "contracts": sorted(cs.contracts)}, indent=2))
    else:
        print(f"ok: {len(cs.contracts)} contracts valid ({summary})")
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from charter.contract.schema import write_schemas

    changed = write_schemas(Path(args.output))
    for p in changed:
        print(f"wrote {p}")
    if not changed:
        print(f"schemas in {args.output} are up to date")
    return EXIT_OK


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or, given the command the user named, of that one alone (its
    module is the only one imported: `charter admit` pays for no other command's set-up)."""
    parser = argparse.ArgumentParser(
        prog="charter",
        description="Contracts that make a model artifact fail closed.",
        epilog="Exit codes: 0 ok, 1 rejected/stale/survivor, 2 usage or contract error, 3 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"charter {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("check", help="validate contracts (YAML, schema, expressions, references)")
    p.add_argument("paths", nargs="*", default=["specs"], type=path_arg,
                   help="spec files or directories (default: specs)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--search", action="append", metavar="DIR", type=path_arg,
                   help="where referenced contracts are found (default: the enclosing specs/ directory)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("schema", help="write the JSON Schema of each contract kind")
    p.add_argument("-o", "--output", default="schemas", type=path_arg, help="output directory (default: schemas)")
    p.set_defaults(func=cmd_schema)

    modules = [COMMAND_MODULES[command]] if command in COMMAND_MODULES else COMMAND_MODULES.values()
    for module in modules:
        importlib.import_module(module).register(sub)
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
}


class Terminated(BaseException):
    """A termination signal, turned into an exception so that temporary files are cleaned up."""


def _terminate(signum, _frame):
    raise Terminated(signum)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _terminate)
    try:
        return args.func(args)
    except Terminated as exc:
        print(f"charter: terminated by signal {exc.args[0]}", file=sys.stderr)
        return 128 + exc.args[0]
    except CharterError as exc:
        print_diagnostics(exc.diagnostics, getattr(args, "format", "text"))
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
