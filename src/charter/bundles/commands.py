"""`charter admit DIR --contract BUNDLE`: the bundle path of the admit command."""

from __future__ import annotations

import sys
from pathlib import Path


class _Refused(Exception):
    """The command stops with this exit code; what went wrong is printed already."""


def run_admit_bundle(args) -> int:
    """Admit the folder `args.artifact` against the bundle contract `args.contract`; with `--engine cpp`
    each weight file's own stages are the generated C++ checker's (Note [Bundle stages]). The plan
    and checkers come from the bundle's receipt when it vouches for them (Note [Vouched bundle])."""
    from charter.bundles.admit import admit_bundle
    from charter.bundles.vouched import vouched_bundle
    from charter.console import EXIT_OK, EXIT_REJECTED, search_paths

    search = search_paths([args.contract], args.search)
    try:
        vouched = vouched_bundle(Path(args.contract), search, args.engine)
        cpp_key = _cpp_from_receipt(vouched.cpp) if vouched is not None and vouched.cpp else None
        if vouched is not None and (args.engine != "cpp" or cpp_key is not None):
            plan, checker, origin = vouched.plan, vouched.checker, vouched.origin
            if cpp_key is not None:
                origin += f"; weight files: c++ ({cpp_key}, on the receipt's word)"
        else:
            plan, checker, origin, cpp_key = _loaded(args, search)
    except _Refused as exc:
        return exc.args[0]
    if args.verbose:
        print(f"checker: {origin}", file=sys.stderr)
    report = admit_bundle(Path(args.artifact), plan, checker, verify_payload=args.verify_payload,
                          require_status=args.require_status, cpp_key=cpp_key)
    from charter.admission.commands import show_report

    show_report(report)
    return EXIT_OK if report.admitted else EXIT_REJECTED


def _cpp_from_receipt(cpp: dict) -> str | None:
    """The key of the receipt's C++ checker once it is loaded and current, else None."""
    from charter.engines import cpp as engine
    from charter.engines.vouched import vouched_library

    try:
        if "library" in cpp:
            library = vouched_library(cpp)
            if library is None:
                return None
            engine.load_library(library[1])
        else:
            engine.require_current(cpp["key"], cpp["inputs"])
    except (engine.EngineUnavailable, KeyError, TypeError):
        return None
    return cpp["key"]


def _loaded(args, search: list[str]):
    """The plan and checkers of the bundle contract as loaded with `search`, with a receipt left for
    the next admission: (plan, Python checker, origin, C++ key or None)."""
    from charter.bundles.vouched import write_bundle_receipt
    from charter.codegen.common.inputs import checker_inputs
    from charter.console import EXIT_USAGE, print_diagnostics
    from charter.contract.contractset import load_set
    from charter.engines import choose, cpp

    cs = load_set([args.contract], search)
    if cs.diagnostics:
        print_diagnostics(cs.diagnostics)
        raise _Refused(EXIT_USAGE)
    bundles = [b for b in cs.bundles.values() if Path(cs.contracts[b.id].path).resolve() == Path(args.contract).resolve()]
    if len(bundles) != 1:
        print(f"charter: {args.artifact} is a folder, and {args.contract} is not a bundle contract (a folder is "
              "admitted against one)", file=sys.stderr)
        raise _Refused(EXIT_USAGE)
    plan = bundles[0]
    checker, origin = choose.python_checker(cs, plan.artifact.id, Path(args.generated))
    cpp_key, receipt_cpp = None, None
    if args.engine == "cpp":
        from charter.engines.vouched import cache_dir, file_sha256

        try:
            cpp_key, engine, built = choose.cpp_checker(cs, plan.artifact, cache_dir() / "checkers")
        except cpp.EngineUnavailable as exc:
            print(f"charter: {exc}", file=sys.stderr)
            raise _Refused(EXIT_USAGE) from None
        origin = f"{origin}; weight files: {engine}"
        receipt_cpp = {"key": cpp_key, "library": str(built), "sha256": file_sha256(built)} if built else \
            {"key": cpp_key, "inputs": checker_inputs(cs, plan.artifact)}
    files = [c.path for c in cs.contracts.values() if c.path is not None]
    write_bundle_receipt(Path(args.contract), files, search, plan, Path(checker.__file__), receipt_cpp)
    return plan, checker, origin, cpp_key
