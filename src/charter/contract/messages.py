"""The contract's words for what two libraries report: Pydantic's validation errors and PyYAML's
syntax errors (Note [Messages for people]).

Note [Messages for people]: a diagnostic speaks of the contract, never of the library that
noticed the problem. A Pydantic error is reported with what the field takes, found by walking the
contract model along the error's path: an unknown key gets the nearest known key ("did you mean"),
or the keys the mapping takes; a value of the wrong type says what the field takes, in YAML terms
(a mapping, a list, an integer or an expression), the field's own description, and the field's
own example (`Field(examples=...)`, the one the JSON Schema shows an editor), or else one written
from the field's type with the value given where it fits (`shape: hidden` -> `shape: [hidden]`). A PyYAML problem ("mapping values are not allowed here") becomes what is wrong with
the line, in plain words; the location is PyYAML's own.
"""

from __future__ import annotations

import difflib
import enum
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

# ---------------------------------------------------------------------------------------------
# Pydantic


def unknown_key(model: type[BaseModel] | None, loc: tuple, key: str) -> str:
    message = "unknown key (not part of the contract language)"
    near = nearest_key(model, loc, key)
    if near is not None:
        return f"{message}; did you mean {near}?"
    known = _known_keys(model, loc)
    return f"{message}; the keys here are {', '.join(known)}" if known else message


def nearest_key(model: type[BaseModel] | None, loc: tuple, key: str) -> str | None:
    """The known key nearest to the unknown `key` at `loc`, if one is near."""
    near = difflib.get_close_matches(key, _known_keys(model, loc), n=1, cutoff=0.6)
    return near[0] if near else None


def _known_keys(model: type[BaseModel] | None, loc: tuple) -> list[str]:
    """The keys of the mapping holding `loc`'s last part."""
    if model is None:
        return []
    owners = [m for m in _annotations_at(model, loc[:-1]) if _is_model(m)]
    return sorted({name for m in owners for name in _keys(m)})


def wrong_type(model: type[BaseModel] | None, loc: tuple, given: Any) -> str | None:
    """What the field at `loc` takes, or None when the walk does not find it."""
    if model is None or not loc:
        return None
    found = _field_at(model, loc)
    if found is None:
        return None
    annotation, info = found
    what = _what(annotation)
    if what is None:
        return None
    name = str(next((p for p in reversed(loc) if isinstance(p, str) and not _is_branch(p)), ""))
    description = info.description if info is not None else None
    described = f" ({description.rstrip('.')})" if description else ""
    text = f"expected {what}{described}, got {_given(given)}"
    own = _own_example(annotation, info)
    example = _flow(own[0]) if own else _example(annotation, given)
    data = [p for p in loc if not _is_branch(p)]
    if example is not None and data and isinstance(data[-1], int):  # a list item: the list it is in
        example = f"[{example}]"
    if example is not None and name:
        text += f"; for example `{name}: {example}`"
    return text


def _own_example(annotation: Any, info: FieldInfo | None) -> tuple[Any] | None:
    """The field's example (Field(examples=...)) of the value: the field's own, or, for an item or
    entry of a list or mapping field, the example's first item or entry; None when there is none."""
    if info is None or not info.examples:
        return None
    example = info.examples[0]
    if annotation is info.annotation:
        return (example,)
    for option in _options(info.annotation):
        args = typing.get_args(option)
        if typing.get_origin(option) is dict and args and args[1] is annotation and isinstance(example, dict) and example:
            return (next(iter(example.values())),)
        if typing.get_origin(option) in (list, tuple) and args and args[0] is annotation \
                and isinstance(example, list) and example:
            return (example[0],)
    return None


def _flow(value: Any) -> str:
    """A field's own example (Field(examples=...)) as YAML flow text."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(_flow, value)) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _given(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r:.60}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return type(value).__name__


def _field_at(model: type[BaseModel], loc: tuple) -> tuple[Any, FieldInfo | None] | None:
    """(annotation, field info) of the value at `loc` (Pydantic's loc, union labels included): the
    field's own, or that of the list or mapping holding the value."""
    current: list[tuple[Any, FieldInfo | None]] = [(model, None)]
    for part in loc:
        step: list[tuple[Any, FieldInfo | None]] = []
        for annotation, info in current:
            for option in _options(annotation):
                step.extend(_descend(option, part, info))
        if not step:
            if _is_branch(part):
                continue  # a union label this walk already expanded
            return None
        current = step
    annotation, info = current[0]
    return annotation, info


def _annotations_at(model: type[BaseModel], loc: tuple) -> list[Any]:
    current = [model]
    for part in loc:
        step = [a for annotation in current for option in _options(annotation) for a, _ in _descend(option, part, None)]
        if not step and _is_branch(part):
            continue
        current = step
    return [o for a in current for o in _options(a)]


def _descend(option: Any, part: Any, info: FieldInfo | None) -> list[tuple[Any, FieldInfo | None]]:
    origin = typing.get_origin(option)
    if _is_model(option) and isinstance(part, str):
        if part == option.__name__:
            return [(option, info)]
        for name, field in option.model_fields.items():
            if part in (name, field.alias):
                return [(field.annotation, field)]
        return []
    if origin in (list, tuple) and isinstance(part, int):
        return [(typing.get_args(option)[0], info)]
    if origin is dict:
        args = typing.get_args(option)
        return [(args[1], info)] if args else []
    return []


def _options(annotation: Any) -> list[Any]:
    """The alternatives of a type: Annotated and Optional unwrapped, a Union split."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _options(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [o for a in typing.get_args(annotation) if a is not type(None) for o in _options(a)]
    return [annotation]


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _is_branch(part: Any) -> bool:
    return isinstance(part, str) and ("[" in part or part in _BRANCH_LABELS or part[:1].isupper())


_BRANCH_LABELS = {"int", "float", "str", "bool", "none", "constrained-str", "list[...]", "dict[...]"}


def _keys(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _what(annotation: Any) -> str | None:
    """The value the annotation takes, in YAML terms."""
    names = []
    for option in _options(annotation):
        origin = typing.get_origin(option)
        if _is_model(option):
            keys = [k for k, f in zip(_keys(option), option.model_fields.values()) if f.is_required()]
            names.append(f"a mapping with the key{'s' if len(keys) > 1 else ''} {', '.join(keys)}" if keys else "a mapping")
        elif origin is dict:
            names.append("a mapping")
        elif origin in (list, tuple):
            names.append("a list")
        elif origin is typing.Literal:
            names.append(" or ".join(repr(a) for a in typing.get_args(option)))
        elif isinstance(option, type) and issubclass(option, enum.Enum):
            names.append(" or ".join(repr(m.value) for m in option))
        elif option is bool:
            names.append("true or false")
        elif option is int:
            names.append("an integer")
        elif option is float:
            names.append("a number")
        elif option is str:
            names.append("a string")
        else:
            return None
    if names == ["an integer", "a string"]:
        return "an integer or an expression"
    if names == ["an integer", "a number"]:
        return "a number"
    unique = list(dict.fromkeys(names))
    return " or ".join(unique) if unique else None


def _example(annotation: Any, given: Any, depth: int = 0) -> str | None:
    """A YAML example of the annotation, holding the value given where it fits."""
    options = _options(annotation)
    scalar = isinstance(given, (str, int, float)) and not isinstance(given, bool)
    for option in options:
        if scalar and option in (str, int, float) and isinstance(given, option):
            return str(given)
    option = options[0]
    origin = typing.get_origin(option)
    if depth > 2:
        return None
    if _is_model(option):
        parts = []
        for key, field in zip(_keys(option), option.model_fields.values()):
            if field.is_required():
                value = _example(field.annotation, None, depth + 1)
                if value is None:
                    return None
                parts.append(f"{key}: {value}")
        return "{" + ", ".join(parts) + "}" if parts else None
    if origin is dict:
        args = typing.get_args(option)
        value = _example(args[1], given if scalar else None, depth + 1) if args else None
        return None if value is None else "{name: " + value + "}"
    if origin in (list, tuple):
        value = _example(typing.get_args(option)[0], given if scalar else None, depth + 1)
        return None if value is None else f"[{value}]"
    if origin is typing.Literal:
        return str(typing.get_args(option)[0])
    if isinstance(option, type) and issubclass(option, enum.Enum):
        return str(next(iter(option)).value)
    return {bool: "true", int: "1", float: "1.0", str: "name"}.get(option)


# ---------------------------------------------------------------------------------------------
# PyYAML


def yaml_problem(problem: str | None, context: str | None) -> str:
    """PyYAML's problem (and context) in plain words; the text itself when it has none here."""
    text = problem or context or "not valid YAML"
    for start, words in _YAML_WORDS:
        if text.startswith(start):
            return words
    return text


_YAML_WORDS = [
    ("mapping values are not allowed here",
     "a `key: value` inside the value of the line above: this line is indented deeper than its sibling "
     "keys, or an unquoted value holds `: ` (quote it)"),
    ("expected <block end>, but found '<block mapping start>'",
     "this line is indented unlike the keys of the mapping it belongs to (a key that has a value cannot "
     "also hold keys indented under it): indent it exactly as its sibling keys"),
    ("expected <block end>, but found '<block sequence start>'",
     "this list is indented unlike the keys around it: put it under a key that has no value of its own"),
    ("expected <block end>, but found '-'",
     "a list item (`- `) where a key of the mapping above was expected: indent it under its key"),
    ("expected <block end>",
     "the mapping or list above ends here unexpectedly: check this line's indentation, and any quote "
     "left open on the lines before it"),
    ("could not find expected ':'",
     "a line with no `key:`: the key above lacks its colon, or a value that goes on over lines is not "
     "indented under its key"),
    ("did not find expected key",
     "a key was expected here: this line is indented less than its siblings, or a list item (`- `) "
     "stands inside a mapping"),
    ("did not find expected '-' indicator",
     "a list item without `- `, or indented unlike the items above it"),
    ("expected ',' or ']'", "a flow list `[...]` is not closed before this, or two of its items lack a comma"),
    ("expected ',' or '}'", "a flow mapping `{...}` is not closed before this, or two of its entries lack a comma"),
    ("found character '\\t' that cannot start any token", "a tab: YAML indents with spaces only"),
    ("found unexpected end of stream", "the file ends inside a quoted string: close the quote"),
    ("found undefined alias", "an alias (`*name`) with no anchor (`&name`) before it"),
]
