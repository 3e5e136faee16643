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

    schema = TypeAdapter(report or AdmissionReport).json_schema(mode="serialization")
    schema["$schema"] = SCHEMA_DIALECT
    schema["title"] = title
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def all_schemas() -> dict[str, str]:
    """File name -> text of every schema charter publishes."""
    out = {f"{kind}.schema.json": render(kind) for kind in sorted(CONTRACT_KINDS)}
    out["admission-report.schema.json"] = render_report_schema()
    from charter.bundles.report import BundleReport

    out["bundle-report.schema.json"] = render_report_schema(BundleReport, "charter bundle admission report")
    return out


def write_schemas(directory: Path) -> list[Path]:
    """Write every published schema; return the files that changed."""
    changed = []
    for name, text in all_schemas().items():
        path = directory / name
        if atomic.write_text(path, text):
            changed.append(path)
    return changed
