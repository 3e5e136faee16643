"""The real SmolLM2 GGUF and its shipped contract, through the `charter` CLI."""

from __future__ import annotations

import json
import re

import jsonschema

from charter.diagnostics import ADMISSION_STAGES

from tests.conftest import ROOT

from .conftest import SMOLLM2_CONTRACT, admit, assert_admitted, assert_rejected, fact_text

# The published schema (tests/contract checks it is current).
REPORT_SCHEMA = json.loads((ROOT / "schemas" / "admission-report.schema.json").read_text("utf-8"))


def test_real_file_is_admitted_by_the_shipped_contract(capsys, smollm2_path):
    run = admit(capsys, smollm2_path, json_out=False)
    assert run.code == 0, run.out + run.err
    assert run.out.startswith(f"admitted: {smollm2_path} is smollm2-135m-instruct-q4_1 (status pinned-not-supported)")
    assert run.out.rstrip().endswith("9 stages passed; skipped: payload")
    assert run.err == ""


def test_the_contract_alone_finds_its_pinned_artifact(capsys):
    run = admit(capsys, None, SMOLLM2_CONTRACT, "-v", json_out=False)
    assert run.code == 0, run.out + run.err
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in run.out
    assert run.err.startswith("checker: ")


def test_json_report_validates_against_the_report_schema(capsys, smollm2_path):
    run = admit(capsys, smollm2_path)
    report = assert_admitted(run)
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(report)
    assert [s["stage"] for s in report["stages"]] == [s.value for s in ADMISSION_STAGES]
    assert {s["stage"]: s["result"] for s in report["stages"]}["payload"] == "skipped"
    assert report["status"] == "pinned-not-supported" and report["format"] == "gguf"
    assert report["claim"].startswith("structural admission only")


def test_rejection_report_validates_against_the_report_schema(capsys, smollm2_path):
    run = admit(capsys, smollm2_path, SMOLLM2_CONTRACT, "--require-status", "supported")
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(run.report)


def test_verify_payload_passes_on_the_real_file(capsys, smollm2_path):
    report = assert_admitted(admit(capsys, smollm2_path, SMOLLM2_CONTRACT, "--verify-payload"))
    assert all(s["result"] == "passed" for s in report["stages"])


def test_require_status_supported_rejects_a_pinned_not_supported_contract(capsys, smollm2_path):
    run = admit(capsys, smollm2_path, SMOLLM2_CONTRACT, "--require-status", "supported")
    d = assert_rejected(run, "policy", "POLICY_STATUS", "status", fact="status: pinned-not-supported")
    assert d["expected"] == "supported" and d["actual"] == "pinned-not-supported"


def test_require_status_at_or_below_the_contract_admits(capsys, smollm2_path):
    for status in ("structural", "pinned-not-supported"):
        assert_admitted(admit(capsys, smollm2_path, SMOLLM2_CONTRACT, "--require-status", status))


def test_text_rejection_is_one_located_line(capsys, smollm2_path):
    run = admit(capsys, smollm2_path, SMOLLM2_CONTRACT, "--require-status", "supported", json_out=False)
    assert run.code == 1
    lines = run.out.splitlines()
    assert len(lines) == 1, lines
    m = re.match(r"^rejected at policy: (specs/\S+:\d+:\d+): POLICY_STATUS status: ", lines[0])
    assert m, lines[0]
    assert "status:" in fact_text(m.group(1))
