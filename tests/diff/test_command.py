"""`charter diff` as a user runs it (docs/cli.md, docs/mutation.md "The diff gate"): the rule of each
edit, the pinned artifact it rejects, the gate's exit code, the allowlist, the three formats, and
one clear diagnostic (exit 2) for every bad input."""

from __future__ import annotations

import json
import shutil
import subprocess

import jsonschema
import pytest

from charter.cli import main
from tests.conftest import ROOT

ART = "artifacts/smollm2-135m-instruct-q4_1.yaml"
MODEL = "models/smollm2-135m-instruct.yaml"
OUTPUT_SCHEMA = json.loads((ROOT / "schemas" / "output.schema.json").read_text("utf-8"))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """old/ and new/: the SmolLM2 model and artifact contracts (the real GGUF is pinned by `source`)."""
    for side in ("old", "new"):
        for name in (ART, MODEL):
            (tmp_path / side / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / "specs" / name, tmp_path / side / name)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def edit(project, name: str, old: str, new: str) -> None:
    path = project / "new" / name
    text = path.read_text("utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), "utf-8")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def findings(capsys, *argv):
    code, out, _ = run(capsys, "--format", "json", "diff", *argv)
    data = json.loads(out)
    jsonschema.validate(data, OUTPUT_SCHEMA)
    return code, data["result"]


def test_identical_trees_diff_to_nothing(project, capsys):
    code, out, _ = run(capsys, "diff", "old", "new")
    assert code == 0 and out.startswith("ok: 0 change(s)")


def test_a_documentation_edit_is_equivalent(project, capsys):
    edit(project, MODEL, "charter admits its artifacts", "charter admits the artifacts")
    code, result = findings(capsys, "old", "new")
    assert code == 0 and [f["rule"] for f in result["findings"]] == ["EQUIVALENT_NO_CHECK_CHANGED"]
    assert result["findings"][0]["field"] == "description" and result["passed"]


def test_a_changed_constant_rejects_the_pinned_artifact(project, capsys):
    edit(project, MODEL, "layers: 30", "layers: 31")
    code, result = findings(capsys, "old", "new")
    (f,) = result["findings"]
    assert code == 0 and f["rule"] == "TIGHTEN_REJECTS_PINNED" and f["field"] == "constants.layers"
    assert f["location"] == {"file": "new/models/smollm2-135m-instruct.yaml", "line": 17, "column": 11}
    (r,) = f["rejects"]
    assert r["contract"] == "smollm2-135m-instruct-q4_1" and r["artifact"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert r["diagnostic"]["code"] == "METADATA_VALUE" and r["diagnostic"]["field"] == "metadata.llama.block_count"
    (a,) = result["artifacts"]
    assert a["old"] is True and a["new"] is False


def test_a_loosening_fails_the_gate_with_a_github_annotation(project, capsys):
    edit(project, ART, "extra_keys: reject", "extra_keys: allow")
    code, out, _ = run(capsys, "--format", "github", "diff", "old", "new")
    assert code == 1
    assert out.splitlines()[0].startswith(
        "::error file=new/artifacts/smollm2-135m-instruct-q4_1.yaml,line=25,col=15::LOOSEN_CHECK_WIDENED "
        "smollm2-135m-instruct-q4_1:metadata.extra_keys: loosened: 'reject' -> 'allow'")


def test_a_dropped_special_id_removes_a_check(project, capsys):
    edit(project, ART, "    tokenizer.ggml.eos_token_id: eos\n", "")
    code, result = findings(capsys, "old", "new")
    rules = {f["field"]: f["rule"] for f in result["findings"]}
    assert code == 1 and rules == {"tokenizer.special.tokenizer.ggml.eos_token_id": "LOOSEN_CHECK_REMOVED"}


def test_an_identity_change_fails_the_gate_whatever_it_does_to_the_checks(project, capsys):
    edit(project, MODEL, "repository: HuggingFaceTB/SmolLM2-135M-Instruct", "repository: HuggingFaceTB/Other")
    code, result = findings(capsys, "old", "new")
    (f,) = result["findings"]
    assert code == 1 and f["rule"] == "IDENTITY_MODEL_SOURCE" and f["checks"] == "equivalent" and f["fails"]


def test_a_renamed_contract_is_an_identity_change(project, capsys):
    edit(project, ART, "id: smollm2-135m-instruct-q4_1", "id: smollm2-q4-1")
    code, result = findings(capsys, "old", "new")
    assert code == 1 and [f["rule"] for f in result["findings"]] == ["IDENTITY_CONTRACT_ID"]


def write_allowlist(project, expires: str, rule: str = "LOOSEN_CHECK_WIDENED", extra: str = "") -> str:
    (project / "allow.yaml").write_text(
        "allow:\n"
        f"  - rule: {rule}\n"
        "    contract: smollm2-135m-instruct-q4_1\n"
        "    field: metadata.extra_*\n"
        "    reason: a converter adds keys; tracked in issue 99\n"
        f"    expires: \"{expires}\"\n{extra}", "utf-8")
    return "allow.yaml"


def test_an_allowlist_entry_allows_until_it_expires(project, capsys):
    edit(project, ART, "extra_keys: reject", "extra_keys: allow")
    code, result = findings(capsys, "old", "new", "--allowlist", write_allowlist(project, "2999-12-31"))
    assert code == 0 and result["findings"][0]["allowed"] == "a converter adds keys; tracked in issue 99"
    assert result["allowlist"]["expired"] == [] and result["allowlist"]["unused"] == []
    code, out, _ = run(capsys, "diff", "old", "new", "--allowlist", write_allowlist(project, "2020-01-31"))
    assert code == 1
    assert "allow.yaml:2:5: allowlist entry expired on 2020-01-31, it allows nothing" in out
    assert "the allowlist entry at allow.yaml:2:5 expired on 2020-01-31" in out


def test_the_allowlist_is_found_in_tool_charter(project, capsys):
    edit(project, ART, "extra_keys: reject", "extra_keys: allow")
    write_allowlist(project, "2999-12-31")
    (project / "pyproject.toml").write_text("[tool.charter]\ndiff-allowlist = 'allow.yaml'\n", "utf-8")
    code, out, _ = run(capsys, "diff", "old", "new")
    assert code == 0 and "1 allowed by the allowlist" in out


@pytest.mark.parametrize("text, message", [
    ("allow:\n  - rule: LOOSEN_NOTHING\n    contract: c\n    field: f\n    reason: r\n    expires: \"2999-01-01\"\n",
     "allow.yaml:2:11: SPEC_SCHEMA allow[0].rule: "),
    ("allow:\n  - rule: LOOSEN_CHECK_WIDENED\n    contract: c\n    field: f\n    reason: r\n    expires: 2999-01-01\n",
     "allow.yaml:6:14: YAML_AMBIGUOUS_SCALAR"),
    ("allow:\n  - rule: LOOSEN_CHECK_WIDENED\n    contract: c\n    field: f\n    expires: \"2999-01-01\"\n",
     "SPEC_SCHEMA allow[0].reason"),
    ("allow:\n  - rule: LOOSEN_CHECK_WIDENED\n    contract: c\n    field: f\n    reason: r\n    expires: \"31/01/2999\"\n",
     "allow[0].expires"),
])
def test_a_bad_allowlist_is_one_located_diagnostic(project, capsys, text, message):
    (project / "allow.yaml").write_text(text, "utf-8")
    code, out, err = run(capsys, "diff", "old", "new", "--allowlist", "allow.yaml")
    assert code == 2 and message in out and "Traceback" not in err
    assert len(out.strip().splitlines()) == 1


def test_bad_inputs_are_usage_errors_without_a_traceback(project, capsys):
    assert run(capsys, "diff", "old")[0] == 2
    code, _, err = run(capsys, "diff", "old", "missing")
    assert code == 2 and "missing: no such file or directory" in err
    (project / "new" / ART).write_text("charter: 1\nkind: [\n", "utf-8")
    code, out, err = run(capsys, "diff", "old", "new")
    assert code == 2 and "YAML_SYNTAX" in out and "NEW (new) does not load" in err and "Traceback" not in err
    code, _, err = run(capsys, "diff", "--against", "HEAD", "new")
    assert code == 2 and "git" in err and "Traceback" not in err


def git(project, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=project, check=True,
                   capture_output=True)


def test_against_a_git_revision(project, capsys):
    shutil.rmtree(project / "old")
    (project / "new").rename(project / "specs")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "contracts")
    text = (project / "specs" / MODEL).read_text("utf-8").replace("family: smollm2", "family: smollm3")
    (project / "specs" / MODEL).write_text(text, "utf-8")
    code, result = findings(capsys, "--against", "HEAD")
    assert code == 1 and result["old"] == "HEAD"
    assert [(f["rule"], f["field"], f["checks"]) for f in result["findings"]] == [
        ("IDENTITY_FAMILY", "family", "tightened")]  # general.basename is "{model.family}": the artifact rejects
    (project / "specs" / ART).unlink()
    code, result = findings(capsys, "--against", "HEAD", "specs")
    assert "LOOSEN_CONTRACT_REMOVED" in [f["rule"] for f in result["findings"]]
    code, _, err = run(capsys, "diff", "--against", "no-such-ref")
    assert code == 2 and "'no-such-ref' is not a commit" in err


def test_each_of_several_leaves_is_judged_alone(project, capsys):
    edit(project, MODEL, "layers: 30", "layers: 31")
    edit(project, ART, "extra_keys: reject", "extra_keys: allow")
    code, result = findings(capsys, "old", "new")
    rules = {f["field"]: (f["rule"], len(f["rejects"])) for f in result["findings"]}
    assert code == 1 and rules == {"constants.layers": ("TIGHTEN_REJECTS_PINNED", 1),
                                   "metadata.extra_keys": ("LOOSEN_CHECK_WIDENED", 0)}
    (a,) = result["artifacts"]
    assert a["old"] is True and a["new"] is False  # the whole of NEW rejects it


def test_a_leaf_that_does_not_resolve_alone_is_judged_with_the_others(project, capsys):
    edit(project, MODEL, "  context: 8192", "  context_length: 8192")
    edit(project, ART, "{type: uint32, value: context}", "{type: uint32, value: context_length}")
    code, result = findings(capsys, "old", "new")
    by_field = {f["field"]: f for f in result["findings"]}
    renamed = by_field["constants.context_length"]
    assert renamed["checks"] == "equivalent" and "judged with all of NEW's changes" in renamed["note"]
    assert code == 0 and result["artifacts"][0]["new"] is True
