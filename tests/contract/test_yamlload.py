"""The strict YAML loader: meaning is never guessed, locations are exact, hostile input is bounded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charter.diagnostics import CharterError, Code
from charter.contract.yamldump import dump
from charter.contract.yamlload import MAX_ALIASES, load_text


def codes(text: str) -> list[Code]:
    try:
        load_text(text, "t.yaml")
    except CharterError as exc:
        return [d.code for d in exc.diagnostics]
    return []


def test_plain_scalars_resolve_by_charter_rules():
    doc = load_text("a: 1\nb: -2\nc: 1e-5\nd: 2.5\ne: true\nf: null\ng: '012'\nh: text\ni: 1.0E+3\n", "t.yaml")
    assert doc.data == {"a": 1, "b": -2, "c": 1e-5, "d": 2.5, "e": True, "f": None, "g": "012", "h": "text",
                        "i": 1000.0}
    assert isinstance(doc.data["c"], float)


def test_locations_are_one_based_line_and_column():
    doc = load_text("a:\n  b: [1, 2]\n", "t.yaml")
    loc = doc.where(("a", "b", 1))
    assert (loc.line, loc.col) == (2, 10)
    assert doc.where(("a", "missing")) == doc.where(("a",))


@pytest.mark.parametrize("text, code", [
    ("a: 1\na: 2\n", Code.YAML_DUPLICATE_KEY),
    ("a: {b: 1, b: 2}\n", Code.YAML_DUPLICATE_KEY),
    ("a: No\n", Code.YAML_AMBIGUOUS_SCALAR),
    ("a: OFF\n", Code.YAML_AMBIGUOUS_SCALAR),
    ("a: True\n", Code.YAML_AMBIGUOUS_SCALAR),
    ("a: 0o17\n", Code.YAML_AMBIGUOUS_SCALAR),
    ("a: 190:20:30\n", Code.YAML_AMBIGUOUS_SCALAR),
    ("a: 2001-12-14t21:59:43.10-05:00\n", Code.YAML_AMBIGUOUS_SCALAR),
    ("a: .NaN\n", Code.YAML_AMBIGUOUS_SCALAR),
    ("a: !!str 3\n", Code.YAML_TAG),
    ("a: !custom x\n", Code.YAML_TAG),
    ("? !!python/tuple [1]\n: 2\n", Code.YAML_TAG),
    ("? [1]\n: 2\n", Code.YAML_NON_STRING_KEY),
    ("1.5: x\n", Code.YAML_NON_STRING_KEY),
    ("null: x\n", Code.YAML_NON_STRING_KEY),
    ("a: 1\n---\nb: 2\n", Code.YAML_MULTI_DOCUMENT),
    ("", Code.YAML_EMPTY),
    ("a: [\n", Code.YAML_SYNTAX),
    ("a: " + "[" * 100000, Code.YAML_TOO_DEEP),
])
def test_rejections(text, code):
    assert codes(text) == [code]


def test_aliases_allowed_up_to_the_bound():
    refs = ", ".join(["*x"] * MAX_ALIASES)
    assert load_text(f"x: &x 1\ny: [{refs}]\n").data["y"] == [1] * MAX_ALIASES
    refs = ", ".join(["*x"] * (MAX_ALIASES + 1))
    assert codes(f"x: &x 1\ny: [{refs}]\n") == [Code.YAML_ALIAS_LIMIT]


def test_billion_laughs_is_refused():
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 10):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i-1}"] * 9) + "]")
    assert codes("\n".join(lines) + "\n") == [Code.YAML_ALIAS_LIMIT]


_scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.text(max_size=20),
)
_keys = st.text(min_size=1, max_size=12)
_data = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(_keys, inner, max_size=4)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_keys, _data, min_size=1, max_size=5))
def test_dump_then_load_round_trips(data):
    assert load_text(dump(data)).data == data


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_escapes_as_a_raw_exception(text):
    try:
        load_text(text)
    except CharterError:
        pass


# --- lone surrogates (docs/security.md, "Contract hazards") ------------------------------------------
# text, (line, col) of the diagnostic: the string's own node for an escape, the character for a raw one
LONE_SURROGATES = [
    ('a: "caf\\ud800"\n', (1, 4)),                 # a double-quoted escape in a value
    ('a: "\\udfff"\n', (1, 4)),                    # a low surrogate alone
    ('a: "\\U0000D800"\n', (1, 4)),                # the long escape
    ('a: "\\ud83d\\ude00"\n', (1, 4)),             # a UTF-16 pair: two lone surrogates to YAML
    ('"k\\ud800": 1\n', (1, 1)),                   # a quoted key
    ('a:\n  - x\n  - {"b\\udc00": 2}\n', (3, 6)),  # a key deep inside a flow mapping
    ('a:\n  b: [1, "\\ud800"]\n', (2, 10)),        # an item of a flow sequence
    ("a: caf\ud800\n", (1, 7)),                    # raw, plain
    ("a: 'x\ud800'\n", (1, 6)),                    # raw, single-quoted
    ("a: |\n  x\udfff\n", (2, 4)),                 # raw, block scalar
    ("k\ud800: 1\n", (1, 2)),                      # raw key
    ("a: 1  # caf\ud800\n", (1, 12)),              # raw, in a comment
]


@pytest.mark.parametrize("text, where", LONE_SURROGATES)
def test_lone_surrogates_are_refused_where_they_are(text, where):
    with pytest.raises(CharterError) as exc:
        load_text(text, "t.yaml")
    (d,) = exc.value.diagnostics
    assert d.code is Code.YAML_SYNTAX and "surrogate" in d.message, d.render()
    assert (d.location.file, d.location.line, d.location.col) == ("t.yaml", *where), d.render()


def test_a_utf16_pair_of_escapes_names_its_one_character_escape():
    with pytest.raises(CharterError, match=r"write \\U0001F600 for U\+1F600"):
        load_text('a: "\\ud83d\\ude00"\n', "t.yaml")


def test_characters_beside_the_surrogates_stay_allowed():
    doc = load_text('a: "\\U0001F600 \\ud7ff \\ue000 \\uffff caf\\u00e9"\nb: "\\0"\n', "t.yaml")
    assert doc.data == {"a": "\U0001F600 \ud7ff \ue000 \uffff caf\u00e9", "b": "\0"}
