"""`charter admit`: adapts its arguments to the admission engines and the report to exit codes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from charter.contract.paths import PinnedSource
from charter.language import STATUSES


def register(sub) -> None:
    from charter.console import path_arg

    p = sub.add_parser("admit", help="admit an artifact against its contract (ordered stages, one diagnostic)")
    p.add_argument("artifact", nargs="?", type=path_arg, help="GGUF or safetensors file, or a bundle folder (default: the contract's pinned source)")
    p.add_argument("--contract", required=True, type=path_arg, help="artifact contract, bundle contract for a folder, or regions contract (YAML)")
    p.add_argument("--search", action="append", metavar="DIR", type=path_arg, help="where the model contract is found")
    p.add_argument("--json", dest="format", action="store_const", const="json", default=argparse.SUPPRESS,
                   help="the old spelling of --format json")
    p.add_argument("--require-status", choices=STATUSES, help="reject contracts whose status is below this")
    p.add_argument("--verify-payload", action="store_true", help="also run the payload stage (reads tensor bytes)")
    p.add_argument("--generated", type=path_arg,
                   help="committed generated code (default: generated; [tool.charter] generated)")
    p.add_argument("--engine", choices=("python", "cpp"),
                   help="checker implementation: the generated Python checker, or the generated C++ one: "
                        "compiled into charter._native, or, for a contract it does not hold, compiled into a "
                        "cached checker library (docs/native.md); default python, [tool.charter] engine")
    p.set_defaults(func=run_admit)


class Chosen(NamedTuple):
    """What one admission runs: the Python checker, where the pinned artifact is, and for
    `--engine cpp` the C++ checker's key (None for the Python engine)."""

    checker: ModuleType
    origin: str
    source: PinnedSource | None
    contract_dir: Path
    cpp_key: str | None = None
    cpp_origin: str | None = None


def run_admit(args) -> int:
    from charter.admission.locate import locate
    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, current, not_a_file, print_diagnostics
    from charter.diagnostics import CharterError
    from charter.engines import Options, python
    from charter.engines.options import EngineUnavailable

    if args.artifact and Path(args.artifact).is_dir():
        from charter.bundles.commands import run_admit_bundle

        return run_admit_bundle(args)
    from charter.regions import is_regions_contract

    if is_regions_contract(args.contract):
        from charter.regions.commands import run_admit_regions

        return run_admit_regions(args)
    try:
        chosen = _vouched(args) or _loaded(args)
    except _Refused as exc:
        return exc.args[0]
    except EngineUnavailable as exc:
        print(f"charter: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.artifact:
        path = Path(args.artifact)
        if not path.is_file():
            print(f"charter: {path}: {not_a_file(path)}", file=sys.stderr)
            return EXIT_USAGE
    elif chosen.source is not None:
        try:
            path = locate(chosen.source, chosen.contract_dir, digest=args.verify_payload)
        except CharterError as exc:
            print_diagnostics(exc.diagnostics)
            return EXIT_USAGE
    else:
        print("charter: name the artifact file (the contract pins no source)", file=sys.stderr)
        return EXIT_USAGE
    options = Options(require_status=args.require_status, verify_payload=args.verify_payload)
    if args.verbose:
        print(f"checker: {chosen.origin}", file=sys.stderr)
    if chosen.cpp_key is not None:
        from charter.engines import cpp

        try:
            report = cpp.admit(path, chosen.cpp_key, options, checker=chosen.checker)
        except EngineUnavailable as exc:
            print(f"charter: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if args.verbose:
            print(f"engine: {chosen.cpp_origin}", file=sys.stderr)
    else:
        report = python.admit(path, chosen.checker, options)
    show_report(report)
    return EXIT_OK if report.admitted else EXIT_REJECTED


def show_report(report) -> None:
    """An admission report (or a bundle's) as this run prints it: the verdict line; under --format
    github a rejection's diagnostic also as an annotation; under --format json the report is the
    result and its diagnostic the envelope's."""
    from charter.console import current

    out = current()
    out.result = report.to_dict()
    if not report.admitted and out.format != "text":
        out.diagnostics([report.diagnostic])
    if out.format != "json":
        out.verdict(report.render(out.place), report.admitted)


class _Refused(Exception):
    """The command stops with this exit code; what went wrong is printed already."""


def _vouched(args) -> Chosen | None:
    """The checkers the manifest or a receipt vouches for (Note [Vouched checker]): no contract is
    parsed. None when neither does, or when `--engine cpp` finds no current C++ checker that way."""
    from charter.console import search_paths
    from charter.engines.vouched import cached_checker, vouched_checker

    contract = Path(args.contract)
    search = search_paths([args.contract], args.search)
    found = vouched_checker(contract, Path(args.generated), search, explicit_search=bool(args.search))
    if found is None:
        return None
    source = PinnedSource(**found.module.SOURCE) if found.module.SOURCE is not None else None
    chosen = Chosen(found.module, found.origin, source, contract.parent)
    if args.engine != "cpp":
        return chosen
    from charter.engines import cpp

    try:
        cpp.require_current(found.module.CONTRACT_ID, found.inputs)
        return chosen._replace(cpp_key=found.module.CONTRACT_ID, cpp_origin="c++ (charter._native)")
    except cpp.EngineUnavailable:
        pass  # not compiled in, or from other bytes: a receipt may name a checker library
    receipt = found if found.library else cached_checker(contract, search)
    if receipt is None or receipt.library is None:
        return None
    key, built = receipt.library
    try:
        cpp.load_library(built)
    except cpp.EngineUnavailable:
        return None
    return chosen._replace(cpp_key=key, cpp_origin=f"c++ (cached in {built}; its receipt vouches for it)")


def _loaded(args) -> Chosen:
    """The checkers of the contract as loaded with its search path (Note [Choosing a checker])."""
    from charter.console import EXIT_USAGE, print_diagnostics, search_paths
    from charter.codegen.common.inputs import checker_inputs
    from charter.contract.contractset import load_set
    from charter.contract.models import ArtifactContract
    from charter.engines import choose
    from charter.engines.vouched import cache_dir, write_receipt

    search = search_paths([args.contract], args.search)
    cs = load_set([args.contract], search)
    if cs.diagnostics:
        print_diagnostics(cs.diagnostics)
        raise _Refused(EXIT_USAGE)
    artifacts = [c for c in cs.contracts.values()
                 if isinstance(c.contract, ArtifactContract) and c.id in cs.artifacts
                 and c.path and c.path.resolve() == Path(args.contract).resolve()]
    if len(artifacts) != 1:
        bundle = any(Path(cs.contracts[b].path).resolve() == Path(args.contract).resolve() for b in cs.bundles)
        what = "a bundle contract: name the bundle folder to admit" if bundle else "not an artifact contract"
        print(f"charter: {args.contract} is {what}", file=sys.stderr)
        raise _Refused(EXIT_USAGE)
    loaded = artifacts[0]
    plan = cs.artifacts[loaded.id]
    checker, origin = choose.python_checker(cs, loaded.id, Path(args.generated))
    # The contract's directory as given (as _vouched has it), so a source relative to the contract
    # prints the same whether or not a receipt vouched for the checker.
    chosen = Chosen(checker, origin, plan.source, Path(args.contract).parent)
    library = None
    if args.engine == "cpp":
        key, engine, built = choose.cpp_checker(cs, plan, cache_dir() / "checkers")
        chosen = chosen._replace(cpp_key=key, cpp_origin=engine)
        library = (key, built) if built is not None else None
    model = cs.contracts[plan.model].path
    if model is not None and (library or Path(checker.__file__).parent == cache_dir()):
        # made here, not committed: the next admission of these bytes can skip all of this
        write_receipt(loaded.path, model, checker_inputs(cs, plan), Path(checker.__file__), search, library)
    return chosen
