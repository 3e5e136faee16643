"""Note [Standard report] and Note [Vendored viewer]: `--report` writes the mutation-testing-report
schema (validated against the pinned schema, vendored in tests/mutation/stryker/ with its license),
every verdict gets its status and reason, the report reads back into the same outcomes, and
`--html` is one self-contained page holding Stryker's viewer and that report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from charter.diagnostics import Code, Stage
from charter.mutation import report, standard, viewer
from charter.mutation.mutant import Expect, Mutant, Outcome, Verdict
from tests.conftest import ROOT

SCHEMA = json.loads((Path(__file__).parent / "stryker" / "mutation-testing-report-schema.json").read_text("utf-8"))
SPEC = "specs/artifacts/x.yaml"


def _outcomes() -> list[Outcome]:
    def m(side, target, op, expect, leaf=()):
        return Mutant(side, target, op, expect, leaf=leaf)

    meta_value = Expect.of(Code.METADATA_VALUE, "metadata.llama.block_count")
    return [
        Outcome(m("artifact", "metadata.llama.block_count", "+1", meta_value), Verdict.KILLED, "metadata",
                "METADATA_VALUE", "metadata.llama.block_count", location=f"{SPEC}:12:5"),
        Outcome(m("contract", "artifact:constants.heads", "+1", Expect(Stage.TENSORS)), Verdict.SURVIVED,
                detail="no generated check changed: the generator ignores this leaf", location=f"{SPEC}:3:10"),
        Outcome(m("artifact", "tensors.output.weight", "rename", Expect.of(Code.TENSOR_MISSING)),
                Verdict.REGRESSION, "identity", "IDENTITY_MISMATCH", "identity.general.name", "wrong stage"),
        Outcome(m("contract", "artifact:description", "empty", None), Verdict.EQUIVALENT,
                detail="documentation: not a fact about the artifact <&>", location=f"{SPEC}:2:14"),
        Outcome(m("artifact", "metadata", "reverse key order", None), Verdict.ADMITTED),
        Outcome(m("artifact", "metadata.general.alignment", "state the default", None), Verdict.REFUSED,
                "container", "CONTAINER_ALIGNMENT", "container.alignment"),
        Outcome(m("artifact", "header.version", "4", Expect(Stage.CONTAINER)), Verdict.ERROR,
                detail="ValueError: </script><script>alert(1)</script>"),
        Outcome(m("artifact", "header.magic", "zero", Expect(Stage.CONTAINER)), Verdict.SURVIVED, detail="admitted"),
    ]


META = {"contract": "x", "spec": SPEC, "artifact": "/tmp/a <b>.gguf",
        "sources": {SPEC: "# x\ndescription: about\nconstants: {heads: 9}\n"}}


def test_every_verdict_gets_its_status_and_the_report_is_valid():
    text = report.to_json(_outcomes(), META)
    data = json.loads(text)
    jsonschema.validate(data, SCHEMA)
    mutants = [m for f in data["files"].values() for m in f["mutants"]]
    status = {m["id"]: m["status"] for m in mutants}
    assert status == {
        "artifact:metadata.llama.block_count:+1": "Killed",
        "contract:artifact:constants.heads:+1": "NoCoverage",  # a leaf no generated check reads
        "artifact:tensors.output.weight:rename": "Survived",  # a regression fails as a survivor does
        "contract:artifact:description:empty": "Ignored",
        "artifact:metadata:reverse key order": "Ignored",  # an admitted acceptance control
        "artifact:metadata.general.alignment:state the default": "Survived",  # a refused control
        "artifact:header.version:4": "RuntimeError",
        "artifact:header.magic:zero": "Survived",
    }
    by_id = {m["id"]: m for m in mutants}
    killed = by_id["artifact:metadata.llama.block_count:+1"]
    assert killed["location"] == {"start": {"line": 12, "column": 5}, "end": {"line": 12, "column": 6}}
    assert killed["mutatorName"] == "metadata" and killed["replacement"] == "+1"
    assert killed["statusReason"].startswith("killed: expected metadata METADATA_VALUE metadata.llama.block_count, "
                                             "got metadata METADATA_VALUE metadata.llama.block_count")
    assert "declared equivalent: documentation" in by_id["contract:artifact:description:empty"]["statusReason"]
    assert data["files"][SPEC]["source"] == META["sources"][SPEC] and data["files"][SPEC]["language"] == "yaml"
    assert data["config"]["summary"] == report.summary(_outcomes()) and not data["config"]["summary"]["passed"]
    assert data["thresholds"] == {"high": 100, "low": 100}


def test_the_report_reads_back_into_the_same_outcomes_and_meta():
    text = report.to_json(_outcomes(), META)
    outcomes, meta = report.from_json(text)
    assert outcomes == _outcomes() and meta == META
    assert report.to_json(outcomes, meta) == text


@pytest.mark.parametrize("source", [META["sources"][SPEC], '# "@charter-mutants-0@"\n', "@charter-mutants-0@"])
def test_the_report_is_indented_json_with_a_line_per_mutant(source):
    """Each mutant on one line, written by json's C encoder (all of it indented took 1.8 s at
    31,000 mutants); a text that is a mutant list's placeholder is written all indented (one that
    quotes it is escaped, and no placeholder)."""
    meta = {**META, "sources": {SPEC: source}}
    text = report.to_json(_outcomes(), meta)
    data = json.loads(text)
    assert data["files"][SPEC]["source"] == source and report.from_json(text) == (_outcomes(), meta)
    lines = text.splitlines()
    one_line = [json.loads(line.strip().rstrip(",")) for line in lines if line.startswith('        {"charter": ')]
    if source.startswith("@"):  # written as the placeholder is
        assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n" and not one_line
    else:
        assert one_line == [m for f in data["files"].values() for m in f["mutants"]] and len(one_line) == 8
        assert text.startswith(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False).split('"mutants"')[0])


@pytest.mark.parametrize("text, why", [
    ("[]", "not a mutation-testing report"),
    ('{"schemaVersion": "2", "files": {}, "config": {}, "thresholds": {}}', None),
    ('{"schemaVersion": "2", "config": {}, "files": {"a": {"mutants": [{"charter": {"index": 1}}]}}}', "places"),
    ('{"schemaVersion": "2", "config": {}, "files": {"a": {"mutants": [{}]}}}', "KeyError"),
])
def test_what_is_not_such_a_report_is_refused(text, why):
    if why is None:
        assert report.from_json(text) == ([], {})
        return
    with pytest.raises(ValueError, match=why):
        report.from_json(text)


def test_the_page_is_self_contained_and_embeds_the_report():
    outcomes = _outcomes()
    page = report.render_html(outcomes, META)
    assert page.startswith("<!doctype html>") and page.count("<mutation-test-report-app") == 1
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S)
    assert [attrs for attrs, _ in scripts] == ["", ""]  # inline, no src: nothing fetched at view time
    assert scripts[0][1] == viewer.script_text()
    embedded = scripts[1][1].split(" = ", 1)[1].rstrip(";")
    assert json.loads(embedded) == json.loads(report.to_json(outcomes, META))
    assert "<script>alert(1)" not in page and "/tmp/a <b>.gguf" not in page  # the report's < is \u003c
    assert not re.search(r"<(link|img|iframe)\b", page)


def test_the_vendored_viewer_is_pinned_with_its_license():
    import hashlib
    from importlib import resources

    folder = resources.files("charter.mutation").joinpath("viewer")
    script = folder.joinpath(viewer.SCRIPT).read_bytes()
    assert hashlib.sha256(script).hexdigest() == "15ca2bd252303728405349e0df835ad20f1b2d2c11f5a076213e51931d777736"
    assert "Apache License" in folder.joinpath("LICENSE").read_text("utf-8")


@pytest.fixture(scope="module")
def smollm2_contract_report(tmp_path_factory, smollm2_path):
    from charter.cli import main

    out = tmp_path_factory.mktemp("standard") / "report.json"
    code = main(["mutate", "--contract", str(ROOT / "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"),
                 "--artifact", str(smollm2_path), "--only", "contract", "-j", "2", "-q", "--report", str(out)])
    return code, out.read_text("utf-8")


def test_real_battery_report_is_valid_and_every_mutant_sits_at_its_leaf(smollm2_contract_report):
    code, text = smollm2_contract_report
    data = json.loads(text)
    jsonschema.validate(data, SCHEMA)
    s = data["config"]["summary"]
    assert code == 0 and s["passed"] and s["rejected"] == s["killed"] == s["mutants"] > 800, s
    assert set(data["files"]) == {"specs/artifacts/smollm2-135m-instruct-q4_1.yaml",
                                  "specs/models/smollm2-135m-instruct.yaml"}
    for path, f in data["files"].items():
        assert f["source"] == (ROOT / path).read_text("utf-8")
        lines = f["source"].splitlines()
        for m in f["mutants"]:
            line, column = m["location"]["start"]["line"], m["location"]["start"]["column"]
            assert line <= len(lines) and column <= len(lines[line - 1]) + 1, m["id"]
            leaf = m["id"].split(":", 2)[2].rsplit(":", 1)[0].split(".")[-1]  # side:target:operator
            added = m["replacement"].startswith("add")  # a key the document lacks: at its parent
            if m["status"] == "Killed" and not added and leaf.isidentifier():
                near = "\n".join(lines[max(0, line - 2):line + 1])
                assert leaf in near, (m["id"], line, near)
    assert report.to_json(*report.from_json(text)) == text
    assert standard.status(report.from_json(text)[0][0]) in {"Killed", "Ignored"}
