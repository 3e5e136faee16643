"""`charter check-changed FILE...`: check the contracts among the files a commit changes, for
pre-commit (the `charter-check` hook of .pre-commit-hooks.yaml; docs/pre-commit.md).

Note [Changed files]: pre-commit passes every staged file its `types: [yaml]` selects, and a
repository has other YAML (CI workflows, compose files, the pre-commit configuration itself).
`charter check FILE` refuses a file that is not a contract, as it must when a user names one; this
command instead skips a file that does not *look like* a contract, by its text, before any YAML
is parsed: a contract with a syntax error is still a contract, and is reported. A file looks like
a contract when a line at column 0 starts its `charter:` key, or states `kind:` with one of
charter's contract kinds, or points the YAML language server at one of charter's schemas. That
errs towards checking: a contract that lost its `charter: 1` line still states its kind and is
refused with SPEC_VERSION, and a file charter would skip could not be loaded as a contract by any
command (`charter check specs/` still refuses every YAML file of a contract tree).

A changed model can break the artifact contracts that refer to it without changing them, so the
contracts of the search trees (charter.console.search_paths) that refer to a changed contract,
directly or through another, are checked with it.
"""

from __future__ import annotations

import re
from pathlib import Path

from charter.contract.kinds import CONTRACT_KINDS
from charter.contract.yamlload import MAX_BYTES

_KINDS = "|".join(map(re.escape, CONTRACT_KINDS))
_CONTRACT_LINE = re.compile(
    r"""^(?:["']?charter["']?[ \t]*:"""
    rf"""|["']?kind["']?[ \t]*:[ \t]*["']?(?:{_KINDS})["']?[ \t]*(?:#.*)?$"""
    rf"""|\{{.*\bcharter["']?[ \t]*:"""
    rf"""|#[ \t]*yaml-language-server:[ \t]*\$schema=\S*\b(?:{_KINDS})\.schema\.json)""",
    re.MULTILINE)


def looks_like_contract(path: Path) -> bool:
    """Whether `path` is a contract by Note [Changed files]; an unreadable file is (so it is reported)."""
    try:
        with open(path, "rb") as f:
            head = f.read(MAX_BYTES)
    except OSError:
        return True
    return _CONTRACT_LINE.search(head.decode("utf-8", "replace")) is not None


def register(sub) -> None:
    from charter.console import path_arg

    p = sub.add_parser("check-changed", help="check the contracts among FILES and those that refer to them "
                                             "(for pre-commit: other YAML files are skipped)")
    p.add_argument("files", nargs="*", type=path_arg, help="changed files (pre-commit passes them)")
    p.add_argument("--search", action="append", metavar="DIR", type=path_arg,
                   help="where referenced contracts are found (default: the enclosing specs/ directory)")
    p.set_defaults(func=run_check_changed)


def run_check_changed(args) -> int:
    from charter.console import EXIT_OK, EXIT_USAGE, current

    out = current()
    contracts = [f for f in args.files if looks_like_contract(Path(f))]
    skipped = len(args.files) - len(contracts)
    out.result = {"valid": True, "contracts": []}
    if not contracts:
        out.verdict(f"ok: no contract among {len(args.files)} file(s)", True)
        return EXIT_OK
    cs, dependents = check_changed(contracts, args.search)
    if out.contract_errors(cs):
        return EXIT_USAGE
    out.verdict(f"ok: {len(contracts)} changed contract(s) and {dependents} that refer to them valid"
                f"{f'; {skipped} other file(s) skipped' if skipped else ''}", True)
    return EXIT_OK


def check_changed(files: list[str], search: list[str] | None):
    """(the loaded set, how many contracts were added to it) for the changed contract `files` and
    every contract of the search trees that refers to one of them (Note [Changed files])."""
    from charter.console import search_paths
    from charter.contract.contractset import load_set, references

    trees = search_paths(files, search)
    cs = load_set(files, trees, whole_search=True)  # every contract that may refer to a changed one
    changed = set(cs.primary)
    refers: dict[str, set[str]] = {cid: {t for _, t, _ in references(lc)} for cid, lc in cs.contracts.items()}
    dependents: set[str] = set()
    grew = True
    while grew:
        new = {cid for cid, targets in refers.items()
               if cid not in changed | dependents and targets & (changed | dependents)}
        dependents |= new
        grew = bool(new)
    if not dependents:
        return cs, 0
    paths = [str(cs.contracts[cid].path) for cid in sorted(dependents)]
    return load_set([*files, *paths], trees), len(dependents)
