"""Strict YAML: one document of plain data, every value located at file:line:col.

PyYAML is used only to tokenize and compose nodes; scalars are resolved here, by rules that
cannot change the author's meaning behind their back. Note [Strict YAML]:

* Duplicate keys are errors (PyYAML keeps the last one silently).
* YAML 1.1 surprises are refused, not guessed: `yes`/`no`/`on`/`off` as booleans, `012`
  octal, `0x`/`0o`/`0b` literals, `1_000` underscores, sexagesimal `1:20`, dates, `.inf`/`.nan`.
  Only `true`/`false` are booleans; quote a string that looks like something else.
* `1e-5` is a float (PyYAML's 1.1 resolver would leave it a string).
* Tags (`!!str`, `!python/...`) and merge keys (`<<`) are refused; aliases are allowed up to
  MAX_ALIASES references and the expanded tree is bounded by MAX_NODES, so an alias bomb fails in
  milliseconds.
* Exactly one document; keys are plain strings.
* Every string is Unicode text: a lone surrogate (U+D800..U+DFFF), which no UTF-8 file or artifact
  can hold, is refused in keys and values, written raw or as an escape (`"caf\\ud800"`); YAML
  escapes are code points, so a UTF-16 pair of `\\u` escapes is two lone surrogates, not one
  character (write `\\U0001F600`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from charter.diagnostics import CharterError, Code, Diagnostic, Location

MAX_ALIASES = 16
MAX_NODES = 200_000
MAX_DEPTH = 64
MAX_BYTES = 16 * 1024 * 1024

Path_ = tuple[str | int, ...]

_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)")
_HIDDEN_BREAK = re.compile("[\x85\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_DIGITS = 100
_FLOAT = re.compile(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?")
_NULL = {"null", "~", ""}
_BOOL = {"true": True, "false": False}
_YAML11_BOOL = {"yes", "no", "on", "off"}
_SUSPECT = [
    (re.compile(r"[-+]?0[0-9]+"), "a leading zero (YAML 1.1 reads it as octal)"),
    (re.compile(r"[-+]?0[xXoObB][0-9a-fA-F_]+"), "a base prefix"),
    (re.compile(r"[-+]?[0-9][0-9_]*_[0-9_]*(\.[0-9_]*)?"), "digit underscores"),
    (re.compile(r"[-+]?[0-9]+(:[0-5]?[0-9])+(\.[0-9]*)?"), "sexagesimal notation"),
    (re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?"), "a date"),
    (re.compile(r"[-+]?\.(inf|Inf|INF|nan|NaN|NAN)"), "a YAML infinity/NaN"),
]


@dataclass(frozen=True)
class Document:
    """Plain data plus where each value came from (`locations[path]`)."""

    data: Any
    locations: dict[Path_, Location]
    source: str
    file: str

    def where(self, path: Path_) -> Location:
        """Location of `path`, or of its closest located ancestor."""
        path = tuple(path)
        while path:
            if path in self.locations:
                return self.locations[path]
            path = path[:-1]
        return self.locations.get((), Location(self.file, 1, 1))


def load_file(path: str | Path, display: str | None = None) -> Document:
    name = display if display is not None else str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise _error(Code.FILE_UNREADABLE, "", f"cannot read file: {exc.strerror}", Location(name))
    if len(raw) > MAX_BYTES:
        raise _error(Code.YAML_TOO_LARGE, "", f"file is {len(raw)} bytes; the limit is {MAX_BYTES}", Location(name))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _error(Code.YAML_SYNTAX, "", f"not UTF-8: byte 0x{raw[exc.start]:02x} cannot start or continue a character",
                     Location(name, line, col))
    return load_text(text, name)


def load_text(text: str, file: str = "<string>") -> Document:
    if len(text) > MAX_BYTES:
        raise _error(Code.YAML_TOO_LARGE, "", f"text is {len(text)} characters; the limit is {MAX_BYTES}", Location(file))
    hidden = _HIDDEN_BREAK.search(text)
    if hidden:
        line = text.count("\n", 0, hidden.start()) + 1
        col = hidden.start() - (text.rfind("\n", 0, hidden.start()) + 1) + 1
        raise _error(Code.YAML_SYNTAX, "", f"raw U+{ord(hidden.group()):04X} is a line break to YAML but not to editors; "
                     "write it as an escape in a double-quoted string", Location(file, line, col))
    try:
        nodes = _compose_all(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = Location(file, mark.line + 1, mark.column + 1) if mark else Location(file)
        raise _error(Code.YAML_SYNTAX, "", f"{exc.problem or exc.context}", loc)
    except yaml.reader.ReaderError as exc:  # a raw character YAML does not allow (NUL, a lone surrogate)
        raise _unacceptable(text, file, exc)
    except yaml.YAMLError as exc:
        raise _error(Code.YAML_SYNTAX, "", str(exc).splitlines()[0], Location(file))
    except _TooManyNodes as exc:
        loc = Location(file, exc.mark.line + 1, exc.mark.column + 1)
        raise _error(Code.YAML_TOO_LARGE, "", f"the document has more than {MAX_NODES} nodes", loc)
    except _ExplicitTag as exc:
        loc = Location(file, exc.mark.line + 1, exc.mark.column + 1)
        raise _error(Code.YAML_TAG, "", f"explicit tag {exc.tag!r} is not allowed", loc)
    except RecursionError:
        raise _error(Code.YAML_TOO_DEEP, "", f"nesting is deeper than {MAX_DEPTH} levels", Location(file))
    if not nodes:
        raise _error(Code.YAML_EMPTY, "", "the file holds no YAML document", Location(file, 1, 1))
    if len(nodes) > 1:
        second = nodes[1]
        raise _error(Code.YAML_MULTI_DOCUMENT, "", "a contract file holds exactly one YAML document", _loc(file, second))
    builder = _Builder(file)
    data = builder.build(nodes[0], (), 0)
    return Document(data, builder.locations, text, file)


def _unacceptable(text: str, file: str, exc: yaml.reader.ReaderError) -> CharterError:
    """PyYAML's reader refuses the character at `exc.position` (an index into `text`): say where."""
    at = exc.position
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    what = "a lone surrogate" if 0xD800 <= exc.character <= 0xDFFF else "a non-printable character"
    return _error(Code.YAML_SYNTAX, "", f"raw U+{exc.character:04X} is {what}, which YAML does not allow",
                  Location(file, line, col))


class _ExplicitTag(Exception):
    def __init__(self, tag: str, mark) -> None:
        self.tag, self.mark = tag, mark


class _TooManyNodes(Exception):
    def __init__(self, mark) -> None:
        self.mark = mark


class _StrictComposer(yaml.SafeLoader):
    """Refuses explicit tags while composing (once a node exists, `!!str 3` and `3` look alike),
    and stops composing past MAX_NODES nodes (before PyYAML has built a huge tree)."""

    nodes = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        tag = getattr(event, "tag", None)
        if not isinstance(event, yaml.AliasEvent) and tag not in (None, "!"):
            raise _ExplicitTag(tag, event.start_mark)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _TooManyNodes(event.start_mark)
        return super().compose_node(parent, index)


def _compose_all(text: str) -> list[yaml.Node]:
    loader = _StrictComposer(text)
    try:
        nodes = []
        while loader.check_node():
            nodes.append(loader.get_node())
            if len(nodes) > 1:
                break
        return nodes
    finally:
        loader.dispose()


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.locations: dict[Path_, Location] = {}
        self.nodes = 0
        self.aliases = 0
        self.seen: set[int] = set()

    def build(self, node: yaml.Node, path: Path_, depth: int) -> Any:
        loc = _loc(self.file, node)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _error(Code.YAML_ALIAS_LIMIT if self.aliases else Code.YAML_TOO_LARGE, _dotted(path),
                         f"the document expands to more than {MAX_NODES} nodes", loc)
        if depth > MAX_DEPTH:
            raise _error(Code.YAML_TOO_DEEP, _dotted(path), f"nesting is deeper than {MAX_DEPTH} levels", loc)
        if id(node) in self.seen:  # the composer hands out one node object per anchor
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise _error(Code.YAML_ALIAS_LIMIT, _dotted(path),
                             f"more than {MAX_ALIASES} alias references", loc)
        self.seen.add(id(node))
        self.locations.setdefault(path, loc)
        if isinstance(node, yaml.MappingNode):
            self._check_tag(node, "tag:yaml.org,2002:map", path, loc)
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            self._check_tag(node, "tag:yaml.org,2002:seq", path, loc)
            return [self.build(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        return self._scalar(node, path, loc)

    def _mapping(self, node: yaml.MappingNode, path: Path_, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key_loc = _loc(self.file, key_node)
            if not isinstance(key_node, yaml.ScalarNode):
                raise _error(Code.YAML_NON_STRING_KEY, _dotted(path), "mapping keys must be plain strings", key_loc)
            if key_node.tag == "tag:yaml.org,2002:merge" or (key_node.value == "<<" and key_node.style is None):
                raise _error(Code.YAML_MERGE_KEY, _dotted(path), "merge keys (<<) are not supported; write the keys out", key_loc)
            key = key_node.value
            _refuse_surrogates(key, _dotted(path), key_loc, "key")
            if key_node.style is None:
                resolved = self._scalar(key_node, path, key_loc)
                if not isinstance(resolved, str):
                    raise _error(Code.YAML_NON_STRING_KEY, _dotted(path + (key,)),
                                 f"key {key!r} is not a string; quote it", key_loc)
            if key in out:
                first = self.locations.get(path + (key,))
                raise _error(Code.YAML_DUPLICATE_KEY, _dotted(path + (key,)),
                             f"duplicate key {key!r} (first defined at {first})", key_loc)
            out[key] = self.build(value_node, path + (key,), depth + 1)
        return out

    def _check_tag(self, node: yaml.Node, default: str, path: Path_, loc: Location) -> None:
        if node.tag != default:
            raise _error(Code.YAML_TAG, _dotted(path), f"explicit tag {node.tag!r} is not allowed", loc)

    def _scalar(self, node: yaml.ScalarNode, path: Path_, loc: Location) -> Any:
        value = node.value
        _refuse_surrogates(value, _dotted(path), loc)
        if node.style is not None:  # quoted or block scalar: always a string
            if node.tag not in ("tag:yaml.org,2002:str",):
                raise _error(Code.YAML_TAG, _dotted(path), f"explicit tag {node.tag!r} is not allowed", loc)
            return value
        if node.tag not in _RESOLVABLE_TAGS:
            raise _error(Code.YAML_TAG, _dotted(path), f"explicit tag {node.tag!r} is not allowed", loc)
        return resolve_plain(value, _dotted(path), loc)


_RESOLVABLE_TAGS = {
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:merge", "tag:yaml.org,2002:value", "tag:yaml.org,2002:yaml",
}


def _refuse_surrogates(value: str, field: str, loc: Location, what: str = "string") -> None:
    """A lone surrogate is not a character: no artifact string can equal it (Note [Strict YAML])."""
    found = _SURROGATE.search(value)
    if found is None:
        return
    at = found.start()
    hint = "write the character itself or its \\U escape"
    pair = value[at:at + 2]
    if len(pair) == 2 and "\ud800" <= pair[0] <= "\udbff" and "\udc00" <= pair[1] <= "\udfff":
        joined = pair.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        hint = f"YAML escapes are code points, not UTF-16: write \\U{ord(joined):08X} for U+{ord(joined):04X}"
    raise _error(Code.YAML_SYNTAX, field, f"lone surrogate U+{ord(found.group()):04X} in a {what} (not a Unicode "
                 f"character, so no UTF-8 text can hold it); {hint}", loc)


def resolve_plain(value: str, field: str, loc: Location) -> Any:
    """Resolve an unquoted scalar by charter's rules (Note [Strict YAML])."""
    if value in _NULL:
        return None
    if value in _BOOL:
        return _BOOL[value]
    if value.lower() in _YAML11_BOOL or value.lower() in _BOOL or value.lower() in ("null",):
        raise _error(Code.YAML_AMBIGUOUS_SCALAR, field,
                     f"{value!r} is ambiguous (YAML 1.1 reads it as a boolean or null); "
                     "write true/false/null, or quote it for a string", loc)
    if _INT.fullmatch(value):
        if len(value) > MAX_DIGITS:
            raise _error(Code.YAML_TOO_LARGE, field, f"an integer of {len(value)} digits (the limit is {MAX_DIGITS})",
                         loc)
        return int(value)
    if _FLOAT.fullmatch(value) and any(c in value for c in ".eE"):
        return float(value)
    for pattern, what in _SUSPECT:
        if pattern.fullmatch(value):
            raise _error(Code.YAML_AMBIGUOUS_SCALAR, field,
                         f"{value!r} uses {what}; write a plain decimal number, or quote it for a string", loc)
    return value


def _loc(file: str, node: yaml.Node) -> Location:
    mark = node.start_mark
    return Location(file, mark.line + 1, mark.column + 1)


def _dotted(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


dotted = _dotted


def _error(code: Code, field: str, message: str, loc: Location) -> CharterError:
    return CharterError([Diagnostic(code, field, message, location=loc)])
