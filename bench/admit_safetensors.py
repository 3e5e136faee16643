"""Benchmark: charter's admission of a 111-tensor safetensors file vs safetensors.safe_open.

Run:  .venv/bin/python bench/admit_safetensors.py [--repeat 15] [--payload seeded|sparse]

The file is built from specs/artifacts/tiny-llama-safetensors.yaml by charter.conforming (12 layers x
9 tensors + 3, BF16 matrices and F32 norms, 0.9 MiB) into a temporary directory. What is timed (both
in this process, after a warm-up, excluding interpreter start-up and imports):
  charter    admit(path, checker): the strict reader plus every stage but payload, with the checker
             generated from the contract (committed under generated/ if current, else rendered once).
  safe_open  safetensors.safe_open(path, "np") as f: f.keys(); f.metadata() -- the Rust crate's
             header parse, which is what a loader does before it touches a tensor.
Target: charter within 10x of safe_open (ratio charter / safe_open <= 10).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "specs/artifacts/tiny-llama-safetensors.yaml"
TARGET = 10.0


def median_seconds(fn, repeat: int, number: int) -> tuple[float, list[float]]:
    fn()
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t) / number)
    return statistics.median(samples), samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed samples (median is reported)")
    parser.add_argument("--number", type=int, default=20, help="calls per sample")
    parser.add_argument("--payload", choices=("seeded", "sparse"), default="seeded")
    args = parser.parse_args()

    from safetensors import safe_open

    from charter.admission.runtime import admit
    from charter.admission.view import read_view
    from charter.engines.choose import python_checker
    from charter.conforming import build
    from charter.contract.contractset import load_set

    cs = load_set([CONTRACT], [ROOT / "specs"])
    if cs.diagnostics:
        raise SystemExit("\n".join(d.render() for d in cs.diagnostics))
    (cid,) = cs.artifacts
    checker, origin = python_checker(cs, cid, ROOT / "generated")

    with tempfile.TemporaryDirectory() as tmp:
        path = build(cs.artifacts[cid], Path(tmp) / "tiny-llama.safetensors", payload=args.payload)
        report = admit(str(path), checker)
        if not report.admitted:
            raise SystemExit(f"the built file was not admitted: {report.render()}")

        def with_safe_open():
            with safe_open(str(path), "np") as f:
                f.keys()
                f.metadata()

        with safe_open(str(path), "np") as f:
            n_tensors = len(f.keys())
        print(f"artifact: {n_tensors} tensors, {path.stat().st_size / 2**20:.2f} MiB ({args.payload} payload)")
        print(f"checker:  {origin}")
        ours, ours_s = median_seconds(lambda: admit(str(path), checker), args.repeat, args.number)
        theirs, theirs_s = median_seconds(with_safe_open, args.repeat, args.number)
        reader, _ = median_seconds(lambda: read_view(str(path), "safetensors"), args.repeat, args.number)

    ratio = ours / theirs
    print(f"charter admission (9 stages, header only): median {ours * 1e6:9.1f} us  "
          f"[{min(ours_s) * 1e6:.1f} .. {max(ours_s) * 1e6:.1f}]")
    print(f"  of which the strict reader (container):  median {reader * 1e6:9.1f} us; "
          f"stages after it {max(ours - reader, 0) * 1e6:.1f} us")
    print(f"safe_open + keys() + metadata():            median {theirs * 1e6:9.1f} us  "
          f"[{min(theirs_s) * 1e6:.1f} .. {max(theirs_s) * 1e6:.1f}]")
    ok = ratio <= TARGET
    print(f"charter / safe_open: {ratio:.1f}x  (target <= {TARGET:.0f}x)  {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
