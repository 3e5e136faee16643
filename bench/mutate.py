#!/usr/bin/env python3
"""Benchmark: the SmolLM2 mutation battery against its target, and the per-mutant cost of mutmut
on the same generated checker, in one run.

    .venv/bin/python bench/mutate.py [--jobs 2] [--skip-mutmut] [--mutmut-glob GLOB] [--mutmut-timeout 900]

1. The full battery (artifact and contract sides) of specs/artifacts/smollm2-135m-instruct-q4_1.yaml
   on the pinned checkpoint, in-process through charter.mutation.run (load_battery, all_mutants,
   run) with `--jobs` workers: mutants, wall time, mutants per second, and PASS/FAIL against the
   target "full SmolLM2 battery in at most 60 s on 2 cores" (a failing battery verdict is a FAIL too).
2. mutmut on the committed generated checker generated/python/smollm2_135m_instruct_q4_1.py, through
   tools/mutmut_gate.py --only GLOB (it deletes and rebuilds mutants/: do not run it beside a gate run):
   its mutants, the wall time of the whole run (copy, mutant generation, stats, clean and forced-fail
   runs included) and of the mutation phase alone (mutmut's own mutations/second), both per mutant,
   and their ratio to the battery's cost per mutant.

A plain script, never part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "specs" / "artifacts" / "smollm2-135m-instruct-q4_1.yaml"
TARGET_SECONDS = 60.0
GENERATED_GLOB = "generated.python.smollm2_135m_instruct_q4_1.*"


def battery(jobs: int) -> dict:
    from charter.admission.locate import locate
    from charter.cli import search_paths
    from charter.mutation import report
    from charter.mutation.run import all_mutants, load_battery, run
    from charter.contract.contractset import load_set

    cs = load_set([str(CONTRACT)], search_paths([str(CONTRACT)], None))
    cs.raise_if_failed()
    (cid,) = [i for i in cs.primary if i in cs.artifacts]
    loaded = cs.contracts[cid]
    artifact = locate(loaded.contract.source, loaded.path.parent)
    start = time.perf_counter()
    b = load_battery(cs, cid, artifact)
    mutants = all_mutants(b)
    outcomes = run(b, mutants, jobs=jobs)
    seconds = time.perf_counter() - start
    summary = report.summary(outcomes)
    return {"contract": cid, "artifact": str(artifact), "mutants": len(mutants), "seconds": seconds,
            "sides": dict(Counter(m.side for m in mutants)), "verdicts": dict(Counter(o.verdict.value for o in outcomes)),
            "summary_line": report.summary_line(summary), "passed": summary["passed"]}


def mutmut_generated(glob: str, jobs: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-mutmut-") as tmp:
        out_json = Path(tmp) / "gate.json"
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(ROOT / "tools" / "mutmut_gate.py"), "--only", glob, "--max-children", str(jobs),
             "--timeout", str(timeout), "--threshold", "0", "--json", str(out_json)],
            cwd=ROOT, capture_output=True, text=True, timeout=timeout + 120)
        wall = time.perf_counter() - start
        if not out_json.exists():
            raise SystemExit(f"bench: the mutmut gate produced no result ({proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        gate = json.loads(out_json.read_text())
    log = (ROOT / "mutants" / "gate-mutmut-run.log").read_text(errors="replace").replace("\r", "\n")
    rates = re.findall(r"([\d.]+) mutations/second", log)
    return {"mutants": sum(gate["counts"].values()), "counts": gate["counts"], "seconds": wall,
            "mutation_rate": float(rates[-1]) if rates else None, "gate_exit": proc.returncode}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=2, help="workers for both tools (default 2: the target's cores)")
    p.add_argument("--skip-mutmut", action="store_true", help="only the battery")
    p.add_argument("--mutmut-glob", default=GENERATED_GLOB, help=f"mutmut mutants to time (default {GENERATED_GLOB})")
    p.add_argument("--mutmut-timeout", type=float, default=900.0)
    args = p.parse_args(argv)
    print(f"machine: {os.cpu_count()} cores; jobs {args.jobs}", flush=True)

    b = battery(args.jobs)
    per_battery = b["seconds"] / b["mutants"]
    ok = b["seconds"] <= TARGET_SECONDS and b["passed"]
    print(f"\nbattery {b['contract']} ({b['artifact']})")
    print(f"  mutants:        {b['mutants']} ({', '.join(f'{k} {v}' for k, v in sorted(b['sides'].items()))})")
    print(f"  verdicts:       {', '.join(f'{k} {v}' for k, v in sorted(b['verdicts'].items()))}")
    print(f"  {b['summary_line']}")
    print(f"  wall time:      {b['seconds']:.1f} s on {args.jobs} workers")
    print(f"  mutants/s:      {b['mutants'] / b['seconds']:.1f}")
    print(f"  per mutant:     {per_battery * 1000:.1f} ms")
    print(f"  target:         full SmolLM2 battery in at most {TARGET_SECONDS:.0f} s on 2 cores: "
          f"{'PASS' if ok else 'FAIL'}" + ("" if b["passed"] else " (the battery itself failed)"))
    if args.skip_mutmut:
        return 0 if ok else 1

    print(f"\nmutmut on the generated checker ({args.mutmut_glob}), {args.jobs} workers ...", flush=True)
    m = mutmut_generated(args.mutmut_glob, args.jobs, args.mutmut_timeout)
    per_run = m["seconds"] / m["mutants"]
    print(f"  mutants:        {m['mutants']} ({', '.join(f'{k} {v}' for k, v in sorted(m['counts'].items()))})")
    print(f"  wall time:      {m['seconds']:.1f} s (whole run: copy, generation, stats, clean and forced-fail runs)")
    print(f"  per mutant:     {per_run * 1000:.1f} ms end to end")
    if m["mutation_rate"]:
        per_phase = 1.0 / m["mutation_rate"]
        print(f"  per mutant:     {per_phase * 1000:.1f} ms in the mutation phase ({m['mutation_rate']:.2f} mutations/s)")
    print("\ncost per mutant, mutmut / battery:")
    print(f"  end to end:       {per_run * 1000:.1f} ms / {per_battery * 1000:.1f} ms = {per_run / per_battery:.1f}x")
    if m["mutation_rate"]:
        print(f"  mutation phase:   {per_phase * 1000:.1f} ms / {per_battery * 1000:.1f} ms = "
              f"{per_phase / per_battery:.1f}x")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
