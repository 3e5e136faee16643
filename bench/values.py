"""Benchmark: the value policy over the whole real SmolLM2 payload, both engines, with and without
the file digest, against the sha256 floor and against gguf-py's dequantize + isfinite.

Run:  .venv/bin/python bench/values.py [--repeat 7]

Each round runs, one after another in this process (interleaved, so load drifts hit all alike):
  sha256         hashlib.file_digest(f, "sha256") over the file: the floor of any digest pass.
  python         the payload stage of specs/artifacts/smollm2-135m-instruct-q4_1.yaml without its
                 file digest (values and zero padding: charter.admission.values, numpy).
  python+sha256  the same with the pinned file digest (what `--verify-payload` runs).
  cpp            the payload stage as `--engine cpp` runs it: Python streams, the value rules run in
                 C++ (charter/values.hpp, charter._native.first_bad_value); without the digest.
  cpp+sha256     the same with the file digest.
  dequantize     for every tensor, gguf.quants.dequantize(raw, type) then numpy.isfinite().all(),
                 over the same bytes (memory-mapped): the independent cross-check's cost.
Printed: the median wall time of each over --repeat rounds, GB/s over the file's bytes (10^9),
and the ratios the issue sets targets for: cpp >= 1 GB/s and cpp+sha256 within 1.5x of sha256;
python >= 0.3 GB/s; both against dequantize. The page cache is hot (a first round, not counted,
reads the file). The load average is printed before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"
CPP_GBPS, CPP_OVER_SHA, PYTHON_GBPS = 1.0, 1.5, 0.3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    import numpy as np
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    from charter.admission.runtime import Context
    from charter.admission.view import read_view
    from charter.codegen.python.build import python_value
    from charter.contract import checks
    from charter.contract.contractset import load_set
    from tests.conftest import smollm2_gguf

    path = smollm2_gguf()
    cs = load_set([CONTRACT], [ROOT / "specs"])
    if not cs.ok:
        raise SystemExit(f"contracts do not load: {cs.diagnostics}")
    plan = cs.artifacts["smollm2-135m-instruct-q4_1"]
    payload = next(c for c in checks.checks_of(plan) if isinstance(c, checks.Payload))
    kwargs = {k: python_value(v) for k, v in checks.arguments(payload).items()}
    assert kwargs["values"] and kwargs["file_sha256"], "the shipped contract checks values and pins the file"
    view = read_view(str(path), "gguf")
    size = view.file_size

    def stage(native: bool, digest: bool):
        def run():
            Context(view, str(path), native_values=native).payload(
                **{**kwargs, "file_sha256": kwargs["file_sha256"] if digest else None})
        return run

    def sha256():
        with open(path, "rb") as f:
            hashlib.file_digest(f, "sha256")

    mapped = np.memmap(path, dtype=np.uint8, mode="r")

    def dequantized():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for t in view.tensors:
                raw = mapped[t.start:t.end].reshape(1, -1)
                if not np.isfinite(dequantize(raw, GGMLQuantizationType[t.codec])).all():
                    raise SystemExit(f"{t.name} is not finite")

    runs = {"sha256": sha256, "python": stage(False, False), "python+sha256": stage(False, True),
            "cpp": stage(True, False), "cpp+sha256": stage(True, True), "dequantize": dequantized}
    print(f"file: {path.name}, {size:,} bytes, {len(view.tensors)} tensors; load average before: {_load()}")
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(args.repeat + 1):
        for name, fn in runs.items():
            t = time.perf_counter()
            fn()
            if round_:  # the first round warms the page cache
                samples[name].append(time.perf_counter() - t)
    med = {name: statistics.median(s) for name, s in samples.items()}
    gbps = {name: size / m / 1e9 for name, m in med.items()}
    for name, m in med.items():
        print(f"  {name:<14} {m * 1000:8.1f} ms  {gbps[name]:6.2f} GB/s  (min {min(samples[name]) * 1000:.1f}, "
              f"max {max(samples[name]) * 1000:.1f}); dequantize / this: {med['dequantize'] / m:.1f}x")
    checks_ = [
        ("cpp", gbps["cpp"] >= CPP_GBPS, f"cpp {gbps['cpp']:.2f} GB/s (target >= {CPP_GBPS:g})"),
        ("cpp+sha256", med["cpp+sha256"] / med["sha256"] <= CPP_OVER_SHA,
         f"cpp+sha256 {med['cpp+sha256'] / med['sha256']:.2f}x sha256 (target <= {CPP_OVER_SHA:g}x)"),
        ("python", gbps["python"] >= PYTHON_GBPS, f"python {gbps['python']:.2f} GB/s (target >= {PYTHON_GBPS:g})"),
        ("python+sha256", True, f"python+sha256 {med['python+sha256'] / med['sha256']:.2f}x sha256 (no target)"),
    ]
    for _, good, text in checks_:
        print(f"  {text}: {'PASS' if good else 'FAIL'}")
    print(f"load average after: {_load()} ({os.cpu_count()} CPUs)")
    ok = all(good for _, good, _ in checks_)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
