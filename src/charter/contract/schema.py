"""JSON Schemas of the contract kinds, published for editors (yaml-language-server) and CI.

Every property carries a description (tests/contract/test_schemas.py), written once in the models
(Field descriptions, report attribute docstrings), never patched in here. The schemas have no `$id`:
charter has no public home to resolve one at, so each schema's base URI is where it was read from
(the `$schema=../../schemas/<kind>.schema.json` modeline of every shipped spec), and its `$ref`s are
local (`#/$defs/...`).
"""

from __future__ import annotations

import json
from pathlib import Path

from charter import atomic
from charter.contract.kinds import CONTRACT_KINDS

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema_for(kind: str) -> dict:
    model = CONTRACT_KINDS[kind]
    schema = model.model_json_schema(mode="validation", by_alias=True)
    schema["$schema"] = SCHEMA_DIALECT
    schema["title"] = f"charter {kind} contract"
    return schema


def render(kind: str) -> str:
    return json.dumps(schema_for(kind), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_report_schema(report: type | None = None, title: str = "charter admission report") -> str:
    """The JSON Schema of a report dataclass (default: AdmissionReport)."""
    from pydantic import TypeAdapter

    from charter.admission.report import AdmissionReport
    from charter.output_json import LocationJSON

    schema = TypeAdapter(tuple[report or AdmissionReport, LocationJSON]).json_schema(mode="serialization")
    defs = schema["$defs"]
    schema = published_locations({**defs.pop((report or AdmissionReport).__name__), "$defs": defs})
    schema["$schema"] = SCHEMA_DIALECT
    schema["title"] = title
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def published_locations(schema):
    """`schema` with every `location` given as text (the reports hold a contract location as its
    name `file:line:col`, Note [Spec names and shown paths]) as the object the command line prints
    (charter.console.Output.publish): one rule for the data and its schema."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict) and "location" in value \
                    and _text_or_null(value["location"]):
                described = {k: v for k, v in value["location"].items() if k in ("description", "examples")}
                value = {**value, "location": {"anyOf": [{"$ref": "#/$defs/LocationJSON"}, {"type": "null"}],
                                               **described}}
            out[key] = published_locations(value)
        return out
    if isinstance(schema, list):
        return [published_locations(v) for v in schema]
    return schema


def _text_or_null(prop: dict) -> bool:
    kinds = [a.get("type") for a in prop.get("anyOf", [prop])]
    return "string" in kinds and "$ref" not in str(prop)


def _results() -> dict[str, tuple[type, ...]]:
    """The result type of each command's JSON (schemas/output.schema.json)."""
    from charter.admission.report import AdmissionReport
    from charter.bundles.report import BundleReport
    from charter.output_json import (CheckResult, FixturesCaptureResult, FixturesVerifyResult, GenerateResult,
                                     LocateResult, WrittenResult)
    from charter.diff.render import DiffResultJSON
    from charter.regions.commands import RegionsAdmission

    return {"check": (CheckResult,), "check-changed": (CheckResult,), "schema": (WrittenResult,), "freeze": (WrittenResult,),
            "generate": (GenerateResult,), "locate": (LocateResult,),
            "admit": (AdmissionReport, BundleReport, RegionsAdmission),
            "fixtures verify": (FixturesVerifyResult,), "fixtures capture": (FixturesCaptureResult,),
            "diff": (DiffResultJSON,)}


def render_output_schema() -> str:
    """The JSON Schema of what every command prints under --format json."""
    from pydantic import TypeAdapter

    from charter.output_json import LocationJSON, OutputJSON

    results = _results()
    kinds = sorted({t for types in results.values() for t in types}, key=lambda t: t.__name__)
    defs = TypeAdapter(tuple[(OutputJSON, LocationJSON, *kinds)]).json_schema(mode="serialization")["$defs"]
    schema = {**defs.pop("OutputJSON"), "$defs": defs}
    branches = []
    for command, types in results.items():
        refs = [{"$ref": f"#/$defs/{t.__name__}"} for t in types] + [{"type": "null"}]
        branches.append({"if": {"properties": {"command": {"const": command, "description": f"charter {command}"}}},
                         "then": {"properties": {"result": {"anyOf": refs,
                                                            "description": f"the result of charter {command}"}}}})
    branches.append({"if": {"properties": {"command": {"const": "mutate", "description": "charter mutate"}}},
                     "then": {"properties": {"result": {
                         "description": "the battery's report, as --report writes it (docs/mutation.md)",
                         "type": ["object", "array", "null"]}}}})
    schema["allOf"] = branches
    schema["properties"]["command"]["enum"] = [*results, "mutate"]
    schema = published_locations(schema)
    schema["$schema"] = SCHEMA_DIALECT
    schema["title"] = "charter command output (--format json)"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def all_schemas() -> dict[str, str]:
    """File name -> text of every schema charter publishes."""
    out = {f"{kind}.schema.json": render(kind) for kind in sorted(CONTRACT_KINDS)}
    out["admission-report.schema.json"] = render_report_schema()
    from charter.bundles.report import BundleReport

    out["bundle-report.schema.json"] = render_report_schema(BundleReport, "charter bundle admission report")
    out["output.schema.json"] = render_output_schema()
    return out


def write_schemas(directory: Path) -> list[Path]:
    """Write every published schema; return the files that changed."""
    changed = []
    for name, text in all_schemas().items():
        path = directory / name
        if atomic.write_text(path, text):
            changed.append(path)
    return changed
