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

Note [Two parsers]: libyaml's parser (PyYAML's CParser, when PyYAML was built with it) parses a
contract about twenty times faster than PyYAML's pure-Python scanner and parser (a whole load,
composing and building included, 4-8x: bench/contract_size.py). Only its *events*
are used: composing (anchors, the tag, node and depth limits) and building (every rule above) are
the same Python code for both, so the two can differ only in the events they produce. They differ
in a few places, found by differential fuzzing (tests/contract/test_yamlload_parsers.py):

* libyaml accepts what PyYAML refuses: a tab as a separator (`a:\tb`), a comment right after a
  block scalar's indicator (`|#`), a byte order mark after the start;
* in a flow collection PyYAML ends a plain scalar at `?`, libyaml does not (`[a?b]`);
* an empty value (`? ` alone) is placed at its indicator by PyYAML, at the next token by libyaml;
* error messages and marks differ.

PyYAML's pure parser is the reference. A text holding a tab, a later byte order mark or `|#`/`>#`
goes to it directly; the libyaml path hands over to it on an empty plain scalar or a `?` in a flow
plain scalar, and on any failure at all, so every diagnostic is the pure parser's. What remains is
libyaml on the documents where both give the same events; the test fuzzes that claim and compares
both parsers on every contract, invalid contract and contract hazard the repository has.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from charter.contract.messages import yaml_problem
from charter.diagnostics import CharterError, Code, Diagnostic, Location
from charter.formats.records import gc_paused

try:  # PyYAML built with libyaml (its wheels are): the C parser, read for its events only
    from yaml.cyaml import CParser as _CParser
except ImportError:  # pragma: no cover - a PyYAML built without libyaml
    _CParser = None

MAX_ALIASES = 16
MAX_NODES = 200_000
MAX_DEPTH = 64
MAX_BYTES = 16 * 1024 * 1024
MAX_COMPOSE_DEPTH = 256  # composing recurses: refused here, long before Python's recursion limit

PARSERS = ("auto", "libyaml", "pure")

Path_ = tuple[str | int, ...]

_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)")
_HIDDEN_BREAK = re.compile("[\x85\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_DIGITS = 100
_FLOAT = re.compile(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?")
_NULL = {"null", "~", ""}
_BOOL = {"true": True, "false": False}
_YAML11_BOOL = {"yes", "no", "on", "off"}
_KEYWORDS = _YAML11_BOOL | set(_BOOL) | {"null"}  # refused in any other case (`True`, `NULL`)
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
    locations: Mapping[Path_, Location]  # a dict, but a mutant's (DroppedItem)
    source: str
    file: str
    parsed_by: str = "pure"  # which parser's events built it (Note [Two parsers])

    def where(self, path: Path_) -> Location:
        """Location of `path`, or of its closest located ancestor."""
        path = tuple(path)
        while path:
            if path in self.locations:
                return self.locations[path]
            path = path[:-1]
        return self.locations.get((), Location(self.file, 1, 1))


class DroppedItem(Mapping):
    """The locations of a document whose list at path `at` lost its item `index` (a mutation
    battery's "drop item" mutant shares the rest of the data): every later item is located where
    it is written, as a parse of the edited text would locate it, so what it resolves to is what
    it resolved to before (charter.contract.resolve._dropped)."""

    def __init__(self, base: Mapping[Path_, Location], at: Path_, index: int) -> None:
        self.base, self.at, self.index = base, at, index

    def _written(self, path: Path_) -> Path_:
        """Where `path` of this document is written in the original one."""
        n = len(self.at)
        if len(path) > n and path[:n] == self.at and path[n] >= self.index:
            return (*self.at, path[n] + 1, *path[n + 1:])
        return path

    def __getitem__(self, path: Path_) -> Location:
        return self.base[self._written(path)]

    def __contains__(self, path: object) -> bool:
        return isinstance(path, tuple) and self._written(path) in self.base

    def __iter__(self) -> Iterator[Path_]:
        n = len(self.at)
        for path in self.base:
            if len(path) > n and path[:n] == self.at and path[n] >= self.index:
                if path[n] > self.index:
                    yield (*self.at, path[n] - 1, *path[n + 1:])
            else:
                yield path

    def __len__(self) -> int:
        return sum(1 for _ in self)


def libyaml_available() -> bool:
    return _CParser is not None


def load_file(path: str | Path, display: str | None = None, *, parser: str = "auto") -> Document:
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
    return load_text(text, name, parser=parser)


def load_text(text: str, file: str = "<string>", *, parser: str = "auto") -> Document:
    """`parser`: "auto" (libyaml when present), "libyaml" or "pure"; all read a text alike
    (Note [Two parsers]), so only tests and benchmarks choose."""
    if parser not in PARSERS:
        raise ValueError(f"parser must be one of {PARSERS}, not {parser!r}")
    if parser == "libyaml" and _CParser is None:
        raise RuntimeError("this PyYAML was built without libyaml")
    with gc_paused():  # tens of thousands of nodes, none in a cycle (charter.formats.records)
        return _load_text(text, file, parser)


def _load_text(text: str, file: str, parser: str) -> Document:
    if len(text) > MAX_BYTES:
        raise _error(Code.YAML_TOO_LARGE, "", f"text is {len(text)} characters; the limit is {MAX_BYTES}", Location(file))
    hidden = _HIDDEN_BREAK.search(text)
    if hidden:
        line = text.count("\n", 0, hidden.start()) + 1
        col = hidden.start() - (text.rfind("\n", 0, hidden.start()) + 1) + 1
        raise _error(Code.YAML_SYNTAX, "", f"raw U+{ord(hidden.group()):04X} is a line break to YAML but not to editors; "
                     "write it as an escape in a double-quoted string", Location(file, line, col))
    try:
        nodes, parsed_by = _compose(text, parser)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = Location(file, mark.line + 1, mark.column + 1) if mark else Location(file)
        raise _error(Code.YAML_SYNTAX, "", yaml_problem(exc.problem, exc.context), loc)
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
    except _TooDeep as exc:
        loc = Location(file, exc.mark.line + 1, exc.mark.column + 1)
        raise _error(Code.YAML_TOO_DEEP, "", f"nesting is deeper than {MAX_DEPTH} levels", loc)
    except RecursionError:
        raise _error(Code.YAML_TOO_DEEP, "", f"nesting is deeper than {MAX_DEPTH} levels", Location(file))
    if not nodes:
        raise _error(Code.YAML_EMPTY, "", "the file holds no YAML document", Location(file, 1, 1))
    if len(nodes) > 1:
        second = nodes[1]
        raise _error(Code.YAML_MULTI_DOCUMENT, "", "a contract file holds exactly one YAML document", _loc(file, second))
    builder = _Builder(file)
    data = builder.build(nodes[0], (), 0)
    return Document(data, builder.locations, text, file, parsed_by)


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


class _TooDeep(Exception):
    def __init__(self, mark) -> None:
        self.mark = mark


class _LibyamlDiffers(Exception):
    """The libyaml path meets what the pure parser reads otherwise (Note [Two parsers])."""


class _StrictComposing:
    """Refuses explicit tags while composing (once a node exists, `!!str 3` and `3` look alike),
    and stops composing past MAX_NODES nodes (before PyYAML has built a huge tree) or
    MAX_COMPOSE_DEPTH levels (the builder refuses past MAX_DEPTH, with the field's path)."""

    nodes = 0
    depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        tag = getattr(event, "tag", None)
        if not isinstance(event, yaml.AliasEvent) and tag not in (None, "!"):
            raise _ExplicitTag(tag, event.start_mark)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _TooManyNodes(event.start_mark)
        if self.depth >= MAX_COMPOSE_DEPTH:
            raise _TooDeep(event.start_mark)
        self.depth += 1
        node = super().compose_node(parent, index)
        self.depth -= 1
        return node

    def resolve(self, kind, value, implicit) -> str:
        """The default tag of `kind`: compose_node refused every explicit tag, and the builder
        resolves plain scalars itself, so PyYAML's implicit resolvers would be wasted work."""
        return _DEFAULT_TAGS[kind]

    def descend_resolver(self, parent, index) -> None:  # no path resolvers either
        pass

    def ascend_resolver(self) -> None:
        pass


_DEFAULT_TAGS = {yaml.ScalarNode: "tag:yaml.org,2002:str", yaml.SequenceNode: "tag:yaml.org,2002:seq",
                 yaml.MappingNode: "tag:yaml.org,2002:map"}


class _PureComposer(_StrictComposing, yaml.SafeLoader):
    pass


if _CParser is not None:
    class _LibyamlComposer(_StrictComposing, yaml.composer.Composer, _CParser):
        """libyaml's events, PyYAML's composer; gives up where the pure parser reads the text
        otherwise (Note [Two parsers])."""

        flow = 0  # how many flow collections enclose the node being composed

        def __init__(self, text: str) -> None:
            _CParser.__init__(self, text)
            yaml.composer.Composer.__init__(self)

        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.ScalarEvent):
                if not event.style and (event.value == "" or (self.flow and "?" in event.value)):
                    raise _LibyamlDiffers
                return super().compose_node(parent, index)
            flow = isinstance(event, yaml.CollectionStartEvent) and bool(event.flow_style)
            self.flow += flow
            node = super().compose_node(parent, index)
            self.flow -= flow
            return node


# Texts whose events libyaml and the pure parser may disagree on (Note [Two parsers]).
_LIBYAML_DIFFERS = re.compile("\t|[|>][-+0-9]*#|(?<=.)\ufeff", re.DOTALL)


def _compose(text: str, parser: str) -> tuple[list[yaml.Node], str]:
    """The nodes of `text`'s documents and the parser that read them (Note [Two parsers])."""
    if parser != "pure" and _CParser is not None and not _LIBYAML_DIFFERS.search(text):
        try:
            return _compose_all(_LibyamlComposer(text)), "libyaml"
        except Exception:  # noqa: BLE001 - any failure at all: the pure parser says what and where
            pass
    return _compose_all(_PureComposer(text)), "pure"


def _compose_all(loader) -> list[yaml.Node]:
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
            if key_node.tag == "tag:yaml.org,2002:merge" or (key_node.value == "<<" and not key_node.style):
                raise _error(Code.YAML_MERGE_KEY, _dotted(path), "merge keys (<<) are not supported; write the keys out", key_loc)
            key = key_node.value
            _refuse_surrogates(key, _dotted(path), key_loc, "key")
            if not key_node.style:  # plain: PyYAML says None, libyaml ""
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
        if _SURROGATE.search(value):
            _refuse_surrogates(value, _dotted(path), loc)
        if node.style:  # quoted or block scalar: always a string (plain: PyYAML says None, libyaml "")
            if node.tag not in ("tag:yaml.org,2002:str",):
                raise _error(Code.YAML_TAG, _dotted(path), f"explicit tag {node.tag!r} is not allowed", loc)
            return value
        if node.tag not in _RESOLVABLE_TAGS:
            raise _error(Code.YAML_TAG, _dotted(path), f"explicit tag {node.tag!r} is not allowed", loc)
        try:
            return _resolve(value)
        except _Refused as refused:
            raise _error(refused.code, _dotted(path), refused.message, loc) from None


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
    try:
        return _resolve(value)
    except _Refused as refused:
        raise _error(refused.code, field, refused.message, loc) from None


class _Refused(Exception):
    """A plain scalar resolve_plain refuses; the caller knows its field and location."""

    def __init__(self, code: Code, message: str) -> None:
        self.code, self.message = code, message


_NUMBER_START = frozenset("+-.0123456789")  # every number, date and `.inf` starts so


def _resolve(value: str) -> Any:
    if value in _NULL:
        return None
    if value in _BOOL:
        return _BOOL[value]
    if len(value) <= 5 and value.lower() in _KEYWORDS:
        raise _Refused(Code.YAML_AMBIGUOUS_SCALAR, f"{value!r} is ambiguous (YAML 1.1 reads it as a boolean or "
                       "null); write true/false/null, or quote it for a string")
    if value[0] not in _NUMBER_START:
        return value
    if _INT.fullmatch(value):
        if len(value) > MAX_DIGITS:
            raise _Refused(Code.YAML_TOO_LARGE, f"an integer of {len(value)} digits (the limit is {MAX_DIGITS})")
        return int(value)
    if _FLOAT.fullmatch(value) and any(c in value for c in ".eE"):
        return float(value)
    for pattern, what in _SUSPECT:
        if pattern.fullmatch(value):
            raise _Refused(Code.YAML_AMBIGUOUS_SCALAR,
                           f"{value!r} uses {what}; write a plain decimal number, or quote it for a string")
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


def apply_limits(limits) -> None:
    """Use the bounds of `[tool.charter.limits]` (charter.config.Limits) instead of the defaults."""
    global MAX_BYTES, MAX_NODES, MAX_DEPTH, MAX_ALIASES
    MAX_BYTES, MAX_NODES, MAX_DEPTH, MAX_ALIASES = (limits.contract_bytes, limits.yaml_nodes, limits.yaml_depth,
                                                    limits.yaml_aliases)


def _configured() -> None:
    from charter.config import Limits, active

    if active().limits != Limits():
        apply_limits(active().limits)


_configured()
