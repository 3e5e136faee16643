"""`charter mutate`: prove that every fact of a contract fails closed."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def register(sub) -> None:
    from charter.console import path_arg

    from charter.mutation.shard import shard_arg

    p = sub.add_parser("mutate", help="run the mutation battery of an artifact contract",
                       usage="%(prog)s --contract FILE [options] | %(prog)s merge SHARD.json... [--report FILE]")
    p.add_argument("--contract", type=path_arg, help="artifact, bundle, provenance or regions contract (YAML; required "
                                                     "but for `merge`)")
    p.add_argument("--artifact", type=path_arg, help="conforming artifact, or model folder for a bundle (default: the pinned source, else one built from "
                                      "the contract by charter.conforming)")
    p.add_argument("--search", action="append", metavar="DIR", type=path_arg, help="where the model contract is found")
    p.add_argument("--only", choices=("artifact", "contract"), help="run one side only")
    p.add_argument("-j", "--jobs", type=jobs_arg,
                   help="worker processes (default: the number of cores; [tool.charter] jobs)")
    p.add_argument("--report", metavar="FILE", type=path_arg,
                   help="write every outcome as JSON (- : standard output; --json FILE is the old spelling)")
    p.add_argument("--json", dest="report", metavar="FILE", type=path_arg, help=argparse.SUPPRESS)
    p.add_argument("--html", metavar="FILE", type=path_arg, help="write a self-contained HTML report (- : standard output)")
    p.add_argument("--trace", action="store_true",
                   help="list, per contract leaf, the generated checks that enforce it and the mutants that killed "
                        "it; fail on a leaf with neither")
    p.add_argument("--engine", choices=("python", "both"),
                   help="both: also run the generated C++ checker on every mutant (artifact mutants: the one in "
                        "charter._native; contract mutants: the one generated from the mutated contract, compiled "
                        "with the others into a cached checker library); any difference in (stage, code, field, "
                        "offset) fails the mutant (default: python; [tool.charter] battery-engine)")
    p.add_argument("--shard", type=shard_arg, metavar="K/N",
                   help="run shard K of N (K from 0): a deterministic 1/N of the mutants, dealt by identity and "
                        "expected cost; `charter mutate merge` joins the shards' --report files (artifact "
                        "and bundle batteries)")
    p.add_argument("--no-cache", action="store_true",
                   help="run every mutant, reusing no verdict from the cache of earlier runs (the fresh verdicts "
                        "are still stored; artifact batteries)")
    p.set_defaults(func=run_mutate, stdout_files=("report", "html"))
    merge = p.add_subparsers(dest="mutate_command", metavar="merge").add_parser(
        "merge", help="join the --report files of `--shard K/N` runs into the report of the whole battery")
    merge.add_argument("shards", nargs="+", metavar="SHARD.json", type=path_arg, help="every shard's --report file")
    merge.add_argument("--report", metavar="FILE", type=path_arg, help="write the merged report (- : standard output)")
    merge.add_argument("--html", metavar="FILE", type=path_arg, help="write the merged HTML report (- : standard output)")
    merge.set_defaults(func=_merge, stdout_files=("report", "html"))


def _merge(args) -> int:
    from charter.mutation.merge import run_merge

    return run_merge(args)


def jobs_arg(text: str) -> int:
    """-j: a positive number of worker processes."""
    try:
        jobs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of worker processes, got {text!r}") from None
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 worker process, got {jobs}")
    return jobs


def run_mutate(args) -> int:
    """The battery the contract calls for; under --format json its report is the result."""
    import json

    from charter.console import current

    if args.contract is None:
        print("charter: mutate needs --contract FILE (or: charter mutate merge SHARD.json...)", file=sys.stderr)
        return 2
    if args.jobs is None:
        args.jobs = os.cpu_count() or 1
    from charter.mutation.malloc import keep_freed_buffers

    keep_freed_buffers()  # Note [Header-sized buffers]: before the battery is loaded and its workers fork
    out = current()
    if out.format != "json" or args.report is not None:
        return _run_mutate(args)
    with tempfile.TemporaryDirectory(prefix="charter-report-") as tmp:
        args.report = str(Path(tmp) / "report.json")
        code = _run_mutate(args)
        report = Path(args.report)
        out.result = json.loads(report.read_text("utf-8")) if report.is_file() else None
    return code


def _run_mutate(args) -> int:
    from charter.admission.locate import locate
    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, not_a_file, print_diagnostics, print_or_write, \
        search_paths
    from charter.diagnostics import CharterError
    from charter.mutation import report, standard
    from charter.engines.vouched import cache_dir
    from charter.engines.cpp import EngineUnavailable
    from charter.mutation.cache import VerdictCache, run_cached
    from charter.mutation.digests import meta_digests
    from charter.mutation.run import WHOLE_FILE_PASS_MAX, BrokenBaseline, all_mutants, finish_cpp, in_workers, \
        load_battery, passes_whole_file, run, stderr_progress
    from charter.mutation.shard import select, shard_meta
    from charter.contract.contractset import load_set

    cs = load_set([args.contract], search_paths([args.contract], args.search))
    if cs.diagnostics:
        print_diagnostics(cs.diagnostics)
        return EXIT_USAGE
    if args.shard is not None and not _shardable(cs):
        print("charter: --shard splits artifact and bundle batteries only (the provenance, text and regions "
              "batteries run in one process in seconds)", file=sys.stderr)
        return EXIT_USAGE
    provenance = [i for i in cs.primary if cs.contracts[i].kind == "provenance"]
    if len(provenance) == 1 and len(cs.primary) == 1:  # a fixture and its labels: the provenance battery
        from charter.mutation.provenance_run import run_command

        return run_command(args, cs, provenance[0])
    texts = [i for i in cs.primary if cs.contracts[i].kind == "text"]
    if len(texts) == 1 and len(cs.primary) == 1:  # tokenizer and chat cases: the text battery
        from charter.text.battery import run_command as run_text_command

        return run_text_command(args, cs, texts[0])
    if len(cs.primary) == 1 and next(iter(cs.primary)) in cs.regions:  # a regions contract: the region battery
        from charter.regions.battery import run_command as run_regions_command

        return run_regions_command(args, cs.contracts[next(iter(cs.primary))].path)
    if len(cs.primary) == 1 and next(iter(cs.primary)) in cs.bundles:  # a model folder: the bundle battery
        from charter.mutation.bundle_run import run_command as run_bundle_command

        return run_bundle_command(args, cs, next(iter(cs.primary)))
    ids = [i for i in cs.primary if i in cs.artifacts]
    if len(ids) != 1:
        print(f"charter: {args.contract} is not one artifact contract", file=sys.stderr)
        return EXIT_USAGE
    loaded = cs.contracts[ids[0]]
    plan = cs.artifacts[ids[0]]
    with tempfile.TemporaryDirectory(prefix="charter-battery-") as tmp:
        if args.artifact:
            artifact = Path(args.artifact)
        elif loaded.contract.source is not None:
            try:
                artifact = locate(loaded.contract.source, loaded.path.parent)
            except CharterError as exc:
                print_diagnostics(exc.diagnostics)
                return EXIT_USAGE
        elif plan.stores:
            from charter.conforming.stores import build_sparse, overrides_for

            artifact = build_sparse(plan, Path(tmp) / f"{plan.id}.{plan.format}", overrides=overrides_for(plan.id))
        else:
            from charter.conforming import build

            artifact = build(plan, Path(tmp) / f"{plan.id}.{plan.format}")
        if not artifact.is_file():
            print(f"charter: {artifact}: {not_a_file(artifact)}", file=sys.stderr)
            return EXIT_USAGE
        start = time.monotonic()
        try:
            battery = load_battery(cs, ids[0], artifact)
        except BrokenBaseline as broken:
            print(broken.report.render())
            print(f"charter: the unchanged contract does not admit {artifact}: no mutant was run",
                  file=sys.stderr)
            return EXIT_REJECTED
        mutants = all_mutants(battery, args.only)
        positions = select(mutants, args.shard)
        # Note [Verdict cache]: its key hashes the whole artifact once per version of the file
        verdicts = (VerdictCache(battery, cache_dir(), args.engine or "python", [mutants[i] for i in positions])
                    if passes_whole_file(battery) else None)
        if not args.quiet:
            part = f" (shard {args.shard}: {len(positions)} of them)" if args.shard else ""
            print(f"battery {plan.id}: {len(mutants)} mutants{part} of {artifact} on {args.jobs} worker(s)",
                  file=sys.stderr)
        progress = None if args.quiet else stderr_progress(start)

        def run_todo(todo, checkers):
            if args.engine == "both":
                _prepare_cpp(cs, battery, todo, args, checkers)
            return run(battery, todo, jobs=max(1, args.jobs), progress=progress)

        def finish(todo, python, pending):
            _prepare_cpp(cs, battery, todo, args, {id(m): p.key for m, p in zip(todo, pending)})
            return in_workers(len(todo), lambda i: finish_cpp(battery, todo[i], python[i], pending[i]),
                              max(1, args.jobs), progress)

        # Each mutant runs where the verdict cache looked it up (with both engines, a contract mutant's
        # C++ checker once their library is built), unless charter._native lacks the contract's own.
        fused = args.engine != "both" or _both_without_library(cs, battery)
        try:
            outcomes, reused = run_cached(battery, mutants, positions, verdicts, run_todo, read=not args.no_cache,
                                          jobs=max(1, args.jobs), progress=progress, cpp=args.engine == "both",
                                          fused=fused, finish=finish)
        except EngineUnavailable as exc:
            print(f"charter: cannot build the C++ checkers of this battery: {exc}", file=sys.stderr)
            return EXIT_USAGE
        elapsed = time.monotonic() - start
    outcomes = standard.locate(outcomes, battery.loaded.doc, battery.model.doc)
    # Note [Shards that merge]: nothing in the report differs between two runs of one battery.
    meta = {"contract": plan.id, "spec": plan.spec_path, "artifact": str(artifact),
            "sources": standard.sources(battery.loaded.doc, battery.model.doc),
            "digests": meta_digests([loaded.doc.source, battery.model.doc.source], battery.raw_header,
                                    battery.view.file_size, battery.checker_text, [m.id for m in mutants],
                                    args.engine or "python")}
    if args.shard is not None:
        meta["shard"] = shard_meta(args.shard, mutants, positions)
    summary = report.summary(outcomes)
    if args.report:
        print_or_write(args.report, report.to_json(outcomes, meta))
    if args.html:
        print_or_write(args.html, report.render_html(outcomes, meta))
    ok = summary["passed"]
    if args.trace:
        lines, traced = report.trace(outcomes)
        print("\n".join(lines))
        ok = ok and traced
    for line in report.failures(outcomes):
        print(line)
    print(report.table(outcomes))
    print(f"{report.summary_line(summary)} in {elapsed:.2f}s ({len(outcomes) / max(elapsed, 1e-9):.0f} mutants/s)")
    if verdicts is None:
        print(f"no verdict cache: the artifact is larger than {WHOLE_FILE_PASS_MAX >> 30} GiB")
    else:
        print(f"{reused} of {len(outcomes)} verdicts reused from the cache, {len(outcomes) - reused} run"
              f"{' (--no-cache)' if args.no_cache else ''}; cache: {verdicts.path}")
    return EXIT_OK if ok else EXIT_REJECTED


def _shardable(cs) -> bool:
    """Whether the contract's battery runs through charter.mutation.run.in_workers."""
    if len(cs.primary) != 1:
        return True  # not one contract: the artifact battery's own refusal says so
    (cid,) = cs.primary
    return cid in cs.artifacts or cid in cs.bundles


def _both_without_library(cs, battery) -> bool:
    """Whether charter._native holds the contract's own C++ checker (then the battery is set to run
    both engines now): its artifact mutants need no checker library, so they run where the verdict
    cache looks them up, as with the Python engine alone."""
    from charter.engines.choose import compiled_in

    if not compiled_in(cs, battery.plan):
        return False
    battery.engines, battery.cpp_key = "both", battery.plan.id
    return True


def _prepare_cpp(cs, battery, mutants, args, checkers=None) -> None:
    """Both engines: compile the C++ checkers of the contract mutants that run (charter.mutation.run.
    prepare_cpp) and, when charter._native holds no current checker of the contract, the contract's
    own, saying so on stderr (a cold build takes seconds, a cached one none); raises
    charter.engines.cpp.EngineUnavailable."""
    from charter.engines.choose import cache_dir, compiled_in
    from charter.mutation.run import prepare_cpp

    start = time.monotonic()
    current = compiled_in(cs, battery.plan)
    if not args.quiet:
        if not current:
            print(f"charter._native holds no current C++ checker of {battery.plan.id}: it is compiled with the "
                  "mutated contracts' checkers", file=sys.stderr)
        print(f"preparing the C++ checkers of the mutated contracts (cached in {cache_dir() / 'checkers'})",
              file=sys.stderr)
    count = prepare_cpp(battery, mutants, cache_dir() / "checkers", jobs=max(1, args.jobs), compiled_in=current,
                        known=checkers)
    battery.engines = "both"
    if not args.quiet:
        print(f"{count} C++ checkers ready in {time.monotonic() - start:.1f}s", file=sys.stderr)
