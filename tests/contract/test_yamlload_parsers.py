"""libyaml and the pure parser read every text alike (Note [Two parsers] in charter.contract.yamlload):
the same data, the same location for every value, the same diagnostic (code, field, message,
location) for every refusal, on every contract, invalid contract and contract hazard the
repository has, and on fuzzed text. The libyaml path must also really run where it can."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from charter.contract import yamlload
from charter.contract.yamldump import dump
from charter.contract.yamlload import load_file, load_text
from charter.diagnostics import CharterError
from tests.conftest import ROOT
from tests.hardening.test_contract_hazards import HAZARDS


def outcome(load, *args, parser: str):
    """What a parser makes of a text: its data and every location, or its diagnostics."""
    try:
        doc = load(*args, parser=parser)
    except CharterError as exc:
        return "refused", [(d.code, d.field, d.message, str(d.location)) for d in exc.diagnostics], "pure"
    return "read", (doc.data, sorted((repr(k), str(v)) for k, v in doc.locations.items())), doc.parsed_by


def same_both_ways(load, *args) -> str:
    """Asserts both parsers agree; the parser that read the text on the libyaml path."""
    pure = outcome(load, *args, parser="pure")
    fast = outcome(load, *args, parser="libyaml")
    assert pure[2] == "pure"
    assert fast[:2] == pure[:2]
    return fast[2]


def test_the_installed_pyyaml_has_libyaml():
    assert yamlload.libyaml_available()  # PyYAML's wheels ship it; without it every load is pure


CORPUS = sorted(p.relative_to(ROOT) for d in ("specs", "tests/invalid") for p in (ROOT / d).rglob("*.yaml"))


@pytest.mark.parametrize("rel", CORPUS, ids=str)
def test_every_contract_in_the_repository(rel):
    text_has_no_divergence = not yamlload._LIBYAML_DIFFERS.search((ROOT / rel).read_text("utf-8", "replace"))
    by = same_both_ways(load_file, ROOT / rel, str(rel))
    if str(rel).startswith("specs") or (by != "pure" and text_has_no_divergence):
        assert by == "libyaml", rel  # a read contract took the fast path (refusals are the pure parser's)


@pytest.mark.parametrize("name,text", [(h[0], h[1]) for h in HAZARDS], ids=[h[0] for h in HAZARDS])
def test_every_contract_hazard(name, text, tmp_path):
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    same_both_ways(load_file, path, "hazard.yaml")


def test_a_large_frozen_style_contract_takes_the_libyaml_path():
    rows = [{"name": f"blk.{i:05d}.w", "role": f"r{i}", "shape": [i % 7 + 1, 4], "codec": "F32"} for i in range(3000)]
    text = dump({"charter": 1, "kind": "artifact", "id": "x", "metadata": {"keys": {}}, "tensors": rows})
    assert same_both_ways(load_text, text, "big.yaml") == "libyaml"


def _events(loader):
    out = []
    try:
        while loader.check_event():
            e = loader.get_event()
            if isinstance(e, yaml.NodeEvent):
                out.append((type(e).__name__, getattr(e, "value", None), getattr(e, "style", None) or None,
                            e.start_mark.line, e.start_mark.column))
    except yaml.YAMLError as exc:
        out.append(("error", str(exc)))
    return out


def raw_events(text: str, loader_class):
    loader = loader_class(text)
    try:
        return _events(loader)
    finally:
        loader.dispose()


# Texts on which libyaml alone reads or reports otherwise than PyYAML's pure parser; charter's
# libyaml path must give the pure parser's result for each (Note [Two parsers]).
DIVERGENT = [
    "a:\tb\n",                     # libyaml takes a tab as a separator; PyYAML refuses it
    "a: |#\n  x\n",                # a comment right after a block scalar's indicator
    "a: 1\n\ufeffb: 2\n",          # a byte order mark after the start
    "a: [x?y]\n",                  # PyYAML ends a flow plain scalar at `?`, libyaml does not
    "a: {k: v?w}\n",
    "? ",                          # an empty value: at its indicator (PyYAML) or the next token (libyaml)
    "a: b: c\n",                   # errors: other messages ...
    "a: [\n",
    "a: -\n",
    'a: "caf\\ud800"\n',           # ... or an error where PyYAML reads an escape (refused later, located)
    "a: ![x]\n",
]


@pytest.mark.parametrize("text", DIVERGENT)
def test_where_libyaml_differs_the_pure_parser_decides(text):
    assert raw_events(text, yaml.CSafeLoader) != raw_events(text, yaml.SafeLoader)  # a real divergence
    assert same_both_ways(load_text, text, "t.yaml") == "pure"


def test_without_libyaml_every_load_is_pure(monkeypatch):
    text = (ROOT / "specs/artifacts/smollm2-135m-instruct-q4_1.yaml").read_text("utf-8")
    fast = load_text(text, "a.yaml")
    monkeypatch.setattr(yamlload, "_CParser", None)
    assert not yamlload.libyaml_available()
    pure = load_text(text, "a.yaml")
    assert (fast.parsed_by, pure.parsed_by) == ("libyaml", "pure")
    assert (pure.data, pure.locations) == (fast.data, fast.locations)
    with pytest.raises(RuntimeError, match="without libyaml"):
        load_text(text, "a.yaml", parser="libyaml")


# --- fuzzed text: pieces of YAML syntax, and data dumped by PyYAML in varied styles ---------------
_PIECES = ["a", "b", "1", "1.5", "0x1", ":", ": ", " ", "  ", "\n", "- ", "-", "[", "]", "{", "}", ", ", ",", "\t",
           '"', "'", "#", " #", "? ", "?", "|", ">", "&x ", "*x", "!", "!!str ", "%", "\\", "é", "\U0001F600", "---",
           "...", "\r\n", "\r", "0", ".", "\ufeff", "x: ", "y: ", "\n  ", "\n    ", "\\t", "\\u00e9", "\\ud800",
           "|-\n", ">+\n", "|2\n", "%YAML 1.1\n", "~", '"\\\n', "'' ", "<<: ", "@", "`", "\u00a0", "\x01", "yes", "null"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=30).map("".join))
def test_fuzzed_syntax_reads_alike(text):
    same_both_ways(load_text, text, "t.yaml")


_scalars = st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False), st.booleans(),
                     st.none(), st.text(max_size=12), st.sampled_from(["a?b", "x: y", "- z", "#c", "yes", "", " "]))
_data = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(min_size=1, max_size=8), inner,
                                                                       max_size=4)), max_leaves=16)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8), _data, min_size=1, max_size=4),
       st.sampled_from([None, True, False]), st.sampled_from([None, "'", '"', "|"]), st.integers(2, 6),
       st.sampled_from([20, 80]))
def test_dumped_data_reads_alike(data, flow, style, indent, width):
    same_both_ways(load_text, dump(data), "t.yaml")
    text = yaml.safe_dump(data, default_flow_style=flow, default_style=style, indent=indent, width=width,
                          allow_unicode=True)
    same_both_ways(load_text, text, "t.yaml")
