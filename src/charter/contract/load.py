"""Strict YAML document -> typed contract, with Pydantic errors turned into located diagnostics."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from charter.contract import messages
from charter.diagnostics import CharterError, Code, Diagnostic
from charter.contract.kinds import CONTRACT_KINDS, Contract
from charter.contract.models import LOCATED_PREFIX, SCHEMA_VERSION
from charter.contract.yamlload import Document, dotted, load_file, load_text


@dataclass(frozen=True)
class LoadedContract:
    """A validated contract and the document it came from (for `file:line` of every fact)."""

    contract: Contract
    doc: Document
    path: Path | None

    @property
    def id(self) -> str:
        return self.contract.id

    @property
    def kind(self) -> str:
        return self.contract.kind


def load_contract(path: str | Path, display: str | None = None) -> LoadedContract:
    doc = load_file(path, display)
    return LoadedContract(contract_from_document(doc), doc, Path(path))


def load_contract_text(text: str, file: str = "<string>") -> LoadedContract:
    doc = load_text(text, file)
    return LoadedContract(contract_from_document(doc), doc, None)


def contract_from_document(doc: Document) -> Contract:
    data = doc.data
    if not isinstance(data, dict):
        raise _err(Code.SPEC_SCHEMA, "", "a contract is a mapping at the top level", doc, ())
    version = data.get("charter")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        where = ("charter",) if "charter" in data else ()
        actual = "missing" if "charter" not in data else repr(version)
        raise _err(Code.SPEC_VERSION, "charter", f"expected charter: {SCHEMA_VERSION}, got {actual}", doc, where)
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in CONTRACT_KINDS:  # `kind: {}` is unhashable
        where = ("kind",) if "kind" in data else ()
        raise _err(Code.SPEC_KIND, "kind",
                   f"expected one of {', '.join(CONTRACT_KINDS)}, got {'missing' if kind is None else repr(kind)}",
                   doc, where)
    try:
        return CONTRACT_KINDS[kind].model_validate(data)
    except ValidationError as exc:
        raise refusal(exc, doc) from None


def refusal(exc: ValidationError, doc: Document, at: tuple = ()) -> CharterError:
    """Pydantic's errors as located diagnostics in the contract's words (Note [Messages for
    people] in charter.contract.messages); `at`: the path of the validated part in `doc`."""
    model = _model_named(exc.title)
    errors = [{**e, "loc": (*at, *e["loc"]), "part": e["loc"]} for e in exc.errors()]
    errors = _first_per_location(errors)
    # A misspelt key is one mistake: the required key its "did you mean" names is not also reported
    # missing.
    meant = {(*_data_path(e["loc"])[:-1], near) for e in errors if e["type"] == "extra_forbidden"
             and (near := messages.nearest_key(model, e["part"], str(e["loc"][-1]))) is not None}
    return CharterError([_diagnostic(e, doc, model) for e in errors
                         if not (e["type"] == "missing" and _data_path(e["loc"]) in meant)])


def _model_named(title: str) -> type[BaseModel] | None:
    """The contract model Pydantic validated (its error names only the class); a battery refuses
    thousands of mutants, so a class once found is kept."""
    if title in _MODELS:
        return _MODELS[title]
    todo, seen = [BaseModel], set()
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                if sub.__name__ == title and sub.__module__.startswith("charter."):
                    _MODELS[title] = sub
                    return sub
                todo.append(sub)
    return None


def _first_per_location(errors: list[dict]) -> list[dict]:
    """Pydantic reports every union branch; keep the most specific error per field."""
    by_loc: dict[tuple, dict] = {}
    for e in errors:
        loc = _data_path(e["loc"])
        best = by_loc.get(loc)
        if best is None or _rank(e) < _rank(best):
            by_loc[loc] = e
    return list(by_loc.values())


def _rank(error: dict) -> int:
    # Prefer messages about the value's meaning over "wrong branch of a union" messages.
    return 1 if error["type"] in ("string_type", "int_type", "float_type", "bool_type") else 0


def _data_path(loc: tuple) -> tuple:
    """Drop Pydantic's union-branch labels (e.g. 'int', 'str', 'function-after[...]')."""
    out = []
    for part in loc:
        if isinstance(part, str) and ("[" in part or part in _BRANCH_LABELS):
            continue
        out.append(part)
    return tuple(out)


_BRANCH_LABELS = {"int", "float", "str", "bool", "none", "constrained-str", "list[...]", "dict[...]"}


def _diagnostic(error: dict, doc: Document, model: type[BaseModel] | None = None) -> Diagnostic:
    path = _data_path(error["loc"])
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    if message.startswith(LOCATED_PREFIX):
        _, sub, message = message.split(LOCATED_PREFIX, 2)
        path = path + tuple(json.loads(sub))
    words = None
    if error["type"] in _TYPE_ERRORS:
        words = messages.wrong_type(model, error.get("part", ()), error.get("input"))
    if error["type"] == "extra_forbidden":
        message = messages.unknown_key(model, error.get("part", ()), str(error["loc"][-1]))
    elif words is not None:
        message = words
    elif error["type"] == "missing":
        message = "required key is missing"
    elif error["type"] == "literal_error":
        message = f"{message}, got {error.get('input')!r}"
    elif error["type"] in ("int_type", "float_type", "string_type", "bool_type", "dict_type", "list_type"):
        message = f"{message}, got {type(error.get('input')).__name__} {error.get('input')!r:.60}"
    return Diagnostic(Code.SPEC_SCHEMA, dotted(path), message, location=doc.where(path))


_MODELS: dict[str, type[BaseModel]] = {}

# Pydantic's "wrong type" errors, said as what the field takes (charter.contract.messages).
_TYPE_ERRORS = {"int_type", "float_type", "string_type", "bool_type", "dict_type", "list_type", "model_type",
                "model_attributes_type", "int_from_float", "int_parsing"}


def _err(code: Code, field: str, message: str, doc: Document, path: tuple) -> CharterError:
    return CharterError([Diagnostic(code, field, message, location=doc.where(path))])
