"""Note [Incremental battery]: each step of a contract mutant does only what the changed leaf changes,
and gets what the whole pipeline gets: the same contract, plan, prediction, checker text and checker."""

from __future__ import annotations

import copy
import dataclasses
import operator
import random
import types
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from charter.admission import runtime
from charter.admission.runtime import admit_view
from charter.codegen.driver import render_checker_text, render_checker_view
from charter.codegen.python import build
from charter.contract.checks import TensorFact, checks_of
from charter.contract.contractset import load_set
from charter.contract.load import contract_from_document
from charter.contract.resolve import resolve_artifact, resolve_model
from charter.diagnostics import CharterError, Code, Diagnostic
from charter.formats.accepted_strings import AcceptedStrings, SeenAfter
from charter.admission.view import parse_view, read_view
from charter.mutation import expect, facts, run as run_module, value_ops
from charter.mutation.assemble import Pieces
from charter.mutation.run import all_mutants, load_battery
from tests.conftest import ROOT
from tests.frozen import freeze

SMOLLM2 = ROOT / "specs" / "artifacts" / "smollm2-135m-instruct-q4_1.yaml"


def _write_gguf(path: Path) -> Path:
    """Tensors listed one by one (no layer index) and a folded `blk.{i}` pair, as frozen contracts have."""
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(2)
    w.add_embedding_length(8)
    w.add_layer_norm_rms_eps(1e-5)
    for k in range(6):
        w.add_tensor(f"w{k:05d}.weight", np.full((2 + k % 3, 4), k, np.float32))
    for i in range(2):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(8, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def frozen_battery(tmp_path_factory):
    root = tmp_path_factory.mktemp("incremental")
    artifact = _write_gguf(root / "t.gguf")
    spec = freeze(artifact, root / "specs", "incremental")
    cs = load_set([spec], [spec.parents[1]])
    assert cs.ok, cs.diagnostics
    return load_battery(cs, "incremental", artifact)


@pytest.fixture(scope="module")
def smollm2_battery(smollm2_path):
    cs = load_set([SMOLLM2], [ROOT / "specs"])
    assert cs.ok, cs.diagnostics
    return load_battery(cs, "smollm2-135m-instruct-q4_1", smollm2_path)


def _contract_mutants(b, every: int = 1):
    return [m for m in all_mutants(b, "contract") if m.make is not None][::every]


def _full(b, artifact_data: dict, model_data: dict):
    """The whole pipeline, as the battery ran it before Note [Incremental battery]."""
    def reload(original, data):  # the mutant's own document (its locations), its data copied whole
        doc = dataclasses.replace(run_module.mutant_document(original.doc, data), data=copy.deepcopy(data))
        return run_module.LoadedContract(contract_from_document(doc), doc, original.path)

    artifact, model = reload(b.loaded, artifact_data), reload(b.model, model_data)
    if artifact.contract.model != model.id:
        raise CharterError([Diagnostic(Code.REF_DANGLING, "model", f"no model {artifact.contract.model!r}")])
    return resolve_artifact(artifact, resolve_model(model))


def test_a_mutant_copies_only_the_path_to_its_leaf(frozen_battery):
    """A deep copy of the whole document per mutant made batteries quadratic (issue 14)."""
    b = frozen_battery
    original = b.loaded.doc.data
    snapshot = copy.deepcopy(original)
    m = next(m for m in all_mutants(b, "contract") if m.leaf == ("tensors", 0, "shape", 0) and m.operator == "+1")
    artifact_data, model_data = m.make()
    assert artifact_data["tensors"][0]["shape"][0] == original["tensors"][0]["shape"][0] + 1
    assert artifact_data["tensors"][1] is original["tensors"][1]
    assert artifact_data["metadata"] is original["metadata"] and model_data is b.model.doc.data
    for m in all_mutants(b, "contract"):
        if m.make is not None:
            m.make()
    assert original == snapshot  # no mutant wrote to the contract's own data


def test_a_mutant_contract_shares_the_unchanged_rows(frozen_battery):
    b = frozen_battery
    m = next(m for m in all_mutants(b, "contract") if m.leaf == ("tensors", 2, "name") and m.operator == "case")
    contract = run_module._reload(b.loaded, m.make()[0]).contract
    assert contract.tensors[2].name != b.loaded.contract.tensors[2].name
    assert contract.tensors[1] is b.loaded.contract.tensors[1]


def test_a_dropped_row_leaves_every_later_row_where_it_is_written(frozen_battery):
    """A drop mutant's later rows were located one row up, so each resolved, rendered and compiled
    again (3.9 ms a mutant at 1,000 rows): now each is the contract's own row object."""
    b = frozen_battery
    m = next(m for m in all_mutants(b, "contract") if m.leaf == ("tensors", 2) and m.operator == "drop item")
    doc, original = run_module.mutant_document(b.loaded.doc, m.make()[0]), b.loaded.doc
    assert doc.where(("tensors", 2, "name")) == original.where(("tensors", 3, "name"))
    assert doc.where(("tensors", 1, "name")) == original.where(("tensors", 1, "name"))
    last = len(original.data["tensors"]) - 1
    assert ("tensors", last) not in doc.locations and ("tensors", last - 1) in doc.locations
    renumbered = {(*p[:1], p[1] - (p[1] > 2), *p[2:]) if p[:1] == ("tensors",) and len(p) > 1 else p: loc
                  for p, loc in original.locations.items() if p[:2] != ("tensors", 2)}
    assert dict(doc.locations) == renumbered and len(doc.locations) == len(renumbered)
    rows = run_module._resolve(b, *m.make()).tensor_rows.value
    assert all(map(operator.is_, rows, b.plan.tensor_rows.value[:2] + b.plan.tensor_rows.value[3:]))


@pytest.mark.parametrize("which, every", [("frozen_battery", 1), ("smollm2_battery", 3)])
def test_mutant_plans_and_refusals_are_the_whole_pipelines(request, which, every):
    b = request.getfixturevalue(which)
    for m in _contract_mutants(b, every):
        made = m.make()
        try:
            want = _full(b, *made)
        except CharterError as exc:
            with pytest.raises(CharterError) as got:
                run_module._resolve(b, *made)
            assert [d.render() for d in got.value.diagnostics] == [d.render() for d in exc.diagnostics], m.id
            continue
        assert run_module._resolve(b, *made) == want, m.id


@pytest.mark.parametrize("which", ["frozen_battery", "smollm2_battery"])
def test_a_changed_field_is_validated_as_the_whole_document_validates_it(request, which, monkeypatch):
    """run._revalidated_field: a mutant that changes one top-level field of either contract gets
    the contract, or the refusal, that validating its whole document gives; both kinds occur."""
    b = request.getfixturevalue(which)
    taken = {"contract": 0, "refusal": 0}
    field = run_module._revalidated_field

    def counted(*args):
        try:
            contract = field(*args)
        except CharterError:
            taken["refusal"] += 1
            raise
        taken["contract"] += contract is not None
        return contract

    monkeypatch.setattr(run_module, "_revalidated_field", counted)
    for m in _contract_mutants(b):
        for original, data in zip((b.loaded, b.model), m.make()):
            doc = run_module.mutant_document(original.doc, data)
            try:
                want = contract_from_document(dataclasses.replace(doc, data=copy.deepcopy(data)))
            except CharterError as exc:
                with pytest.raises(CharterError) as got:
                    run_module._reload(original, data)
                assert [d.render() for d in got.value.diagnostics] == [d.render() for d in exc.diagnostics], m.id
                continue
            assert run_module._reload(original, data).contract == want, m.id
    assert taken["contract"] > 10 and taken["refusal"] > 3, taken
    for key, value, code in ("charter", 2, "SPEC_VERSION"), ("kind", "modle", "SPEC_KIND"):  # refused first, whole
        with pytest.raises(CharterError) as got:
            run_module._reload(b.loaded, {**b.loaded.doc.data, key: value})
        assert got.value.diagnostics[0].code.value == code


def _reference_prediction(before, after, view, status, beside):
    """expect.predict as it was, keying every check of both sides for every mutant, and comparing
    every tensor of a changed table (no unchanged table given: expect._tensors compares all)."""
    old = {expect._key(c) for c in before}
    new = {expect._key(c) for c in after}
    added = [c for c in after if expect._key(c) not in old]
    removed = [c for c in before if expect._key(c) not in new]
    excluded = next((c.patterns for c in after if type(c).__name__ == "Exclude"), ())
    previous = {(type(c), expect._store_name(c)): c for c in before if type(c).__name__ != "Tensors"}
    for c in added:
        e = expect._evaluate(c, view, status, excluded, previous.get((type(c), expect._store_name(c))), beside)
        if e is not None:
            return expect.Prediction(tuple(added + removed), e)
    return expect.Prediction(tuple(added + removed), None)


def _plans(b, every: int = 1):
    for m in _contract_mutants(b, every):
        try:
            yield m, run_module._resolve(b, *m.make())
        except CharterError:
            continue


@pytest.mark.parametrize("which, every", [("frozen_battery", 1), ("smollm2_battery", 3)])
def test_predictions_are_the_whole_comparisons(request, which, every):
    b = request.getfixturevalue(which)
    for m, plan in _plans(b, every):
        after = checks_of(plan)
        args = (b.view, b.require_status, b.artifact_path.parent)
        assert expect.predict(b.checks, after, *args) == _reference_prediction(b.checks, after, *args), m.id


def test_a_changed_table_is_compared_row_by_row_only_against_a_table_that_holds(frozen_battery):
    b = frozen_battery
    (before,) = [c.rows for c in b.checks if type(c).__name__ == "Tensors"]

    def wider(row):
        return row._replace(shape=(row.shape[0] + 1, *row.shape[1:]))

    first = f"tensors.{before[0].template}.shape[0]"
    failing = (wider(before[0]), *before[1:])  # an unchanged table that fails itself, at its first row
    for table, unchanged in [(failing, before), ((*failing[:1], wider(before[1]), *before[2:]), failing)]:
        assert expect._tensors(table, b.view, (), unchanged).field == expect._tensors(table, b.view, ()).field == first


def test_a_changed_table_is_judged_from_its_changed_rows_as_the_whole_table_judges_it():
    """expect._changed_tensors against the whole comparison, over tables that differ from one that
    holds in up to three rows: renamed to a missing name, to another row's (before or after it) or
    to an excluded tensor's, other dims or codec; a file with excluded tensors, one of them stated,
    and a name stated once but read twice."""
    rng = random.Random(14)
    stated, unstated = ["x.early", "a", "b", "c", "d"], ["x.1", "x.2"]
    files = [(n, (2, i + 1)) for i, n in enumerate(stated)] + [(n, (3, 1)) for n in unstated] + [("b", (2, 3))]
    view = SimpleNamespace(tensors=[SimpleNamespace(name=n, shape=shape, codec="F32") for n, shape in files])
    before = tuple(TensorFact(n, (), n, (2, i + 1), "F32", None) for i, n in enumerate(stated))
    excluded = ("x.*",)
    assert expect._tensors(before, view, excluded) is None
    found = set()
    for _ in range(600):
        table = list(before)
        for i in rng.sample(range(len(table)), rng.randint(1, 3)):
            field, value = rng.choice([("template", rng.choice(stated + unstated + ["zz"])),
                                       ("shape", (2, rng.randint(1, 5))), ("codec", rng.choice(["F32", "F16"]))])
            table[i] = table[i]._replace(**{field: value})
        table = tuple(table)
        want = expect._tensors(table, view, excluded)
        assert expect._tensors(table, view, excluded, before) == want, table
        found.add(want and want.code)
    assert found == {None, Code.TENSOR_MISSING, Code.TENSOR_UNEXPECTED, Code.TENSOR_SHAPE, Code.TENSOR_CODEC}
    twice = (*before, before[1])  # "a" stated by two rows: the last one's facts are compared
    wider = (twice[0], twice[1]._replace(shape=(9, 9)), *twice[2:])
    assert expect._tensors(wider, view, excluded, twice) == expect._tensors(wider, view, excluded) is None


class _Recorder:
    """A Context that records every call a checker makes, and raises nothing."""

    def __init__(self) -> None:
        self.calls: list = []

    def __getattr__(self, method):
        return lambda **kwargs: self.calls.append((method, kwargs))


def _calls(module: types.ModuleType) -> list:
    ctx = _Recorder()
    for _, function in module.STAGES:
        function(ctx)
    return [tuple(module.STAGES)[i][0] for i in range(len(module.STAGES))], ctx.calls


@pytest.mark.parametrize("which, every", [("frozen_battery", 1), ("smollm2_battery", 5)])
def test_a_mutant_checker_is_the_fresh_render_compiled_whole(request, which, every):
    """The rendered text equals a render with no row escaped before; the battery's checker, its
    tables hoisted and executed piece by piece, makes the calls, with equal arguments, that the
    whole text compiled at once makes, and admits or rejects the artifact alike."""
    b = request.getfixturevalue(which)
    pieces = Pieces()
    for m, plan in _plans(b, every):
        text = render_checker_text(plan, "# x")
        build._tensor_row.clear()
        build._CALLS.clear()
        assert render_checker_text(plan, "# x") == text, m.id
        whole = types.ModuleType("whole")
        exec(compile(text, "whole", "exec"), whole.__dict__)
        pieced = pieces.checker(plan, "# x", "pieced")
        assert _calls(pieced) == _calls(whole), m.id
        reports = [admit_view(b.view, str(b.artifact_path), checker, require_status=b.require_status).to_json()
                   for checker in (whole, pieced)]
        assert reports[0] == reports[1], m.id
    if which == "frozen_battery":  # every tensor row mutant shares one compiled tensors stage
        assert sum(text.startswith("def check_tensors") for text in pieces.code) == 1


@pytest.mark.parametrize("which", ["frozen_battery", "smollm2_battery"])
def test_the_hoisted_text_is_the_whole_text_but_its_tables(request, which):
    """Each table name of the battery's render stands where the whole render has that table's rows,
    one per line; nothing else differs."""
    plan = request.getfixturevalue(which).plan
    tables: list[list[str]] = []
    hoisted = render_checker_view(build.build(plan, tables), "# x")
    for i, rows in enumerate(tables):
        assert hoisted.count(build.table_name(i)) == 1
        hoisted = hoisted.replace(build.table_name(i), "(\n" + "".join(f"            {r},\n" for r in rows) + "        )")
    assert tables and hoisted == render_checker_text(plan, "# x")


class _Forgetful(AcceptedStrings):
    """Remembers nothing: every string array and tensor table is read (the reader without Note
    [Accepted string arrays])."""

    def find(self, buf, start, count, end):
        return None

    def table(self, buf, start, count, end):
        return [], start, SeenAfter(None, 0, [])


def test_artifact_mutants_judged_as_by_the_plain_reader_and_stream(smollm2_battery):
    """Shared string arrays and verified prefixes (Note [Verified prefix]) change what an artifact
    mutant costs, never its verdict: a sample of every kind, value mutants and their controls all."""
    b = smollm2_battery
    mutants = all_mutants(b, "artifact")
    values = [m for m in mutants if value_ops.is_value_mutant(m)]
    sample = mutants[::40] + [m for m in values if m.expect is None] + values[::40]
    fast = dataclasses.replace(b, accepted=AcceptedStrings(), prefixes=run_module.verified_prefixes(b, values))
    plain = dataclasses.replace(b, accepted=_Forgetful(), prefixes={}, shared_header=False)
    block_bytes = runtime.block_bytes_of(b.plan.format)
    for m in values:  # each resumes at the start of the value block it changes first
        header, size, patches = m.make()
        t = next(t for t in b.view.tensors if t.start <= min(patches) < t.end)
        end = run_module.prefix_for(fast, header, size, patches).end
        size = block_bytes(t.codec)
        assert t.start <= end <= min(patches) < end + size and (end - t.start) % size == 0, m.id
    assert b.view.file_size in fast.prefixes
    for m in sample:
        assert run_module.run_mutant(fast, m) == run_module.run_mutant(plain, m), m.id
    assert any(m.expect is None for m in sample) and len(sample) > 35


def test_only_a_file_digest_mutant_starts_at_the_files_end(smollm2_battery):
    """Note [Verified prefix]: a contract mutant whose checker differs only in the file digest it pins
    is judged from the prefix at the file's end, as when it streams the whole file; no other
    mutant of the payload facts is given a prefix."""
    b = smollm2_battery
    mutants = [m for m in all_mutants(b, "contract") if "payload" in m.target or ":values" in m.target]
    fast = dataclasses.replace(b, prefixes=run_module.verified_prefixes(b, mutants))
    steps = {m.id: run_module.contract_step(fast, m) for m in mutants}
    given = {i for i, s in steps.items() if s.prediction and run_module._digest_only(fast, s.prediction)}
    pinned = {i for i, s in steps.items()
              if i.startswith("contract:artifact:payload.file_sha256:") and s.prediction.expect}
    assert given == pinned != set()
    for m in mutants:
        if m.id in given:
            assert run_module._digest_only(fast, steps[m.id].prediction).end == b.view.file_size
            assert run_module.run_mutant(fast, m) == run_module.run_mutant(dataclasses.replace(b, prefixes={}), m)


def test_rows_kept_under_other_constants_are_not_reused(frozen_battery):
    """The row memo keeps a few sets of constants; a mutant of a model constant between two tensor
    mutants resolves under its own constants, and the next under the contract's, as in a whole run."""
    b = frozen_battery
    mutants = _contract_mutants(b)
    constants = [m for m in mutants if m.target.startswith("model:") and m.leaf[0] == "constants"]
    rows = [m for m in mutants if m.leaf[0] == "tensors"]
    assert constants and rows
    for m in [x for pair in zip(constants, rows[::max(1, len(rows) // len(constants))]) for x in pair] + rows[:3]:
        made = m.make()
        try:
            want = _full(b, *made)
        except CharterError:
            continue
        assert run_module._resolve(b, *made) == want, m.id


def test_a_model_constant_mutant_resolves_again_only_the_rows_that_read_a_constant(frozen_battery):
    """A frozen contract's rows are literal: under a mutant's constants they are the contract's own
    row objects (40 ms a mutant at 1,000 rows, each row resolved, rendered and compiled again)."""
    b = frozen_battery
    m = next(m for m in _contract_mutants(b) if m.target == "model:constants.block_count" and m.operator == "+1")
    before, after = b.plan.tensor_rows.value, run_module._resolve(b, *m.make()).tensor_rows.value
    literal = [i for i, row in enumerate(before) if not row.repeat]
    folded = [i for i, row in enumerate(before) if row.repeat]
    assert literal and folded
    assert all(after[i] is before[i] for i in literal)
    assert all(after[i].repeat != before[i].repeat for i in folded)  # blk.{i}: one more layer


def _with_another_header(value):
    """The value mutant with its patches and a header that also changed: "llama" -> "Llama" (no
    operator makes one)."""
    raw, size, patches = value.make()
    key = b"general.architecture"
    at = raw.index(key) + len(key) + 4 + 8
    header = raw[:at] + bytes([raw[at] ^ 0x20]) + raw[at + 1:]
    return dataclasses.replace(value, make=lambda: (header, size, patches))


def test_a_value_mutant_of_another_header_runs_every_stage(smollm2_battery):
    """Note [Admitted header]: only a value mutant whose header is the conforming one skips the header
    stages; one that also changed the header (no operator makes one: a test does) is judged whole."""
    b = smollm2_battery
    value = next(m for m in all_mutants(b, "artifact") if value_ops.is_value_mutant(m) and m.expect is not None)
    both = _with_another_header(value)
    for battery in (b, dataclasses.replace(b, shared_header=False)):
        outcome = run_module.run_mutant(battery, both)
        assert outcome.stage == "identity", outcome
    assert run_module.run_mutant(b, value) == run_module.run_mutant(dataclasses.replace(b, shared_header=False), value)


def test_expected_tensors_are_kept_per_row_object(frozen_battery):
    """A kept expansion is used only for the row object it was made from, never for a row that took
    its id; the view's tensors by name only for that view."""
    from charter.contract.checks import TensorFact

    row = TensorFact("a.{i}", (("i", 2),), "weight", (4,), "F32", "x:1:1")
    other = TensorFact("b", (), "weight", (8,), "F16", "x:2:1")
    assert expect._expected(row) == {"a.0": ((4,), "F32"), "a.1": ((4,), "F32")}
    expect._expected._kept[id(other)] = (row, expect._expected(row))  # a stale entry at the other row's id
    assert expect._expected(other) == {"b": ((8,), "F16")}
    b = frozen_battery
    renamed = dataclasses.replace(b.view, tensors=(b.view.tensors[0]._replace(name="renamed"), *b.view.tensors[1:]))
    assert "renamed" not in expect._by_name(b.view) and "renamed" in expect._by_name(renamed)


def test_both_engines_judge_value_mutants_as_without_the_shared_header(smollm2_battery):
    """With both engines, the C++ verdict on the conforming header is computed once (Note [Admitted
    header]); a value mutant with another header runs the C++ checker on its own bytes."""
    from charter.contract.contractset import load_set
    from charter.engines.choose import compiled_in

    cs = load_set([SMOLLM2], [ROOT / "specs"])
    # make install builds the committed checker into the module; `b` below runs it by contract id
    assert compiled_in(cs, smollm2_battery.plan), "charter._native holds no current C++ checker of SmolLM2"
    b = dataclasses.replace(smollm2_battery, engines="both", cpp_key=smollm2_battery.plan.id, cpp_conforming=None,
                            prefixes=run_module.verified_prefixes(smollm2_battery, all_mutants(smollm2_battery)))
    plain = dataclasses.replace(b, shared_header=False, cpp_conforming=None)
    values = [m for m in all_mutants(b, "artifact") if value_ops.is_value_mutant(m)]
    for m in values[::25] + [m for m in values if m.expect is None]:
        assert run_module.run_mutant(b, m) == run_module.run_mutant(plain, m), m.id
    assert b.cpp_conforming is not None and plain.cpp_conforming is None
    other = _with_another_header(values[0])
    outcome = run_module.run_mutant(b, other)
    assert outcome.stage == "identity" and outcome.verdict.value != "error", outcome  # both engines agree


@pytest.mark.parametrize("which", ["frozen_battery", "smollm2_battery"])
def test_the_tensor_facts_a_mutant_changes_are_the_name_by_name_comparisons(request, which):
    """charter.mutation.facts compares the tensors by position when both files name the same ones in
    the same order: it finds what comparing each name's first tensor finds."""
    b = request.getfixturevalue(which)
    modulus = b.view.alignment or 1
    conforming = facts.facts_of(b.view, b.raw_header, modulus)

    def by_name(view):
        first = {}
        for t in view.tensors:
            first.setdefault(t.name, (t.shape, t.codec))
        return first

    was = by_name(b.view)
    seen = {"by position": 0, "by name": 0}
    header_mutants = [m for m in all_mutants(b, "artifact") if m.make is not None and not value_ops.is_value_mutant(m)]
    for m in header_mutants[::4 if which == "smollm2_battery" else 1]:
        buf, size = m.make()[:2]
        try:
            view = parse_view(buf, size, b.plan.format, b.accepted)
        except CharterError:
            continue
        now = by_name(view)
        want = {n for n in was.keys() | now.keys() if was.get(n) != now.get(n)}
        mutant = facts.facts_of(view, buf, modulus)
        assert facts._changed_tensors(conforming, mutant) == want, m.id
        seen["by position" if mutant.names == conforming.names else "by name"] += 1
    assert seen["by position"] and seen["by name"], seen


@pytest.mark.parametrize("which", ["frozen_battery", "smollm2_battery"])
def test_the_facts_compared_at_the_moved_entries_are_those_compared_whole(request, which, monkeypatch):
    """charter.mutation.facts: a mutant header holding the conforming view's tensor entries but at a
    few positions changes the facts that comparing every fact finds; most header mutants do."""
    b = request.getfixturevalue(which)
    modulus = b.view.alignment or 1
    conforming = facts.facts_of(b.view, b.raw_header, modulus)
    moved_entries = facts._moved_entries
    seen = {"at moved entries": 0, "whole": 0}
    header_mutants = [m for m in all_mutants(b, "artifact") if m.make is not None and not value_ops.is_value_mutant(m)]
    for m in header_mutants[::4 if which == "smollm2_battery" else 1]:
        made = m.make()
        try:
            view = parse_view(made[0], made[1], b.plan.format, b.accepted)
        except CharterError:
            continue
        args = (conforming, b.raw_header, b.view.file_size, b.plan.format, b.accepted, modulus, made, view)
        fast = facts.changed(*args)
        monkeypatch.setattr(facts, "_moved_entries", lambda *a: None)
        assert fast == facts.changed(*args), m.id
        monkeypatch.setattr(facts, "_moved_entries", moved_entries)
        seen["whole" if moved_entries(conforming, view) is None else "at moved entries"] += 1
    assert seen["at moved entries"] > seen["whole"] > 0, seen


def test_a_mutant_view_holds_the_conforming_entries_where_nothing_moved(frozen_battery):
    """Note [Finished records]: the battery's view is its first parse, so a mutant's view shares its
    tensor entries wherever the mutant's header kept the record in place."""
    b = frozen_battery
    assert b.view == read_view(str(b.artifact_path), b.plan.format)
    read = 0
    for m in [m for m in all_mutants(b, "artifact") if m.operator == "dim[0] +1"]:
        buf, size = m.make()[:2]
        try:
            view = parse_view(buf, size, b.plan.format, b.accepted)
        except CharterError:  # the last tensor grown past the file's end
            continue
        assert view == parse_view(buf, size, b.plan.format)
        shared = [a is c for a, c in zip(view.tensors, b.view.tensors)]
        assert shared.count(False) == 1, m.id
        read += 1
    assert read > 1


def test_a_call_is_rendered_once_per_text_of_its_check(monkeypatch):
    """A check equal to another but for a value's type (1.0 == 1 == True) is rendered as itself;
    past its bound the memo forgets every call."""
    from charter.contract.checks import MetaType, MetaTypes, Value, text_of
    from charter.diagnostics import Stage

    rendered = []
    real = build._render_call
    monkeypatch.setattr(build, "_render_call", lambda c, t: rendered.append(c) or real(c, t))
    monkeypatch.setattr(build, "_CALLS", {})
    values = [Value(stage=Stage.METADATA, key="k", ctype="float32", value=v, at="f:1:1") for v in (1.0, 1, True)]
    assert values[0] == values[1] == values[2]
    assert [build.render_call(v) for v in values] == [f"ctx.value(stage='metadata', key='k', ctype='float32', "
                                                      f"value={v}, at='f:1:1')" for v in ("1.0", "1", "True")]
    assert build.render_call(values[0]) == build.render_call(values[0], []) and len(rendered) == 4
    table = MetaTypes(facts=tuple(MetaType(f"key.{i}", "uint32", None, f"f:{i}:1") for i in range(40)))
    tables, again = [["x"]], [["x"]]
    assert build.render_call(table, tables) == build.render_call(table, again) and len(rendered) == 5
    assert tables == again and len(tables) == 2 and build.table_name(1) in build.render_call(table, [["x"]])
    assert build.table_name(0) in build.render_call(table, [])  # another count of tables before: another call
    monkeypatch.setattr(build, "_CALLS_KEPT", len(build._CALLS))
    other = dataclasses.replace(values[0], key="k2")
    statement = build.render_call(other)
    assert build._CALLS == {(text_of(other), None): (statement, ())}


@pytest.mark.parametrize("count, chunk, jobs", [(0, 8, 2), (5, 8, 2), (3445, 128, 2), (30961, 128, 2), (100, 8, 4)])
def test_tasks_take_every_item_once_and_shrink_toward_the_end(count, chunk, jobs):
    """The last tasks may end a run alone: none is longer than a quarter of a worker's share of
    what is left when it is handed out (or one item)."""
    tasks = run_module.tasks(count, chunk, jobs)
    assert [i for task in tasks for i in task] == list(range(count))
    assert all(1 <= len(t) <= chunk and (len(t) == 1 or len(t) * 4 * jobs <= count - t.start) for t in tasks)
    assert count < 4 * jobs * chunk or len(tasks[0]) == chunk


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_lead_runs_its_items_first_and_the_others_run_once(jobs):
    """run.in_workers(lead=...): the lead's items are its results, not `one`'s; it runs before any
    other item where it runs (here, or the first task of a worker); every other item runs once."""
    import os

    order = []

    def one(i: int) -> tuple[str, int, int]:
        order.append(i)
        return "item", i, os.getpid()

    def lead() -> list[tuple[int, object]]:
        order.append("lead")
        return [(i, ("lead", i, os.getpid())) for i in (4, 1)]

    got = run_module.in_workers(7, one, jobs, pack=lambda x: x, chunk=1, lead=run_module.Lead([1, 4], lead))
    assert [(kind, i) for kind, i, _ in got] == [("lead", i) if i in (1, 4) else ("item", i) for i in range(7)]
    if jobs == 1:
        assert order == ["lead", 0, 2, 3, 5, 6]
    else:
        assert order == [] and os.getpid() not in {pid for _, _, pid in got}


def test_items_the_lead_leaves_are_none():
    got = run_module.in_workers(3, lambda i: i, 2, pack=lambda x: x, lead=run_module.Lead([0, 2], lambda: None))
    assert got == [None, 1, None]


def test_resuming_mutants_run_where_the_prefixes_are_recorded(smollm2_battery):
    """run.in_phases: the resuming mutants (value mutants, the file digest's) run in the worker
    that recorded the verified prefixes, once they are; the others in every worker; each once."""
    import os

    mutants = all_mutants(smollm2_battery)
    resuming = [m for m in mutants if run_module.resumes(m)][::5]
    others = [m for m in mutants if not run_module.resumes(m)][:300]
    sample = others + resuming
    b = dataclasses.replace(smollm2_battery, prefixes=None)

    def one(i: int) -> tuple[int, int, bool]:
        return i, os.getpid(), b.prefixes is not None

    got = run_module.in_phases(b, sample, one, jobs=2, pack=lambda x: x)
    assert [i for i, _, _ in got] == list(range(len(sample)))
    lead = {pid for i, pid, _ in got if i >= len(others)}
    assert len(lead) == 1 and os.getpid() not in lead and b.prefixes is None  # this process never recorded them
    assert all(recorded for i, _, recorded in got if i >= len(others))


def test_a_pass_that_admits_nothing_leaves_the_resuming_mutants_to_every_worker(smollm2_battery, monkeypatch):
    """in_phases: when the lead's pass records no prefix (the conforming file refused), the resuming
    mutants run after the others, in workers forked with none to resume from."""
    import os

    monkeypatch.setattr(run_module, "verified_prefixes", lambda b, mutants: {})
    mutants = all_mutants(smollm2_battery)
    sample = [m for m in mutants if not run_module.resumes(m)][:20] + [m for m in mutants if run_module.resumes(m)][:20]
    b = dataclasses.replace(smollm2_battery, prefixes=None)
    got = run_module.in_phases(b, sample, lambda i: (i, os.getpid(), b.prefixes), jobs=2, pack=lambda x: x)
    assert [i for i, _, _ in got] == list(range(len(sample))) and b.prefixes == {}
    assert all(prefixes == {} for i, _, prefixes in got[20:])


def test_a_file_too_large_for_a_pass_runs_every_mutant_without_one(smollm2_battery, monkeypatch):
    """in_phases over a file larger than WHOLE_FILE_PASS_MAX: no pass, no lead; each resuming
    mutant streams its own file."""
    def no_pass(b, mutants):
        raise AssertionError("a pass over a file too large for one")

    monkeypatch.setattr(run_module, "verified_prefixes", no_pass)
    monkeypatch.setattr(run_module, "WHOLE_FILE_PASS_MAX", smollm2_battery.view.file_size - 1)
    sample = [m for m in all_mutants(smollm2_battery) if run_module.resumes(m)][:6]
    b = dataclasses.replace(smollm2_battery, prefixes=None)
    got = run_module.in_phases(b, sample, lambda i: (i, b.prefixes), jobs=2, pack=lambda x: x)
    assert got == [(i, {}) for i in range(len(sample))] and b.prefixes == {}


def test_a_cold_cache_takes_the_file_digest_from_the_prefix_pass(smollm2_battery, tmp_path):
    """VerdictCache on a file whose digest is not remembered: the pass that records the verified
    prefixes (here, before any worker) gives it; it is the file's sha256, remembered for the next."""
    import hashlib

    from charter.mutation import digests
    from charter.mutation.cache import VerdictCache

    mutants = [m for m in all_mutants(smollm2_battery) if run_module.resumes(m)][::50]
    b = dataclasses.replace(smollm2_battery, prefixes=None)
    VerdictCache(b, tmp_path, "python", mutants)
    assert b.prefixes and b.view.file_size in b.prefixes
    want = "sha256:" + hashlib.sha256(b.artifact_path.read_bytes()).hexdigest()
    assert digests.file_content(b.artifact_path, tmp_path, lambda: "sha256:not asked") == want


@pytest.mark.parametrize("jobs", [1, 2])
def test_mutants_that_resume_run_with_their_own_verdicts(smollm2_battery, tmp_path, jobs):
    """The verdict cache's fused run records the verified prefixes (here, or in the worker that then
    runs the value and file-digest mutants while the others run the rest): each verdict as a plain
    run's."""
    from charter.mutation.cache import VerdictCache, run_cached

    mutants = all_mutants(smollm2_battery)
    digest = [m for m in mutants if m.target.endswith("payload.file_sha256")]
    sample = [m for m in mutants if value_ops.is_value_mutant(m)][::40] + digest + mutants[::150]
    assert digest and all(map(run_module.resumes, digest))
    b = dataclasses.replace(smollm2_battery, prefixes=None)
    got, _ = run_cached(b, sample, list(range(len(sample))), VerdictCache(b, tmp_path, "python"), None, read=False,
                        jobs=jobs, fused=True)
    assert (b.view.file_size in b.prefixes) if jobs == 1 else b.prefixes is None
    plain = dataclasses.replace(smollm2_battery, prefixes={})
    assert got == [run_module.picklable(run_module.run_mutant(plain, m)) for m in sample]
