"""Item 1 of the hardening issue: every hostile artifact of the corpus (tests/hardening/corpus.py)
is rejected by `charter admit` with exit 1 and its one diagnostic, without a traceback, in under a
second and in bounded memory.

Every case runs through the real CLI in process. A representative subset, the cases that claim
huge sizes and the deepest nestings, also runs as `python -m charter admit` in a subprocess under
an address-space limit and a timeout. Every reader case also runs through the C++ engine, which
must give the same diagnostic, and one runs as a user would, `charter admit --engine cpp`.
"""

from __future__ import annotations

import json
import tracemalloc
from collections import Counter

import pytest

from charter.admission.view import read_view
from charter.diagnostics import CharterError
from tests.hardening import corpus
from tests.hardening.conftest import (
    MEMORY_LIMIT,
    admit,
    admit_subprocess,
    assert_one_diagnostic,
)
from tests.conftest import ROOT

CASES = corpus.all_cases()
BY_NAME = {c.name: c for c in CASES}

# The cases that also run as a subprocess under RLIMIT_AS: a representative of every way a case
# claims a huge size (counts, lengths, array counts whose byte size wraps 64 bits, a header over the
# cap) and the deepest nestings. Every other case's memory is bounded in process (tracemalloc).
SUBPROCESS = [
    f"gguf/tensor-count-{corpus.n2(2**64 - 1)}",
    f"gguf/kv-count-{corpus.n2(2**63)}",
    f"gguf/string-length-{corpus.n2(2**64 - 1)}",
    f"gguf/tensor-name-length-{corpus.n2(2**64 - 1)}",
    f"gguf/array-count-string-{corpus.n2(2**61)}",
    f"gguf/array-count-int32-{corpus.n2(2**62 + 1)}",
    "gguf/arrays-nested-10000-deep",
    "gguf/header-over-64-mib-cap",
    f"safetensors/header-length-{corpus.n2(2**64 - 1)}",
    "safetensors/header-length-100000000-past-file",
    "safetensors/not-json-nested-100000-deep",
    "safetensors/not-json-huge-integer",
]

# The classes of the issue, each of which the corpus must hold.
GGUF_CLASSES = {
    "truncation", "bad magic", "version", "counts", "string lengths", "array counts", "value types",
    "nested arrays", "bools", "keys", "alignment", "tensor names", "rank", "dims", "overflow", "ggml types",
    "block size", "offsets", "data", "trailing", "format",
}
SAFETENSORS_CLASSES = {
    "truncation", "header length", "json", "duplicates", "metadata", "dtype", "entry", "data_offsets", "shapes",
    "extents", "numbers", "format",
}


def test_corpus_covers_every_class_of_the_issue():
    have = {(c.format, c.klass) for c in CASES}
    assert {("gguf", k) for k in GGUF_CLASSES} <= have
    assert {("safetensors", k) for k in SAFETENSORS_CLASSES} <= have
    assert all(name in BY_NAME for name in SUBPROCESS)
    counts = Counter(c.format for c in CASES)
    assert counts["gguf"] > 250 and counts["safetensors"] > 80, counts


def test_base_files_are_admitted(contracts, tmp_path, capsys):
    """The corpus is one change away from conforming files: the bases themselves pass."""
    for fmt, data in [("gguf", corpus.base_gguf()), ("safetensors", corpus.base_safetensors())]:
        path = tmp_path / f"base.{fmt}"
        path.write_bytes(data)
        run = admit(capsys, path, contracts[fmt], "--verify-payload")
        assert run.code == 0, run.out
        assert run.report["admitted"] is True


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rejected_with_its_diagnostic(case, contracts, tmp_path, capsys):
    path = corpus.write_case(case, tmp_path)
    run = admit(capsys, path, contracts[case.contract_key])
    d = assert_one_diagnostic(run, case.code, case.field)
    assert d["message"] and "\n" not in d["message"]


# The C++ engine runs the checkers compiled into charter._native, i.e. the shipped contracts, not
# the corpus's. The reader's diagnostics do not depend on the contract, so every case the reader
# rejects (CONTAINER_* not about a `container.` fact) must get the same diagnostic from both engines
# under a shipped contract of its format.
READER_CASES = [c for c in CASES if c.code.startswith("CONTAINER_") and not (c.field or "").startswith("container.")]
SHIPPED = {"gguf": "tiny-llama-gguf", "safetensors": "tiny-llama-safetensors"}


def test_cpp_engine_agrees_on_the_reader_cases(tmp_path):
    from charter.admission.runtime import admit as admit_python
    from charter.console import search_paths
    from charter.engines import cpp as native
    from charter.engines.choose import python_checker
    from charter.contract.contractset import load_set

    assert set(SHIPPED.values()) <= set(native.contracts()), "charter._native lacks a shipped checker"
    checkers = {}
    for fmt, cid in SHIPPED.items():
        spec = ROOT / "specs" / "artifacts" / f"{cid}.yaml"
        cs = load_set([spec], search_paths([str(spec)], None))
        checkers[fmt] = python_checker(cs, cid, ROOT / "generated")[0]
    disagreements, ran = [], 0
    for case in READER_CASES:
        path = corpus.write_case(case, tmp_path)
        py = admit_python(str(path), checkers[case.format]).diagnostic
        cpp = native.run_file(path, SHIPPED[case.format])
        want = (case.code, case.field if case.field is not None else py.field)
        if (py.code, py.field) != want or cpp.admitted or cpp.finding[1:3] != want:
            disagreements.append((case.name, want, (py.code, py.field), cpp.finding[1:3]))
        path.unlink()
        ran += 1
    assert ran > 200
    assert not disagreements, disagreements


def test_cpp_engine_through_the_cli(tmp_path, capsys):
    """Once, as a user runs it: `charter admit --engine cpp`."""
    case = BY_NAME[f"gguf/tensor-count-{corpus.n2(2**64 - 1)}"]
    path = corpus.write_case(case, tmp_path)
    run = admit(capsys, path, ROOT / "specs" / "artifacts" / "tiny-llama-gguf.yaml", "--engine", "cpp")
    assert_one_diagnostic(run, case.code, case.field)


@pytest.mark.parametrize("case", [c for c in CASES if c.size is None], ids=lambda c: c.name)
def test_reader_memory_is_bounded_by_the_file(case, tmp_path):
    """The strict reader allocates in proportion to the bytes it was given, never to a size the
    file declares: peak Python allocation under 1 MiB plus four times the file's size."""
    path = corpus.write_case(case, tmp_path)
    tracemalloc.start()
    try:
        read_view(str(path), case.format)
    except CharterError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 2**20 + 4 * len(case.data), f"{case.name}: peak {peak} bytes for a {len(case.data)}-byte file"


# One case of each format runs in every test run; the others (a second each of `charter admit` in a
# fresh interpreter) in the slow set.
SMOKE = {f"gguf/tensor-count-{corpus.n2(2**64 - 1)}", f"safetensors/header-length-{corpus.n2(2**64 - 1)}"}


@pytest.mark.parametrize("name", [n if n in SMOKE else pytest.param(n, marks=pytest.mark.slow) for n in SUBPROCESS])
def test_subprocess_under_memory_limit(name, contracts, tmp_path, tmp_path_factory):
    case = BY_NAME[name]
    path = corpus.write_case(case, tmp_path)
    proc, _ = admit_subprocess(path, contracts[case.contract_key], tmp_path_factory.getbasetemp() / "xdg-cache")
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr,
                                  f"limit {MEMORY_LIMIT >> 20} MiB")
    d = json.loads(proc.stdout)["result"]["diagnostic"]
    assert d["code"] == case.code and (case.field is None or d["field"] == case.field), d


# --- policies: trailing bytes (layout.trailing) and header length alignment (container.header_aligned)


@pytest.mark.parametrize("trailing,policy,admitted", [
    (0, "gguf", True),
    (1, "gguf", False),
    (28, "gguf", False),  # reject: not even alignment padding
    (28, "gguf-trailing-alignment", True),  # the padding up to the next multiple of 32
    (29, "gguf-trailing-alignment", False),
    (4096, "gguf-trailing-alignment", False),
    (4096, "gguf-trailing-allow", True),
])
def test_gguf_trailing_bytes_policy(trailing, policy, admitted, contracts, tmp_path, capsys):
    path = tmp_path / "t.gguf"
    path.write_bytes(corpus.base_gguf() + bytes(trailing))
    run = admit(capsys, path, contracts[policy])
    if admitted:
        assert run.code == 0, run.out
    else:
        assert_one_diagnostic(run, "LAYOUT_TRAILING", "layout.trailing")


def test_safetensors_trailing_bytes_are_always_rejected(contracts, tmp_path, capsys):
    """safetensors has no alignment padding: its extents must tile the data section exactly, a
    reader-level rule that no contract relaxes."""
    path = tmp_path / "t.safetensors"
    path.write_bytes(corpus.base_safetensors() + bytes(8))
    for key in ("safetensors", "safetensors-unaligned"):
        run = admit(capsys, path, contracts[key])
        assert_one_diagnostic(run, "CONTAINER_EXTENT", "tensors")


def test_safetensors_header_alignment_policy(contracts, tmp_path, capsys):
    """container.header_aligned states which the artifact is; the crate itself accepts both."""
    header = json.dumps(corpus.st_header(), separators=(",", ":"))
    header += " " * (1 + (len(header) % 8 == 7))
    path = tmp_path / "u.safetensors"
    path.write_bytes(corpus.st_file(header, pad=False))
    assert admit(capsys, path, contracts["safetensors-unaligned"]).code == 0
    assert_one_diagnostic(admit(capsys, path, contracts["safetensors"]), "CONTAINER_HEADER",
                          "container.header_aligned")
    aligned = tmp_path / "a.safetensors"
    aligned.write_bytes(corpus.base_safetensors())
    assert_one_diagnostic(admit(capsys, aligned, contracts["safetensors-unaligned"]), "CONTAINER_HEADER",
                          "container.header_aligned")
