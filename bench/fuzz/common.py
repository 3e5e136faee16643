"""Shared set-up of the atheris harnesses: the corpus's contracts, their checkers, seed files.

Run from the repository root (see README.md). The harnesses check the same properties as
tests/hardening/test_fuzz.py, for as long as libFuzzer is given:

* the readers raise nothing but a CharterError with one CONTAINER_* diagnostic;
* an admitted file states exactly the facts its contract pins (`facts`);
* the YAML loader, the contract loader and the expression parser raise nothing but their own
  diagnostics.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for p in (ROOT, ROOT / "src"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


def checker(fmt: str):
    """The generated Python checker of the corpus's base contract for `fmt`."""
    from charter.cli import search_paths
    from charter.engines.choose import python_checker
    from charter.contract.contractset import load_set
    from tests.hardening import corpus

    work = Path(tempfile.mkdtemp(prefix="charter-fuzz-"))
    os.environ.setdefault("XDG_CACHE_HOME", str(work / "cache"))
    path = corpus.write_contracts(work)[fmt]
    cs = load_set([path], search_paths([str(path)], None))
    assert not cs.diagnostics, cs.diagnostics
    (cid,) = cs.artifacts
    return python_checker(cs, cid, work / "generated")[0]


def facts(view):
    """Everything the corpus's contracts pin about an artifact (tests/hardening/test_fuzz.py)."""
    from charter.formats.gguf import GGUFArray

    meta = {k: (e.type, e.element, e.value.raw if isinstance(e.value, GGUFArray) else e.value)
            for k, e in view.meta.items()}
    tensors = sorted((t.name, t.shape, t.codec, t.end - t.start) for t in view.tensors)
    return (view.format, view.version, view.alignment, view.header_len_aligned, meta, tensors,
            view.file_size - view.data_offset)


def write_seeds(directory: Path, fmt: str) -> Path:
    """The base file of `fmt` and every hostile case of that format, as libFuzzer seed files."""
    from tests.hardening import corpus

    directory.mkdir(parents=True, exist_ok=True)
    base = corpus.base_gguf() if fmt == "gguf" else corpus.base_safetensors()
    (directory / f"base.{fmt}").write_bytes(base)
    for case in corpus.all_cases():
        if case.format == fmt and case.size is None and len(case.data) < 1 << 20:
            (directory / case.name.replace("/", "__")).write_bytes(case.data)
    return directory
