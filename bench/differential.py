#!/usr/bin/env python3
"""Benchmark: what differential verdicts cost. The SmolLM2 battery (artifact and contract sides)
with the Python engine alone, then with both engines: once with an empty checker cache (the C++
checkers of the mutated contracts are compiled) and once with the library cached, in one run.

    .venv/bin/python bench/differential.py [--jobs 2] [--contract SPEC]

Prints, per run: mutants, the time to prepare the C++ checkers (resolve, render, compile or find
in the cache, load), the time to run the battery, and the ratio of each run's total to the
Python-only run's. Every run must pass its battery (0 errors means 0 disagreements).

A plain script, never part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "specs" / "artifacts" / "smollm2-135m-instruct-q4_1.yaml"


def one_run(spec: Path, jobs: int, cache: Path | None) -> dict:
    """The battery of `spec`; with both engines when `cache` is given (the checker library's folder)."""
    from charter.admission.locate import locate
    from charter.cli import search_paths
    from charter.mutation import report
    from charter.mutation.run import all_mutants, load_battery, prepare_cpp, run
    from charter.contract.contractset import load_set

    cs = load_set([str(spec)], search_paths([str(spec)], None))
    cs.raise_if_failed()
    (cid,) = [i for i in cs.primary if i in cs.artifacts]
    artifact = locate(cs.contracts[cid].contract.source, cs.contracts[cid].path.parent)
    start = time.perf_counter()
    b = load_battery(cs, cid, artifact)
    mutants = all_mutants(b)
    compiled = 0
    if cache is not None:
        compiled = prepare_cpp(b, mutants, cache, jobs=jobs)
        b.engines = "both"
    prepared = time.perf_counter()
    outcomes = run(b, mutants, jobs=jobs)
    done = time.perf_counter()
    summary = report.summary(outcomes)
    return {"mutants": len(mutants), "checkers": compiled, "prepare": prepared - start, "run": done - prepared,
            "total": done - start, "passed": summary["passed"], "line": report.summary_line(summary)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--contract", type=Path, default=DEFAULT, help="an artifact contract that pins its source")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="charter-bench-checkers-") as tmp:
        runs = {
            "python only": one_run(args.contract, args.jobs, None),
            "both, cold cache": one_run(args.contract, args.jobs, Path(tmp)),
            "both, cached": one_run(args.contract, args.jobs, Path(tmp)),
        }
    base = runs["python only"]["total"]
    print(f"{args.contract.name}, {args.jobs} worker(s)")
    print(f"{'run':<18} {'mutants':>8} {'C++ checkers':>13} {'prepare':>9} {'battery':>9} {'total':>9} {'vs python':>10}")
    for name, r in runs.items():
        print(f"{name:<18} {r['mutants']:>8} {r['checkers']:>13} {r['prepare']:>8.1f}s {r['run']:>8.1f}s "
              f"{r['total']:>8.1f}s {r['total'] / base:>9.2f}x")
    for name, r in runs.items():
        print(f"  {name}: {r['line']}")
    ok = all(r["passed"] for r in runs.values())
    print("PASS: every run passed its battery" if ok else "FAIL: a battery did not pass")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
