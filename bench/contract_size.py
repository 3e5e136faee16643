"""Benchmark: large frozen contracts (issue 14, item 2): YAML loading per 1k tensors with libyaml and
with the pure parser, and `charter check` / cold `charter admit` processes next to a
`gguf.GGUFReader` and a `safetensors.safe_open` process.

Run:  .venv/bin/python bench/contract_size.py [--sizes 1000,10000] [--repeat 5]

For each size and format, a synthetic file is written by the field's own library (`gguf.GGUFWriter`,
`safetensors.numpy.save_file`) with tensor names that never fold into `{i}` patterns (a leading
zero is not a layer index), so the frozen contract lists every tensor (about 11 YAML nodes each),
and frozen with `charter.freeze.freeze`. Then, in fresh processes, interleaved round by round
(one of each per round; the median of --repeat rounds is reported):
  check      `python -m charter check CONTRACT`
  admit      `python -m charter admit FILE --contract CONTRACT`, header only, with the checker
             cache already filled once (a cold process, not a cold cache)
  peer       `python -c` with `gguf.GGUFReader(FILE)` or `safe_open(FILE, "np")` + keys() + metadata()
In process: `load_file(CONTRACT)` with parser="libyaml" and parser="pure" (median of --repeat).
Target (issue 14): cold admit within 2x of the peer process at 10k tensors. Only the loading figures
are this item's; the admit command path is worked on elsewhere (src/charter/admission/commands.py).
The load average is printed before and after: on a busy machine the ratios, not the times, compare.
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
TARGET = 2.0

PEERS = {
    "gguf": "import sys, gguf; gguf.GGUFReader(sys.argv[1])",
    "safetensors": ("import sys\nfrom safetensors import safe_open\n"
                    "with safe_open(sys.argv[1], 'np') as f:\n    f.keys(); f.metadata()"),
}


def write_artifact(fmt: str, path: Path, n: int) -> Path:
    import numpy as np

    names = [f"extra.0{i}.x{i % 7}.weight" for i in range(n)]
    if fmt == "gguf":
        import gguf

        w = gguf.GGUFWriter(str(path), "llama")
        for i, name in enumerate(names):
            w.add_tensor(name, np.zeros((4, 1 + i % 5), np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    else:
        from safetensors.numpy import save_file

        save_file({name: np.zeros((4, 1 + i % 5), np.float32) for i, name in enumerate(names)}, str(path))
    return path


def run(argv: list[str], env: dict) -> float:
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed


def median_in_process(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def bench_case(fmt: str, n: int, tmp: Path, repeat: int) -> dict:
    from charter.contract.yamlload import load_file
    from charter.freeze import freeze

    artifact = write_artifact(fmt, tmp / f"t{n}.{fmt}", n)
    t = time.perf_counter()
    freeze(artifact, f"t{n}-{fmt}", tmp / f"specs-{fmt}-{n}")
    frozen = time.perf_counter() - t
    contract = tmp / f"specs-{fmt}-{n}" / "artifacts" / f"t{n}-{fmt}.yaml"
    doc = load_file(contract, parser="libyaml")
    assert doc.parsed_by == "libyaml", doc.parsed_by
    libyaml = median_in_process(lambda: load_file(contract, parser="libyaml"), repeat)
    pure = median_in_process(lambda: load_file(contract, parser="pure"), max(1, repeat // 2))

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # compiled once, not per process
    py = sys.executable
    commands = {
        "check": [py, "-m", "charter", "check", str(contract)],
        "admit": [py, "-m", "charter", "admit", str(artifact), "--contract", str(contract)],
        "peer": [py, "-c", PEERS[fmt], str(artifact)],
    }
    first_admit = run(commands["admit"], env)  # renders and caches the checker
    samples: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            samples[name].append(run(argv, env))
    times = {k: statistics.median(v) for k, v in samples.items()}
    return {"fmt": fmt, "n": n, "bytes": contract.stat().st_size, "freeze": frozen, "first_admit": first_admit,
            "libyaml": libyaml, "pure": pure, **times}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="tensor counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds (median is reported)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            for fmt in ("gguf", "safetensors"):
                rows.append(bench_case(fmt, n, Path(tmp), args.repeat))
    load_after = os.getloadavg()

    print("YAML loading of the frozen artifact contract, in process (median):")
    print(f"{'format':12} {'tensors':>8} {'KiB':>6} {'libyaml':>9} {'pure':>9} {'pure/libyaml':>12} "
          f"{'libyaml per 1k':>14} {'pure per 1k':>12}")
    for r in rows:
        print(f"{r['fmt']:12} {r['n']:>8} {r['bytes'] // 1024:>6} {r['libyaml']:>8.3f}s {r['pure']:>8.3f}s "
              f"{r['pure'] / r['libyaml']:>11.1f}x {r['libyaml'] / r['n'] * 1e3 * 1e3:>12.1f}ms "
              f"{r['pure'] / r['n'] * 1e3 * 1e3:>10.1f}ms")
    print()
    print("Processes, interleaved (median); freeze and the first admit (checker rendered) once:")
    print(f"{'format':12} {'tensors':>8} {'freeze':>8} {'1st admit':>9} {'check':>8} {'admit':>8} {'peer':>8} "
          f"{'check/peer':>10} {'admit/peer':>10}")
    ok = True
    for r in rows:
        verdict = ""
        if r["n"] >= 10_000:
            passed = r["admit"] / r["peer"] <= TARGET
            ok &= passed
            verdict = f"  (target <= {TARGET:.0f}x) {'PASS' if passed else 'FAIL'}"
        print(f"{r['fmt']:12} {r['n']:>8} {r['freeze']:>7.2f}s {r['first_admit']:>8.2f}s {r['check']:>7.2f}s "
              f"{r['admit']:>7.2f}s {r['peer']:>7.2f}s {r['check'] / r['peer']:>9.1f}x "
              f"{r['admit'] / r['peer']:>9.1f}x{verdict}")
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} (2 cores)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
