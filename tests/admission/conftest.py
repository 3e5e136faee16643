"""Admission through the `charter` CLI (in process): real-format artifacts, one fact changed at a time.

Header-only stages run on a *sparse copy* of the real SmolLM2 GGUF: its real header bytes followed
by a hole of the real payload's size. It costs 1.8 MB on disk, reads as zeros, and is admitted until
a test edits one field, using the byte offsets charter's reader exposes (or re-serializing a
modified GGUFHeader, when a field changes size).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import struct
from pathlib import Path

import pytest

from charter.cli import main
from charter.formats.gguf import GGUFHeader, read_gguf, serialize_gguf_header
from tests.conftest import ROOT, session_folder

SMOLLM2_CONTRACT = "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"
SMOLLM2_MODEL = "specs/models/smollm2-135m-instruct.yaml"
TINY_GGUF_CONTRACT = "specs/artifacts/tiny-llama-gguf.yaml"
TINY_ST_CONTRACT = "specs/artifacts/tiny-llama-safetensors.yaml"
TINY_MODEL = "specs/models/tiny-llama.yaml"


@pytest.fixture(autouse=True)
def _checker_cache(tmp_path_factory, monkeypatch):
    """Checkers rendered from test contracts go to a per-session cache, not the user's (one the
    session's xdist workers share: a checker library is compiled once, not per worker)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(session_folder(tmp_path_factory, "xdg-cache")))


# --- running the CLI ---------------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def report(self) -> dict:
        """The AdmissionReport: the result of `admit --format json` (schemas/output.schema.json)."""
        return json.loads(self.out)["result"]


def admit(capsys, artifact, contract: str = SMOLLM2_CONTRACT, *extra: str, json_out: bool = True) -> Run:
    args = ["admit"] + ([str(artifact)] if artifact is not None else []) + ["--contract", str(contract)]
    args += list(extra) + (["--json"] if json_out else [])
    code = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return Run(code, out, err)


def where(location: dict) -> str:
    """A published location object as `file:line:col` text."""
    return ":".join(str(location[k]) for k in ("file", "line", "column") if location[k] is not None)


def fact_text(location: dict | str, root: Path = ROOT) -> str:
    """The contract text a location (an object, or printed `file:line:col`) points at: its line and
    the line before (a block mapping's value starts on the line after its key). The file opens from
    the working directory, as a user opens it, and lies in `root`'s specs/ tree."""
    if isinstance(location, str):
        file, line, _ = location.rsplit(":", 2)
        location = {"file": file, "line": int(line)}
    path = Path(location["file"]).resolve()
    assert path.is_relative_to(root / "specs") and path.suffix == ".yaml", location
    lines = path.read_text("utf-8").splitlines()
    line = location["line"]
    assert 1 <= line <= len(lines)
    return "\n".join(lines[max(line - 2, 0) : line])


def assert_rejected(run: Run, stage: str, code: str, field: str | None = None, *, fact: str | None = None,
                    root: Path = ROOT, located: bool = True) -> dict:
    """Exit 1, one diagnostic of `code` at `stage` (earlier stages passed, later ones not run), the
    expected field, and (for contract facts) a `file:line` location whose text mentions `fact`."""
    assert run.code == 1, (run.code, run.out, run.err)
    r = run.report
    assert r["admitted"] is False
    d = r["diagnostic"]
    assert (d["stage"], d["code"]) == (stage, code), d
    if field is not None:
        assert d["field"] == field, d
    results = [s["result"] for s in r["stages"]]
    i = [s["stage"] for s in r["stages"]].index(stage)
    assert results[i] == "failed" and results.count("failed") == 1, r["stages"]
    assert set(results[:i]) <= {"passed", "skipped"} and set(results[i + 1 :]) <= {"not-run"}, r["stages"]
    if located:
        assert d["location"], d
        text = fact_text(d["location"], root)
        if fact is not None:
            assert fact in text, (d["location"], text)
    else:
        assert d["location"] is None, d
    return d


def assert_admitted(run: Run) -> dict:
    assert run.code == 0, (run.out, run.err)
    r = run.report
    assert r["admitted"] is True and r["diagnostic"] is None
    return r


# --- real-format artifacts ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def real_header(smollm2_path) -> GGUFHeader:
    return read_gguf(smollm2_path)


@pytest.fixture(scope="session")
def real_header_bytes(smollm2_path, real_header) -> bytes:
    with open(smollm2_path, "rb") as f:
        return f.read(real_header.data_offset)


def write_sparse(path: Path, header: bytes, size: int) -> Path:
    """`header` followed by a hole up to `size` bytes."""
    with open(path, "wb") as f:
        f.write(header)
        f.truncate(size)
    return path


@pytest.fixture
def sparse_copy(tmp_path, real_header, real_header_bytes) -> Path:
    """The real SmolLM2 header over a hole of the real payload's size."""
    return write_sparse(tmp_path / "smollm2.gguf", real_header_bytes, real_header.file_size)


@pytest.fixture
def full_copy(tmp_path, smollm2_path) -> Path:
    dst = tmp_path / "smollm2-full.gguf"
    shutil.copyfile(smollm2_path, dst)
    return dst


def patch(path: Path, offset: int, fmt: str, *values) -> None:
    """Pack `values` with struct `fmt` over the bytes at `offset`, in place."""
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(struct.pack(fmt, *values))


def patch_bytes(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def rewrite_header(path: Path, old: GGUFHeader, grow: int = 0, **changes) -> None:
    """Re-serialize `old` with `changes` (dataclasses.replace fields) over a sparse data section of
    the same size (plus `grow` bytes): tensor offsets are relative to the data section, so they
    stay valid."""
    new = dataclasses.replace(old, **changes)
    blob = serialize_gguf_header(new)
    write_sparse(path, blob, len(blob) + old.file_size - old.data_offset + grow)


def kv_changed(header: GGUFHeader, key: str, **changes) -> dict:
    kvs = dict(header.kvs)
    kvs[key] = kvs[key]._replace(**changes)
    return kvs


def tensor(header: GGUFHeader, name: str):
    return next(t for t in header.tensors if t.name == name)


# --- contracts under test -----------------------------------------------------------------------


def contract_tree(tmp_path: Path, artifact_text: str, model: str = SMOLLM2_MODEL, name: str = "mutant.yaml") -> Path:
    """A specs/ tree in tmp holding a copy of `model` and the given artifact contract text, so
    diagnostics locate facts as `specs/artifacts/<name>:line` relative to tmp_path."""
    (tmp_path / "specs" / "models").mkdir(parents=True, exist_ok=True)
    (tmp_path / "specs" / "artifacts").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / model, tmp_path / model)
    out = tmp_path / "specs" / "artifacts" / name
    out.write_text(artifact_text, "utf-8")
    return out


def edited(contract: str, old: str, new: str, count: int = 1) -> str:
    """The contract's text with `old` replaced by `new` exactly `count` times (fails loudly if the
    contract no longer contains `old`, so a test cannot silently mutate nothing)."""
    text = (ROOT / contract).read_text("utf-8")
    assert text.count(old) == count, f"{old!r} occurs {text.count(old)} times in {contract}"
    return text.replace(old, new)


def edited_line(contract: str, prefix: str, replacement: str) -> str:
    """The contract's text with the one line whose stripped text starts with `prefix` replaced by
    `replacement` (indentation kept): for facts whose value form may change (literal or binding)."""
    lines = (ROOT / contract).read_text("utf-8").split("\n")
    hits = [i for i, line in enumerate(lines) if line.strip().startswith(prefix)]
    assert len(hits) == 1, f"{prefix!r} starts {len(hits)} lines in {contract}"
    line = lines[hits[0]]
    lines[hits[0]] = line[: len(line) - len(line.lstrip())] + replacement
    return "\n".join(lines)
