#!/usr/bin/env python3
"""Code-mutation gate: run mutmut 3 on the files [tool.mutmut] in pyproject.toml names
(docs/mutation.md says which), then fail unless the tests detect every mutant.

    .venv/bin/python tools/mutmut_gate.py [--timeout 900] [--max-children N] [--threshold 1.0]
                                          [--only GLOB ...] [--json FILE] [--show-diffs]

Steps: check that every `# pragma: no mutate` in the mutated files gives its reason, delete
`mutants/` (an interrupted run leaves a cache that mutmut trusts), run `mutmut run --max-children N`
in its own process group with a hard deadline, read every mutant's status with
`mutmut results --all true`, and print a table by status, the score and every mutant that was not
detected. Exit status:

    0  score >= threshold (default: every mutant detected) and every mutant was checked, none
       suspicious or segfault
    1  below the threshold, a mutant not checked / suspicious / segfault / interrupted, or a
       `# pragma: no mutate` without its reason
    2  mutmut missing or failed to run, or the deadline passed (the run is killed, never left hanging)

score = detected / (every mutant except those a `# pragma: no mutate` skips), where detected is
killed or timed out (as Stryker counts it: a mutant that makes the tests hang is caught); survivors,
"no tests", suspicious, segfaults and unchecked mutants count against it. A mutant that cannot
change behaviour is not a survivor to tolerate but a line to mark, with its reason:
`# pragma: no mutate -- why`. docs/mutation.md says what is mutated and why.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATUSES = ("killed", "survived", "no tests", "timeout", "suspicious", "segfault", "skipped", "not checked",
            "check was interrupted by user", "caught by type check")
DETECTED = ("killed", "caught by type check", "timeout")
NEVER = ("not checked", "suspicious", "segfault", "check was interrupted by user")
PRAGMA = re.compile(r"#\s*pragma:\s*no mutate\b(?P<tail>.*)$")
REASON = re.compile(r"^ -- \S.{8,}")  # `# pragma: no mutate -- why` (block/start/end forms are not used)
RESULT_LINE = re.compile(r"^\s+(?P<name>\S+): (?P<status>.+?)\s*$")


def mutmut_command() -> list[str]:
    script = Path(sys.executable).with_name("mutmut")
    if script.exists():
        return [str(script)]
    found = shutil.which("mutmut")
    if found:
        return [found]
    raise SystemExit("mutmut gate: mutmut is not installed (pip install 'mutmut>=3,<4')")


def check_version(cmd: list[str]) -> str:
    out = subprocess.run(cmd + ["--version"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out.stdout + out.stderr)
    if out.returncode != 0 or m is None or m.group(1) != "3":
        raise SystemExit(f"mutmut gate: needs mutmut 3.x, found: {(out.stdout + out.stderr).strip() or '?'}")
    return m.group(0)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the whole process group (mutmut forks a worker per mutant), then SIGKILL."""
    for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


# mutmut runs a whole pytest session per mutant; without the plugins installed packages register
# through entry points (xdist, hypothesis's reporting, platformdirs: none is needed here, and
# charter's own is refused with -p no:charter anyway) each session starts in a fraction of the time.
# The plugins the gate needs are named with -p in [tool.mutmut] pytest_add_cli_args.
MUTMUT_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def run_mutmut(cmd: list[str], max_children: int, names: list[str], deadline: float, log: Path) -> int:
    """`mutmut run` with its output in `log`; returns its exit status, or raises TimeoutError."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd + ["run", "--max-children", str(max_children), *names], cwd=ROOT,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, **MUTMUT_ENV})
        try:
            return proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            kill_group(proc)
            raise TimeoutError from None
        except BaseException:
            kill_group(proc)
            raise


def read_results(cmd: list[str], deadline: float) -> dict[str, str]:
    """mutant name -> status, from `mutmut results --all true` (every mutant, killed included)."""
    out = subprocess.run(cmd + ["results", "--all", "true"], cwd=ROOT, capture_output=True, text=True,
                         timeout=max(30.0, deadline - time.monotonic()), stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        raise RuntimeError(f"`mutmut results` failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    results = {}
    for line in out.stdout.splitlines():
        m = RESULT_LINE.match(line)
        if m:
            results[m.group("name")] = m.group("status")
    return results


def mutated_files() -> list[Path]:
    """[tool.mutmut] only_mutate, the files whose pragmas the gate reviews."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    return [ROOT / f for f in config["only_mutate"]]


def unexplained_pragmas(files: list[Path]) -> tuple[int, list[str]]:
    """(pragmas, `file:line` of each one that does not say why the mutants it hides change nothing)."""
    count, bare = 0, []
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            m = PRAGMA.search(line)
            if m:
                count += 1
                if not REASON.match(m.group("tail")):
                    bare.append(f"{path}:{number}: {line.strip()}")
    return count, bare


def score_of(counts: Counter) -> tuple[int, int, float]:
    total = sum(n for s, n in counts.items() if s != "skipped")
    detected = sum(counts[s] for s in DETECTED)
    return detected, total, (detected / total if total else 0.0)


def log_tail(log: Path, lines: int = 40) -> str:
    """The end of the run log without mutmut's spinner redraws (the last progress line is kept)."""
    try:
        text = log.read_text(errors="replace").replace("\r", "\n")
    except OSError:
        return ""
    kept, progress = [], None
    for line in text.splitlines():
        if line[:1] and "\u2800" <= line[0] <= "\u28ff":
            progress = line
        elif line.strip():
            kept.append(line)
    return "\n".join(kept[-lines:] + ([f"last progress: {progress}"] if progress else []))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--timeout", type=float, default=900.0, help="overall deadline in seconds (default 900)")
    p.add_argument("--max-children", type=int, default=os.cpu_count() or 1, help="parallel mutant workers")
    p.add_argument("--threshold", type=float, default=1.0, help="minimum score (default 1.0: every mutant detected)")
    p.add_argument("--only", action="append", metavar="GLOB",
                   help="only these mutants (mutmut names, e.g. 'generated.python.*'); repeatable")
    p.add_argument("--json", metavar="FILE", help="write counts, score and undetected mutants as JSON")
    p.add_argument("--show-diffs", action="store_true", help="print `mutmut show` for every survivor")
    args = p.parse_args(argv)

    start = time.monotonic()
    deadline = start + args.timeout
    pragmas, bare = unexplained_pragmas(mutated_files())
    if bare:
        print("mutmut gate: FAILED: `# pragma: no mutate` without its reason (`# pragma: no mutate -- why`):\n  "
              + "\n  ".join(bare))
        return 1
    cmd = mutmut_command()
    version = check_version(cmd)
    mutants = ROOT / "mutants"
    shutil.rmtree(mutants, ignore_errors=True)
    mutants.mkdir()
    log = mutants / "gate-mutmut-run.log"
    names = list(args.only or [])
    print(f"mutmut gate: mutmut {version}, {args.max_children} worker(s), deadline {args.timeout:.0f}s"
          + (f", only {' '.join(names)}" if names else ""), flush=True)
    try:
        rc = run_mutmut(cmd, args.max_children, names, deadline, log)
    except TimeoutError:
        print(log_tail(log))
        print(f"mutmut gate: FAILED: timed out after {args.timeout:.0f}s; mutmut was killed (log: {log}). "
              "Restrict [tool.mutmut] only_mutate or speed up tests/mutmut (docs/mutation.md).")
        return 2
    if rc != 0:
        print(log_tail(log))
        print(f"mutmut gate: FAILED: `mutmut run` exited with {rc} (log: {log})")
        return 2
    try:
        results = read_results(cmd, deadline)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"mutmut gate: FAILED: {exc}")
        return 2
    if names:
        results = {k: v for k, v in results.items() if any(fnmatch.fnmatchcase(k, g) for g in names)}
    elapsed = time.monotonic() - start
    if not results:
        print(log_tail(log))
        print("mutmut gate: FAILED: mutmut reported no mutants")
        return 2

    counts = Counter(results.values())
    files = Counter(k.split(".x")[0] for k in results)
    detected, total, score = score_of(counts)
    print(f"\n{'status':<32}{'mutants':>8}")
    print("-" * 40)
    for status in STATUSES + tuple(sorted(set(counts) - set(STATUSES))):
        if status in STATUSES[:7] or counts[status]:
            print(f"{status:<32}{counts[status]:>8}")
    print("-" * 40)
    print(f"{'total':<32}{sum(counts.values()):>8}")
    print("\nby module: " + ", ".join(f"{m} {n}" for m, n in sorted(files.items())))
    bad = {k: v for k, v in sorted(results.items()) if v not in DETECTED and v != "skipped"}
    if bad:
        print(f"\nnot detected ({len(bad)}):")
        for name, status in bad.items():
            print(f"  {status:<12} {name}")
            if args.show_diffs and status == "survived":
                shown = subprocess.run(cmd + ["show", name], cwd=ROOT, capture_output=True, text=True, timeout=60)
                print("\n".join("      " + ln for ln in shown.stdout.splitlines()[1:]))
    unchecked = {s: counts[s] for s in NEVER if counts[s]}
    ok = score >= args.threshold and not unchecked
    print(f"\nmutation score: {detected}/{total} = {score:.1%} detected (threshold {args.threshold:.0%}) in {elapsed:.0f}s;"
          f" {pragmas} lines marked `# pragma: no mutate`, each with its reason")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "mutmut": version, "seconds": round(elapsed, 1), "max_children": args.max_children, "only": names,
            "counts": dict(counts), "detected": detected, "total": total, "score": score, "threshold": args.threshold,
            "passed": ok, "not_detected": bad}, indent=2, sort_keys=True) + "\n")
    if unchecked:
        print("mutmut gate: FAILED: " + ", ".join(f"{n} {s}" for s, n in unchecked.items()))
    elif not ok:
        print("mutmut gate: FAILED: score below the threshold")
    else:
        print("mutmut gate: PASSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
