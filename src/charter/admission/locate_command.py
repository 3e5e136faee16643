"""`charter locate`: the path of the real artifact a contract pins, after checking it."""

from __future__ import annotations

import sys
from pathlib import Path


def register(sub) -> None:
    from charter.console import path_arg

    p = sub.add_parser("locate", help="print the path of the real artifact a contract pins (source), after checking "
                                      "its size and sha256")
    p.add_argument("contract", type=path_arg, help="artifact contract (YAML)")
    p.set_defaults(func=run_locate)


def run_locate(args) -> int:
    from charter.admission.locate import locate
    from charter.console import EXIT_OK, EXIT_USAGE, current, print_diagnostics
    from charter.diagnostics import CharterError
    from charter.contract.load import load_contract
    from charter.contract.models import ArtifactContract

    loaded = load_contract(args.contract)
    if not isinstance(loaded.contract, ArtifactContract) or loaded.contract.source is None:
        print(f"charter: {args.contract} is not an artifact contract with a pinned source", file=sys.stderr)
        return EXIT_USAGE
    try:
        path = locate(loaded.contract.source, Path(args.contract).parent, digest=True)
    except CharterError as exc:
        print_diagnostics(exc.diagnostics)
        return EXIT_USAGE
    current().result = {"path": str(path)}
    current().say(str(path))
    return EXIT_OK
