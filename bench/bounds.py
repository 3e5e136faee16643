"""Benchmark: value bounds (Note [Value bounds]) scanned as the payload stage scans them, numpy
against charter/values.hpp, per integer width.

Run:  .venv/bin/python bench/bounds.py [--mib 256] [--repeat 5]

No shipped real artifact holds a large integer tensor (the real MiniLM position_ids are 4 KiB), so
the buffer is synthetic: --mib MiB of elements in [0, 100), all inside the bound [0, 100], so every
element is read (the worst case: no early exit). Each kind is scanned in the payload stage's
chunks (charter.admission.runtime.PAYLOAD_CHUNK, whole elements) by
charter.admission.values.TensorBounds, with numpy and with charter._native.first_out_of_bounds
(what `--engine cpp` runs), interleaved round by round. Printed: the best of --repeat rounds in
GB/s (10^9 bytes/s), and the load average before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from charter import _native
    from charter.admission.runtime import PAYLOAD_CHUNK
    from charter.admission.values import TensorBounds
    from charter.formats.values import INTEGER_ELEMENTS

    print(f"load average before: {os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(0)
    for codec in ("I8", "I16", "I32", "I64", "U64"):
        e = INTEGER_ELEMENTS["safetensors"][codec]
        data = memoryview(rng.integers(0, 100, (args.mib << 20) // e.bytes,
                                       dtype=np.dtype(f"<{e.kind[0]}{e.bytes}")).tobytes())
        rule = ("b", ("t",), 0, 100, None, None)
        scanners = {"numpy": TensorBounds("t", codec, e, rule), "cpp": TensorBounds("t", codec, e, rule,
                                                                                    _native.first_out_of_bounds)}
        best = dict.fromkeys(scanners, float("inf"))
        step = scanners["numpy"].chunk_bytes(PAYLOAD_CHUNK)
        for _ in range(args.repeat):
            for name, scanner in scanners.items():
                start = time.perf_counter()
                for i in range(0, len(data), step):
                    if scanner.first_bad(data[i:i + step], 0) is not None:
                        raise AssertionError("an element outside the bound")
                best[name] = min(best[name], time.perf_counter() - start)
        print(f"{codec:4} " + "  ".join(f"{name} {len(data) / s / 1e9:6.2f} GB/s" for name, s in best.items()))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
