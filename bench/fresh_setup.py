#!/usr/bin/env python3
"""Benchmark: the README's two commands on a fresh clone with an empty pip cache (issue 16, item 1).

Run:  python3 bench/fresh_setup.py [--commands test,demo] [--keep DIR]

For each command (`make test`, `make demo`), in its own fresh `git clone` of this repository's
HEAD: run the command with pip's cache off (`PIP_NO_CACHE_DIR=1`) and an empty charter cache
(`XDG_CACHE_HOME` in the clone), so the venv, charter's build (the nanobind module), the test
extra and the pinned checkpoints are all installed from nothing, then the command's own work.
Printed per command: the wall time of the whole command, of its set-up alone (up to the venv's
install stamp), the exit status and the load average before and after. Target: each command under
5 minutes on 2 cores, and the set-up builds no heavy third-party code (the checkpoints' own
runtime dependencies, llama-cpp-python among them, are never installed: the script fails if they
are found in the new venv).

It needs what the README needs (Python >= 3.11, make, a C++17 compiler, git) and the package
index; it does not use this checkout's .venv.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 300.0
STAMP = ".venv/.charter-installed"
NEVER_INSTALLED = ("llama_cpp_python", "llama-cpp-python", "llm", "openai", "transformers", "torch")


def run_fresh(command: str, work: Path) -> dict:
    clone = work / command
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = dict(os.environ, PIP_NO_CACHE_DIR="1", XDG_CACHE_HOME=str(clone / ".cache"))
    env.pop("VIRTUAL_ENV", None)
    load_before = os.getloadavg()
    start = time.monotonic()
    proc = subprocess.Popen(["make", command], cwd=clone, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    setup_s = None
    log = []
    for line in proc.stdout:
        log.append(line)
        if setup_s is None and (clone / STAMP).exists():
            setup_s = time.monotonic() - start
    rc = proc.wait()
    total_s = time.monotonic() - start
    if setup_s is None and (clone / STAMP).exists():
        setup_s = total_s
    return {"command": command, "rc": rc, "total_s": total_s, "setup_s": setup_s,
            "heavy": installed_heavy(clone), "load": (load_before, os.getloadavg()), "log": log}


def installed_heavy(clone: Path) -> list[str]:
    """Names of NEVER_INSTALLED distributions present in the clone's venv."""
    out = subprocess.run([str(clone / ".venv/bin/python"), "-m", "pip", "list", "--format=freeze"],
                         capture_output=True, text=True)
    names = {line.split("==")[0].lower() for line in out.stdout.splitlines()}
    return sorted(n for n in NEVER_INSTALLED if n.lower() in names)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commands", default="test,demo", help="comma-separated make targets (default: test,demo)")
    ap.add_argument("--keep", type=Path, help="clone into this directory and keep it")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="charter-fresh-"))
    work.mkdir(parents=True, exist_ok=True)
    ok = True
    try:
        for command in args.commands.split(","):
            r = run_fresh(command, work)
            within = r["rc"] == 0 and r["total_s"] <= TARGET_S and not r["heavy"]
            ok &= within
            setup = "n/a" if r["setup_s"] is None else f"{r['setup_s']:.0f} s"
            print(f"make {command}: exit {r['rc']}, {r['total_s']:.0f} s (set-up {setup}); "
                  f"heavy packages installed: {', '.join(r['heavy']) or 'none'}; "
                  f"load {r['load'][0][0]:.1f} -> {r['load'][1][0]:.1f} on {os.cpu_count()} CPUs  "
                  f"{'PASS' if within else 'FAIL'}")
            if r["rc"]:
                sys.stdout.writelines(r["log"][-30:])
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"target: each command under {TARGET_S:.0f} s on a fresh clone with an empty pip cache: "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
