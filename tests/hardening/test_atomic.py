"""Item 6 of the hardening issue: atomic outputs.

`charter generate`, `charter freeze` and `charter fixtures capture` write through a temporary file
and a rename. A run interrupted in the middle of writing (an exception or a signal delivered while
a file is being written) leaves every previous output intact, never a truncated file, and no
temporary file behind. The interruption is injected at each write in turn: atomic.write_bytes
calls os.fsync once per file, after the data and before the rename, and os.fdopen's file receives
the data, so those two calls are where a run is cut.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from charter.cli import main
from tests.conftest import ROOT
from tests.hardening import corpus


class Interrupted(Exception):
    """Stands for anything that stops a run: a disk error, a bug, a signal's KeyboardInterrupt."""


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def strays(root: Path) -> list[str]:
    """Temporary files atomic.write_bytes would leave: `.<name>.<random>.tmp`."""
    return [p.relative_to(root).as_posix() for p in root.rglob(".*.tmp")]


def interrupt_at(monkeypatch, n: int, how: str) -> list[int]:
    """Cut the run at the n-th file write: `how` is "fsync" (data written, not yet renamed),
    "write" (half the data written), or "sigint" (a real SIGINT while the file is open)."""
    calls = [0]
    real_fsync, real_fdopen = os.fsync, os.fdopen

    def fsync(fd):
        calls[0] += 1
        if calls[0] == n:
            if how == "sigint":
                os.kill(os.getpid(), signal.SIGINT)  # KeyboardInterrupt at the next bytecode
            elif how == "fsync":
                raise Interrupted(f"interrupted before renaming file {n}")
        return real_fsync(fd)

    class HalfWriter:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            self.f.__enter__()
            return self

        def __exit__(self, *exc):
            return self.f.__exit__(*exc)

        def write(self, data):
            self.f.write(data[: len(data) // 2])
            raise Interrupted(f"interrupted in the middle of file {calls[0] + 1}")

        def __getattr__(self, name):
            return getattr(self.f, name)

    def fdopen(fd, mode="r", *args, **kwargs):
        f = real_fdopen(fd, mode, *args, **kwargs)
        if how == "write" and "w" in mode and calls[0] + 1 == n:
            return HalfWriter(f)
        return f

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "fdopen", fdopen)
    return calls


@pytest.fixture(autouse=True)
def _sigint_raises():
    """A test worker may run with SIGINT ignored; a charter process has Python's default handler."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def run_cli(args: list[str]) -> int:
    try:
        return main(args)
    except Interrupted:
        return -1


def assert_each_file_old_or_new(before: dict, after: dict, new: dict, interrupted: int) -> None:
    for rel, data in after.items():
        assert data == before.get(rel) or data == new.get(rel), f"{rel} is neither the old nor the new output"
    for rel in before:
        assert rel in after, f"{rel} disappeared"
    assert after != new or interrupted == 0


# --- generate ---------------------------------------------------------------------------------------


@pytest.fixture
def generate_setup(tmp_path):
    """A specs tree, its generated/ output, and the outputs of the same tree after an edit."""
    paths = corpus.write_contracts(tmp_path / "tree")
    specs = paths["gguf"].parent.parent
    out = tmp_path / "generated"
    assert main(["generate", str(specs), "-o", str(out)]) == 0
    before = snapshot(out)
    text = paths["gguf"].read_text("utf-8")
    paths["gguf"].write_text(text.replace("value: 42}", "value: 43}"), "utf-8")
    reference = tmp_path / "reference"
    assert main(["generate", str(specs), "-o", str(reference)]) == 0
    new = snapshot(reference)
    changed = [rel for rel in new if new[rel] != before.get(rel)]
    assert len(changed) >= 2  # the checker(s) and the manifest
    return specs, out, before, new, changed


@pytest.mark.parametrize("how", ["fsync", "write", "sigint"])
def test_interrupted_generate_leaves_outputs_intact(how, generate_setup, monkeypatch, capsys):
    specs, out, before, new, changed = generate_setup
    for n in range(1, len(changed) + 1):
        shutil.rmtree(out)
        out.mkdir()
        for rel, data in before.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(data)
        with monkeypatch.context() as mp:
            interrupt_at(mp, n, how)
            code = run_cli(["generate", str(specs), "-o", str(out)])
        assert code in (-1, 3, 130), code  # exception, internal error, interrupted
        after = snapshot(out)
        assert not strays(out), strays(out)
        assert_each_file_old_or_new(before, after, new, n)
    capsys.readouterr()


def test_admission_after_an_interrupted_generate_never_runs_a_stale_checker(generate_setup, monkeypatch, tmp_path,
                                                                            capsys):
    """Whichever file the run was cut at, the manifest vouches only for a checker generated from
    these contract bytes: `charter admit` runs the edited contract (test.u32 must be 43)."""
    specs, out, before, new, changed = generate_setup
    artifact = tmp_path / "base.gguf"
    artifact.write_bytes(corpus.base_gguf())
    contract = specs / "artifacts" / corpus.CONTRACTS["gguf"][0]
    for n in range(1, len(changed) + 1):
        shutil.rmtree(out)
        out.mkdir()
        for rel, data in before.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(data)
        with monkeypatch.context() as mp:
            interrupt_at(mp, n, "fsync")
            run_cli(["generate", str(specs), "-o", str(out)])
        capsys.readouterr()
        assert main(["admit", str(artifact), "--contract", str(contract), "--generated", str(out)]) == 1
        assert "METADATA_VALUE metadata.test.u32: expected 43, got 42" in capsys.readouterr().out


SIGTERM_RUN = textwrap.dedent("""
    import os, signal, sys
    calls = [0]
    real = os.fsync
    def fsync(fd):
        calls[0] += 1
        if calls[0] == int(sys.argv[1]):
            os.kill(os.getpid(), signal.{signal})
        return real(fd)
    os.fsync = fsync
    from charter.cli import main
    sys.exit(main(sys.argv[2:]))
""")


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_generate_killed_by_a_termination_signal_leaves_no_temporary_file(sig, generate_setup):
    """The signals a process manager sends: the default action kills the process in the middle of
    the write, before the temporary file can be removed, unless charter turns them into an
    orderly exit."""
    specs, out, before, new, changed = generate_setup
    proc = subprocess.run([sys.executable, "-c", SIGTERM_RUN.format(signal=sig), "1", "generate", str(specs), "-o",
                           str(out)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 128 + getattr(signal, sig), (proc.returncode, proc.stderr[-500:])
    assert snapshot(out) == before
    assert not strays(out), f"{sig} left {strays(out)}"


# --- freeze ---------------------------------------------------------------------------------------------


def _artifact(tmp_path: Path, name: str, arch: str) -> Path:
    g = corpus.base_gguf_spec().with_kv("general.architecture", corpus.kv_str("general.architecture", arch))
    path = tmp_path / name
    path.write_bytes(corpus.build_gguf(g)[0])
    return path


@pytest.fixture
def freeze_setup(tmp_path, capsys):
    first = _artifact(tmp_path, "first.gguf", "llama")
    second = _artifact(tmp_path, "second.gguf", "gpt2")
    out = tmp_path / "frozen"
    assert main(["freeze", str(first), "--id", "x", "-o", str(out)]) == 0
    before = snapshot(out)
    reference = tmp_path / "reference"
    assert main(["freeze", str(second), "--id", "x", "-o", str(reference)]) == 0
    new = snapshot(reference)
    assert set(new) == set(before) and all(new[k] != before[k] for k in new)  # both files change
    capsys.readouterr()
    return second, out, before, new


@pytest.mark.parametrize("how", ["fsync", "write", "sigint"])
@pytest.mark.parametrize("n", [1, 2])
def test_interrupted_freeze_leaves_each_file_intact(n, how, freeze_setup, monkeypatch, capsys):
    second, out, before, new = freeze_setup
    with monkeypatch.context() as mp:
        interrupt_at(mp, n, how)
        code = run_cli(["freeze", str(second), "--id", "x", "-o", str(out), "--force"])
    assert code in (-1, 3, 130), code
    assert not strays(out), strays(out)
    assert_each_file_old_or_new(before, snapshot(out), new, n)


def test_interrupted_freeze_keeps_the_previous_pair(freeze_setup, monkeypatch, capsys):
    """freeze writes a model and an artifact contract that belong together. Cut at the second
    write, the first must not already be replaced: the previous pair stays whole (write both
    temporary files, then rename)."""
    second, out, before, new = freeze_setup
    with monkeypatch.context() as mp:
        interrupt_at(mp, 2, "fsync")
        run_cli(["freeze", str(second), "--id", "x", "-o", str(out), "--force"])
    after = snapshot(out)
    assert after == before, [rel for rel in after if after[rel] != before[rel]]


# --- fixtures capture ---------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["fsync", "write", "sigint"])
def test_interrupted_capture_leaves_the_fixture_intact(how, tmp_path, monkeypatch, capsys):
    specs = tmp_path / "specs"
    shutil.copytree(ROOT / "specs", specs)
    spec = specs / "provenance" / "rmsnorm-seeded.yaml"
    fixture = spec.with_suffix(".npz")
    previous = b"the previous output, whatever it was"
    fixture.write_bytes(previous)
    with monkeypatch.context() as mp:
        interrupt_at(mp, 1, how)
        code = run_cli(["fixtures", "capture", str(spec)])
    assert code in (-1, 3, 130), code
    assert fixture.read_bytes() == previous
    assert not strays(specs), strays(specs)
    capsys.readouterr()
    assert main(["fixtures", "capture", str(spec)]) == 0  # uninterrupted, it writes the real fixture
    assert main(["fixtures", "verify", str(spec)]) == 0
