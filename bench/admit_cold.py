"""Benchmark: a cold `charter admit` of the real SmolLM2 GGUF, one process each, against its floor
and its peer.

Run:  .venv/bin/python bench/admit_cold.py [--repeat 15]

Each round runs these processes one after another (interleaved, so load drifts hit all alike; each
round starts with the next one, so none always runs right after another):
  floor        python -c: read the file's header (its 1.79 MB up to the data offset) and sha256 it:
               what any admission of this file must at least do, interpreter start-up included.
  gguf         python -c: gguf.GGUFReader(FILE), gguf-py's reader (parses and maps everything).
  charter      charter admit --contract specs/artifacts/smollm2-135m-instruct-q4_1.yaml
  charter-cpp  the same with --engine cpp (the checker compiled into charter._native).
Both charter commands run the committed checker (Note [Vouched checker]); the script checks `-v`
says so first. Printed: the median wall time of each over --repeat rounds, and the ratios the
issue sets targets for: charter / floor at most 5x, gguf / charter at least 20x, for each engine.
Bytecode caching is on for every process (PYTHONDONTWRITEBYTECODE is removed from their
environment, and a first round, not counted, writes the caches), as on a user's machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"
FLOOR_TARGET, PEER_TARGET = 5.0, 20.0


def commands(path: Path, data_offset: int) -> dict[str, list[str]]:
    py = sys.executable
    charter = [py, "-m", "charter", "admit", "--contract", str(CONTRACT)]
    return {
        "floor": [py, "-c", "import hashlib, sys\nwith open(sys.argv[1], 'rb') as f:\n"
                            "    hashlib.sha256(f.read(int(sys.argv[2]))).hexdigest()", str(path), str(data_offset)],
        "gguf": [py, "-c", "import sys, gguf; gguf.GGUFReader(sys.argv[1])", str(path)],
        "charter": charter,
        "charter-cpp": charter + ["--engine", "cpp"],
    }


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def wall(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stdout}{proc.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    from charter.admission.locate import locate
    from charter.contract.paths import PinnedSource
    from charter.engines.vouched import vouched_checker
    from charter.formats.gguf import read_gguf

    env = environment()
    found = vouched_checker(CONTRACT, ROOT / "generated", [str(ROOT / "specs")])
    if found is None:
        raise SystemExit("generated/manifest.json does not vouch for the committed checker: run charter generate")
    path = locate(PinnedSource(**found.module.SOURCE), CONTRACT.parent)
    data_offset = read_gguf(path).data_offset
    cmds = commands(path, data_offset)
    for engine in ("python", "cpp"):
        said = subprocess.run([*cmds["charter"], "-v", "--engine", engine], cwd=ROOT, env=env,
                              capture_output=True, text=True).stderr
        if "the manifest vouches" not in said:
            raise SystemExit(f"--engine {engine} does not run the committed checker: {said}")
    print(f"file: {path.name}, header {data_offset:,} bytes; load average before: {_load()}")
    samples: dict[str, list[float]] = {name: [] for name in cmds}
    names = list(cmds)
    for round_ in range(args.repeat + 1):
        # each round starts one command later: none always follows gguf's 2 s of work
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            seconds = wall(cmds[name], env)
            if round_:  # the first round writes the bytecode caches
                samples[name].append(seconds)
    med = {name: statistics.median(s) for name, s in samples.items()}
    for name, m in med.items():
        print(f"  {name:<12} {m * 1000:7.1f} ms  (min {min(samples[name]) * 1000:.1f}, max {max(samples[name]) * 1000:.1f})")
    ok = True
    for name in ("charter", "charter-cpp"):
        over_floor, under_peer = med[name] / med["floor"], med["gguf"] / med[name]
        good = over_floor <= FLOOR_TARGET and under_peer >= PEER_TARGET
        ok &= good
        print(f"  {name}: {over_floor:.2f}x the floor (target <= {FLOOR_TARGET:g}x), "
              f"{under_peer:.1f}x faster than gguf (target >= {PEER_TARGET:g}x): {'PASS' if good else 'FAIL'}")
    print(f"load average after: {_load()} ({os.cpu_count()} CPUs)")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
