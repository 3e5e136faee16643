"""Admission of the full-size sparse Qwen4Exp artifact: time and peak RSS, and independence of size.

Builds the sparse fixture of specs/artifacts/qwen4exp-text.yaml (about 129 GB apparent, a few MB on
disk) and a variant whose payload is over 10x smaller (hidden, expert and PLE widths narrowed in memory;
same header and manifest structure), then admits each in a fresh interpreter so peak RSS is the
admission's own. Targets: under 1 s and under 200 MB, for both sizes alike.

Run: .venv/bin/python bench/admit_qwen4exp.py
What it does not prove: anything about the payload (the stages read the header and the store
manifests only; the payload is a hole), or about a real Qwen4Exp file (none exists here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "artifacts" / "qwen4exp-text.yaml"
REPEATS = 5

PROBE = r"""
import json, resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
from charter.admission.runtime import admit
from charter.mutation.run import checker_module
import pickle
plan = pickle.loads(Path(sys.argv[2]).read_bytes())
checker = checker_module(plan)
imported = time.perf_counter() - t0
times = []
for _ in range(int(sys.argv[3])):
    t = time.perf_counter()
    report = admit(sys.argv[1], checker, require_status="structural")
    times.append(time.perf_counter() - t)
    assert report.admitted, report.diagnostic
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"times": times, "rss_mb": rss, "imports_s": imported}))
"""


def plans():
    sys.path.insert(0, str(ROOT / "src"))
    from charter.contract.contractset import load_set
    from charter.contract.load import LoadedContract, contract_from_document
    from charter.contract.resolve import resolve_artifact, resolve_model
    from charter.contract.yamlload import Document

    cs = load_set([SPEC], [ROOT / "specs"])
    cs.raise_if_failed()
    full = cs.artifacts["qwen4exp-text"]
    model = cs.contracts["qwen4exp"]
    data = json.loads(json.dumps(model.doc.data))
    data["constants"]["expert_width"] = 64  # 10x narrower experts (the notes' parameter invariant goes)
    data["constants"]["hidden"] = 256  # and a narrower residual stream
    data["invariants"] = [i for i in data["invariants"] if "expert_params" not in i]
    data["constants"]["ple_width"] = 32  # 5x narrower PLE rows ...
    art = json.loads(json.dumps(cs.contracts["qwen4exp-text"].doc.data))
    art["profile"]["constants"]["ple_group_bytes"] = 18  # ... at half the bytes per group
    art["profile"]["constants"]["ple_rows_per_page"] = 4096
    small_model = LoadedContract(contract_from_document(Document(data, model.doc.locations, model.doc.source,
                                                                 model.doc.file)), model.doc, model.path)
    loaded = cs.contracts["qwen4exp-text"]
    small_art = LoadedContract(contract_from_document(Document(art, loaded.doc.locations, loaded.doc.source,
                                                               loaded.doc.file)), loaded.doc, loaded.path)
    return full, resolve_artifact(small_art, resolve_model(small_model))


def main() -> int:
    import pickle

    from charter.conforming.stores import build_sparse, qwen4exp_overrides

    full, small = plans()
    overrides = qwen4exp_overrides()
    rows = []
    with tempfile.TemporaryDirectory(prefix="charter-bench-") as tmp:
        for label, plan in (("full", full), ("10x smaller", small)):
            path = Path(tmp) / f"{label.replace(' ', '_')}.gguf"
            build_sparse(plan, path, overrides=overrides)
            st = os.stat(path)
            plan_file = Path(tmp) / f"{label.replace(' ', '_')}.plan"
            plan_file.write_bytes(pickle.dumps(plan))
            out = subprocess.run([sys.executable, "-c", PROBE, str(path), str(plan_file), str(REPEATS)],
                                 capture_output=True, text=True, check=True)
            result = json.loads(out.stdout)
            times = sorted(result["times"])
            rows.append((label, st.st_size, st.st_blocks * 512, times[len(times) // 2], times[0], result["rss_mb"]))
            path.unlink()
    print(f"{'artifact':<13}{'apparent GB':>13}{'on disk MB':>12}{'median s':>10}{'best s':>9}{'peak RSS MB':>13}")
    for label, size, disk, median, best, rss in rows:
        print(f"{label:<13}{size / 1e9:>13.1f}{disk / 1e6:>12.1f}{median:>10.3f}{best:>9.3f}{rss:>13.1f}")
    (_, big, _, t_big, _, rss_big), (_, little, _, t_little, _, rss_little) = rows
    print(f"payload ratio {big / little:.1f}x; admission time ratio {t_big / t_little:.2f}x; "
          f"RSS ratio {rss_big / rss_little:.2f}x")
    ok = all(r[3] < 1.0 and r[5] < 200 for r in rows)
    print(f"target: under 1 s and under 200 MB for both sizes: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
