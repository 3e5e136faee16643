"""The contract expression language: what it accepts, what it rejects (and with which code),
and that it agrees with Python on its subset while never letting anything but CharterError out."""

from __future__ import annotations

import dataclasses
import enum

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charter.diagnostics import CharterError, Code, Location
from charter.contract.expr import (
    CTYPES,
    FLOAT32_MAX,
    MAX_DEPTH,
    MAX_NODES,
    MAX_TEXT,
    check_ctype,
    check_invariant,
    fits_ctype,
    parse,
    render_value,
    resolve,
)

LOC = Location("model.yaml", 3, 10)
ENV = {"a": 7, "b": -3, "c": 0, "d": 12, "x": 0.5, "y": -2.25, "flag": True, "off": False}
FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def ev(text: str, env=ENV):
    return parse(text, LOC, "f").evaluate(env)


def failure(fn, *args) -> CharterError:
    with pytest.raises(CharterError) as info:
        fn(*args)
    return info.value


def codes(err: CharterError) -> list[Code]:
    return [d.code for d in err.diagnostics]


def reference_align_up(value, alignment):
    return value + (-value) % alignment


def python_eval(text: str, env=ENV):
    """The reference: CPython on the same text (test-only; the library never evaluates code)."""
    builtins = {"min": min, "max": max, "align_up": reference_align_up}
    return eval(text, {"__builtins__": {}}, {**builtins, **env})  # noqa: S307


def same(got, want) -> bool:
    return type(got) is type(want) and repr(got) == repr(want)


# --- accepted constructs --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, want",
    [
        ("42", 42),
        ("0x10", 16),
        ("1_000", 1000),
        ("2.5", 2.5),
        ("1e3", 1000.0),
        ("a", 7),
        ("x", 0.5),
        ("a + d", 19),
        ("a - d", -5),
        ("a * b", -21),
        ("a // 2", 3),
        ("-a // 2", -4),  # floor, as Python
        ("a // b", -3),
        ("a % b", -2),  # sign of the divisor, as Python
        ("-a % 3", 2),
        ("a + x", 7.5),  # int op float is float
        ("a // x", 14.0),  # float floor division is allowed
        ("y % 1", 0.75),
        ("-a", -7),
        ("+a", 7),
        ("-x", -0.5),
        ("(a + d) * 2", 38),
        ("a + d * 2", 31),
        ("min(a, d)", 7),
        ("max(a, d, b)", 12),
        ("min(a, x, 3)", 0.5),
        ("max(1, 1.0)", 1),  # the first of equals, as Python
        ("align_up(a, 4)", 8),
        ("align_up(8, 4)", 8),
        ("align_up(0, 128)", 0),
        ("align_up(b, 4)", 0),
        ("align_up(-5, 4)", -4),
        ("align_up(262145, 128)", 262272),
        ("a == 7", True),
        ("a != 7", False),
        ("a < d", True),
        ("a <= 7", True),
        ("a > d", False),
        ("a >= 8", False),
        ("x < a", True),
        ("b < c < a < d", True),
        ("b < a < c", False),
        ("1 == 1.0", True),
        ("a > 1 and d > 1", True),
        ("a > 1 and d < 1", False),
        ("a < 1 or d > 1", True),
        ("not a > 1", False),
        ("not (a > 1 and d < 1)", True),
        ("flag", True),
        ("flag and not off", True),
        ("flag == (a > 1)", True),
        ("(a > 1) != (d > 1)", False),
        ("  a + 1  ", 8),
        ("(a +\n d)", 19),
        ("((((a))))", 7),
    ],
)
def test_accepted(text, want):
    got = ev(text)
    assert same(got, want), (text, got, want)
    assert same(got, python_eval(text))


def test_short_circuit_matches_python():
    env = {**ENV, "n": 0, "total": 10}
    assert ev("n == 0 or total % n == 0", env) is True
    assert ev("n != 0 and total // n > 1", env) is False
    assert ev("a > 100 < 1 // 0") is False  # a comparison chain stops at the first false link


def test_expr_api():
    e = parse("heads * head_dim + heads", LOC, "derived.q")
    assert e.text == "heads * head_dim + heads"
    assert e.names == frozenset({"heads", "head_dim"})
    assert e.location == LOC and e.field == "derived.q"
    assert e.evaluate({"heads": 8, "head_dim": 64}) == 520
    assert parse("1 + 2").names == frozenset()
    assert parse("a + 1") == parse("a + 1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.text = "1"  # type: ignore[misc]


def test_environment_values_are_normalised():
    class Size(enum.IntEnum):
        BIG = 4096

    got = ev("n + 1", {"n": Size.BIG})
    assert got == 4097 and type(got) is int


def test_magnitude_bounds():
    top = 2**256
    assert ev(str(top)) == top
    assert ev(f"-{top}") == -top
    assert ev("h * 2", {"h": 2**255}) == top
    assert codes(failure(ev, str(top + 1))) == [Code.EXPR_RANGE]
    assert codes(failure(ev, "h * 2 + 1", {"h": 2**255})) == [Code.EXPR_RANGE]
    assert codes(failure(ev, "h * h", {"h": 2**200})) == [Code.EXPR_RANGE]
    assert codes(failure(ev, "h", {"h": 2**300})) == [Code.EXPR_RANGE]
    assert codes(failure(ev, "align_up(h, 7)", {"h": top})) == [Code.EXPR_RANGE]  # top + 5


# --- rejections ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("a.b", "attribute access"),
        ("().__class__", "attribute access"),
        ("a[0]", "subscript"),
        ("a / b", "`/`"),
        ("a ** 2", "`**`"),
        ("a & b", "`&`"),
        ("a | b", "`|`"),
        ("a ^ b", "`^`"),
        ("~a", "`~`"),
        ("a << 1", "`<<`"),
        ("a >> 1", "`>>`"),
        ("a @ b", "`@`"),
        ("a is b", "`is`"),
        ("a is not b", "`is not`"),
        ("a in b", "`in`"),
        ("a not in b", "`not in`"),
        ("lambda: 1", "lambda"),
        ("[x for x in y]", "list comprehension"),
        ("{x for x in y}", "set comprehension"),
        ("{x: 1 for x in y}", "dict comprehension"),
        ("(x for x in y)", "generator expression"),
        ("(y := 1)", ":="),
        ("f'{a}'", "f-string"),
        ("'s'", "string literal"),
        ("b'x'", "bytes literal"),
        ("1j", "complex literal"),
        ("True", "boolean literal"),
        ("None", "None"),
        ("...", "`...`"),
        ("a if b else c", "conditional expression"),
        ("(1, 2)", "tuple"),
        ("[1]", "list"),
        ("{1: 2}", "dict"),
        ("{1}", "set"),
        ("await a", "await"),
        ("(yield)", "yield"),
        ("__import__('os')", "calling __import__"),
        ("abs(a)", "calling abs"),
        ("f(x)()", "calling an expression"),
        ("min(a)", "at least 2 arguments"),
        ("max(a)", "at least 2 arguments"),
        ("min()", "at least 2 arguments"),
        ("align_up(a)", "align_up takes 2 arguments"),
        ("align_up(a, 1, 2)", "align_up takes 2 arguments"),
        ("min(a, b=1)", "keyword argument"),
        ("min(*a, 1)", "starred argument"),
        ("min", "must be called"),
        ("align_up + 1", "must be called"),
        ("", "empty expression"),
        ("  \n ", "empty expression"),
        ("a +", "invalid syntax"),
        ("a b", "invalid syntax"),
        ("'\\d'", ""),
        ("a\u00e9", "printable ASCII"),
        ("\uff48eads", "printable ASCII"),  # NFKC would turn this into `heads`
        ("a\x00", "printable ASCII"),
        (42, "must be text"),
    ],
)
def test_syntax_rejections(text, fragment):
    err = failure(parse, text, LOC, "f")
    assert codes(err) == [Code.EXPR_SYNTAX]
    assert fragment in err.diagnostics[0].message
    assert err.diagnostics[0].field == "f"
    assert err.diagnostics[0].location.file == LOC.file


def test_size_limits():
    assert codes(failure(parse, "1" + " " * MAX_TEXT)) == [Code.EXPR_SYNTAX]
    parse("a" * MAX_TEXT)  # exactly at the limit is fine
    depth_ok = "-" * (MAX_DEPTH - 1) + "a"
    assert ev(depth_ok) == -7
    assert "levels deep" in failure(parse, "-" + depth_ok).diagnostics[0].message
    wide = "min(" + ", ".join(["1"] * MAX_NODES) + ")"
    assert len(wide) <= MAX_TEXT
    assert "nodes" in failure(parse, wide).diagnostics[0].message
    # the call and its function name are nodes too
    assert ev("min(" + ", ".join(["1"] * (MAX_NODES - 3)) + ", 0)") == 0


@pytest.mark.parametrize(
    "text, env",
    [
        ("1e400", ENV),
        ("-1e400", ENV),
        ("1e308 * 10", ENV),
        ("big * 10.0", {"big": 1e308}),
        ("h", {"h": float("nan")}),
        ("h + 1", {"h": float("inf")}),
        ("align_up(a, 0)", ENV),
        ("align_up(a, b)", ENV),
    ],
)
def test_range_rejections(text, env):
    assert codes(failure(ev, text, env)) == [Code.EXPR_RANGE]


@pytest.mark.parametrize(
    "text", ["a // c", "a % c", "a // 0", "x // 0.0", "a % 0.0", "min(a, a // (d - 12))"]
)
def test_division_by_zero(text):
    err = failure(ev, text)
    assert codes(err) == [Code.EXPR_DIVISION_BY_ZERO]
    with pytest.raises(ZeroDivisionError):
        python_eval(text)


@pytest.mark.parametrize(
    "text",
    [
        "not a",
        "not x",
        "a and flag",
        "flag or 1",
        "(a > 1) and 3",  # even where short-circuiting would skip it
        "(a < 1) and 3",
        "flag + 1",
        "-(a > 1)",
        "+flag",
        "(a > 1) * 2",
        "(a < d) < (d < a)",
        "flag < off",
        "flag == 1",
        "1 < 2 == (3 < 4)",
        "min(flag, 1)",
        "align_up(flag, 2)",
        "align_up(x, 4)",
        "align_up(8, 0.5)",
        "s + 1",
        "n + 1",
    ],
)
def test_type_rejections(text):
    env = {**ENV, "s": "12", "n": None}
    assert codes(failure(ev, text, env)) == [Code.EXPR_TYPE]


def test_unknown_names_are_all_reported_with_nearest_known_names():
    env = {"heads": 8, "head_dim": 64, "vocab": 10}
    err = failure(ev, "hedas * head_dims + zzz + hedas", env)
    assert codes(err) == [Code.EXPR_NAME] * 3
    first, second, third = (d.message for d in err.diagnostics)
    assert "`hedas`" in first and "heads" in first
    assert "`head_dims`" in second and "head_dim" in second
    assert "`zzz`" in third and "no similar name" in third
    assert "no names are defined" in failure(ev, "q", {}).diagnostics[0].message


# --- locations ----------------------------------------------------------------------------


def test_locations_shift_by_column_on_one_line():
    def where(text, loc=LOC, env=ENV):
        err = failure(lambda: parse(text, loc, "f").evaluate(env))
        return err.diagnostics[0].location

    assert where("a + x.b") == Location("model.yaml", 3, 14)
    assert where("  a.b") == Location("model.yaml", 3, 12)
    assert where("a // c") == Location("model.yaml", 3, 15)  # at the divisor
    assert where("d + nope") == Location("model.yaml", 3, 14)
    assert where("(a +\n x.b)") == LOC  # multi-line: the scalar's own position
    assert where("a.b", Location("model.yaml", 3)) == Location("model.yaml", 3)
    assert where("a.b", None) is None
    syntax = where("a + ")
    assert (syntax.file, syntax.line) == (LOC.file, LOC.line) and syntax.col >= LOC.col
    assert str(where("a.b")) == "model.yaml:3:10"


# --- resolve ------------------------------------------------------------------------------


def p(text, name=""):
    return parse(text, Location("m.yaml", 5, 3), f"derived.{name}" if name else "")


def test_resolve_in_dependency_order():
    definitions = {"r": p("q + 1"), "ok": p("r > q"), "q": p("heads * hd")}
    env = resolve(definitions, {"heads": 8, "hd": 2})
    assert env == {"heads": 8, "hd": 2, "q": 16, "r": 17, "ok": True}
    assert list(env)[:2] == ["heads", "hd"]
    assert list(env).index("q") < list(env).index("r") < list(env).index("ok")


@pytest.mark.parametrize(
    "definitions, path",
    [
        ({"a": "b + 1", "b": "a + 1"}, "a -> b -> a"),
        ({"a": "a + 1"}, "a -> a"),
        ({"z": "1", "a": "b", "b": "c * 2", "c": "z + a"}, "a -> b -> c -> a"),
    ],
)
def test_resolve_cycles(definitions, path):
    err = failure(resolve, {k: p(v) for k, v in definitions.items()}, {})
    assert codes(err) == [Code.EXPR_CYCLE]
    d = err.diagnostics[0]
    assert path in d.message
    first = path.split(" -> ")[0]
    assert d.field == first
    assert (d.location.file, d.location.line) == ("m.yaml", 5)


def test_resolve_reports_unknown_names_against_all_known_names():
    err = failure(resolve, {"q_width": p("heads * 2"), "r": p("q_widht + 1", "r")}, {"heads": 1})
    assert codes(err) == [Code.EXPR_NAME]
    assert "q_width" in err.diagnostics[0].message
    assert err.diagnostics[0].field == "derived.r"
    err = failure(resolve, {"head_dim": p("hidden // head")}, {"hidden": 1, "heads": 1})
    assert err.diagnostics[0].message == "unknown name `head`; nearest known names: heads"


def test_resolve_collects_independent_failures_only():
    definitions = {"q": p("h // 0"), "r": p("q + 1"), "s": p("1 % 0"), "t": p("h + 1")}
    err = failure(resolve, definitions, {"h": 8})
    assert codes(err) == [Code.EXPR_DIVISION_BY_ZERO] * 2
    assert [d.field for d in err.diagnostics] == ["q", "s"]


def test_resolve_long_chain_is_not_recursive():
    n = 3000
    definitions = {f"v{i}": p(f"v{i - 1} + 1") for i in range(1, n)}
    env = resolve(definitions, {"v0": 0})
    assert env[f"v{n - 1}"] == n - 1


# --- invariants ---------------------------------------------------------------------------


def invariant_message(text, env):
    err = failure(check_invariant, parse(text, LOC, "invariants[0]"), env)
    assert codes(err) == [Code.INVARIANT_FALSE]
    assert err.diagnostics[0].location == LOC
    return err.diagnostics[0].message


def test_invariant_messages_show_operands():
    env = {"vocab_rows": 248077, "vocab_ids": 248320, "heads": 8, "head_dim": 64, "q": 100}
    assert (
        invariant_message("vocab_rows >= vocab_ids", env)
        == "vocab_rows >= vocab_ids is false: 248077 >= 248320"
    )
    assert (
        invariant_message("heads * head_dim == q", env)
        == "heads * head_dim == q is false: 512 == 100 (heads = 8, head_dim = 64)"
    )
    assert invariant_message("1 <= heads < 4 < q", env) == "1 <= heads < 4 < q is false: 1 <= 8 < 4"
    assert (
        invariant_message("heads > 1 and q > 1000", env)
        == "heads > 1 and q > 1000 is false: heads = 8, q = 100"
    )
    assert invariant_message("1 > 2", env) == "1 > 2 is false: 1 > 2"
    assert invariant_message("not 1 < 2", env) == "not 1 < 2 is false"
    assert (
        invariant_message("min(0.5, heads) == 1", env)
        == "min(0.5, heads) == 1 is false: 0.5 == 1 (heads = 8)"
    )


def test_invariant_true_non_bool_and_field():
    check_invariant(parse("heads > 1"), {"heads": 2})
    err = failure(check_invariant, parse("heads", LOC, "inv"), {"heads": 2})
    assert codes(err) == [Code.EXPR_TYPE]
    err = failure(check_invariant, parse("heads // 0 > 1", LOC, "inv"), {"heads": 2}, "other")
    assert codes(err) == [Code.EXPR_DIVISION_BY_ZERO]
    assert err.diagnostics[0].field == "other"


# --- C types ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, ctype, code",
    [
        (True, "bool", None),
        (1, "bool", Code.EXPR_TYPE),
        (True, "uint8", Code.EXPR_TYPE),
        (True, "float32", Code.EXPR_TYPE),
        (0, "uint8", None),
        (255, "uint8", None),
        (256, "uint8", Code.EXPR_RANGE),
        (-1, "uint8", Code.EXPR_RANGE),
        (-128, "int8", None),
        (127, "int8", None),
        (128, "int8", Code.EXPR_RANGE),
        (-129, "int8", Code.EXPR_RANGE),
        (65535, "uint16", None),
        (-32769, "int16", Code.EXPR_RANGE),
        (2**32 - 1, "uint32", None),
        (2**31, "int32", Code.EXPR_RANGE),
        (2**64 - 1, "uint64", None),
        (2**64, "uint64", Code.EXPR_RANGE),
        (-(2**63), "int64", None),
        (2**63, "int64", Code.EXPR_RANGE),
        (3.0, "int32", Code.EXPR_TYPE),
        ("3", "int32", Code.EXPR_TYPE),
        (2**24, "float32", None),
        (2**24 + 1, "float32", Code.EXPR_RANGE),  # not exactly representable
        (2**100, "float32", None),
        (2**128, "float32", Code.EXPR_RANGE),
        (2**53 + 1, "float64", Code.EXPR_RANGE),
        (2**53, "float64", None),
        (2**1100, "float64", Code.EXPR_RANGE),
        (0.1, "float32", None),  # floats are rounded, as a C cast rounds them
        (FLOAT32_MAX, "float32", None),
        (3.5e38, "float32", Code.EXPR_RANGE),
        (3.5e38, "float64", None),
        (float("inf"), "float64", Code.EXPR_RANGE),
        (float("nan"), "float32", Code.EXPR_RANGE),
        ("x", "float64", Code.EXPR_TYPE),
        (1, "int128", Code.EXPR_TYPE),
    ],
)
def test_ctypes(value, ctype, code):
    assert fits_ctype(value, ctype) is (code is None)
    if code is None:
        check_ctype(value, ctype, LOC, "k")
    else:
        err = failure(check_ctype, value, ctype, LOC, "k")
        assert codes(err) == [code]
        assert err.diagnostics[0].location == LOC and err.diagnostics[0].field == "k"


def test_ctype_message():
    d = failure(check_ctype, 256, "uint8", LOC, "k").diagnostics[0]
    assert d.message == "256 does not fit uint8 (0..255)"
    assert (d.expected, d.actual) == ("0..255", "256")


@FAST
@given(st.integers(-(2**65), 2**65), st.sampled_from(sorted(CTYPES - {"bool"})))
def test_int_fit_matches_width(value, ctype):
    if ctype.startswith("float"):
        mantissa = 24 if ctype == "float32" else 53
        odd = abs(value) >> ((abs(value) & -abs(value)).bit_length() - 1) if value else 0
        assert fits_ctype(value, ctype) is (odd.bit_length() <= mantissa)
    else:
        bits = int(ctype.removeprefix("u").removeprefix("int"))
        if ctype.startswith("u"):
            lo, hi = 0, 2**bits - 1
        else:
            lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        assert fits_ctype(value, ctype) is (lo <= value <= hi)


def test_render_value():
    assert render_value(248320) == "248320"
    assert render_value(-5) == "-5"
    assert render_value(0.1) == "0.1"
    assert render_value(1e100) == "1e+100"
    assert render_value(-0.0) == "-0.0"
    assert render_value(True) == "true" and render_value(False) == "false"
    assert render_value(10**5000).startswith("0x")  # beyond Python's int-to-str limit


# --- agreement with Python ----------------------------------------------------------------

NUM_NAMES = ["a", "b", "c", "d", "x", "y"]
num_leaf = st.one_of(
    st.integers(-50, 50).map(str),
    st.sampled_from(["0.5", "1.5", "-2.25", "0.0", "3.0"]),
    st.sampled_from(NUM_NAMES),
)


def paren(text: str, keep: bool) -> str:
    return f"({text})" if keep else text


def num_node(inner):
    binary = st.tuples(inner, st.sampled_from(["+", "-", "*", "//", "%"]), inner, st.booleans())
    unary = st.tuples(st.sampled_from(["-", "+"]), inner, st.booleans())
    call = st.tuples(st.sampled_from(["min", "max"]), st.lists(inner, min_size=2, max_size=3))
    return st.one_of(
        binary.map(lambda t: f"{paren(t[0], t[3])} {t[1]} {paren(t[2], t[3])}"),
        unary.map(lambda t: f"{t[0]}{paren(t[1], t[2])}"),
        call.map(lambda t: f"{t[0]}({', '.join(t[1])})"),
    )


# Without parentheses the text may mean another tree than the one drawn; that is fine, since
# both sides evaluate the same text, and it exercises precedence and comparison chains.
num_expr = st.recursive(num_leaf, num_node, max_leaves=10)
comparison = st.tuples(
    num_expr,
    st.lists(
        st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), num_expr),
        min_size=1,
        max_size=3,
    ),
).map(lambda t: t[0] + "".join(f" {op} {rhs}" for op, rhs in t[1]))


def bool_node(inner):
    return st.one_of(
        st.tuples(inner, st.sampled_from(["and", "or"]), inner, st.booleans()).map(
            lambda t: f"{paren(t[0], t[3])} {t[1]} {paren(t[2], t[3])}"
        ),
        inner.map(lambda s: f"not {s}"),
        st.tuples(inner, st.sampled_from(["==", "!="]), inner).map(
            lambda t: f"({t[0]}) {t[1]} ({t[2]})"
        ),
    )


bool_expr = st.recursive(comparison, bool_node, max_leaves=4)


def agrees_with_python(text: str) -> None:
    try:
        want = python_eval(text)
    except ZeroDivisionError:
        err = failure(ev, text)
        assert codes(err) == [Code.EXPR_DIVISION_BY_ZERO], text
        return
    got = ev(text)
    assert same(got, want), (text, got, want)


@settings(max_examples=250, deadline=None)
@given(num_expr)
def test_arithmetic_agrees_with_python(text):
    agrees_with_python(text)


@settings(max_examples=150, deadline=None)
@given(bool_expr)
def test_logic_agrees_with_python(text):
    agrees_with_python(text)


TOKENS = [
    "a", "b", "c", "x", "0", "1", "7", "1.5", "0.0", "-", "+", "*", "//", "%", "/", "**",
    "(", "(", ")", ")", "<", "<=", "==", "!=", ">", ">=", "and", "or", "not",
    "min(", "max(", "align_up(", ",", ".", "[", "]", "True", "'s'",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12).map(" ".join))
def test_token_soup_never_disagrees_with_python(text):
    """Whatever we accept and evaluate, Python evaluates identically (one-directional)."""
    try:
        got = ev(text)
    except CharterError as err:
        if codes(err) == [Code.EXPR_DIVISION_BY_ZERO]:
            with pytest.raises(ZeroDivisionError):
                python_eval(text)
        return
    assert same(got, python_eval(text)), text


@FAST
@given(st.integers(-(10**6), 10**6), st.integers(1, 10**4))
def test_align_up_properties(value, alignment):
    got = ev("align_up(v, m)", {"v": value, "m": alignment})
    assert got % alignment == 0 and got >= value and got - alignment < value


# --- hostile input ------------------------------------------------------------------------


def only_charter_errors(text) -> None:
    try:
        e = parse(text, LOC, "f")
        e.evaluate({name: 1 for name in e.names})
    except CharterError as err:
        assert err.diagnostics and all(isinstance(d.code, Code) for d in err.diagnostics)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_only_raises_charter_error(text):
    only_charter_errors(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=9, max_codepoint=126), max_size=80))
def test_arbitrary_ascii_only_raises_charter_error(text):
    only_charter_errors(text)


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os')",
        "__import__('os').system('true')",
        "().__class__",
        "().__class__.__bases__[0].__subclasses__()",
        "(lambda: 0)()",
        "globals()",
        "open('/etc/passwd')",
        "exec('1')",
        "eval('1')",
        "compile('1', '', 'eval')",
        "a.__dict__",
        "(" * 10_000 + "1" + ")" * 10_000,
        "(" * 150 + "1" + ")" * 150,
        "(" * 250 + "1" + ")" * 250,
        "-" * 4000 + "1",
        "not " * 1000 + "a",
        "1+" * 2000 + "1",
        "min(" * 1000 + "1" + ", 1)" * 1000,
        "[" * 4000,
        "a" * 100_000,
        "9" * 5000,
        "9" * 4096,
        "9" * 4095 + ".",
        "0x" + "f" * 4094,
        "1e" + "9" * 4000,
        "'\\N{foo}'",
        "\x00",
        "\ud800",
        "a\\\n+ 1",
        "\\",
        "#",
        "a # comment",
        "1 if 1 else 1",
        "...",
        "*a",
        "a, b",
        "yield",
        "a = 1",
        "import os",
    ],
)
def test_hostile_strings_only_raise_charter_error(text):
    only_charter_errors(text)
