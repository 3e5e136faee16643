"""`charter fixtures verify|capture`: provenance-labelled fixtures (docs/provenance.md).

Exit codes: 0 every fixture verified (or captured), 1 a fixture failed (a FIXTURE_* diagnostic),
2 usage or contract error (the specs do not load, or none of them is a provenance contract).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub) -> None:
    from charter.console import path_arg

    p = sub.add_parser("fixtures", help="verify or capture provenance-labelled fixture files")
    fsub = p.add_subparsers(dest="fixtures_command", metavar="ACTION")
    fsub.required = True

    v = fsub.add_parser("verify", help="check fixture files against their provenance labels (offline)")
    v.add_argument("paths", nargs="+", metavar="SPEC", type=path_arg, help="provenance spec files or directories")
    _common(v)
    v.set_defaults(func=cmd_verify)

    c = fsub.add_parser("capture", help="run each array's producer and write the fixture file")
    c.add_argument("paths", nargs="+", metavar="SPEC", type=path_arg, help="provenance spec files or directories")
    _common(c)
    c.add_argument("--update-digests", action="store_true",
                   help="accept new digests: rewrite the sha256 values in the spec (comments kept)")
    c.add_argument("-o", "--output", metavar="FILE", type=path_arg,
                   help="write the .npz here instead of next to the spec (one spec only)")
    c.set_defaults(func=cmd_capture)


def _common(p: argparse.ArgumentParser) -> None:
    from charter.console import path_arg

    p.add_argument("--search", action="append", metavar="DIR", type=path_arg,
                   help="where referenced model and artifact contracts are found (default: the enclosing specs/)")


def _load(args, *, capturing: bool):
    """The provenance contracts named by `args.paths`, or an exit code 2 with diagnostics printed."""
    from charter.console import EXIT_USAGE, current, print_diagnostics, search_paths
    from charter.diagnostics import Code
    from charter.contract.contractset import discover, load_set

    cs = load_set(args.paths, search_paths(args.paths, args.search))
    primary = {p.resolve() for p in discover(args.paths)}
    chosen = [lc for lc in cs.of_kind("provenance") + cs.of_kind("text")  # text: charter.text.verify
              if lc.path is not None and lc.path.resolve() in primary]
    diagnostics = cs.diagnostics
    if capturing:  # the fixture file is what capture makes: its absence is not an error here
        diagnostics = [d for d in diagnostics if not (d.code is Code.REF_DANGLING and d.field == "fixture")]
    if diagnostics:
        print_diagnostics(diagnostics)
        current().info(f"{len(diagnostics)} error{'s' if len(diagnostics) != 1 else ''} in contracts")
        return cs, None, EXIT_USAGE
    if not chosen:
        print("charter: no provenance contracts (nor text contracts) among the given specs", file=sys.stderr)
        return cs, None, EXIT_USAGE
    return cs, sorted(chosen, key=lambda lc: lc.doc.file), 0


def _report(diagnostics, args, payload: dict, ok_line: str, fail_line: str) -> int:
    from charter.console import EXIT_OK, EXIT_REJECTED, current

    out = current()
    out.result = payload
    out.diagnostics(diagnostics)
    if diagnostics:
        out.info(fail_line)
    else:
        out.verdict(ok_line, True)
    return EXIT_REJECTED if diagnostics else EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    from charter.provenance.verify import verify

    cs, chosen, code = _load(args, capturing=False)
    if chosen is None:
        return code
    from charter.text.commands import text_results

    texts, chosen = text_results(chosen, cs, capture=False)
    results = [verify(lc, cs) for lc in chosen]
    diagnostics = [d for r in results + texts for d in r.diagnostics]
    failed = sum(1 for r in results if r.diagnostics)
    arrays = sum(r.arrays for r in results)
    n = len(results)
    payload = {"verified": not diagnostics, "fixtures": {r.contract_id: not r.diagnostics for r in results},
               "text": {r.contract_id: not r.diagnostics for r in texts}}
    failed += sum(1 for r in texts if r.diagnostics)
    n += len(texts)
    return _report(diagnostics, args, payload,
                   f"ok: {n} fixture{'s' if n != 1 else ''} verified ({arrays} arrays"
                   + (f"; {sum(r.cases for r in texts)} text cases, {sum(r.crosschecked for r in texts)} "
                      f"cross-checked, {sum(r.findings for r in texts)} documented findings" if texts else "") + ")",
                   f"{len(diagnostics)} problem{'s' if len(diagnostics) != 1 else ''} "
                   f"in {failed} of {n} fixture{'s' if n != 1 else ''}")


def cmd_capture(args: argparse.Namespace) -> int:
    from charter.console import EXIT_USAGE, current
    from charter.provenance.capture import capture
    from charter.contract.paths import shown

    cs, chosen, code = _load(args, capturing=True)
    if chosen is None:
        return code
    if args.output == "-":
        print("charter: --output -: a fixture is a binary .npz file; name a file to write it to", file=sys.stderr)
        return EXIT_USAGE
    if args.output and len(chosen) != 1:
        print("charter: --output needs exactly one provenance spec", file=sys.stderr)
        return EXIT_USAGE
    from charter.text.commands import text_results

    texts, chosen = text_results(chosen, cs, capture=True)
    results = [capture(lc, cs, output=Path(args.output) if args.output else None,
                       update_digests=args.update_digests) for lc in chosen]
    diagnostics = [d for r in results + texts for d in r.diagnostics]
    out = current()
    for r in texts:
        if not r.diagnostics:
            out.say(f"reproduced {r.contract_id}: {r.cases} upstream cases byte for byte")
    for r in results:
        if not r.diagnostics:
            state = "wrote" if r.wrote else "unchanged"
            extra = f"; updated digests of {', '.join(r.updated)}" if r.updated else ""
            out.say(f"{state} {shown(r.output)} ({len(r.arrays)} arrays){extra}")
    failed = sum(1 for r in results + texts if r.diagnostics)
    n = len(results) + len(texts)
    payload = {"captured": not diagnostics, "text": {r.contract_id: not r.diagnostics for r in texts},
               "fixtures": {r.contract_id: {"output": shown(r.output), "wrote": r.wrote, "updated": r.updated}
                            for r in results}}
    return _report(diagnostics, args, payload,
                   f"ok: {n} fixture{'s' if n != 1 else ''} captured",
                   f"{len(diagnostics)} problem{'s' if len(diagnostics) != 1 else ''} "
                   f"in {failed} of {n} fixture{'s' if n != 1 else ''}; nothing written for those")
