#!/usr/bin/env python3
"""Benchmark: does a mutation battery cost the same per mutant whatever the contract's size?

    .venv/bin/python bench/battery_scaling.py [--jobs 2] [--repeat 1] [--sizes 100,300,1000] [--skip-smollm2]

1. Synthetic GGUFs of 100, 300 and 1,000 tensors, written by gguf-py's GGUFWriter (a llama-like
   header: architecture, a few numeric keys, a short vocabulary; tensors with names that do not
   repeat per layer and shapes that vary, so `charter freeze` lists each one instead of folding
   them into `blk.{i}` patterns), frozen with `charter freeze`.
2. `charter mutate --contract FROZEN -j JOBS -q --no-cache --report OUT` on each (the verdict cache of
   earlier runs removed first: every mutant runs), one process per run, the sizes
   interleaved round by round (`--repeat` rounds); the SmolLM2 battery
   (`specs/artifacts/smollm2-135m-instruct-q4_1.yaml`) with `--engine python` and with
   `--engine both` in the same rounds, after one untimed `--engine both` run that fills the checker
   library cache (XDG_CACHE_HOME in a temporary folder, so the cache is this run's own).
3. Printed per battery: mutants, the battery's own seconds (what `charter mutate` reports: from
   loading the battery to the last verdict; start-up and contract loading excluded), the process's
   wall time, its CPU time and its workers' (user + system, start-up included: for reading, not a
   target), ms per mutant (battery seconds / mutants), and the verdict line (every battery must
   pass). Then the ratio of the per-mutant cost at the largest size to that at the smallest (target
   about 1x: at most 1.5x), the largest battery against its target (under 30 s), SmolLM2 with the
   Python engine against 3 s and with both engines (cached library) against 1.5x the Python run.
   The load average is printed before and after.

A plain script, never part of the test suite; the exit code is 0 only when every target passes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CHARTER = [sys.executable, "-m", "charter"]
SMOLLM2 = ROOT / "specs" / "artifacts" / "smollm2-135m-instruct-q4_1.yaml"
TARGET_LARGE_SECONDS = 30.0
TARGET_RATIO = 1.5
TARGET_SMOLLM2_SECONDS = 3.0
TARGET_BOTH_RATIO = 1.5


def write_gguf(path: Path, tensors: int) -> Path:
    """A llama-like GGUF with `tensors` small F32 tensors, each listed by name when frozen."""
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("battery-scaling")
    w.add_context_length(64)
    w.add_embedding_length(8)
    w.add_block_count(tensors)
    w.add_head_count(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"t{i}" for i in range(32)])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    for k in range(tensors):
        rows = 2 + k % 7
        w.add_tensor(f"w{k:05d}.weight", np.full((rows, 4), k % 3, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def freeze(artifact: Path, out: Path, cid: str, env: dict) -> Path:
    """The contract frozen from `artifact` (rewritten if a kept folder holds an earlier one)."""
    subprocess.run([*CHARTER, "freeze", str(artifact), "--id", cid, "-o", str(out), "--force"], check=True, env=env,
                   capture_output=True, text=True)
    return out / "artifacts" / f"{cid}.yaml"


def mutate(contract: Path, jobs: int, env: dict, extra: tuple[str, ...] = ()) -> dict:
    """One `charter mutate` process: its battery figures and its wall time. Every mutant runs: the
    verdict cache of earlier runs is removed first (it also remembers a run's keys, which would spare
    a rerun their computation) and `--no-cache` reads none; the checker library cache stays."""
    for verdicts in Path(env["XDG_CACHE_HOME"]).glob("charter/*/verdicts"):
        shutil.rmtree(verdicts)
    with tempfile.TemporaryDirectory(prefix="bench-battery-") as tmp:
        out = Path(tmp) / "battery.json"
        start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run([*CHARTER, "mutate", "--contract", str(contract), "-j", str(jobs), "-q", "--no-cache",
                               "--report", str(out), *extra], env=env, capture_output=True, text=True, cwd=ROOT)
        wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)  # the process and its workers
        if not out.is_file():
            raise SystemExit(f"bench: charter mutate wrote no result ({proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        data = json.loads(out.read_text())
    s = data["config"]["summary"]  # the standard report (docs/mutation.md); it holds no timing
    line = next((ln for ln in proc.stdout.splitlines() if re.search(r"\d+/\d+ mutations", ln)), "")
    seconds = float(re.search(r" in ([0-9.]+)s \(", line)[1])  # the battery's own time, as stdout says it
    return {"mutants": s["mutants"], "seconds": seconds, "wall": wall, "cpu": cpu, "passed": s["passed"],
            "line": line.split(" in ")[0], "exit": proc.returncode}


def best_of_rounds(batteries: dict[str, tuple[Path, tuple[str, ...]]], repeat: int, jobs: int, env: dict
                   ) -> dict[str, dict]:
    """Each battery ({name: (contract, extra arguments)}) run `repeat` times, interleaved round by
    round; the fastest run of each."""
    runs: dict[str, list[dict]] = {name: [] for name in batteries}
    for r in range(repeat):
        for name, (contract, extra) in batteries.items():
            runs[name].append(mutate(contract, jobs, env, extra))
            print(f"  round {r + 1} {name}: {runs[name][-1]['seconds']:.1f} s", flush=True)
    return {name: min(rs, key=lambda x: x["seconds"]) for name, rs in runs.items()}


def print_table(best: dict[str, dict]) -> None:
    """`cpu s`: the process's and its workers' user + system time, start-up included (for reading)."""
    print(f"{'battery':<16} {'mutants':>8} {'battery s':>10} {'wall s':>8} {'cpu s':>7} {'ms/mutant':>10}  verdict")
    for name, b in best.items():
        print(f"{name:<16} {b['mutants']:>8} {b['seconds']:>10.2f} {b['wall']:>8.2f} {b['cpu']:>7.2f} "
              f"{b['seconds'] / b['mutants'] * 1000:>10.3f}  {b['line']}")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=2, help="workers per battery (default 2: the target's cores)")
    p.add_argument("--repeat", type=int, default=1, help="rounds; the best of each battery is reported")
    p.add_argument("--sizes", default="100,300,1000", help="tensor counts of the synthetic GGUFs")
    p.add_argument("--skip-smollm2", action="store_true", help="only the synthetic batteries")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"machine: {os.cpu_count()} cores; jobs {args.jobs}; load average before: {load()}", flush=True)

    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "XDG_CACHE_HOME": str(root / "cache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed charter has its .pyc files
        batteries: dict[str, tuple[Path, tuple[str, ...]]] = {}
        for n in sizes:
            artifact = write_gguf(root / f"t{n}.gguf", n)
            batteries[f"{n} tensors"] = (freeze(artifact, root / f"specs{n}", f"scaling-{n}", env), ())
        if not args.skip_smollm2:
            batteries["SmolLM2 python"] = (SMOLLM2, ("--engine", "python"))
            batteries["SmolLM2 both"] = (SMOLLM2, ("--engine", "both"))
            print("filling the checker library cache (one untimed --engine both run) ...", flush=True)
            mutate(SMOLLM2, args.jobs, env, ("--engine", "both"))
        best = best_of_rounds(batteries, args.repeat, args.jobs, env)
    print(f"load average after: {load()}\n")
    print_table(best)
    ok = all(b["passed"] for b in best.values())
    small, large = best[f"{sizes[0]} tensors"], best[f"{sizes[-1]} tensors"]
    ratio = (large["seconds"] / large["mutants"]) / (small["seconds"] / small["mutants"])
    checks = [(f"per-mutant cost, {sizes[-1]} vs {sizes[0]} tensors", f"{ratio:.2f}x", f"<= {TARGET_RATIO}x",
               ratio <= TARGET_RATIO),
              (f"{sizes[-1]}-tensor battery", f"{large['seconds']:.1f} s", f"< {TARGET_LARGE_SECONDS:.0f} s",
               large["seconds"] < TARGET_LARGE_SECONDS)]
    if not args.skip_smollm2:
        py, both = best["SmolLM2 python"], best["SmolLM2 both"]
        checks.append(("SmolLM2, python engine", f"{py['seconds']:.2f} s", f"< {TARGET_SMOLLM2_SECONDS:.0f} s",
                       py["seconds"] < TARGET_SMOLLM2_SECONDS))
        checks.append(("SmolLM2, both / python", f"{both['seconds'] / py['seconds']:.2f}x",
                       f"< {TARGET_BOTH_RATIO}x", both["seconds"] / py["seconds"] < TARGET_BOTH_RATIO))
    print()
    for what, got, target, passed in checks:
        print(f"{what:<40} {got:>9}  target {target:<8} {'PASS' if passed else 'FAIL'}")
        ok = ok and passed
    if not all(b["passed"] for b in best.values()):
        print("a battery failed: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
