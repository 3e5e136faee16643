"""`charter diff OLD NEW` and `charter diff --against REF [PATH...]`: the contract diff gate."""

from __future__ import annotations

import argparse


def register(sub) -> None:
    from charter.console import path_arg

    p = sub.add_parser("diff", help="classify every changed contract leaf (tightened, loosened, identity, "
                                    "equivalent) and the pinned artifacts it rejects; exit 1 on a loosening "
                                    "or identity change the allowlist does not allow (docs/mutation.md)")
    p.add_argument("paths", nargs="*", type=path_arg, metavar="PATH",
                   help="OLD NEW (two files or folders); with --against, the paths to diff "
                        "(default: specs; [tool.charter] specs)")
    p.add_argument("--against", metavar="GIT_REF", type=revision_arg,
                   help="OLD is PATH... at this git revision, NEW the work tree")
    p.add_argument("--allowlist", metavar="FILE", type=path_arg,
                   help="the allowlist of accepted loosenings (default: [tool.charter] diff-allowlist)")
    p.add_argument("--artifact", action="append", metavar="ID=FILE", type=artifact_arg, default=[],
                   help="admit FILE as the pinned artifact of artifact contract ID (default: its `source`)")
    p.add_argument("--search", action="append", metavar="DIR", type=path_arg,
                   help="where referenced contracts are found (default: the enclosing specs/ directory)")
    p.set_defaults(func=run_diff)


def revision_arg(text: str) -> str:
    """--against: a git revision, never empty and never an option (`--against -x`)."""
    if not text or text.startswith("-"):
        raise argparse.ArgumentTypeError(f"expected a git revision, got {text!r}")
    return text


def artifact_arg(text: str) -> tuple[str, str]:
    """--artifact: CONTRACT_ID=FILE, both non-empty."""
    cid, sep, path = text.partition("=")
    if not sep or not cid or not path:
        raise argparse.ArgumentTypeError(f"expected CONTRACT_ID=FILE, got {text!r}")
    return cid, path


def run_diff(args) -> int:
    import datetime
    import sys
    from pathlib import Path

    from charter.config import active
    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, current
    from charter.diff import allowlist as allow
    from charter.diff import render, sources
    from charter.diff.classify import diff_sides
    from charter.diff.load import load_versions
    from charter.diff.pinned import Pinned

    out = current()
    if args.against is None and len(args.paths) != 2:
        print(f"charter diff: expected OLD and NEW (two paths), or --against GIT_REF [PATH...]; "
              f"got {len(args.paths)} path(s)", file=sys.stderr)
        return EXIT_USAGE
    listed = None
    allowlist_file = args.allowlist or active().diff_allowlist
    if allowlist_file is not None:
        listed = allow.load(allowlist_file)  # a CharterError is printed, exit 2 (charter.cli)
    with sources.empty_folder() as tmp:
        try:
            if args.against is not None:
                old_v, new_v = sources.from_git(args.against, args.paths or [active().specs], args.search, Path(tmp))
            else:
                old_v = sources.version_of([args.paths[0]], args.search)
                new_v = sources.version_of([args.paths[1]], args.search)
        except sources.SourceError as exc:
            print(f"charter diff: {exc}", file=sys.stderr)
            return EXIT_USAGE
        pinned = Pinned({cid: Path(p) for cid, p in args.artifact})
        old, new = load_versions(old_v, new_v, pinned)
        for name, version, loaded in (("OLD", old_v, old), ("NEW", new_v, new)):
            if loaded.diagnostics:
                out.info(f"{name} ({version.label}) does not load; nothing was diffed")
                out.diagnostics(loaded.diagnostics)
                return EXIT_USAGE
        result = diff_sides(old.side, new.side, pinned, only=old.primary | new.primary)
    applied = allow.apply(listed, result.findings, datetime.datetime.now(datetime.timezone.utc).date())
    out.result = render.result_json(old_v.label, new_v.label, result, applied,
                                    listed.file if listed is not None else None)
    render.print_findings(out, result, applied)
    line, ok = render.summary(applied)
    out.verdict(line, ok)
    return EXIT_OK if ok else EXIT_REJECTED

