"""Benchmark: admitting a 131-shard safetensors folder of the Qwen4Exp source's size as one bundle,
against what loaders do with it (safetensors.safe_open over every shard, keys and metadata).

Run:  .venv/bin/python bench/bundle_admit.py [--repeat 7] [--keep DIR]

The folder: 131 shards named as huggingface_hub names them, 1,658 BF16 tensors whose extents sum to
the design notes' 359,999,963,128 indexed bytes, an index as huggingface_hub writes it, a
config.json. The shards are sparse (header written, file truncated to its full size: the payload is
a hole), so the bench needs ~40 MB of disk, not 360 GB. This is NOT the Qwen4Exp source inventory
(its tensor names and shapes are not in the design notes): it has that set's shard count, tensor
count and byte total, which is what the cost of a header-only admission depends on.

The contracts: `charter freeze` of that folder (written to a temporary folder, or --keep DIR).
Each round runs, one process each, interleaved so load drifts hit all alike:
  safe_open    python -c: safetensors.safe_open on every shard, keys() and metadata()
  charter      charter admit FOLDER --contract BUNDLE          (Python engine)
  charter-cpp  the same with --engine cpp (the frozen artifact's checker: a cached library)
Printed: median wall time and peak RSS of each (VmHWM of the child), and the ratios against
safe_open the issue sets targets for (charter >= 10x faster, charter-cpp >= 20x), with the
admission's own budget (under 1 s and 200 MB); the load average before and after.
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
SHARDS, TENSORS, TOTAL = 131, 1658, 359_999_963_128
PEER_TARGETS = {"charter": 10.0, "charter-cpp": 20.0}
BUDGET_S, BUDGET_MIB = 1.0, 200


def build(folder: Path) -> None:
    """The sparse 131-shard folder (deterministic)."""
    folder.mkdir(parents=True)
    elements = TOTAL // 2  # BF16
    per, extra = divmod(elements, TENSORS)
    sizes = [per + (1 if i < extra else 0) for i in range(TENSORS)]
    names = [f"model.layers.{i // 34}.mlp.experts.{i % 34}.weight" for i in range(TENSORS)]
    weight_map = {}
    per_shard = -(-TENSORS // SHARDS)
    for s in range(SHARDS):
        shard = f"model-{s + 1:05d}-of-{SHARDS:05d}.safetensors"
        header, offset = {"__metadata__": {"format": "pt"}}, 0
        for i in range(s * per_shard, min(TENSORS, (s + 1) * per_shard)):
            header[names[i]] = {"dtype": "BF16", "shape": [sizes[i]], "data_offsets": [offset, offset + 2 * sizes[i]]}
            offset += 2 * sizes[i]
            weight_map[names[i]] = shard
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        with open(folder / shard, "wb") as f:
            f.write(len(text).to_bytes(8, "little") + text)
            f.truncate(8 + len(text) + offset)
    index = {"metadata": {"total_size": TOTAL}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    (folder / "config.json").write_text(json.dumps({"architectures": ["Qwen4ExpForConditionalGeneration"],
                                                    "model_type": "qwen4exp", "num_hidden_layers": 48}))


PEAK = ("import atexit, sys\n"
        "def _peak():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM'): sys.stderr.write('PEAK ' + line.split()[1] + '\\n')\n"
        "atexit.register(_peak)\n")


def commands(folder: Path, bundle: Path) -> dict[str, list[str]]:
    py = sys.executable
    shards = [str(p) for p in sorted(folder.glob("*.safetensors"))]
    charter = PEAK + "import sys; from charter.cli import main; sys.exit(main(sys.argv[1:]))"
    admit = ["admit", str(folder), "--contract", str(bundle)]
    return {
        "safe_open": [py, "-c", PEAK + "import sys\nfrom safetensors import safe_open\nfor p in sys.argv[1:]:\n"
                                       "    with safe_open(p, 'np') as f:\n        f.keys(); f.metadata()", *shards],
        "charter": [py, "-c", charter, *admit],
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
    p.add_argument("--keep", type=Path, help="build the folder and contracts here and keep them")
    args = p.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="charter-bundle-bench-"))
    folder = work / "qwen4exp-source"
    if not folder.exists():
        build(folder)
    bundle = work / "contracts" / "bundles" / "q.yaml"
    if not bundle.exists():
        subprocess.run([sys.executable, "-m", "charter", "freeze", str(folder), "--id", "q", "-o",
                        str(work / "contracts")], check=True, capture_output=True)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmds = commands(folder, bundle)
    before = os.getloadavg()
    for cmd in cmds.values():  # warm-up: bytecode, the C++ checker library, the page cache
        run(cmd, env)
    times: dict[str, list[float]] = {k: [] for k in cmds}
    peaks: dict[str, int] = {k: 0 for k in cmds}
    for _ in range(args.repeat):
        for name, cmd in cmds.items():
            t, peak = run(cmd, env)
            times[name].append(t)
            peaks[name] = max(peaks[name], peak)
    after = os.getloadavg()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{SHARDS} shards, {TENSORS} tensors, {TOTAL:,} bytes (sparse); median of {args.repeat} rounds")
    print(f"{'command':<12} {'wall s':>8} {'peak MiB':>9}  ratio (safe_open / it)")
    ok = True
    for name in cmds:
        ratio = med["safe_open"] / med[name]
        line = f"{name:<12} {med[name]:>8.3f} {peaks[name]:>9}  {ratio:5.2f}x"
        if name in PEER_TARGETS:
            met = ratio >= PEER_TARGETS[name] and med[name] < BUDGET_S and peaks[name] < BUDGET_MIB
            ok &= met
            line += f"  (target >= {PEER_TARGETS[name]:.0f}x, < {BUDGET_S:.0f} s, < {BUDGET_MIB} MiB: " \
                    f"{'PASS' if met else 'FAIL'})"
        print(line)
    print(f"load average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, after "
          f"{after[0]:.2f} {after[1]:.2f} {after[2]:.2f} ({os.cpu_count()} CPUs)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
