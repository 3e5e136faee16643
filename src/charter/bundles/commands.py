"""`charter admit DIR --contract BUNDLE`: the bundle path of the admit command."""

from __future__ import annotations

import sys
from pathlib import Path


def run_admit_bundle(args) -> int:
    """Admit the folder `args.artifact` against the bundle contract `args.contract`; with `--engine cpp`
    each weight file's own stages are the generated C++ checker's (Note [Bundle stages])."""
    from charter.bundles.admit import admit_bundle
    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, print_diagnostics, search_paths
    from charter.contract.contractset import load_set
    from charter.engines import choose

    search = search_paths([args.contract], args.search)
    cs = load_set([args.contract], search)
    if cs.diagnostics:
        print_diagnostics(cs.diagnostics, "text")
        return EXIT_USAGE
    bundles = [b for b in cs.bundles.values() if Path(cs.contracts[b.id].path).resolve() == Path(args.contract).resolve()]
    if len(bundles) != 1:
        print(f"charter: {args.artifact} is a folder, and {args.contract} is not a bundle contract (a folder is "
              "admitted against one)", file=sys.stderr)
        return EXIT_USAGE
    plan = bundles[0]
    checker, origin = choose.python_checker(cs, plan.artifact.id, Path(args.generated))
    cpp_key = None
    if args.engine == "cpp":
        from charter.engines import cpp
        from charter.engines.vouched import cache_dir

        try:
            cpp_key, engine, _ = choose.cpp_checker(cs, plan.artifact, cache_dir() / "checkers")
        except cpp.EngineUnavailable as exc:
            print(f"charter: {exc}", file=sys.stderr)
            return EXIT_USAGE
        origin = f"{origin}; weight files: {engine}"
    if args.verbose:
        print(f"checker: {origin}", file=sys.stderr)
    report = admit_bundle(Path(args.artifact), plan, checker, verify_payload=args.verify_payload,
                          require_status=args.require_status, cpp_key=cpp_key)
    print(report.to_json() if args.json else report.render(), end="" if args.json else "\n")
    return EXIT_OK if report.admitted else EXIT_REJECTED
