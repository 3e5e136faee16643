#!/usr/bin/env python3
"""Benchmark: charter's strict safetensors reader vs safetensors.safe_open, at 1k, 100k, 1.29M tensors.

Run:  .venv/bin/python bench/read_safetensors.py [--repeat 5] [--sizes 1000,100000,1290000]

The files are written directly (header JSON, spaces to a multiple of 8, then a sparse hole for the
data) into a temporary directory: tensors `t0`, `t1`, ... of F16 [4] (8 bytes each), in offset
order, no metadata. At 1.29M tensors (the size of the real header reported in safetensors#668) the
header is 97 MB, just under the 100 MB header cap both tools share.

What is timed, each in a fresh interpreter (one process per tool, size and round; the tools
interleaved within each round), after its imports, in process:
  charter    read_safetensors(path), then every tensor's shape and dtype; at 1.29M tensors with
             `max_json_structure` and `max_json_members` raised to 2**24 (the default limits,
             2**21 of the bytes , : [ and 2**19 + 2**16 of them `:`, refuse such a header with
             CONTAINER_HEADER: docs/security.md "What a header can cost")
  safe_open  with safe_open(path, "np") as f: f.metadata(); for every key, f.get_slice(k)
             .get_shape() and .get_dtype() -- the Rust crate's header parse plus what a loader reads
Each process reports the median of its calls (as many as fit in about 0.5 s, at least 1) in CPU
time (time.process_time: both tools run on one thread, and CPU time does not count the time a
shared machine gives to others; the wall time is printed beside it), its peak RSS (/proc/self/status
VmHWM, after one call; ru_maxrss would carry the parent's pages across fork and exec), and its RSS
after the imports, before any call.

Printed per size: the median CPU and wall time over rounds, the largest peak RSS, the ratios
charter / safe_open (of CPU time and of peak RSS), and the load average before and after. Target (issue 14 item 3): time ratio <= 2 and
peak-RSS ratio <= 1.5 at every size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIME_TARGET, RSS_TARGET = 2.0, 1.5
RAISED_STRUCTURE = 2**24  # for headers past the default limits (1.29M tensors of rank 1 hold 12.9M , : [ and 5.2M :)
TOOLS = ("charter", "safe_open")


def write_file(path: Path, n: int) -> None:
    """`n` F16 [4] tensors over a sparse data section of 8 * n bytes."""
    parts = [
        f'"t{i}":{{"dtype":"F16","shape":[4],"data_offsets":[{8 * i},{8 * i + 8}]}}' for i in range(n)
    ]
    raw = ("{" + ",".join(parts) + "}").encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(len(raw).to_bytes(8, "little"))
        f.write(raw)
        f.truncate(8 + len(raw) + 8 * n)


def _rss(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def worker(tool: str, path: str, n: int) -> None:
    """Run in a fresh interpreter: time `tool` on `path` and print one JSON line."""
    if tool == "charter":
        from charter.formats.safetensors import MAX_JSON_MEMBERS, MAX_JSON_STRUCTURE, read_safetensors

        raised = n * 10 > MAX_JSON_STRUCTURE or n * 4 > MAX_JSON_MEMBERS
        limits = dict(max_json_structure=RAISED_STRUCTURE, max_json_members=RAISED_STRUCTURE) if raised else {}

        def once():
            header = read_safetensors(path, **limits)
            for t in header.tensors:
                t.shape, t.dtype
            return len(header.tensors)
    else:
        from safetensors import safe_open

        def once():
            with safe_open(path, "np") as f:
                f.metadata()
                keys = f.keys()
                for k in keys:
                    s = f.get_slice(k)
                    s.get_shape(), s.get_dtype()
            return len(keys)

    imported = _rss("VmRSS")
    samples, walls = [], []
    start = time.perf_counter()
    while not samples or (time.perf_counter() - start < 0.5 and len(samples) < 200):
        t, w = time.process_time(), time.perf_counter()
        count = once()
        samples.append(time.process_time() - t)
        walls.append(time.perf_counter() - w)
        if len(samples) == 1:
            peak = _rss("VmHWM")
    assert count == n, (tool, count, n)
    print(json.dumps({"seconds": statistics.median(samples), "wall": statistics.median(walls), "calls": len(samples),
                      "peak_kib": peak, "imported_kib": imported}))


def run(tool: str, path: Path, n: int) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run([sys.executable, __file__, "--worker", tool, str(path), str(n)], env=env,
                         capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        raise SystemExit(f"{tool} on {n} tensors failed:\n{out.stderr}")
    return json.loads(out.stdout.splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds (the median is reported)")
    parser.add_argument("--sizes", default="1000,100000,1290000", help="tensor counts, comma-separated")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], int(args.worker[2]))
        return 0

    sizes = [int(s) for s in args.sizes.split(",")]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for n in sizes:
            paths[n] = Path(tmp) / f"t{n}.safetensors"
            write_file(paths[n], n)
        subprocess.run([sys.executable, "-c", "import charter.formats.safetensors"], cwd=ROOT,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
        load_before = os.getloadavg()
        results = {(tool, n): [] for tool in TOOLS for n in sizes}
        for _ in range(args.repeat):
            for n in sizes:
                for tool in TOOLS:
                    results[tool, n].append(run(tool, paths[n], n))
        load_after = os.getloadavg()

        print(f"{'tensors':>9} {'header':>8} | {'charter: CPU (wall), peak RSS':>31} | "
              f"{'safe_open: CPU (wall), peak RSS':>31} | {'CPU':>6} {'RSS':>6}")
        for n in sizes:
            header = int.from_bytes(paths[n].open("rb").read(8), "little")
            row = {}
            for tool in TOOLS:
                rs = results[tool, n]
                row[tool] = (statistics.median(r["seconds"] for r in rs), statistics.median(r["wall"] for r in rs),
                             max(r["peak_kib"] for r in rs) / 1024)
            t_ratio = row["charter"][0] / row["safe_open"][0]
            m_ratio = row["charter"][2] / row["safe_open"][2]
            good = t_ratio <= TIME_TARGET and m_ratio <= RSS_TARGET
            ok &= good
            cells = " | ".join(f"{c * 1e3:9.2f} ms ({w * 1e3:9.2f}) {p:5.0f} MiB" for c, w, p in row.values())
            print(f"{n:>9} {header / 1e6:6.2f}MB | {cells} | {t_ratio:5.2f}x {m_ratio:5.2f}x  {'PASS' if good else 'FAIL'}")
        imported = ", ".join(f"{tool} {results[tool, sizes[0]][0]['imported_kib'] / 1024:.0f} MiB" for tool in TOOLS)
        print(f"RSS after the imports, before any read: {imported}")
    print(f"targets: time <= {TIME_TARGET}x, peak RSS <= {RSS_TARGET}x safe_open's; "
          f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} CPUs)")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
