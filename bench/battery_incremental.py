"""Benchmark: a battery rerun after a one-leaf contract edit vs a full run (issue 17, item 4).

Run:  .venv/bin/python bench/battery_incremental.py [--jobs 2] [--repeat 1] [--keep DIR]

In a copy of specs/ (the verdict cache is keyed by the contract's path; XDG_CACHE_HOME is a fresh
folder), the SmolLM2 battery (Python engine) runs once to fill the cache. Then, for each edit
below, the contract is edited in place by one leaf, and the battery runs twice, interleaved: with
the cache (the rerun) and with `--no-cache` (the full run). Printed per edit: how many mutants
were run (the rest reused), the target (at most 5 % of the battery's mutants), both wall times
and CPU times (user + sys of the process and its workers: steadier on a shared machine) and
their ratios, and whether the two reports are byte-identical (they must be). Between edits
the contract is restored and the cache refilled, so each edit is measured from the same cache.

The edits keep the artifact admitted (the battery's baseline) and leave every line where it was:
  unchecked fact   the model's `source.license`, which no generated check reads;
  description      the model's `description`, for people;
  same value       `llama.block_count: layers` written `layers + 0`: the leaf changes, its check
                   does not;
  extra keys       `metadata.extra_keys: reject` -> `allow`: the key set check loosened;
  value as digest  `general.organization` pinned by the sha256 of its value instead;
  trailing         `layout.trailing: reject` -> `alignment`;
  unsorted         `layout.sorted: true` -> `false`;
  padding          `layout.padding: zero` -> `any`, a check of the payload stage, which reads the
                   whole file: every value mutant reruns (stated, not hidden: it has no target).
The 5 % target applies to all but the last.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARTIFACT = Path("artifacts/smollm2-135m-instruct-q4_1.yaml")
MODEL = Path("models/smollm2-135m-instruct.yaml")
EDITS = [  # name, file, old text, new text, held to the target
    ("unchecked fact", MODEL, "  license: apache-2.0\n", "  license: Apache-2.0\n", True),
    ("description", MODEL, "  135M-parameter llama-architecture", "  135M-parameter Llama-architecture", True),
    ("same value", ARTIFACT, "{type: uint32, value: layers}", "{type: uint32, value: layers + 0}", True),
    ("extra keys", ARTIFACT, "  extra_keys: reject\n", "  extra_keys: allow\n", True),
    ("value as digest", ARTIFACT, "general.organization: {type: string, value: HuggingFaceTB}",
     "general.organization: {type: string, sha256: fb0803af91705877ca85f50b2805fdbe288f0c67f2725efd28e0fddbde2f9bcc}",
     True),
    ("trailing", ARTIFACT, "  trailing: reject\n", "  trailing: alignment\n", True),
    ("unsorted", ARTIFACT, "  sorted: true\n", "  sorted: false\n", True),
    ("padding", ARTIFACT, "  padding: zero\n", "  padding: any\n", False),
]
TARGET = 0.05


def battery(specs: Path, env: dict, jobs: int, report: Path, cache: bool) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds (user + sys, its workers included), mutants run and verdicts in
    all, of one battery process."""
    cmd = [sys.executable, "-m", "charter", "mutate", "--contract", str(specs / ARTIFACT), "-j", str(jobs), "-q",
           "--report", str(report), *([] if cache else ["--no-cache"])]
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    found = re.search(r"(\d+) of (\d+) verdicts reused from the cache, (\d+) run", proc.stdout)
    if proc.returncode != 0 or not found:
        sys.exit(f"battery failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return seconds, cpu, int(found.group(3)), int(found.group(2))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--keep", type=Path, help="work in DIR and keep it")
    args = p.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="charter-incremental-"))
    specs = work / "specs"
    shutil.rmtree(specs, ignore_errors=True)
    shutil.copytree(ROOT / "specs", specs)
    env = dict(os.environ, XDG_CACHE_HOME=str(work / "cache"))
    before = os.getloadavg()
    ok = True
    print(f"SmolLM2 battery, Python engine, -j {args.jobs}; load average {before[0]:.2f} {before[1]:.2f}")
    for name, file, old, new, held in EDITS:
        path = specs / file
        original = path.read_text("utf-8")
        assert original.count(old) == 1 and old.count("\n") == new.count("\n"), name
        for _ in range(args.repeat):
            path.write_text(original, "utf-8")
            battery(specs, env, args.jobs, work / "warm.json", cache=True)  # the cache holds the unedited run
            path.write_text(original.replace(old, new), "utf-8")
            rerun_s, rerun_cpu, ran, total = battery(specs, env, args.jobs, work / "rerun.json", cache=True)
            full_s, full_cpu, _, _ = battery(specs, env, args.jobs, work / "full.json", cache=False)
            same = (work / "rerun.json").read_bytes() == (work / "full.json").read_bytes()
            share = ran / max(total, 1)
            passed = same and (share <= TARGET or not held)
            ok = ok and passed
            target = f"target <= {TARGET:.0%}" if held else "no target"
            print(f"  {name:15s} ran {ran:4d} of {total} ({share:5.1%}, {target}); rerun {rerun_s:5.2f}s vs full "
                  f"{full_s:5.2f}s wall = {rerun_s / full_s:.2f}x, {rerun_cpu:5.2f}s vs {full_cpu:5.2f}s CPU = "
                  f"{rerun_cpu / full_cpu:.2f}x; reports {'identical' if same else 'DIFFER'}"
                  f"  {'PASS' if passed else 'FAIL'}")
        path.write_text(original, "utf-8")
    after = os.getloadavg()
    print(f"load average after {after[0]:.2f} {after[1]:.2f}; {'PASS' if ok else 'FAIL'}")
    if not args.keep:
        shutil.rmtree(work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
