"""The contracts charter ships: valid, schema-conformant, editor-linked, and round-trippable."""

from __future__ import annotations

import json

import jsonschema
import pytest

from charter.cli import main
from charter.contract import schema
from charter.contract.contractset import discover, load_set
from charter.contract.load import load_contract, load_contract_text
from charter.contract.yamldump import dump
from tests.conftest import ROOT, SPECS

SPEC_FILES = discover([SPECS])


def test_check_specs_passes(capsys):
    assert main(["check", "specs"]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_both_models_and_the_smollm2_artifact_are_shipped():
    cs = load_set([SPECS])
    assert cs.ok, cs.diagnostics
    assert {"qwen4exp", "smollm2-135m-instruct"} <= set(cs.models)
    assert "smollm2-135m-instruct-q4_1" in cs.artifacts


@pytest.mark.parametrize("name", sorted(schema.all_schemas()))
def test_committed_schemas_are_current(name):
    assert (ROOT / "schemas" / name).read_text() == schema.all_schemas()[name]


@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: p.name)
def test_spec_validates_against_published_schema(path):
    loaded = load_contract(path)
    first = path.read_text().splitlines()[0]
    ref = f"../../schemas/{loaded.kind}.schema.json"
    assert first == f"# yaml-language-server: $schema={ref}"
    published = json.loads((path.parent / ref).resolve().read_text())
    jsonschema.Draft202012Validator(published).validate(loaded.doc.data)


@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: p.name)
def test_round_trip(path):
    """A parsed contract written back as YAML parses to the same contract."""
    original = load_contract(path).contract
    data = original.model_dump(mode="json", by_alias=True, exclude_unset=True)
    again = load_contract_text(dump(data), "roundtrip.yaml").contract
    assert again == original


def test_schema_rejects_what_pydantic_rejects():
    validator = jsonschema.Draft202012Validator(schema.schema_for("model"))
    bad = {"charter": 1, "kind": "model", "id": "m", "status": "structural", "source": {"repository": "x"},
           "architecture": "a", "family": "f", "constants": {"layers": "30"}}
    assert list(validator.iter_errors(bad))
