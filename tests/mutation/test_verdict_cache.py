"""The verdict cache after a one-leaf contract edit (Note [Verdict cache] in charter.mutation.cache):
the rerun's report equals a full run's byte for byte, and an edit no check reads, or one of a
checked stage, reruns at most 5 % of the mutants; a read set made too narrow makes the reports
differ, so the equality tests bite."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.conftest import ROOT
from tests.contract.test_checks import every_check  # noqa: F401 -- a check of every kind (a fixture)

ARTIFACT = "artifacts/tiny-llama-gguf.yaml"
PART = ("--shard", "0/8")  # both sides, 1/8 of them: the whole battery takes 17 s


@pytest.fixture
def specs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    copy = tmp_path / "specs"
    shutil.copytree(ROOT / "specs", copy, ignore=shutil.ignore_patterns("bundles", "regions", "text", "provenance"))
    return copy


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from charter.conforming import build
    from charter.contract.contractset import load_set

    cs = load_set([ROOT / "specs" / ARTIFACT], [ROOT / "specs"])
    return build(cs.artifacts["tiny-llama-gguf"], tmp_path_factory.mktemp("tiny") / "tiny.gguf")


def _battery(capsys, specs, tiny, out, *args: str) -> int:
    """How many mutants the battery ran (the others reused); its report is written to `out`."""
    from charter.cli import main

    code = main(["mutate", "--contract", str(specs / ARTIFACT), "--artifact", str(tiny), "-j", "1", "-q",
                 "--report", str(out), *args])
    text = capsys.readouterr().out
    assert code == 0, text
    return int(re.search(r"verdicts reused from the cache, (\d+) run", text)[1])


def _edit(path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), "utf-8")


def test_an_unchecked_leaf_reruns_almost_nothing(specs, tiny, tmp_path, capsys):
    everything = _battery(capsys, specs, tiny, tmp_path / "first.json", *PART)
    _edit(specs / "models" / "tiny-llama.yaml", "  license: apache-2.0\n", "  license: Apache-2.0\n")
    ran = _battery(capsys, specs, tiny, tmp_path / "rerun.json", *PART)
    assert _battery(capsys, specs, tiny, tmp_path / "full.json", "--no-cache", *PART) == everything
    assert (tmp_path / "rerun.json").read_bytes() == (tmp_path / "full.json").read_bytes()
    assert ran <= everything * 0.05, (ran, everything)
    (stored,) = (tmp_path / "cache").glob("charter/*/verdicts/*.json")
    text = stored.read_text("utf-8")  # each entry as JSON from where its mutant ran
    assert text == json.dumps(json.loads(text)) + "\n" and len(json.loads(text)["entries"]) >= everything


def test_a_saved_cache_is_what_json_dumps_writes_fresh_entries_first(tmp_path):
    from charter.mutation import cache

    c = cache.VerdictCache.__new__(cache.VerdictCache)  # the store alone: no battery
    c.path, c._runs = tmp_path / "verdicts.json", {"run": ["new"]}
    c._fresh = {"new": json.dumps({"outcome": {"detail": "\u00e9 \"q\""}, "changed": [["file"]]})}
    c._entries = {"old": {"outcome": None, "changed": []}, "new": {"stale": True}}
    c.save(bound=2)
    assert c.path.read_text("utf-8") == json.dumps({"format": cache._FORMAT, "entries": {
        "new": {"outcome": {"detail": "\u00e9 \"q\""}, "changed": [["file"]]},
        "old": {"outcome": None, "changed": []}}, "runs": {"run": ["new"]}}) + "\n"
    c.save(bound=1)
    assert list(json.loads(c.path.read_text("utf-8"))["entries"]) == ["new"]


KEY_SET = ("  extra_keys: reject\n", "  extra_keys: allow\n")  # metadata: the key set loosened
CHECKED_EDITS = [KEY_SET,  # one leaf of a checked stage, each keeping the conforming artifact admitted
                 ("general.name: {type: string, value: Tiny Llama}",  # a value restated as its digest
                  "general.name: {type: string, sha256: fbdf4e5483deac7cacb74f21304b8b34feb4afce28f649b5e24c524b382a9c22}"),
                 ("  trailing: reject\n", "  trailing: alignment\n")]  # bench/battery_incremental.py has more
WHOLE = ("-j", "2")  # the whole battery: a shard's share of the mutants an edit touches is not the battery's


@pytest.mark.parametrize("old, new, part", [
    pytest.param(*KEY_SET, ("--only", "artifact"), id="key-set-artifact-side"),  # the read sets at work
    # three whole batteries each, about 12 s of CPU: the slow set
    *(pytest.param(old, new, WHOLE, id=f"edit{i}-whole", marks=pytest.mark.slow)
      for i, (old, new) in enumerate(CHECKED_EDITS))])
def test_an_edit_of_a_checked_stage_reruns_at_most_5_percent(specs, tiny, tmp_path, capsys, old, new, part):
    """Note [Verdict cache]: an artifact mutant is judged only by the checks that read a fact it
    changes, so a one-leaf edit of a checked stage reruns the few mutants that touch it, and the
    contract mutants whose changed checks it changes; the report equals a full run's."""
    everything = _battery(capsys, specs, tiny, tmp_path / "first.json", *part)
    _edit(specs / ARTIFACT, old, new)
    ran = _battery(capsys, specs, tiny, tmp_path / "rerun.json", *part)
    _battery(capsys, specs, tiny, tmp_path / "full.json", "--no-cache", *part)
    assert (tmp_path / "rerun.json").read_bytes() == (tmp_path / "full.json").read_bytes(), new
    assert ran <= everything * 0.05, (new, ran, everything)


def test_a_read_set_too_narrow_reuses_a_wrong_verdict(specs, tiny, tmp_path, capsys, monkeypatch):
    """The soundness check bites: with the tensors check said to read nothing, a tensor's role
    (which its shape diagnostics name) edited, the cache reuses shape verdicts whose detail a
    full run changes, and the reports differ; with the true read set they are equal."""
    from charter.contract import checks

    role = ("{name: output_norm.weight, role: final_norm,", "{name: output_norm.weight, role: last_norm,")
    only = ("--only", "artifact")
    _battery(capsys, specs, tiny, tmp_path / "first.json", *only)
    _edit(specs / ARTIFACT, *role)
    _battery(capsys, specs, tiny, tmp_path / "rerun.json", *only)
    _battery(capsys, specs, tiny, tmp_path / "full.json", "--no-cache", *only)
    assert (tmp_path / "rerun.json").read_bytes() == (tmp_path / "full.json").read_bytes()
    assert b"last_norm" in (tmp_path / "full.json").read_bytes()

    narrow = checks.reads
    monkeypatch.setattr(checks, "reads", lambda c: frozenset() if isinstance(c, checks.Tensors) else narrow(c))
    _edit(specs / ARTIFACT, *reversed(role))
    _battery(capsys, specs, tiny, tmp_path / "first.json", *only)
    _edit(specs / ARTIFACT, *role)
    _battery(capsys, specs, tiny, tmp_path / "rerun.json", *only)
    assert (tmp_path / "rerun.json").read_bytes() != (tmp_path / "full.json").read_bytes()


def test_each_kind_says_what_it_reads_and_the_codes_its_runtime_method_raises(every_check):
    """checks.reads and checks.rejects_with answer for every kind (a new kind fails here until it
    says); rejects_with bounds where a rejection stops the checks (Note [Verdict cache]), so every
    code a kind's runtime method (or a helper it calls) names must be listed, and be its stage's."""
    import ast
    import inspect

    from charter.admission import runtime
    from charter.contract import checks
    from charter.diagnostics import Code, Finding, code_for

    methods = {n.name: n for n in ast.parse(inspect.getsource(runtime.Context)).body[0].body
               if isinstance(n, ast.FunctionDef)}

    def named(fn: ast.FunctionDef, seen: set) -> tuple[set, set]:
        codes, findings = set(), set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id == "Code":
                    codes.add(Code[node.attr])
                elif node.value.id == "Finding":
                    findings.add(Finding[node.attr])
                elif node.value.id == "self" and node.attr in methods and node.attr not in seen:
                    more = named(methods[node.attr], seen | {node.attr})
                    codes |= more[0]
                    findings |= more[1]
        return codes, findings

    for check in every_check:
        assert isinstance(checks.reads(check), frozenset)
        listed = checks.rejects_with(check)
        if listed is None:
            continue
        codes, findings = named(methods[check.method], {check.method})
        codes |= {code_for(check.stage, f) for f in findings}
        assert codes <= listed, (type(check).__name__, codes - listed)
        assert all(code.stage is check.stage for code in listed), type(check).__name__


def test_an_unedited_rerun_makes_no_mutant(specs, tiny, tmp_path, capsys, monkeypatch):
    """Note [Verdict cache], "Unchanged reruns": the run's keys are remembered."""
    from charter.mutation import cache

    everything = _battery(capsys, specs, tiny, tmp_path / "first.json", *PART)
    monkeypatch.setattr(cache, "_made", lambda *a: pytest.fail("made an artifact mutant"))
    monkeypatch.setattr(cache.run, "contract_step", lambda *a: pytest.fail("resolved a contract mutant"))
    assert _battery(capsys, specs, tiny, tmp_path / "again.json", *PART) < everything * 0.05
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "first.json").read_bytes()


def test_judged_by_is_kept_by_all_it_reads(smollm2_path, tmp_path):
    """judged_by keeps each digest by all it reads (the facts changed, whether the payload stage ran,
    the outcome's stage and code): over every artifact mutant of SmolLM2's battery, and each value
    mutant's facts and outcome as another mutant's, in both orders, each kept digest is the one
    worked out afresh."""
    from charter.contract.contractset import load_set
    from charter.mutation import value_ops
    from charter.mutation.cache import VerdictCache, _thawed
    from charter.mutation.run import all_mutants, load_battery, prepare

    cs = load_set([ROOT / "specs" / "artifacts" / "smollm2-135m-instruct-q4_1.yaml"], [ROOT / "specs"])
    b = load_battery(cs, "smollm2-135m-instruct-q4_1", smollm2_path)
    cache = VerdictCache(b, tmp_path, "python")
    mutants = all_mutants(b, "artifact")
    prepare(b, mutants)  # the verified prefixes: a value mutant streams its file from its change on
    looked = [(m, cache.lookup(b, m, False, True)) for m in mutants]
    judged = [(m, _thawed(lk.changed), lk.outcome) for m, lk in looked if lk.changed is not None]
    other = next(m for m, _, _ in judged if not value_ops.is_value_mutant(m))
    judged += [(other, changed, o) for m, changed, o in judged if value_ops.is_value_mutant(m)]  # the payload's part

    def afresh(m, changed, o) -> str:
        cache._judged.clear()
        return cache.judged_by(m, changed, o)

    expected = [afresh(*j) for j in judged]
    cache._judged.clear()
    assert [cache.judged_by(*j) for j in judged] == expected
    assert [cache.judged_by(*j) for j in reversed(judged)] == expected[::-1]
    assert len(cache._judged) < len(judged) and len(set(expected)) > 10, (len(cache._judged), len(judged))
