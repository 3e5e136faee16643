"""`charter generate`: render checkers (and fixture labels) from contracts."""

from __future__ import annotations

import sys
from pathlib import Path


def register(sub) -> None:
    from charter.console import folder_arg, path_arg

    p = sub.add_parser("generate", help="generate checkers from contracts (or --check that they are current)")
    p.add_argument("paths", nargs="*", default=None, type=path_arg,
                   help="spec files or directories (default: specs; [tool.charter] specs)")
    p.add_argument("-o", "--output", type=folder_arg,
                   help="output directory (default: generated; [tool.charter] generated)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every stale or missing file")
    p.set_defaults(func=run_generate, default_paths=True)


def run_generate(args) -> int:
    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, current, print_diagnostics, search_paths
    from charter.contract.paths import shown
    from charter.codegen.driver import generate
    from charter.contract.contractset import load_set

    cs = load_set(args.paths, search_paths(args.paths, None))
    if cs.diagnostics:
        print_diagnostics(cs.diagnostics)
        return EXIT_USAGE
    out = Path(args.output)
    try:
        result = generate(cs, out, check=args.check)
    except ValueError as exc:  # a generator refusing a contract (BindingError, MetalError): located text
        print(f"charter: {exc}", file=sys.stderr)
        return EXIT_USAGE
    shell = current()
    if args.check:
        shell.result = {"current": not result.stale, "stale": [shown(out / item) for item in result.stale],
                        "written": []}
        for item in result.stale:
            shell.say(shell.annotation(shown(out / item), "stale: run `charter generate`")
                      if shell.format == "github" else f"stale: {shown(out / item)}")
        if result.stale:
            shell.info(f"{len(result.stale)} generated file(s) out of date: run `charter generate`")
            return EXIT_REJECTED
        shell.verdict(f"ok: generated code in {shown(out)} is up to date", True)
        return EXIT_OK
    shell.result = {"current": True, "stale": [], "written": [shown(out / item) for item in result.written]}
    for item in result.written:
        shell.say(f"wrote {shown(out / item)}")
    if not result.written:
        shell.verdict(f"ok: generated code in {shown(out)} is up to date", True)
    return EXIT_OK
