"""`charter generate`: render checkers (and fixture labels) from contracts."""

from __future__ import annotations

import sys
from pathlib import Path


def register(sub) -> None:
    from charter.console import path_arg

    p = sub.add_parser("generate", help="generate checkers from contracts (or --check that they are current)")
    p.add_argument("paths", nargs="*", default=["specs"], type=path_arg,
                   help="spec files or directories (default: specs)")
    p.add_argument("-o", "--output", default="generated", type=path_arg, help="output directory (default: generated)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every stale or missing file")
    p.set_defaults(func=run_generate)


def run_generate(args) -> int:
    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, print_diagnostics, search_paths
    from charter.codegen.driver import generate
    from charter.contract.contractset import load_set

    cs = load_set(args.paths, search_paths(args.paths, None))
    if cs.diagnostics:
        print_diagnostics(cs.diagnostics, "text")
        return EXIT_USAGE
    out = Path(args.output)
    try:
        result = generate(cs, out, check=args.check)
    except ValueError as exc:  # a generator refusing a contract (BindingError, MetalError): located text
        print(f"charter: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.check:
        for item in result.stale:
            print(f"stale: {out / item}")
        if result.stale:
            print(f"{len(result.stale)} generated file(s) out of date: run `charter generate`", file=sys.stderr)
            return EXIT_REJECTED
        print(f"ok: generated code in {out} is up to date")
        return EXIT_OK
    for item in result.written:
        print(f"wrote {out / item}")
    if not result.written:
        print(f"ok: generated code in {out} is up to date")
    return EXIT_OK
