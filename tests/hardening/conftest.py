"""Fixtures of the hardening tests: the corpus's contracts, a private checker cache, the CLI."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from charter.cli import main
from tests.conftest import ROOT, session_folder
from tests.hardening import corpus

# Subprocess runs: address-space limit and wall-clock timeout. 256 MiB is ~2.5x what `charter
# admit` needs (interpreter, pydantic, numpy); a reader that allocated from an untrusted count
# would die with MemoryError (exit 3) or be killed, never pass.
MEMORY_LIMIT = 256 * 2**20
TIMEOUT = 30.0


@pytest.fixture(scope="session", autouse=True)
def _checker_cache(tmp_path_factory):
    """Checkers rendered from the corpus's contracts go to a per-session cache, never the user's
    (session-wide, so module- and session-scoped fixtures that load checkers use it too), one that
    the session's xdist workers share, so that a checker library is compiled once, not per worker."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(session_folder(tmp_path_factory, "xdg-cache")))
        yield


@pytest.fixture(scope="session")
def contracts(tmp_path_factory) -> dict[str, Path]:
    """The corpus's contracts; admitting each base file once first pays the one-time costs
    (imports, rendering the checkers) once."""
    root = tmp_path_factory.mktemp("hostile-contracts")
    paths = corpus.write_contracts(root)
    with contextlib.redirect_stdout(io.StringIO()):
        for key, path in paths.items():
            base = root / f"base-{key}"
            base.write_bytes(corpus.base_gguf() if key.startswith("gguf") else corpus.base_safetensors())
            main(["admit", str(base), "--contract", str(path)])
    return paths


@dataclasses.dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def report(self) -> dict:
        """The AdmissionReport: the result of `admit --format json` (schemas/output.schema.json)."""
        return json.loads(self.out)["result"]


def admit(capsys, artifact: Path, contract: Path, *extra: str) -> Run:
    """`charter admit ARTIFACT --contract CONTRACT --json`, in process."""
    capsys.readouterr()
    code = main(["admit", str(artifact), "--contract", str(contract), "--json", *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return Run(code, out, err)


def limit_memory() -> None:  # preexec_fn: runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def admit_subprocess(artifact: Path, contract: Path, cache: Path, *extra: str) -> tuple[subprocess.CompletedProcess,
                                                                                       float]:
    """The real `python -m charter admit` under RLIMIT_AS and a timeout."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "charter", "admit", str(artifact), "--contract", str(contract),
                           "--json", *extra], capture_output=True, text=True, timeout=TIMEOUT, env=env,
                          preexec_fn=limit_memory, cwd=ROOT)
    return proc, time.perf_counter() - t0


def assert_one_diagnostic(run: Run, code: str, field: str | None) -> dict:
    """Exit 1; one diagnostic of `code` (and `field`) at the stage owning the code; the stages
    before it passed (or were skipped), the ones after it did not run."""
    assert run.code == 1, (run.code, run.out, run.err)
    assert run.err == "", run.err
    r = run.report
    assert r["admitted"] is False
    d = r["diagnostic"]
    assert d["code"] == code, d
    if field is not None:
        assert d["field"] == field, d
    from charter.diagnostics import Code

    assert d["stage"] == Code(code).stage.value, d
    results = [s["result"] for s in r["stages"]]
    i = [s["stage"] for s in r["stages"]].index(d["stage"])
    assert results[i] == "failed" and results.count("failed") == 1, r["stages"]
    assert set(results[:i]) <= {"passed", "skipped"} and set(results[i + 1:]) <= {"not-run"}, r["stages"]
    return d
