"""The published JSON Schemas as an editor and a CI see them.

Every property of every schema is described (what an editor's hover shows), every example is valid
against the property it illustrates, every `$ref` resolves inside its schema, and an independent
validator, check-jsonschema (a real CLI reading the YAML with its own parser, as an editor or a CI
hook would), accepts every shipped spec and refuses the golden negatives whose fault the schema
can see. The same schemas driven through yaml-language-server over LSP are in
tests/editor/test_yaml_language_server.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import jsonschema
import pytest
from check_jsonschema.cli.main_command import main as check_jsonschema_main

from charter.contract import schema
from charter.contract.contractset import discover
from tests.conftest import ROOT, SPECS

SCHEMAS = schema.all_schemas()
INVALID = ROOT / "tests" / "invalid"


def properties(node, path="#"):
    """(JSON pointer, subschema) of every property below `node`, in $defs too."""
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            yield f"{path}/properties/{name}", sub
        for key, value in node.items():
            yield from properties(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from properties(value, f"{path}/{i}")


def refs(node):
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"]
        for value in node.values():
            yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_property_has_a_description(name):
    doc = json.loads(SCHEMAS[name])
    found = list(properties(doc))
    assert found
    undescribed = [pointer for pointer, sub in found if not str(sub.get("description", "")).strip()]
    assert not undescribed, f"{name}: properties without a description (write it in the model): {undescribed}"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_examples_are_valid(name):
    """An example an editor shows is one the schema accepts."""
    doc = json.loads(SCHEMAS[name])
    for pointer, sub in properties(doc):
        for example in sub.get("examples", []):
            probe = {**{k: v for k, v in sub.items() if k != "examples"}, "$defs": doc.get("$defs", {})}
            errors = list(jsonschema.Draft202012Validator(probe).iter_errors(example))
            assert not errors, f"{name} {pointer}: example {example!r}: {errors[0].message}"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_no_id_and_local_refs(name):
    """No `$id` (charter has no public home to resolve one): every `$ref` is local and resolves."""
    doc = json.loads(SCHEMAS[name])
    assert '"$id"' not in SCHEMAS[name]
    for ref in refs(doc):
        assert ref.startswith("#/$defs/"), ref
        assert ref.removeprefix("#/$defs/") in doc["$defs"], ref


def check_jsonschema(schema_file: Path, instances: list[Path]) -> dict:
    """check-jsonschema's JSON report over the instance files (status, errors, parse_errors): its own
    command line, run in this process (a process per call would cost more than the validation)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            check_jsonschema_main(["-o", "json", "--schemafile", str(schema_file), *map(str, instances)],
                                  standalone_mode=False)
        except SystemExit as exit:
            assert exit.code in (0, 1), out.getvalue()
    return json.loads(out.getvalue())


def modeline_kind(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    match = re.fullmatch(r"# yaml-language-server: \$schema=\.\./\.\./schemas/([a-z]+)\.schema\.json", first)
    assert match, f"{path}: no schema modeline"
    return match[1]


SPECS_BY_KIND: dict[str, list[Path]] = {}
for _spec in discover([SPECS]):
    SPECS_BY_KIND.setdefault(modeline_kind(_spec), []).append(_spec)


@pytest.mark.parametrize("kind", sorted(SPECS_BY_KIND))
def test_check_jsonschema_accepts_every_shipped_spec(kind):
    specs = SPECS_BY_KIND[kind]
    report = check_jsonschema(ROOT / "schemas" / f"{kind}.schema.json", specs)
    assert report["status"] == "ok", report


# The golden negatives (tests/invalid/) whose fault the schema sees: check-jsonschema rejects them.
SCHEMA_REJECTS = {
    "spec_bad_id.yaml", "spec_bad_status.yaml", "spec_bool_for_int.yaml", "spec_kind_mapping.yaml",
    "spec_missing_key.yaml", "spec_missing_version.yaml", "spec_string_for_number.yaml", "spec_unknown_key.yaml",
    "spec_unknown_kind.yaml", "spec_version_2.yaml", "text_int_for_bool.yaml", "yaml_empty.yaml",
    # YAML faults the schema sees through their YAML 1.2 reading: `1:20` is a string where a number
    # belongs; a merge key is an unknown key; an alias bomb's and a deep nest's keys are unknown.
    "yaml_sexagesimal.yaml", "yaml_merge_key.yaml", "yaml_alias_bomb.yaml", "yaml_too_deep.yaml",
    "spec_unknown_key_near.yaml", "spec_repeat_not_a_mapping.yaml", "spec_shape_not_a_list.yaml",
    "ref_root_cause/model.yaml",  # its unknown key; the artifacts that name it are valid to the schema
}
# Those check-jsonschema's YAML parser (ruamel.yaml) refuses before any schema applies.
PARSE_REJECTS = {
    "yaml_duplicate_key.yaml", "yaml_multi_document.yaml", "yaml_not_utf8.yaml", "yaml_python_tag.yaml",
    "yaml_syntax.yaml", "yaml_indent_between.yaml", "yaml_no_colon.yaml",
}
# Every other golden negative is a fault only `charter check` sees: an expression (syntax, type,
# range, cycle, unknown name), a reference to another contract, a rule across fields (a pydantic
# validator: one owner per key, placeholders bound, value bounds against codecs), a codec name the
# format lacks, or a scalar YAML 1.2 reads otherwise than YAML 1.1 (`0x1e`, `012` and `1_000` are
# numbers to ruamel.yaml, `yes`, `on` and a date strings; strict YAML refuses all of them,
# docs/contracts.md#strict-yaml). An editor does not flag these: `charter check` is the authority.


def _kind_of(path: Path) -> str:
    match = re.search(rb"^kind: *([a-z]+)", path.read_bytes(), re.M)
    kind = match[1].decode() if match else "model"
    return kind if f"{kind}.schema.json" in SCHEMAS else "model"  # an unknown kind: the editor's model schema


def test_check_jsonschema_on_golden_negatives():
    cases = sorted(INVALID.glob("*.yaml")) + sorted(INVALID.glob("*/*.yaml"))
    by_kind: dict[str, list[Path]] = {}
    for case in cases:
        by_kind.setdefault(_kind_of(case), []).append(case)
    verdict = {case.relative_to(INVALID).as_posix(): "accepts" for case in cases}
    for kind, files in by_kind.items():
        report = check_jsonschema(ROOT / "schemas" / f"{kind}.schema.json", files)
        for error in report.get("errors", []):
            verdict[Path(error["filename"]).relative_to(INVALID).as_posix()] = "rejects"
        for error in report.get("parse_errors", []):
            verdict[Path(error["filename"]).relative_to(INVALID).as_posix()] = "parse"
    assert {c for c, v in verdict.items() if v == "rejects"} == SCHEMA_REJECTS
    assert {c for c, v in verdict.items() if v == "parse"} == PARSE_REJECTS
