"""The published schemas as an editor uses them: yaml-language-server (pinned, tools/lsp/), driven over
LSP by a small stdio client (tests/editor/lsp.py), reading each document's
`# yaml-language-server: $schema=...` modeline as VS Code, Neovim or Helix would.

* Every shipped spec opens without a diagnostic.
* The golden negatives whose fault the schema sees are flagged, on the line `charter check` names.
* Hovering a key shows its description, the one written in the model (every property of every
  schema has one: tests/contract/test_schemas.py), and its examples if it has any, for every
  property any shipped spec uses. For an
  optional section (`tokenizer: TokenizerBinding | None`) the server shows the section's own
  docstring (its `$defs` entry's description), which it finds first; that is written in the model
  too.

Slow set (about 20 s on two busy cores, and it needs node): `make test-slow` and `make test-editor`
(which CI runs, .ci/run) install the server first (`make lsp`: `npm ci` from the committed lock
file, no network at test time). The fast real test of the same schemas, check-jsonschema over
every shipped spec and every golden negative, is in the default set (tests/contract/test_schemas.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from charter.contract.schema import all_schemas
from charter.contract.contractset import discover
from tests.conftest import ROOT, SPECS
from tests.contract.test_schemas import INVALID, PARSE_REJECTS, SCHEMA_REJECTS, _kind_of
from tests.editor.lsp import Client

pytestmark = pytest.mark.slow

SHIPPED = discover([SPECS])
CASES = sorted(INVALID.glob("*.yaml")) + sorted(INVALID.glob("*/*.yaml"))

# What the editor flags among the golden negatives: what check-jsonschema rejects, as schema faults
# or YAML errors, with three differences of the editor's parser (eemeli/yaml, YAML 1.2 core schema)
# and of how it treats a document: `1_000` is a string to it (ruamel.yaml reads a number), a file
# with no document has nothing to validate, and a second document is validated on its own.
EDITOR_FLAGS = (SCHEMA_REJECTS | PARSE_REJECTS | {"yaml_underscore.yaml"}) - {"yaml_empty.yaml",
                                                                                "yaml_multi_document.yaml"}


@pytest.fixture(scope="module")
def server():
    client = Client()
    yield client
    client.close()


def test_every_shipped_spec_opens_clean(server):
    uris = [path.as_uri() for path in SHIPPED]
    for path in SHIPPED:
        server.open(path.as_uri(), path.read_text())
    found = {uri: diags for uri, diags in server.diagnostics_of(uris).items() if diags}
    assert not found, {uri: [(d["range"]["start"]["line"] + 1, d["message"]) for d in diags]
                       for uri, diags in found.items()}


def _with_modeline(case: Path) -> str:
    """The case as an editor holds it once its author links the schema (the golden negatives have no
    modeline: `charter check` needs none); one line is added above the case's own first line."""
    up = "../" * len(case.parent.relative_to(ROOT).parts)
    text = case.read_bytes().decode("utf-8", "replace")
    return f"# yaml-language-server: $schema={up}schemas/{_kind_of(case)}.schema.json\n" + text


def _expected_schema_line(case: Path) -> int | None:
    """The 1-based line of the case's first `# expect:` diagnostic, in the case's own numbering, when
    it is a schema fault (SPEC_*: a YAML fault, such as a merge key, shows up elsewhere as a symptom)."""
    for line in case.read_bytes().decode("utf-8", "replace").splitlines():
        match = re.match(r"# expect: [^:]+:(\d+):\d+: SPEC_", line)
        if match:
            return int(match[1])
    return None


def test_golden_negatives_are_flagged_where_the_schema_sees_them(server):
    uris = {case.as_uri(): case for case in CASES}
    for uri, case in uris.items():
        server.open(uri, _with_modeline(case))
    published = server.diagnostics_of(list(uris))
    flagged = {uris[uri].relative_to(INVALID).as_posix(): diags for uri, diags in published.items() if diags}
    assert set(flagged) == EDITOR_FLAGS
    for name in sorted(SCHEMA_REJECTS & set(flagged)):
        line = _expected_schema_line(INVALID / name)
        if line is not None:  # the modeline shifts the editor's 0-based lines onto charter's 1-based ones
            assert line in {d["range"]["start"]["line"] for d in flagged[name]}, (name, line, flagged[name])


def _resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        schema = {**root["$defs"][schema["$ref"].removeprefix("#/$defs/")],
                  **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _branch(schema: dict, root: dict, node: yaml.Node) -> dict | None:
    """The branch of an anyOf/oneOf a node takes: by `kind` for a discriminated union, else by shape."""
    schema = _resolve(schema, root)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if not branches:
        return schema
    want = "object" if isinstance(node, yaml.MappingNode) else "array" if isinstance(node, yaml.SequenceNode) else None
    for branch in map(lambda b: _resolve(b, root), branches):
        if want == "object" and ("properties" in branch or branch.get("type") == "object"):
            kind = next((v.value for k, v in node.value if k.value == "kind"), None)
            const = branch.get("properties", {}).get("kind", {}).get("const")
            if const is None or const == kind:
                return branch
        elif want == "array" and branch.get("type") == "array":
            return branch
    return None


def _section_docstring(schema: dict, root: dict) -> list[str]:
    """The description of the model an optional section's schema refers to, if it is one."""
    for branch in schema.get("anyOf", []):
        if "$ref" in branch:
            return [root["$defs"][branch["$ref"].removeprefix("#/$defs/")].get("description", "")]
    return []


def described_keys(node: yaml.Node, schema: dict, root: dict, pointer: str = "#"):
    """(schema pointer, key node, descriptions it may show) of every key of a document that is a
    schema property."""
    schema = _branch(schema, root, node)
    if schema is None:
        return
    if isinstance(node, yaml.MappingNode):
        props = schema.get("properties", {})
        for key, value in node.value:
            if key.value in props:
                sub = props[key.value]
                yield f"{pointer}/{key.value}", key, [sub["description"], *_section_docstring(sub, root)], \
                    sub.get("examples", [])
                yield from described_keys(value, sub, root, f"{pointer}/{key.value}")
            elif isinstance(schema.get("additionalProperties"), dict):
                yield from described_keys(value, schema["additionalProperties"], root, f"{pointer}/*")
    elif isinstance(node, yaml.SequenceNode) and isinstance(schema.get("items"), dict):
        for item in node.value:
            yield from described_keys(item, schema["items"], root, f"{pointer}/[]")


def renderings(text: str) -> tuple[str, str]:
    """A description as yaml-language-server shows it: through its toMarkdown (paragraphs, escapes),
    or verbatim (what it does for a value that matches every branch of an anyOf)."""
    markdown = re.sub(r"([^\n\r])(\r?\n)([^\n\r])", "\\1\n\n\\3", text)
    return re.sub(r"([\\`*_{}\[\]#+!])", r"\\\1", markdown), text


def test_hover_shows_the_models_descriptions(server):
    """Every property any shipped spec uses: its first occurrence in each spec hovers with the
    description from the model."""
    hovered = with_examples = 0
    missing = []
    for path in SHIPPED:
        text = path.read_text()
        root = json.loads(all_schemas()[f"{_kind_of(path)}.schema.json"])  # from the models
        uri = path.as_uri()
        server.open(uri, text)
        seen: set[str] = set()
        for pointer, key, descriptions, examples in described_keys(yaml.compose(text), root, root):
            if pointer in seen:
                continue
            seen.add(pointer)
            shown = server.hover(uri, key.start_mark.line, key.start_mark.column + 1) or ""
            hovered += 1
            if not any(r in shown for d in descriptions for r in renderings(d) if d):
                missing.append((path.name, key.start_mark.line + 1, pointer, shown[:200]))
            elif examples and "Example:" not in shown:
                missing.append((path.name, key.start_mark.line + 1, f"{pointer} (its examples)", shown[:200]))
            with_examples += bool(examples)
    assert not missing, "\n".join(f"{m[0]}:{m[1]} {m[2]}: {m[3][:70]!r}" for m in missing)
    assert hovered > 300 and with_examples > 30, (hovered, with_examples)
