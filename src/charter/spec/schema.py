"""JSON Schemas of the contract kinds, published for editors (yaml-language-server) and CI."""

from __future__ import annotations

import json
from pathlib import Path

from charter import atomic
from charter.spec.models import CONTRACT_KINDS

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema_for(kind: str) -> dict:
    model = CONTRACT_KINDS[kind]
    schema = model.model_json_schema(mode="validation", by_alias=True)
    schema["$schema"] = SCHEMA_DIALECT
    schema["$id"] = f"https://charter.invalid/schemas/{kind}.schema.json"
    schema["title"] = f"charter {kind} contract"
    return schema


def render(kind: str) -> str:
    return json.dumps(schema_for(kind), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(directory: Path) -> list[Path]:
    """Write one schema per kind; return the files that changed."""
    changed = []
    for kind in sorted(CONTRACT_KINDS):
        path = directory / f"{kind}.schema.json"
        if atomic.write_text(path, render(kind)):
            changed.append(path)
    return changed
