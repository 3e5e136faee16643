"""Benchmark: admitting the Qwen4Exp source set (131 safetensors shards) as one bundle, against what
loaders do with it (safetensors.safe_open over every shard, keys and metadata).

Run:  .venv/bin/python bench/bundle_admit.py [--repeat 7] [--keep DIR]

The folder is built from its contracts (specs/bundles/qwen4exp-source.yaml over
specs/artifacts/qwen4exp-source-safetensors.yaml) by charter.conforming.bundles: 131 shards, 1,658
tensors, 359,999,963,128 indexed bytes, sparse (headers written, payload a hole: ~1 MB of disk).

Each round runs, one process each, interleaved so load drifts hit all alike:
  python       python -c pass: the interpreter's own start, the floor of any Python process
  safe_open    python -c: safetensors.safe_open on every shard, keys() and metadata()
  charter      charter admit FOLDER --contract BUNDLE, from the bundle's receipt (Note [Vouched
               bundle]: the receipt the warm-up admission left; no YAML parsed)
  charter-load the same with the receipt removed first: contracts parsed and resolved, as on the
               first admission of a bundle contract
  charter-cpp  the same as charter with --engine cpp (the C++ checker compiled into charter._native)
Printed: median wall time and peak RSS of each (VmHWM of the child), the ratios against safe_open
the issue sets targets for (charter >= 10x faster, charter-cpp >= 20x) and the admission's own
budget (under 1 s and 200 MB); the load average before and after. The payload is never read (the
shards are holes), so the figures are those of a header-only admission at any payload size.
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

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "specs" / "bundles" / "qwen4exp-source.yaml"
PEER_TARGETS = {"charter": 10.0, "charter-cpp": 20.0}
BUDGET_S, BUDGET_MIB = 1.0, 200


def build(folder: Path) -> None:
    from charter.conforming.bundles import build_bundle
    from charter.contract.contractset import load_set

    cs = load_set([BUNDLE], [ROOT / "specs"])
    if cs.diagnostics:
        raise SystemExit("\n".join(d.render() for d in cs.diagnostics))
    build_bundle(cs.bundles["qwen4exp-source"], folder)


PEAK = ("import atexit, sys\n"
        "def _peak():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM'): sys.stderr.write('PEAK ' + line.split()[1] + '\\n')\n"
        "atexit.register(_peak)\n")


def commands(folder: Path) -> dict[str, list[str]]:
    py = sys.executable
    shards = [str(p) for p in sorted(folder.glob("*.safetensors"))]
    charter = PEAK + "import sys; from charter.cli import main; sys.exit(main(sys.argv[1:]))"
    forget = PEAK + ("import sys; from charter.bundles.vouched import bundle_receipt_path; from charter.cli import main\n"
                     "from pathlib import Path; bundle_receipt_path(Path(sys.argv[4])).unlink(missing_ok=True)\n"
                     "sys.exit(main(sys.argv[1:]))")
    admit = ["admit", str(folder), "--contract", str(BUNDLE)]
    return {
        "python": [py, "-c", PEAK + "pass"],
        "safe_open": [py, "-c", PEAK + "import sys\nfrom safetensors import safe_open\nfor p in sys.argv[1:]:\n"
                                       "    with safe_open(p, 'np') as f:\n        f.keys(); f.metadata()", *shards],
        "charter": [py, "-c", charter, *admit],
        "charter-load": [py, "-c", forget, *admit],
        "charter-cpp": [py, "-c", charter, *admit, "--engine", "cpp"],
    }


def run(cmd: list[str], env: dict) -> tuple[float, int]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} exited {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    peak = next(int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("PEAK "))
    return elapsed, peak // 1024


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--keep", type=Path, help="build the folder here and keep it")
    args = p.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="charter-bundle-bench-"))
    folder = work / "qwen4exp-source"
    if not folder.exists():
        build(folder)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmds = commands(folder)
    before = os.getloadavg()
    for name, cmd in cmds.items():  # warm-up: bytecode, the receipt, the page cache
        if name != "charter-load":
            run(cmd, env)
    times: dict[str, list[float]] = {k: [] for k in cmds}
    peaks: dict[str, int] = {k: 0 for k in cmds}
    for _ in range(args.repeat):
        for name in ("python", "safe_open", "charter", "charter-cpp", "charter-load"):  # load last: it
            t, peak = run(cmds[name], env)                                              # rewrites the receipt
            times[name].append(t)
            peaks[name] = max(peaks[name], peak)
        run(cmds["charter"], env)  # the receipt again, for --engine cpp in the next round
        run(cmds["charter-cpp"], env)
    after = os.getloadavg()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"131 shards, 1658 tensors, 359,999,963,128 bytes (sparse); median of {args.repeat} rounds")
    print(f"{'command':<13} {'wall s':>8} {'peak MiB':>9}  ratio (safe_open / it)")
    ok = True
    for name in cmds:
        ratio = med["safe_open"] / med[name]
        line = f"{name:<13} {med[name]:>8.3f} {peaks[name]:>9}  {ratio:5.2f}x"
        if name in PEER_TARGETS:
            budget = med[name] < BUDGET_S and peaks[name] < BUDGET_MIB
            peer = ratio >= PEER_TARGETS[name]
            ok &= budget and peer
            line += f"  budget < {BUDGET_S:.0f} s, < {BUDGET_MIB} MiB: {'PASS' if budget else 'FAIL'}; " \
                    f">= {PEER_TARGETS[name]:.0f}x: {'PASS' if peer else 'FAIL'}"
        print(line)
    floor = med["python"]
    print(f"a process {PEER_TARGETS['charter']:.0f}x faster than safe_open would take "
          f"{med['safe_open'] / PEER_TARGETS['charter']:.3f} s; the interpreter alone takes {floor:.3f} s")
    print(f"load average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, after "
          f"{after[0]:.2f} {after[1]:.2f} {after[2]:.2f} ({os.cpu_count()} CPUs)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
