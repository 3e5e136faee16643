"""Companion JSON files bound node by node, each node with its exact JSON type (docs/diagnostics.md).

A bundle contract's `companions:` section maps a file of the bundle (`config.json`,
`1_Pooling/config.json`, `modules.json`) to one `JsonFact` for the file's root value. This module
is the JSON-fact language but for its pydantic model (charter.bundles.json_model): the resolution
over model constants, the check of a parsed file, `charter freeze`'s binding of a real file, and the
mutants of the bundle battery.

Note [JSON facts]
~~~~~~~~~~~~~~~~~
Types are JSON's own, told apart exactly: `int` (a number without fraction or exponent), `float`
(any other number), `bool`, `string`, `null`, `list`, `object`. A bool is never an int and 1 is not
1.0; floats compare by their IEEE-754 bits (so -0.0 is not 0.0). A fact pins its node by one of:
  int, float    `value`: a literal of the type or an expression over model constants (int64, float64)
  bool          `value`
  string        `value`
  null          nothing (`value` absent or null)
  list          `value`: the list itself, compared exactly, element types included (no objects in it),
                or `items`: one fact per element,
                or `length` + `sha256`
  object        `keys`: exact JSON key -> fact, with `extra_keys: reject` (the default) or `allow`
and any node alternatively by `sha256` alone (for a list, with its `length`): the digest of the
node's canonical JSON (below). Keys are JSON key strings as they are: `model.layers.0.weight` is
one key, never a path.

Canonical JSON (the digest's input): `json.dumps(v, sort_keys=True, separators=(",", ":"),
ensure_ascii=True)` as ASCII bytes. Keys sorted, because a JSON object's keys are unordered (as
`keys:` treats them); ASCII, because a JSON string may hold a lone surrogate (`"\\ud800"`), which
no UTF-8 encoder writes. The strict parser reads an out-of-range number (`1e400`) as an infinity
in both engines; its canonical text is `Infinity`.

Order of the check (the first violation wins): a node's type, then its length (lists), then its
digest or its value; then its children: list elements by index; an object's bound keys in the
contract's order (absent: COMPANION_MISSING), then the file's keys the contract does not name, in
the file's order (COMPANION_UNEXPECTED under `extra_keys: reject`).

Field paths: `companions.<file>` then one `[...]` per step, an index as `[1]` and a key as its JSON
string, `["hidden_size"]`, so any key (with dots, brackets or quotes) reads back unambiguously:
`companions.modules.json[1]["path"]`. A file name with a bracket, quote or non-printable character
is itself written as a JSON string: `companions."odd[1].json"[0]`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from charter.diagnostics import CharterError, Code, Diagnostic, Location
from charter.floatbits import f64_bits

if TYPE_CHECKING:  # the contract model; the check and the plan import no pydantic
    from charter.bundles.json_model import JsonFact



# --- JSON itself --------------------------------------------------------------------------


def json_type(value: object) -> str:
    """The JSON type of a parsed value (a bool is checked first: Python's bool is an int)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "object"
    raise TypeError(f"{type(value).__name__} is not a parsed JSON value")


def canonical_json(value: object) -> bytes:
    """The bytes a node's sha256 is taken of (Note [JSON facts])."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def json_sha256(value: object) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


def shown(value: object) -> str:
    """A value as diagnostics print it: its JSON text."""
    return json.dumps(value, ensure_ascii=False)


_PLAIN_FILE = re.compile(r"[A-Za-z0-9_./-]+")


def json_field(file: str, path: tuple) -> str:
    """`companions.<file>` and one `[...]` per step: `[1]`, `["key"]` (Note [JSON facts])."""
    head = file if _PLAIN_FILE.fullmatch(file) else shown(file)
    return f"companions.{head}" + "".join(f"[{p}]" if isinstance(p, int) else f"[{shown(p)}]" for p in path)


# --- resolution ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedJson:
    """A JsonFact with its expressions evaluated and each node's contract location attached.
    `value` of a list is a tuple tree (nested lists as tuples)."""

    type: str
    at: Location
    value: object = None
    items: tuple["ResolvedJson", ...] | None = None
    length: int | None = None
    sha256: str | None = None
    keys: tuple[tuple[str, "ResolvedJson"], ...] | None = None
    extra_keys: str = "reject"
    extra_at: Location | None = None


class _Collector:
    """charter.contract.resolve's collector over a document's `where`: every error of the fact."""

    def __init__(self, where: Callable[[tuple], Location]) -> None:
        self.where = where
        self.diagnostics: list[Diagnostic] = []

    def at(self, *path: str | int) -> Location:
        return self.where(path)

    def attempt(self, fn, *args, default=None):
        try:
            return fn(*args)
        except CharterError as exc:
            self.diagnostics.extend(exc.diagnostics)
            return default


def resolve_json_fact(fact: JsonFact, env: dict, where: Callable[[tuple], Location], path: tuple) -> ResolvedJson:
    """`fact` (found at `path` of the contract document) over the model constants `env`; every
    expression error of the tree is reported at once (CharterError)."""
    c = _Collector(where)
    resolved = _resolve(c, fact, env, tuple(path))
    if c.diagnostics:
        raise CharterError(c.diagnostics)
    return resolved


def _resolve(c: _Collector, fact: JsonFact, env: dict, path: tuple) -> ResolvedJson:
    from charter.contract import resolve as contract_resolve  # resolve imports the contract kinds, this among them

    value = fact.value
    if fact.type in ("int", "float") and fact.sha256 is None:
        ctype = "int64" if fact.type == "int" else "float64"
        value = c.attempt(contract_resolve._value, c, value, env, path + ("value",), ctype)
        if fact.type == "float" and value is not None:
            value = float(value)  # an int expression's exact value, as the file's float holds it
    elif isinstance(value, list):
        value = _frozen(value)
    items = None if fact.items is None else tuple(
        _resolve(c, sub, env, path + ("items", i)) for i, sub in enumerate(fact.items))
    keys = None if fact.keys is None else tuple(
        (key, _resolve(c, sub, env, path + ("keys", key))) for key, sub in fact.keys.items())
    return ResolvedJson(fact.type, c.at(*path), value, items, fact.length, fact.sha256, keys, fact.extra_keys,
                        c.at(*path, "extra_keys") if fact.type == "object" else None)


def _frozen(value):
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


# --- the check ----------------------------------------------------------------------------


def check_json(file: str, data: object, fact: ResolvedJson) -> Diagnostic | None:
    """The first violation of `fact` by the parsed JSON `data` of `file`, in the check's order
    (Note [JSON facts]), or None when `data` is admitted."""
    return _Check(file).node(data, fact, ())


@dataclass(frozen=True)
class _Check:
    file: str

    def node(self, actual, fact: ResolvedJson, path: tuple) -> Diagnostic | None:
        kind = json_type(actual)
        if kind != fact.type:
            return self.mismatch(Code.COMPANION_TYPE, path, fact.at, fact.type, kind)
        if fact.length is not None and len(actual) != fact.length:
            return self.length(path, fact.at, fact.length, len(actual))
        if fact.sha256 is not None:
            digest = json_sha256(actual)
            if digest != fact.sha256:
                return self.mismatch(Code.COMPANION_DIGEST, path, fact.at, fact.sha256, digest)
            return None
        if fact.keys is not None:
            return self.object(actual, fact, path)
        if fact.items is not None:
            if len(actual) != len(fact.items):
                return self.length(path, fact.at, len(fact.items), len(actual))
            return next((d for i, (a, f) in enumerate(zip(actual, fact.items)) if (d := self.node(a, f, path + (i,)))),
                        None)
        return self.plain(actual, fact.value, fact.at, path)

    def object(self, actual: dict, fact: ResolvedJson, path: tuple) -> Diagnostic | None:
        for key, sub in fact.keys:
            if key not in actual:
                return Diagnostic(Code.COMPANION_MISSING, json_field(self.file, path + (key,)),
                                  f"{self.file} has no key {shown(key)}", sub.type, "missing", location=sub.at)
            found = self.node(actual[key], sub, path + (key,))
            if found is not None:
                return found
        if fact.extra_keys == "reject":
            bound = {key for key, _ in fact.keys}
            for key, value in actual.items():
                if key not in bound:
                    return Diagnostic(Code.COMPANION_UNEXPECTED, json_field(self.file, path + (key,)),
                                      f"key {shown(key)} ({json_type(value)}) is not in the contract "
                                      "(extra_keys: reject)", "absent", "present", location=fact.extra_at)
        return None

    def plain(self, actual, expected, at: Location, path: tuple) -> Diagnostic | None:
        """`actual` against a plain value of the contract: exact type, length, bits."""
        kind = json_type(actual)
        if kind != json_type(expected):
            return self.mismatch(Code.COMPANION_TYPE, path, at, json_type(expected), kind)
        if kind == "list":
            if len(actual) != len(expected):
                return self.length(path, at, len(expected), len(actual))
            return next((d for i, (a, e) in enumerate(zip(actual, expected)) if (d := self.plain(a, e, at, path + (i,)))),
                        None)
        same = f64_bits(actual) == f64_bits(expected) if kind == "float" else actual == expected
        return None if same else self.mismatch(Code.COMPANION_VALUE, path, at, shown(expected), shown(actual))

    def mismatch(self, code: Code, path: tuple, at: Location, expected: str, actual: str) -> Diagnostic:
        return Diagnostic(code, json_field(self.file, path), f"expected {expected}, got {actual}", expected, actual,
                          location=at)

    def length(self, path: tuple, at: Location, expected: int, actual: int) -> Diagnostic:
        return Diagnostic(Code.COMPANION_LENGTH, json_field(self.file, path),
                          f"expected {expected} elements, got {actual}", str(expected), str(actual), location=at)


# --- freeze -------------------------------------------------------------------------------

MAX_LIST_VALUES = 64  # longer lists are pinned by length + sha256
MAX_OBJECT_KEYS = 256  # objects with more keys (a tokenizer.json vocabulary) by sha256
MAX_STRING_CHARS = 4096  # longer strings (a chat template) by sha256
MAX_FREEZE_DEPTH = 16  # deeper nodes by sha256: the contract stays well inside YAML's nesting limit
INT64 = (-(2**63), 2**63 - 1)
_SURROGATE = re.compile("[\ud800-\udfff]")


def freeze_json(value: object, *, names: dict[tuple, str] | None = None) -> dict:
    """The YAML-ready JsonFact binding every node of the parsed JSON `value` with its exact type.
    `names` maps a JSON path to the model constant to write instead of that int or float literal.
    Lists of up to MAX_LIST_VALUES elements are bound by value when they hold plain, writable
    values only, else element by element; longer lists, large objects, long strings, ints beyond
    int64 and anything a YAML contract cannot hold (a lone surrogate, an infinity) by sha256."""
    return _freeze(value, (), names or {})


def _freeze(value, path: tuple, names: dict[tuple, str]) -> dict:
    kind = json_type(value)
    if path in names:
        if kind not in ("int", "float"):
            raise ValueError(f"names binds {path} to {names[path]!r}, but that node is a {kind}, not a number")
        return {"type": kind, "value": names[path]}
    if _by_digest(value, kind, len(path)):
        return {"type": kind, **({"length": len(value)} if kind == "list" else {}), "sha256": json_sha256(value)}
    if kind == "null":
        return {"type": "null"}
    if kind == "object":
        return {"type": "object", "keys": {k: _freeze(v, path + (k,), names) for k, v in value.items()}}
    if kind == "list":
        named_inside = any(p[:len(path)] == path and len(p) > len(path) for p in names)
        if not named_inside and all(_plain(v) for v in value):
            return {"type": "list", "value": copy.deepcopy(list(value))}
        return {"type": "list", "items": [_freeze(v, path + (i,), names) for i, v in enumerate(value)]}
    return {"type": kind, "value": value}


def _by_digest(value, kind: str, depth: int) -> bool:
    if kind in ("list", "object") and depth >= MAX_FREEZE_DEPTH:
        return True
    if kind == "list":
        return len(value) > MAX_LIST_VALUES
    if kind == "object":
        return len(value) > MAX_OBJECT_KEYS or any(_SURROGATE.search(k) for k in value)
    return not _writable(value)


def _writable(value) -> bool:
    """A scalar a YAML contract can state as a literal."""
    if isinstance(value, str):
        return len(value) <= MAX_STRING_CHARS and not _SURROGATE.search(value)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return INT64[0] <= value <= INT64[1]
    return True


def _plain(value, depth: int = 0) -> bool:
    """Fit to be an element of a list pinned by value: no objects, every scalar writable."""
    if isinstance(value, dict):
        return False
    if isinstance(value, list):
        return depth < 4 and len(value) <= MAX_LIST_VALUES and all(_plain(v, depth + 1) for v in value)
    return _writable(value)


# --- mutants ------------------------------------------------------------------------------


@dataclass(frozen=True)
class JsonMutant:
    """One edit of a companion file: its bytes (as json.dumps writes them) and the diagnostic that
    must reject it, or, for an edit the fact provably cannot see, the reason it is equivalent."""

    name: str
    data: bytes
    code: Code | None
    field: str | None
    equivalent: str | None = None


def json_mutants(data: object, fact: ResolvedJson, *, file: str) -> Iterator[JsonMutant]:
    """Every edit each bound node's JSON type allows, with its expected (code, field).

    The prediction is the first difference between `data` and the mutant in the check's order,
    computed from the two documents (never by the checker): a fact that admits `data` must reject
    each mutant exactly there. So `data` must be admitted by `fact` first."""
    first = check_json(file, data, fact)
    if first is not None:
        raise ValueError(f"the fact does not admit {file}: {first.render()}")
    for op, path, edited, node_fact in _edits(data, fact, ()):
        name = f"{json_field(file, path)}:{op}"
        mutated = _replaced(data, path, edited)
        text = json.dumps(mutated).encode("ascii")
        if canonical_json(edited) == canonical_json(_at(data, path)):
            yield JsonMutant(name, text, None, None, _UNCHANGED.get(op, "the edit changes nothing"))
        elif op == "add-key" and node_fact.extra_keys == "allow":
            yield JsonMutant(name, text, None, None, "extra_keys: allow admits a key the contract does not name")
        else:
            difference = _difference(fact, data, mutated, ())
            if difference is None:
                raise RuntimeError(f"{file}: no prediction for mutant {name}")  # a bug of this module
            code, where = difference
            yield JsonMutant(name, text, code, json_field(file, where))


# Why an edit that leaves the node as it was is equivalent, by operator.
_UNCHANGED = {
    "zero": "the value is already 0",
    "case": "the string has no cased characters",
    "empty": "the string is already empty",
    "swap": "the list has no two distinct elements",
}


def _at(data, path: tuple):
    for step in path:
        data = data[step]
    return data


def _edits(value, fact: ResolvedJson | None, path: tuple) -> Iterator[tuple[str, tuple, object, object]]:
    """(operator, path, new node, the node's fact) for every edit of the node at `path` and of the nodes bound under it;
    `fact` None: an element of a list pinned by value."""
    for op, edited in _node_edits(value, fact):
        yield op, path, edited, fact
    if fact is not None and fact.sha256 is not None:
        return  # the node's children are bound by its digest only
    if isinstance(value, dict):
        for key, sub in fact.keys:
            yield from _edits(value[key], sub, path + (key,))
    elif isinstance(value, list):
        subs = fact.items if fact is not None and fact.items is not None else [None] * len(value)
        for i, (element, sub) in enumerate(zip(value, subs)):
            yield from _edits(element, sub, path + (i,))


def _node_edits(value, fact: ResolvedJson | None) -> Iterator[tuple[str, object]]:
    kind = json_type(value)
    if kind == "int":
        yield "plus-one", value + 1
        yield "minus-one", value - 1
        yield "zero", 0
        yield "to-float", float(value) if abs(value) < 2**1023 else 1.0
        yield "to-string", str(value) if abs(value) < 10**100 else "0"
    elif kind == "float":
        up = math.nextafter(value, math.inf)
        yield "next", up if math.isfinite(up) and math.isfinite(value) else math.nextafter(value, -math.inf)
        if math.isfinite(value) and value.is_integer():
            yield "to-int", int(value)
    elif kind == "bool":
        yield "flip", not value
        yield "to-int", int(value)
    elif kind == "string":
        yield "edit", (chr(ord(value[0]) ^ 1) + value[1:]) if value else "x"
        yield "case", value.swapcase()
        yield "empty", ""
    elif kind == "null":
        yield "to-zero", 0
        yield "to-empty-string", ""
        yield "to-false", False
    elif kind == "list":
        yield from _list_edits(value)
    else:
        yield from _object_edits(value, fact)


def _list_edits(value: list) -> Iterator[tuple[str, object]]:
    if value:
        yield "drop", value[:-1]
        yield "duplicate", value[:1] + value
    canon = [canonical_json(v) for v in value]
    pair = next(((i, j) for i in range(len(value)) for j in range(i + 1, len(value)) if canon[i] != canon[j]), None)
    if pair is not None:
        i, j = pair
        swapped = list(value)
        swapped[i], swapped[j] = value[j], value[i]
        yield "swap", swapped
    elif len(value) >= 2:
        yield "swap", list(value)  # no two distinct elements: declared equivalent
    yield "append", value + [0]


def _object_edits(value: dict, fact: ResolvedJson | None) -> Iterator[tuple[str, object]]:
    bound = [key for key, _ in fact.keys] if fact.keys is not None else list(value)[:1]
    for key in bound:
        yield f"drop-key[{shown(key)}]", {k: v for k, v in value.items() if k != key}
    for key in bound:
        renamed = _fresh(key + "_renamed", value)
        yield f"rename-key[{shown(key)}]", {(renamed if k == key else k): v for k, v in value.items()}
    yield "add-key", {**value, _fresh("charter_unknown_key", value): 0}


def _fresh(name: str, taken: dict) -> str:
    while name in taken:
        name += "_"
    return name


def _replaced(data, path: tuple, new):
    """`data` with the node at `path` replaced by `new` (containers along the path copied)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    out = dict(data) if isinstance(data, dict) else list(data)
    out[head] = _replaced(data[head], rest, new)
    return out


def _difference(fact: ResolvedJson | None, before, after, path: tuple) -> tuple[Code, tuple] | None:
    """Where a checker must first see that `after` differs from the admitted `before` under `fact`
    (None: an element of a list pinned by value, so compared exactly)."""
    if json_type(before) != json_type(after):
        return Code.COMPANION_TYPE, path
    if fact is not None and fact.sha256 is not None:
        if fact.length is not None and len(before) != len(after):
            return Code.COMPANION_LENGTH, path
        return (Code.COMPANION_DIGEST, path) if canonical_json(before) != canonical_json(after) else None
    if isinstance(before, list):
        if len(before) != len(after):
            return Code.COMPANION_LENGTH, path
        subs = fact.items if fact is not None and fact.items is not None else [None] * len(before)
        return next((d for i, sub in enumerate(subs) if (d := _difference(sub, before[i], after[i], path + (i,)))), None)
    if isinstance(before, dict):
        for key, sub in fact.keys:
            if key not in after:
                return Code.COMPANION_MISSING, path + (key,)
            found = _difference(sub, before[key], after[key], path + (key,))
            if found is not None:
                return found
        if fact.extra_keys == "reject":
            bound = {key for key, _ in fact.keys}
            extra = next((k for k in after if k not in bound), None)
            return None if extra is None else (Code.COMPANION_UNEXPECTED, path + (extra,))
        return None
    same = f64_bits(before) == f64_bits(after) if isinstance(before, float) else before == after
    return None if same else (Code.COMPANION_VALUE, path)
