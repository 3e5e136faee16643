"""Run the bundle battery: every mutant of bundle_ops through bundle admission, judged by Note
[Mutation verdicts]. Folder mutants edit a copy of the folder made of hard links (their edits
replace files, so the folder itself is only read); contract mutants are written beside a copy of
nothing but themselves and loaded with the bundle's search path, so a refusal by the contract
language is a rejection at stage spec, judged on its code and field."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from typing import NamedTuple

from charter.bundles.admit import admit_bundle
from charter.bundles.resolve import resolve_bundle
from charter.contract.load import LoadedContract, contract_from_document
from charter.contract.yamlload import Document
from charter.diagnostics import CharterError
from charter.contract.contractset import load_set
from charter.contract.yamldump import dump
from charter.mutation.bundle_ops import BundleMutant, contract_mutants, folder_mutants
from charter.mutation.mutant import Outcome, Verdict, judge
from charter.mutation.run import in_workers


def bundle_battery(cs, bundle_id: str, folder: Path, only: str | None = None, companions=None) -> list[BundleMutant]:
    """The mutants of one side or both; `companions`: the companion files whose facts and bytes to
    mutate (None: every one)."""
    plan = cs.bundles[bundle_id]
    out = []
    if only in (None, "artifact"):
        out += folder_mutants(plan, folder, companions)
    if only in (None, "contract"):
        out += contract_mutants(plan, cs.contracts[bundle_id].doc.data, plan.artifact.status, companions)
    return out


def run_bundle(cs, bundle_id: str, folder: Path, checker, mutants: list[BundleMutant],
               progress=None, cpp_key: str | None = None, jobs: int = 1) -> list[Outcome]:
    """Every mutant's outcome, in mutant order; with `cpp_key`, every mutant is also admitted with
    the weight files' stages run by that C++ checker, and any difference of (stage, code, field,
    offset, file) is an error of the mutant. `jobs` > 1 forks workers that share the loaded
    contracts, the checkers and the mutants (charter.mutation.run.in_workers)."""
    plan = cs.bundles[bundle_id]
    search = [cs.contracts[plan.artifact.id].path, cs.contracts[plan.artifact.model].path]  # all a mutant refers to
    base = _Base(cs, bundle_id)
    with tempfile.TemporaryDirectory(prefix="charter-bundle-battery-") as tmp:

        def one(i: int) -> Outcome:
            bm = mutants[i]
            m = bm.mutant
            if m.equivalent is not None:
                return Outcome(m, Verdict.EQUIVALENT, detail=m.equivalent)
            if bm.folder is None:
                return _contract_run(bm, Path(tmp) / f"m{i}.yaml", folder, checker, search, base, cpp_key)
            copy = Path(tmp) / f"m{i}"
            shutil.copytree(folder, copy, copy_function=os.link)
            try:
                bm.folder(copy)
                return _both(m, lambda key: admit_bundle(copy, plan, checker, verify_payload=bm.verify_payload,
                                                         cpp_key=key), cpp_key)
            finally:
                shutil.rmtree(copy)

        return in_workers(len(mutants), one, jobs, progress)


def _contract_run(bm: BundleMutant, target: Path, folder: Path, checker, search: list, base,
                  cpp_key: str | None = None) -> Outcome:
    """The mutated contract loaded as `charter check` loads it: over the original document's
    locations and the already resolved artifact, unless the mutant changes what it refers to."""
    data = bm.contract()
    original = base.cs.contracts[base.bundle_id]
    if any(data.get(k) != original.doc.data.get(k) for k in ("model", "artifact", "status")):
        target.write_text(dump(data))
        cs = load_set([target], search)
        if cs.diagnostics:
            d = cs.diagnostics[0]
            return judge(bm.mutant, False, d.stage.value, d.code.value, d.field, _rendered(d, target, original.doc.file))
        plan = next(iter(cs.bundles.values()))
    else:
        doc = Document(data, original.doc.locations, original.doc.source, original.doc.file)
        try:
            loaded = LoadedContract(contract_from_document(doc), doc, original.path)
            artifact = base.cs.bundles[base.bundle_id].artifact
            plan = resolve_bundle(loaded, artifact, base.cs.models[artifact.model])
        except CharterError as exc:
            d = exc.diagnostics[0]
            return judge(bm.mutant, False, d.stage.value, d.code.value, d.field, d.render())
    return _both(bm.mutant, lambda key: admit_bundle(folder, plan, checker, verify_payload=bm.verify_payload,
                                                     cpp_key=key), cpp_key)


def _rendered(d, target: Path, original: str) -> str:
    """The diagnostic, its place in the mutated contract named after the original, not the temporary
    file (whose name differs between two runs: a report must not, Note [Shards that merge])."""
    loc = d.location
    if loc is None or Path(loc.file).resolve() != target.resolve():
        return d.render()
    return d.render(str(type(loc)(f"<mutated {original}>", loc.line, loc.col)))


def _both(m, admit, cpp_key: str | None) -> Outcome:
    """The Python engine's outcome, unless the C++ engine (`cpp_key`) says otherwise."""
    report = admit(None)
    outcome = _judged(m, report)
    if cpp_key is None:
        return outcome
    other = admit(cpp_key)
    if _finding(report) != _finding(other):
        return Outcome(m, Verdict.ERROR, outcome.stage, outcome.code, outcome.field,
                       f"the engines disagree: python {_finding(report)}, c++ {_finding(other)}")
    return outcome


def _finding(report) -> tuple:
    d = report.diagnostic
    return () if d is None else (d.stage, d.code, d.field, d.offset, report.file)


class _Base(NamedTuple):
    cs: object
    bundle_id: str


def _judged(m, report) -> Outcome:
    d = report.diagnostic
    if d is None:
        return judge(m, True, None, None, None)
    return judge(m, False, d.stage, d.code, d.field, report.render())



def run_command(args, cs, bundle_id: str) -> int:
    """`charter mutate --contract BUNDLE --artifact FOLDER`: the same output as the artifact battery."""
    import sys
    import time

    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, print_or_write
    from charter.engines import choose
    from charter.mutation import report, standard
    from charter.mutation.digests import bundle_digests
    from charter.mutation.run import stderr_progress
    from charter.mutation.shard import select, shard_meta

    folder = Path(args.artifact) if args.artifact else None
    if folder is None or not folder.is_dir():
        print("charter: a bundle battery mutates a model folder: name it with --artifact FOLDER", file=sys.stderr)
        return EXIT_USAGE
    plan = cs.bundles[bundle_id]
    checker = choose.python_checker(cs, plan.artifact.id, Path("generated")).module
    cpp_key = None
    if args.engine == "both":
        from charter.engines import cpp
        from charter.engines.vouched import cache_dir

        try:
            cpp_key = choose.cpp_checker(cs, plan.artifact, cache_dir() / "checkers").key
        except cpp.EngineUnavailable as exc:
            print(f"charter: {exc}", file=sys.stderr)
            return EXIT_USAGE
    control = admit_bundle(folder, plan, checker)
    if not control.admitted:
        print(f"charter: the unchanged bundle does not admit {folder}: {control.render()}", file=sys.stderr)
        return EXIT_REJECTED
    start = time.monotonic()
    mutants = bundle_battery(cs, bundle_id, folder, args.only)
    positions = select([bm.mutant for bm in mutants], args.shard)
    if not args.quiet:
        part = f" (shard {args.shard}: {len(positions)} of them)" if args.shard else ""
        print(f"battery {bundle_id}: {len(mutants)} mutants{part} of {folder} and its bundle contract", file=sys.stderr)
    outcomes = run_bundle(cs, bundle_id, folder, checker, [mutants[i] for i in positions],
                          None if args.quiet else stderr_progress(start), cpp_key, jobs=args.jobs)
    elapsed = time.monotonic() - start
    outcomes = standard.locate(outcomes, cs.contracts[bundle_id].doc, None)
    # Note [Shards that merge]: nothing in the report differs between two runs of one battery.
    sources = [cs.contracts[i].doc.source for i in (bundle_id, plan.artifact.id, plan.artifact.model)]
    meta = {"contract": bundle_id, "spec": cs.contracts[bundle_id].doc.file, "artifact": str(folder), "kind": "bundle",
            "sources": standard.sources(cs.contracts[bundle_id].doc),
            "digests": bundle_digests(sources, folder, [bm.mutant.id for bm in mutants], args.engine or "python")}
    if args.shard is not None:
        meta["shard"] = shard_meta(args.shard, mutants, positions)
    summary = report.summary(outcomes)
    if args.report:
        print_or_write(args.report, report.to_json(outcomes, meta))
    if args.html:
        print_or_write(args.html, report.render_html(outcomes, meta))
    for line in report.failures(outcomes):
        print(line)
    print(report.table(outcomes))
    print(f"{report.summary_line(summary)} in {elapsed:.1f}s ({len(outcomes) / max(elapsed, 1e-9):.0f} mutants/s)")
    return EXIT_OK if summary["passed"] else EXIT_REJECTED
