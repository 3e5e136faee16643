"""The contract expression language: derived constants and invariants over model constants.

Contracts say things like `q_width: heads * head_dim`, `vocab_rows >= vocab_ids` or
`align_up(ple_rows, 128)`. Contract text is data that may come from anywhere, so it is never run
as code: we parse it with `ast.parse(mode="eval")`, keep a strict whitelist of node types, copy the
accepted tree into our own frozen nodes, and interpret those. Nothing is compiled or `eval`ed.

Note [Expression language]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Syntax (a subset of Python expressions, printable ASCII only):
  int and float literals; names; `+ - * // %`; unary `-` `+`; `== != < <= > >=` (chains allowed);
  `and` `or` `not`; parentheses; `min(a, b, ...)` and `max(a, b, ...)` (two or more arguments) and
  `align_up(x, a)` (the smallest multiple of `a` that is >= `x`; both ints, `a > 0`).
  Anything else (attributes, subscripts, `/`, `**`, bit operators, strings, `True`, lambdas,
  comprehensions, keyword or starred arguments, `:=`, calls of other names, a bare `min`) is
  EXPR_SYNTAX naming the construct. ASCII only, because Python NFKC-normalises identifiers and
  `ｈeads` would silently mean `heads`.

Values: exact Python ints, IEEE doubles, and bools. Bools only come out of comparisons and
`not`/`and`/`or`; there are no bool literals.

Types are checked for the whole tree before anything is evaluated (the kinds are "number" and
"bool"; names take the kind of their value in the environment). So arithmetic on a bool,
`not 3`, `1 and 2`, ordering bools, or `==` between a bool and a number is EXPR_TYPE even inside
a branch that short-circuiting would skip: a contract's well-formedness must not depend on data.

Evaluation follows Python exactly for well-typed expressions, including short-circuiting of
`and`/`or` and of comparison chains, so the guard idiom `n == 0 or total % n == 0` works;
int op float is float; `//` and `%` floor like Python (float operands allowed). Division or modulo
by zero is EXPR_DIVISION_BY_ZERO; NaN/inf results, and ints of magnitude above 2**256 (literals,
environment values, and every intermediate result), are EXPR_RANGE, so nothing grows unboundedly.

Hostile input is bounded before and after parsing: at most 4096 characters, at most 1024
expression nodes, expression nesting depth at most 64 (EXPR_SYNTAX); every exception `ast.parse`
can raise becomes EXPR_SYNTAX. Only CharterError ever leaves `parse`.

Locations: `parse` takes the Location of the first character of the expression text (a YAML
plain scalar's position). For single-line text a diagnostic about a sub-expression is shifted by
that node's column; multi-line text, or a location without a column, is reported as given.
"""

from __future__ import annotations

import ast
import difflib
import math
import operator
import struct
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field

from charter.diagnostics import CharterError, Code, Diagnostic, Location
from charter.language import INT_RANGES

__all__ = [
    "CTYPES",
    "FLOAT32_MAX",
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_MAGNITUDE",
    "MAX_NODES",
    "MAX_TEXT",
    "Expr",
    "Value",
    "check_ctype",
    "check_invariant",
    "fits_ctype",
    "parse",
    "render_value",
    "resolve",
]

Value = int | float | bool

MAX_TEXT = 4096
MAX_NODES = 1024
MAX_DEPTH = 64
MAX_MAGNITUDE = 2**256
FUNCTIONS = frozenset({"min", "max", "align_up"})

_NUM = "number"
_BOOL = "bool"


# --- the accepted tree ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Node:
    src: str  # this node's source text, for messages
    col: int | None  # 0-based column in Expr.text; None when the text spans lines


@dataclass(frozen=True)
class _Const(_Node):
    value: int | float


@dataclass(frozen=True)
class _Name(_Node):
    id: str


@dataclass(frozen=True)
class _Unary(_Node):
    op: str  # "-", "+", "not"
    operand: _Node


@dataclass(frozen=True)
class _Binary(_Node):
    op: str  # "+", "-", "*", "//", "%"
    left: _Node
    right: _Node


@dataclass(frozen=True)
class _Compare(_Node):
    ops: tuple[str, ...]
    operands: tuple[_Node, ...]  # one more than ops


@dataclass(frozen=True)
class _BoolOp(_Node):
    op: str  # "and", "or"
    operands: tuple[_Node, ...]


@dataclass(frozen=True)
class _Call(_Node):
    func: str  # one of FUNCTIONS
    args: tuple[_Node, ...]


def _children(node: _Node) -> tuple[_Node, ...]:
    if isinstance(node, _Unary):
        return (node.operand,)
    if isinstance(node, _Binary):
        return (node.left, node.right)
    if isinstance(node, (_Compare, _BoolOp)):
        return node.operands
    if isinstance(node, _Call):
        return node.args
    return ()


def _name_nodes(node: _Node) -> Iterator[_Name]:
    """Name nodes in source order (the tree is at most MAX_DEPTH deep, so recursion is safe)."""
    if isinstance(node, _Name):
        yield node
    for child in _children(node):
        yield from _name_nodes(child)


def _first_names(node: _Node) -> dict[str, _Name]:
    """Each name's first occurrence, in source order."""
    first: dict[str, _Name] = {}
    for n in _name_nodes(node):
        first.setdefault(n.id, n)
    return first


_BINARY: dict[type, str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Mod: "%",
}
_BINARY_FN: dict[str, Callable[[Value, Value], Value]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
}
_COMPARE: dict[type, str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_COMPARE_FN: dict[str, Callable[[Value, Value], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_UNARY: dict[type, str] = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not"}

_FORBIDDEN_OPS: dict[type, str] = {
    ast.Div: "true division `/` (use `//`)",
    ast.Pow: "power `**`",
    ast.MatMult: "matrix product `@`",
    ast.LShift: "shift `<<`",
    ast.RShift: "shift `>>`",
    ast.BitOr: "bitwise `|`",
    ast.BitXor: "bitwise `^`",
    ast.BitAnd: "bitwise `&`",
    ast.Invert: "bitwise `~`",
    ast.Is: "identity comparison `is`",
    ast.IsNot: "identity comparison `is not`",
    ast.In: "membership test `in`",
    ast.NotIn: "membership test `not in`",
}
_CONSTRUCTS: dict[type, str] = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscript",
    ast.Slice: "slice",
    ast.Lambda: "lambda",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.NamedExpr: "assignment expression `:=`",
    ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string",
    ast.IfExp: "conditional expression `x if c else y`",
    ast.Tuple: "tuple",
    ast.List: "list",
    ast.Dict: "dict",
    ast.Set: "set",
    ast.Starred: "starred expression",
    ast.Await: "`await`",
    ast.Yield: "`yield`",
    ast.YieldFrom: "`yield from`",
}


def _literal_kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean literal (bools come only from comparisons, `not`, `and`, `or`)"
    if isinstance(value, str):
        return "string literal"
    if isinstance(value, bytes):
        return "bytes literal"
    if isinstance(value, complex):
        return "complex literal"
    if value is None:
        return "`None`"
    if value is Ellipsis:
        return "`...`"
    return f"{type(value).__name__} literal"


# --- diagnostics ----------------------------------------------------------------------------


def _locate(location: Location | None, col: int | None) -> Location | None:
    if location is None or col is None or location.col <= 0:
        return location
    return Location(location.file, location.line, location.col + col)


def _error(
    code: Code,
    field: str,
    location: Location | None,
    col: int | None,
    message: str,
    expected: str | None = None,
    actual: str | None = None,
) -> CharterError:
    return CharterError(
        [Diagnostic(code, field, message, expected, actual, location=_locate(location, col))]
    )


def nearest_names(name: str, candidates: list[str], n: int = 3) -> list[str]:
    """The known names most like `name` (difflib's ratio of at least 0.6), best first."""
    return difflib.get_close_matches(name, candidates, n=n, cutoff=0.6)


def _unknown_name(
    name: str, known: object, field: str, location: Location | None, col: int | None
) -> Diagnostic:
    candidates = sorted(k for k in known if isinstance(k, str))  # type: ignore[attr-defined]
    near = nearest_names(name, candidates)
    if near:
        hint = "nearest known names: " + ", ".join(near)
    elif candidates:
        hint = f"no similar name among {len(candidates)} known names"
    else:
        hint = "no names are defined"
    return Diagnostic(
        Code.EXPR_NAME,
        field,
        f"unknown name `{name}`; {hint}",
        ", ".join(near) or None,
        name,
        location=_locate(location, col),
    )


def render_value(value: object) -> str:
    """Canonical text of a value in diagnostics: ints decimal, floats `repr`, bools true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        try:
            return str(int(value))
        except ValueError:  # beyond Python's int-to-str digit limit
            return hex(value)
    if isinstance(value, float):
        return repr(float(value))
    return repr(value)


# --- parsing --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expr:
    """A parsed, whitelisted expression; build with `parse`, never directly."""

    text: str
    location: Location | None
    field: str
    names: frozenset[str]
    _root: _Node = dc_field(repr=False, compare=False)

    def evaluate(self, env: Mapping[str, Value]) -> Value:
        """The value over `env`; every failure is a CharterError pointing into the contract."""
        return _Run(self, env, self.field).value_of_root()


def _measure(root: ast.AST) -> tuple[int, int]:
    """Expression-node count and depth, iteratively (the raw tree may be arbitrarily deep).

    Stops early once a limit is exceeded, so the work is bounded by the limits too.
    """
    count = 0
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        is_expr = isinstance(node, ast.expr)
        if is_expr:
            count += 1
            deepest = max(deepest, depth)
            if count > MAX_NODES or deepest > MAX_DEPTH:
                break
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + 1 if is_expr and isinstance(child, ast.expr) else depth))
    return count, deepest


def parse(text: str, location: Location | None = None, field: str = "") -> Expr:
    """Parse contract text into an Expr; raises CharterError (and nothing else) for any input."""

    def fail(
        code: Code, col: int | None, message: str, expected: str | None = None
    ) -> CharterError:
        return _error(code, field, location, col, message, expected)

    if not isinstance(text, str):
        raise fail(Code.EXPR_SYNTAX, None, f"an expression must be text, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise fail(
            Code.EXPR_SYNTAX,
            None,
            f"expression is {len(text)} characters long; the limit is {MAX_TEXT}",
            f"at most {MAX_TEXT} characters",
        )
    single_line = "\n" not in text and "\r" not in text
    for i, ch in enumerate(text):
        if not (ch.isascii() and (ch.isprintable() or ch in " \t\r\n")):
            raise fail(
                Code.EXPR_SYNTAX,
                i if single_line else None,
                f"character {ch!r} is not allowed; expressions are printable ASCII",
            )
    body = text.strip(" \t\r\n")
    lead = len(text) - len(text.lstrip(" \t\r\n"))
    if not body:
        raise fail(Code.EXPR_SYNTAX, None, "empty expression")

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. invalid escapes in (rejected) string literals
            tree = ast.parse(body, mode="eval")
    except SyntaxError as e:
        col = None
        if single_line and e.lineno == 1 and isinstance(e.offset, int) and e.offset >= 1:
            col = lead + min(e.offset - 1, len(body))
        raise fail(Code.EXPR_SYNTAX, col, f"invalid syntax: {e.msg}") from None
    except (RecursionError, MemoryError, ValueError, OverflowError):
        raise fail(
            Code.EXPR_SYNTAX, None, "expression is too deeply nested or too complex to parse"
        ) from None

    count, depth = _measure(tree.body)
    if count > MAX_NODES:
        raise fail(
            Code.EXPR_SYNTAX,
            None,
            f"expression has more than {MAX_NODES} nodes",
            f"at most {MAX_NODES} nodes",
        )
    if depth > MAX_DEPTH:
        raise fail(
            Code.EXPR_SYNTAX,
            None,
            f"expression is nested more than {MAX_DEPTH} levels deep",
            f"at most {MAX_DEPTH} levels",
        )

    def col_of(node: ast.AST) -> int | None:
        offset = getattr(node, "col_offset", None)
        if not single_line or not isinstance(offset, int):
            return None
        return lead + offset  # ASCII only, so ast's byte offsets are character offsets

    def forbidden(node: ast.AST, what: str) -> CharterError:
        message = f"{what} is not allowed in a contract expression"
        return fail(Code.EXPR_SYNTAX, col_of(node), message)

    def build(node: ast.AST) -> _Node:
        col = col_of(node)
        src = (ast.get_source_segment(body, node) or "") if isinstance(node, ast.expr) else ""
        if isinstance(node, ast.Constant):
            value = node.value
            if type(value) is int:
                if abs(value) > MAX_MAGNITUDE:
                    raise fail(
                        Code.EXPR_RANGE,
                        col,
                        f"integer literal exceeds 2**256 in magnitude ({len(src)} characters)",
                        "magnitude <= 2**256",
                    )
                return _Const(src, col, value)
            if type(value) is float:
                if not math.isfinite(value):
                    raise fail(Code.EXPR_RANGE, col, f"float literal `{src}` is not finite")
                return _Const(src, col, value)
            raise forbidden(node, _literal_kind(value))
        if isinstance(node, ast.Name):
            if node.id in FUNCTIONS:
                raise fail(Code.EXPR_SYNTAX, col, f"function `{node.id}` must be called")
            names.add(node.id)
            return _Name(src, col, node.id)
        if isinstance(node, ast.UnaryOp):
            op = _UNARY.get(type(node.op))
            if op is None:
                raise forbidden(node, _FORBIDDEN_OPS.get(type(node.op), type(node.op).__name__))
            return _Unary(src, col, op, build(node.operand))
        if isinstance(node, ast.BinOp):
            op = _BINARY.get(type(node.op))
            if op is None:
                raise forbidden(node, _FORBIDDEN_OPS.get(type(node.op), type(node.op).__name__))
            return _Binary(src, col, op, build(node.left), build(node.right))
        if isinstance(node, ast.Compare):
            ops = []
            for cmp in node.ops:
                if type(cmp) not in _COMPARE:
                    raise forbidden(node, _FORBIDDEN_OPS.get(type(cmp), type(cmp).__name__))
                ops.append(_COMPARE[type(cmp)])
            operands = tuple(build(o) for o in [node.left, *node.comparators])
            return _Compare(src, col, tuple(ops), operands)
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            return _BoolOp(src, col, op, tuple(build(v) for v in node.values))
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                called = node.func.id if isinstance(node.func, ast.Name) else "an expression"
                raise forbidden(node, f"calling {called} (only min, max and align_up)")
            func = node.func.id
            if node.keywords:
                raise forbidden(node.keywords[0], f"keyword argument in `{func}(...)`")
            for arg in node.args:
                if isinstance(arg, ast.Starred):
                    raise forbidden(arg, f"starred argument in `{func}(...)`")
            n = len(node.args)
            if func == "align_up" and n != 2:
                raise fail(Code.EXPR_SYNTAX, col, f"align_up takes 2 arguments (x, a), got {n}")
            if func in ("min", "max") and n < 2:
                raise fail(Code.EXPR_SYNTAX, col, f"{func} takes at least 2 arguments, got {n}")
            return _Call(src, col, func, tuple(build(a) for a in node.args))
        raise forbidden(node, _CONSTRUCTS.get(type(node), type(node).__name__))

    names: set[str] = set()
    root = build(tree.body)
    return Expr(text, location, field, frozenset(names), root)


# --- evaluation -----------------------------------------------------------------------------


def _plain(value: Value) -> Value:
    """Subclasses (IntEnum, numpy float64...) evaluate as the plain builtin type."""
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    return float(value)


class _Run:
    """One evaluation of an Expr over an environment, reporting with a given field."""

    def __init__(self, expr: Expr, env: Mapping[str, Value], field: str) -> None:
        self.expr = expr
        self.env = env
        self.field = field

    def fail(
        self,
        code: Code,
        node: _Node,
        message: str,
        expected: str | None = None,
        actual: str | None = None,
    ) -> CharterError:
        return _error(code, self.field, self.expr.location, node.col, message, expected, actual)

    def value_of_root(self) -> Value:
        root = self.expr._root
        missing = [n for n in _first_names(root).values() if n.id not in self.env]
        if missing:
            raise CharterError(
                [
                    _unknown_name(n.id, self.env.keys(), self.field, self.expr.location, n.col)
                    for n in missing
                ]
            )
        self.kind(root)
        return self.value(root)

    # Kinds are checked over the whole tree first: see Note [Expression language].

    def need(self, node: _Node, kind: str, want: str, what: str) -> None:
        if kind != want:
            article = "a number" if want == _NUM else "a bool"
            got = "a number" if kind == _NUM else "a bool"
            hint = " (there is no truthiness)" if want == _BOOL else ""
            raise self.fail(
                Code.EXPR_TYPE,
                node,
                f"{what} needs {article}, but `{node.src}` is {got}{hint}",
                article,
                got,
            )

    def kind(self, node: _Node) -> str:
        if isinstance(node, _Const):
            return _NUM
        if isinstance(node, _Name):
            value = self.env[node.id]
            if isinstance(value, bool):
                return _BOOL
            if isinstance(value, int):
                if abs(value) > MAX_MAGNITUDE:
                    raise self.fail(
                        Code.EXPR_RANGE,
                        node,
                        f"`{node.id}` exceeds 2**256 in magnitude",
                        "magnitude <= 2**256",
                        render_value(value),
                    )
                return _NUM
            if isinstance(value, float):
                if not math.isfinite(value):
                    raise self.fail(
                        Code.EXPR_RANGE,
                        node,
                        f"`{node.id}` is not finite ({render_value(value)})",
                        "a finite number",
                        render_value(value),
                    )
                return _NUM
            raise self.fail(
                Code.EXPR_TYPE,
                node,
                f"`{node.id}` is {_a(value)}; expected a number or a bool",
                "int, float or bool",
                type(value).__name__,
            )
        if isinstance(node, _Unary):
            kind = self.kind(node.operand)
            if node.op == "not":
                self.need(node.operand, kind, _BOOL, "`not`")
                return _BOOL
            self.need(node.operand, kind, _NUM, f"unary `{node.op}`")
            return _NUM
        if isinstance(node, _Binary):
            self.need(node.left, self.kind(node.left), _NUM, f"`{node.op}`")
            self.need(node.right, self.kind(node.right), _NUM, f"`{node.op}`")
            return _NUM
        if isinstance(node, _Compare):
            kinds = [self.kind(o) for o in node.operands]
            for i, op in enumerate(node.ops):
                left, right = node.operands[i], node.operands[i + 1]
                if op in ("==", "!="):
                    if kinds[i] != kinds[i + 1]:
                        self.need(right, kinds[i + 1], kinds[i], f"`{op}` with `{left.src}`")
                else:
                    self.need(left, kinds[i], _NUM, f"`{op}`")
                    self.need(right, kinds[i + 1], _NUM, f"`{op}`")
            return _BOOL
        if isinstance(node, _BoolOp):
            for operand in node.operands:
                self.need(operand, self.kind(operand), _BOOL, f"`{node.op}`")
            return _BOOL
        if isinstance(node, _Call):
            for arg in node.args:
                self.need(arg, self.kind(arg), _NUM, f"`{node.func}`")
            return _NUM
        raise AssertionError(f"unknown node {node!r}")  # pragma: no cover

    def bounded(self, node: _Node, value: Value) -> Value:
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(
                Code.EXPR_RANGE,
                node,
                f"`{node.src}` is not finite ({render_value(value)})",
                "a finite number",
                render_value(value),
            )
        if isinstance(value, int) and abs(value) > MAX_MAGNITUDE:
            raise self.fail(
                Code.EXPR_RANGE,
                node,
                f"`{node.src}` exceeds 2**256 in magnitude",
                "magnitude <= 2**256",
            )
        return value

    def value(self, node: _Node) -> Value:
        if isinstance(node, _Const):
            return node.value
        if isinstance(node, _Name):
            return _plain(self.env[node.id])
        if isinstance(node, _Unary):
            operand = self.value(node.operand)
            if node.op == "not":
                return not operand
            return self.bounded(node, -operand if node.op == "-" else +operand)
        if isinstance(node, _Binary):
            left = self.value(node.left)
            right = self.value(node.right)
            try:
                result = _BINARY_FN[node.op](left, right)
            except ZeroDivisionError:
                divisor = render_value(right)
                why = "" if node.right.src == divisor else f": `{node.right.src}` is {divisor}"
                raise self.fail(
                    Code.EXPR_DIVISION_BY_ZERO,
                    node.right,
                    f"division by zero in `{node.src}`{why}",
                    "a nonzero divisor",
                    render_value(right),
                ) from None
            except OverflowError:
                raise self.fail(
                    Code.EXPR_RANGE, node, f"`{node.src}` overflows", "a finite number"
                ) from None
            return self.bounded(node, result)
        if isinstance(node, _Compare):
            left = self.value(node.operands[0])
            for op, operand in zip(node.ops, node.operands[1:]):
                right = self.value(operand)
                if not _COMPARE_FN[op](left, right):
                    return False
                left = right
            return True
        if isinstance(node, _BoolOp):
            stop = node.op == "or"  # the value that decides `or` (True) or `and` (False)
            for operand in node.operands:
                if self.value(operand) is stop:
                    return stop
            return not stop
        if isinstance(node, _Call):
            args = [self.value(a) for a in node.args]
            if node.func == "min":
                return min(args)
            if node.func == "max":
                return max(args)
            return self.align_up(node, args)
        raise AssertionError(f"unknown node {node!r}")  # pragma: no cover

    def align_up(self, node: _Call, args: list[Value]) -> Value:
        for arg, value in zip(node.args, args):
            if type(value) is not int:
                raise self.fail(
                    Code.EXPR_TYPE,
                    arg,
                    f"align_up needs integers, but `{arg.src}` is {render_value(value)}",
                    "an int",
                    render_value(value),
                )
        x, a = args
        if a <= 0:
            raise self.fail(
                Code.EXPR_RANGE,
                node.args[1],
                f"align_up alignment must be positive, but `{node.args[1].src}` is {a}",
                "> 0",
                render_value(a),
            )
        return self.bounded(node, -(-x // a) * a)

    def explain(self) -> str:
        """The operands of a false invariant, as evaluated (re-evaluation is deterministic)."""
        root = self.expr._root
        parts: list[str] = []
        shown: set[str] = set()
        if isinstance(root, _Compare):
            left = self.value(root.operands[0])
            rendered = [render_value(left)]
            for op, operand in zip(root.ops, root.operands[1:]):
                right = self.value(operand)
                rendered += [op, render_value(right)]
                if not _COMPARE_FN[op](left, right):
                    break
                left = right
            parts.append(" ".join(rendered))
            shown = {o.id for o in root.operands if isinstance(o, _Name)}
        where = [
            f"{name} = {render_value(_plain(self.env[name]))}"
            for name in _first_names(root)
            if name not in shown
        ]
        if where:
            parts.append(f"({', '.join(where)})" if parts else ", ".join(where))
        return " ".join(parts)


def check_invariant(expr: Expr, env: Mapping[str, Value], field: str | None = None) -> None:
    """Raise INVARIANT_FALSE, showing the evaluated operands, unless `expr` is true over `env`."""
    field = expr.field if field is None else field
    run = _Run(expr, env, field)
    value = run.value_of_root()
    text = expr.text.strip()
    if not isinstance(value, bool):
        raise run.fail(
            Code.EXPR_TYPE,
            expr._root,
            f"an invariant must be true or false, but `{text}` is the number {render_value(value)}",
            "a bool",
            render_value(value),
        )
    if not value:
        detail = run.explain()
        raise CharterError(
            [
                Diagnostic(
                    Code.INVARIANT_FALSE,
                    field,
                    f"{text} is false: {detail}" if detail else f"{text} is false",
                    "true",
                    detail or "false",
                    location=expr.location,
                )
            ]
        )


# --- derived constants ----------------------------------------------------------------------


def _order(definitions: Mapping[str, Expr]) -> list[str]:
    """Definitions in dependency order (iterative DFS, stable in definition order).

    Raises EXPR_CYCLE naming the path, located at the reference that closes it.
    """
    deps = {
        name: [n for n in _first_names(expr._root) if n in definitions]
        for name, expr in definitions.items()
    }
    state: dict[str, int] = {}  # 1 = on the path, 2 = done
    order: list[str] = []
    for start in definitions:
        if state.get(start):
            continue
        path = [start]
        iters = [iter(deps[start])]
        state[start] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                done = path.pop()
                iters.pop()
                state[done] = 2
                order.append(done)
            elif state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt]
                member = definitions[cycle[0]]
                ref = _first_names(member._root)[cycle[1]]
                raise _error(
                    Code.EXPR_CYCLE,
                    member.field or cycle[0],
                    member.location,
                    ref.col,
                    "derived constants depend on each other: " + " -> ".join(cycle),
                    actual=" -> ".join(cycle),
                )
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(deps[nxt]))
    return order


def resolve(definitions: Mapping[str, Expr], base: Mapping[str, Value]) -> dict[str, Value]:
    """Evaluate derived constants over `base` and each other, in dependency order.

    Returns `base` merged with every derived value (base first, then derived in dependency
    order), ready to be the environment of invariants. All independent failures are reported
    together; a definition that depends on a failed one is not reported again.
    """
    known = set(base) | set(definitions)
    diagnostics: list[Diagnostic] = []
    for name, expr in definitions.items():
        for ref in _first_names(expr._root).values():
            if ref.id not in known:
                diagnostics.append(
                    # never suggest the name being defined: that would be a cycle
                    _unknown_name(
                        ref.id, known - {name}, expr.field or name, expr.location, ref.col
                    )
                )
    if diagnostics:
        raise CharterError(diagnostics)

    env: dict[str, Value] = dict(base)
    failed: set[str] = set()
    for name in _order(definitions):
        expr = definitions[name]
        if expr.names & failed:
            failed.add(name)
            continue
        try:
            env[name] = _Run(expr, env, expr.field or name).value_of_root()
        except CharterError as e:
            diagnostics.extend(e.diagnostics)
            failed.add(name)
    if diagnostics:
        raise CharterError(diagnostics)
    return env


# --- C types --------------------------------------------------------------------------------

CTYPES = frozenset(
    {
        "bool",
        "uint8",
        "int8",
        "uint16",
        "int16",
        "uint32",
        "int32",
        "uint64",
        "int64",
        "float32",
        "float64",
    }
)
FLOAT32_MAX: float = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]


def _exact_float(value: int, ctype: str) -> bool:
    """Whether the int is exactly representable (Python compares int and float exactly)."""
    try:
        as_double = float(value)
    except OverflowError:
        return False
    if as_double != value:
        return False
    if ctype == "float32":
        if abs(as_double) > FLOAT32_MAX:
            return False
        return struct.unpack("<f", struct.pack("<f", as_double))[0] == value
    return True


def _a(value: object) -> str:
    name = type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _ctype_problem(value: object, ctype: str) -> tuple[Code, str, str] | None:
    """(code, expected, message) when `value` does not fit `ctype`, else None.

    Note [C type fit]: a bool fits only "bool" and "bool" takes only a bool (no 0/1); an int
    type takes only an int within its range (a float, even 3.0, is EXPR_TYPE); a float type
    takes a finite float (float32: magnitude <= FLT_MAX, rounded as a C cast would round) or an
    int only when it is exactly representable, because a contract constant such as a row count
    must not change value silently on its way into a float field.
    """
    shown = render_value(value)
    if ctype not in CTYPES:
        return Code.EXPR_TYPE, "one of " + ", ".join(sorted(CTYPES)), f"unknown C type `{ctype}`"
    if ctype == "bool" or isinstance(value, bool):
        if ctype == "bool" and isinstance(value, bool):
            return None
        return Code.EXPR_TYPE, ctype, f"{shown} is {_a(value)}, not a {ctype}"
    if ctype in INT_RANGES:
        lo, hi = INT_RANGES[ctype]
        if not isinstance(value, int):
            return Code.EXPR_TYPE, ctype, f"{shown} is {_a(value)}, not an integer"
        if not lo <= value <= hi:
            return Code.EXPR_RANGE, f"{lo}..{hi}", f"{shown} does not fit {ctype} ({lo}..{hi})"
        return None
    if isinstance(value, int):
        if not _exact_float(value, ctype):
            return Code.EXPR_RANGE, ctype, f"{shown} is not exactly representable as {ctype}"
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return Code.EXPR_RANGE, f"a finite {ctype}", f"{shown} is not finite"
        if ctype == "float32" and abs(value) > FLOAT32_MAX:
            return Code.EXPR_RANGE, f"|x| <= {FLOAT32_MAX!r}", f"{shown} overflows float32"
        return None
    return Code.EXPR_TYPE, ctype, f"{shown} is {_a(value)}, not a number"


def fits_ctype(value: object, ctype: str) -> bool:
    """Whether `value` fits `ctype` (see Note [C type fit]); unknown C types fit nothing."""
    return _ctype_problem(value, ctype) is None


def check_ctype(
    value: object, ctype: str, location: Location | None = None, field: str = ""
) -> None:
    """Raise EXPR_RANGE (or EXPR_TYPE) unless `value` fits `ctype`; see Note [C type fit]."""
    problem = _ctype_problem(value, ctype)
    if problem is not None:
        code, expected, message = problem
        raise CharterError(
            [Diagnostic(code, field, message, expected, render_value(value), location=location)]
        )
