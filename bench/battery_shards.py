#!/usr/bin/env python3
"""Benchmark: the Qwen4Exp battery in 8 shards costs what one run costs, and merges in under 1 s.

    .venv/bin/python bench/battery_shards.py [--shards 8] [--repeat 2]

1. The conforming sparse fixture of specs/artifacts/qwen4exp-text.yaml is built once
   (charter.conforming.stores, with its overrides) and named with --artifact in every run: a
   report records its artifact's path, so shards that each built their own would not merge.
2. Each round runs the whole battery and its N shards, one process each, `-j 1 --no-cache -q
   --report`; odd rounds run the whole battery first, even rounds last. CPU is the user+sys time of
   the child processes (resource.getrusage(RUSAGE_CHILDREN), before and after each process). An
   untimed one-mutant shard runs first (imports and bytecode warm), and its CPU, with that of a
   process that only imports what the command imports, is printed as the fixed cost of one run.
3. `charter mutate merge` of each round's shards, timed as a process (wall), and its report
   compared byte for byte with that round's whole run.

Printed: per round the whole run's CPU, the shards' total and slowest, the ratio shards / whole
against 1.1 (issue 17, over the rounds' sums), the merge's wall time against 1 s, whether the merged
report is byte-identical, the fixed cost of one run and the bound the target sets on it
(0.1 x whole / (N - 1)), and the load average before and after. The exit code is 0 only when
every target passes and every report is identical.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "specs" / "artifacts" / "qwen4exp-text.yaml"
TARGET_RATIO = 1.1
TARGET_MERGE_SECONDS = 1.0
IMPORTS = "import charter.cli, charter.mutation.commands, charter.mutation.run, charter.contract.contractset"


def cpu_of(cmd: list[str], env: dict) -> tuple[float, float, subprocess.CompletedProcess]:
    """(user+sys CPU seconds, wall seconds, the process) of one child run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall, proc


def verdict(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stdout.splitlines() if "mutations rejected" in line]
    return lines[-1] if lines else (proc.stdout[-400:] + proc.stderr[-400:]).strip()


def build_fixture(folder: Path) -> Path:
    from charter.conforming.stores import build_sparse, overrides_for
    from charter.console import search_paths
    from charter.contract.contractset import load_set

    cs = load_set([CONTRACT], search_paths([CONTRACT], None))
    plan = cs.artifacts["qwen4exp-text"]
    return build_sparse(plan, folder / "qwen4exp-text.gguf", overrides=overrides_for(plan.id))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--repeat", type=int, default=2, help="rounds (whole run and every shard each)")
    args = p.parse_args()
    n = args.shards
    before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="charter-battery-shards-"))
    artifact = build_fixture(work)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    mutate = [sys.executable, "-m", "charter", "mutate", "--contract", str(CONTRACT), "--artifact", str(artifact),
              "-j", "1", "--no-cache", "-q"]

    probe_cpu, _, probe = cpu_of(mutate + ["--shard", "0/100000", "--report", str(work / "probe.json")], env)
    import_cpu, _, _ = cpu_of([sys.executable, "-c", IMPORTS], env)
    ok = probe.returncode == 0
    print(f"one-mutant shard: {probe_cpu:.2f} s CPU (of which {import_cpu:.2f} s interpreter and imports), "
          f"rc {probe.returncode}")

    wholes, shard_sums, merges = [], [], []
    identical = True
    for r in range(args.repeat):
        rdir = work / f"round{r}"
        rdir.mkdir()
        runs = [("whole", [])] + [(f"s{k}", ["--shard", f"{k}/{n}"]) for k in range(n)]
        if r % 2:
            runs = runs[1:] + runs[:1]
        cpu: dict[str, float] = {}
        for name, extra in runs:
            cpu[name], _, proc = cpu_of(mutate + extra + ["--report", str(rdir / f"{name}.json")], env)
            ok &= proc.returncode == 0
            if name in ("whole", "s0") or proc.returncode != 0:
                print(f"  round {r + 1} {name:<5} rc {proc.returncode} {cpu[name]:6.2f} s CPU: {verdict(proc)}")
        shards = [cpu[f"s{k}"] for k in range(n)]
        _, wall, proc = cpu_of([sys.executable, "-m", "charter", "mutate", "merge",
                                *(str(rdir / f"s{k}.json") for k in range(n)), "--report", str(rdir / "merged.json")],
                               env)
        ok &= proc.returncode == 0
        same = (rdir / "merged.json").read_bytes() == (rdir / "whole.json").read_bytes()
        identical &= same
        wholes.append(cpu["whole"])
        shard_sums.append(sum(shards))
        merges.append(wall)
        print(f"round {r + 1}: whole {cpu['whole']:.2f} s CPU; {n} shards {sum(shards):.2f} s CPU "
              f"(slowest {max(shards):.2f} s, fastest {min(shards):.2f} s): {sum(shards) / cpu['whole']:.2f}x; "
              f"merge {wall:.2f} s wall, rc {proc.returncode}, {'byte-identical' if same else 'DIFFERS'}")

    ratio = sum(shard_sums) / sum(wholes)
    merge_wall = max(merges)
    whole = sum(wholes) / len(wholes)
    fixed = (sum(shard_sums) - sum(wholes)) / len(wholes) / (n - 1)
    print(f"shards / whole CPU: {ratio:.2f}x (target <= {TARGET_RATIO}x): {'PASS' if ratio <= TARGET_RATIO else 'FAIL'}")
    print(f"merge: {merge_wall:.2f} s wall, slowest of {len(merges)} (target < {TARGET_MERGE_SECONDS} s): "
          f"{'PASS' if merge_wall < TARGET_MERGE_SECONDS else 'FAIL'}")
    print(f"merged report byte-identical to the whole run's: {'yes' if identical else 'NO'}")
    print(f"fixed cost of one run: {fixed:.2f} s CPU from the rounds ((shards - whole) / (N - 1)), "
          f"{probe_cpu:.2f} s for a one-mutant shard; the target allows {0.1 * whole / (n - 1):.2f} s "
          f"(0.1 x {whole:.2f} s / {n - 1})")
    after = os.getloadavg()
    print(f"load average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, after "
          f"{after[0]:.2f} {after[1]:.2f} {after[2]:.2f} ({os.cpu_count()} CPUs)")
    passed = ok and identical and ratio <= TARGET_RATIO and merge_wall < TARGET_MERGE_SECONDS
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
