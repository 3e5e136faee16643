"""`charter admit`: adapts its arguments to the admission engines and the report to exit codes."""

from __future__ import annotations

import sys
from pathlib import Path

from charter.language import STATUSES


def register(sub) -> None:
    from charter.console import path_arg

    p = sub.add_parser("admit", help="admit an artifact against its contract (ordered stages, one diagnostic)")
    p.add_argument("artifact", nargs="?", type=path_arg, help="GGUF or safetensors file (default: the contract's pinned source)")
    p.add_argument("--contract", required=True, type=path_arg, help="artifact contract (YAML)")
    p.add_argument("--search", action="append", metavar="DIR", type=path_arg, help="where the model contract is found")
    p.add_argument("--json", action="store_true", help="print the AdmissionReport as JSON")
    p.add_argument("--require-status", choices=STATUSES, help="reject contracts whose status is below this")
    p.add_argument("--verify-payload", action="store_true", help="also run the payload stage (reads tensor bytes)")
    p.add_argument("--generated", default="generated", type=path_arg, help="committed generated code (default: generated)")
    p.add_argument("--engine", choices=("python", "cpp"), default="python",
                   help="checker implementation: the generated Python checker, or the generated C++ one: "
                        "compiled into charter._native, or, for a contract it does not hold, compiled into a "
                        "cached checker library (docs/native.md)")
    p.add_argument("-v", "--verbose", action="store_true", help="say which checker ran")
    p.set_defaults(func=run_admit, format="text")


def run_admit(args) -> int:
    from charter.admission.locate import locate
    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, not_a_file, print_diagnostics, search_paths
    from charter.diagnostics import CharterError
    from charter.engines import Options, choose, cpp, python
    from charter.contract.contractset import load_set
    from charter.contract.models import ArtifactContract

    cs = load_set([args.contract], search_paths([args.contract], args.search))
    if cs.diagnostics:
        print_diagnostics(cs.diagnostics, "text")
        return EXIT_USAGE
    artifacts = [c for c in cs.contracts.values()
                 if isinstance(c.contract, ArtifactContract) and c.id in cs.artifacts
                 and c.path and c.path.resolve() == Path(args.contract).resolve()]
    if len(artifacts) != 1:
        print(f"charter: {args.contract} is not an artifact contract", file=sys.stderr)
        return EXIT_USAGE
    loaded = artifacts[0]
    if args.artifact:
        path = Path(args.artifact)
        if not path.is_file():
            print(f"charter: {path}: {not_a_file(path)}", file=sys.stderr)
            return EXIT_USAGE
    elif loaded.contract.source is not None:
        try:
            path = locate(loaded.contract.source, loaded.path.parent, digest=args.verify_payload)
        except CharterError as exc:
            print_diagnostics(exc.diagnostics, "text")
            return EXIT_USAGE
    else:
        print("charter: name the artifact file (the contract pins no source)", file=sys.stderr)
        return EXIT_USAGE
    options = Options(require_status=args.require_status, verify_payload=args.verify_payload)
    checker, origin = choose.python_checker(cs, loaded.id, Path(args.generated))
    if args.verbose:
        print(f"checker: {origin}", file=sys.stderr)
    if args.engine == "cpp":
        try:
            key, engine = choose.cpp_checker(cs, cs.artifacts[loaded.id], choose.cache_dir() / "checkers")
            report = cpp.admit(path, key, options, checker=checker)
        except cpp.EngineUnavailable as exc:
            print(f"charter: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if args.verbose:
            print(f"engine: {engine}", file=sys.stderr)
    else:
        report = python.admit(path, checker, options)
    print(report.to_json() if args.json else report.render(), end="" if args.json else "\n")
    return EXIT_OK if report.admitted else EXIT_REJECTED
