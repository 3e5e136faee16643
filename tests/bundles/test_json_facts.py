"""JSON facts of companion files: the model, resolution, the check, freeze and the mutants, on the
real companion files of all-MiniLM-L6-v2 (tests/bundles/data/minilm) and on hypothesis' JSON."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from charter.admission.runtime import parse_companion
from charter.bundles.json_facts import (
    ResolvedJson,
    canonical_json,
    check_json,
    freeze_json,
    json_field,
    json_mutants,
    resolve_json_fact,
)
from charter.bundles.json_model import JsonFact
from charter.contract import yamldump
from charter.contract.load import refusal
from charter.contract.yamlload import load_text
from charter.diagnostics import CharterError, Code, Stage

MINILM = Path(__file__).parent / "data" / "minilm"
FILES = sorted(str(p.relative_to(MINILM)) for p in MINILM.rglob("*.json"))
ENV = {"hidden": 384, "layers": 6, "eps": 1e-12}


def contract(file: str, fact: dict) -> str:
    return yamldump.dump({"companions": {file: fact}})


def resolved(file: str, fact: dict | str, env: dict | None = None) -> ResolvedJson:
    """A fact as a contract states it: written as YAML, loaded strictly, validated, resolved."""
    doc = load_text(fact if isinstance(fact, str) else contract(file, fact), "bundle.yaml")
    try:
        model = JsonFact.model_validate(doc.data["companions"][file])
    except ValidationError as exc:
        raise refusal(exc, doc, ("companions", file)) from None
    return resolve_json_fact(model, env or ENV, doc.where, ("companions", file))


def refused(file: str, text: str) -> list:
    with pytest.raises(CharterError) as info:
        resolved(file, text)
    return info.value.diagnostics


def real(file: str):
    return parse_companion((MINILM / file).read_bytes())


def rejects(file: str, data, fact: ResolvedJson, mutants) -> tuple[int, int, list]:
    """(rejected as predicted, not equivalent, failures) of `mutants`, each parsed as admission does."""
    rejected, failures, counted = 0, [], 0
    for m in mutants:
        found = check_json(file, parse_companion(m.data), fact)
        if m.equivalent is not None:
            if found is not None:
                failures.append((m.name, "declared equivalent but rejected", found.render()))
            continue
        counted += 1
        if found is not None and (found.code, found.field) == (m.code, m.field):
            rejected += 1
        else:
            failures.append((m.name, m.code, m.field, found and found.render()))
    return rejected, counted, failures


# --- the real MiniLM companion files ---------------------------------------------------------


def test_the_real_files_are_the_pinned_ones():
    readme = (MINILM / "README.md").read_text()
    for file in FILES:
        assert hashlib.sha256((MINILM / file).read_bytes()).hexdigest() in readme, file
    assert len(FILES) == 7


@pytest.mark.parametrize("file", FILES)
def test_frozen_real_file_admits_and_every_mutant_is_rejected_where_predicted(file):
    data = real(file)
    fact = resolved(file, freeze_json(data))
    assert check_json(file, data, fact) is None
    mutants = list(json_mutants(data, fact, file=file))
    rejected, counted, failures = rejects(file, data, fact, mutants)
    assert not failures
    assert rejected == counted > 10
    assert {m.code for m in mutants if m.code} >= {Code.COMPANION_VALUE, Code.COMPANION_MISSING,
                                                   Code.COMPANION_UNEXPECTED}


def test_minilm_mutant_counts():
    """The battery's figures on the real files (N/N each; equivalents are unchanged documents)."""
    counts = {}
    for file in FILES:
        data = real(file)
        fact = resolved(file, freeze_json(data))
        mutants = list(json_mutants(data, fact, file=file))
        rejected, counted, failures = rejects(file, data, fact, mutants)
        assert not failures
        counts[file] = (rejected, counted, sum(m.equivalent is not None for m in mutants))
    assert counts == {
        "1_Pooling/config.json": (24, 24, 0),
        "config.json": (108, 108, 2),
        "config_sentence_transformers.json": (16, 16, 3),
        "modules.json": (67, 67, 6),
        "sentence_bert_config.json": (12, 12, 0),
        "special_tokens_map.json": (26, 26, 0),
        "tokenizer_config.json": (65, 65, 0),
    }


def test_frozen_config_binds_exact_types():
    frozen = freeze_json(real("config.json"))
    keys = frozen["keys"]
    assert keys["hidden_size"] == {"type": "int", "value": 384}
    assert keys["layer_norm_eps"] == {"type": "float", "value": 1e-12}
    assert keys["use_cache"] == {"type": "bool", "value": True}
    assert keys["architectures"] == {"type": "list", "value": ["BertModel"]}
    assert freeze_json(real("tokenizer_config.json"))["keys"]["strip_accents"] == {"type": "null"}
    modules = freeze_json(real("modules.json"))
    assert modules["type"] == "list" and len(modules["items"]) == 3  # objects in a list: one fact each
    assert modules["items"][1]["keys"]["path"] == {"type": "string", "value": "1_Pooling"}


def test_the_examples_of_the_brief():
    data = real("modules.json")
    fact = resolved("modules.json", freeze_json(data))
    data[1]["path"] = "2_Pooling"
    found = check_json("modules.json", data, fact)
    assert (found.code, found.field) == (Code.COMPANION_VALUE, 'companions.modules.json[1]["path"]')
    assert (found.expected, found.actual) == ('"1_Pooling"', '"2_Pooling"')
    assert found.stage is Stage.COMPANIONS


def test_config_bound_to_model_constants():
    data = real("config.json")
    names = {("hidden_size",): "hidden", ("num_hidden_layers",): "layers", ("layer_norm_eps",): "eps"}
    frozen = freeze_json(data, names=names)
    assert frozen["keys"]["hidden_size"] == {"type": "int", "value": "hidden"}
    fact = resolved("config.json", frozen)
    assert check_json("config.json", data, fact) is None
    other = resolved("config.json", frozen, {**ENV, "hidden": 512})
    found = check_json("config.json", data, other)
    assert (found.code, found.field, found.expected, found.actual) == (
        Code.COMPANION_VALUE, 'companions.config.json["hidden_size"]', "512", "384")
    assert str(found.location).startswith("bundle.yaml:") and found.location.line > 1


# --- hand-written negatives, one per code ----------------------------------------------------

CONFIG = """\
companions:
  config.json:
    type: object
    keys:
      hidden_size: {type: int, value: hidden * 1}
      layer_norm_eps: {type: float, value: 1.0e-12}
      architectures: {type: list, value: [BertModel]}
      pad: {type: "null"}
      vocab: {type: list, length: 2, sha256: %s}
"""
VOCAB = ["a", "b"]
GOOD = {"hidden_size": 384, "layer_norm_eps": 1e-12, "architectures": ["BertModel"], "pad": None, "vocab": VOCAB}


def config_fact() -> ResolvedJson:
    return resolved("config.json", CONFIG % hashlib.sha256(canonical_json(VOCAB)).hexdigest())


@pytest.mark.parametrize("change, code, field, line", [
    ({"hidden_size": 384.0}, Code.COMPANION_TYPE, '["hidden_size"]', 5),
    ({"hidden_size": True}, Code.COMPANION_TYPE, '["hidden_size"]', 5),
    ({"hidden_size": 385}, Code.COMPANION_VALUE, '["hidden_size"]', 5),
    ({"layer_norm_eps": 1e-11}, Code.COMPANION_VALUE, '["layer_norm_eps"]', 6),
    ({"architectures": ["BertModel", "X"]}, Code.COMPANION_LENGTH, '["architectures"]', 7),
    ({"architectures": ["bertModel"]}, Code.COMPANION_VALUE, '["architectures"][0]', 7),
    ({"architectures": [1]}, Code.COMPANION_TYPE, '["architectures"][0]', 7),
    ({"pad": 0}, Code.COMPANION_TYPE, '["pad"]', 8),
    ({"pad": False}, Code.COMPANION_TYPE, '["pad"]', 8),
    ({"vocab": ["a", "c"]}, Code.COMPANION_DIGEST, '["vocab"]', 9),
    ({"vocab": ["a"]}, Code.COMPANION_LENGTH, '["vocab"]', 9),
    ({"extra": 1}, Code.COMPANION_UNEXPECTED, '["extra"]', 3),
])
def test_each_code(change, code, field, line):
    found = check_json("config.json", {**GOOD, **change}, config_fact())
    assert (found.code, found.field, found.location.line) == (code, "companions.config.json" + field, line)
    assert found.stage is Stage.COMPANIONS


def test_missing_key_and_the_order_of_findings():
    fact = config_fact()
    assert check_json("config.json", GOOD, fact) is None
    data = {k: v for k, v in GOOD.items() if k != "pad"}
    found = check_json("config.json", data, fact)
    assert (found.code, found.field, found.expected, found.actual) == (
        Code.COMPANION_MISSING, 'companions.config.json["pad"]', "null", "missing")
    # Two violations: the bound key (contract order) wins over the unexpected one, whatever the file order.
    data = {"extra": 1, **GOOD, "hidden_size": 1}
    assert check_json("config.json", data, fact).field == 'companions.config.json["hidden_size"]'
    assert check_json("config.json", [], fact).code is Code.COMPANION_TYPE


def test_diagnostics_print_json():
    found = check_json("config.json", {**GOOD, "architectures": ["Bert\"Model"]}, config_fact())
    assert (found.expected, found.actual) == ('"BertModel"', '"Bert\\"Model"')
    found = check_json("config.json", {**GOOD, "hidden_size": 384.0}, config_fact())
    assert (found.expected, found.actual) == ("int", "float")
    assert found.render().startswith("bundle.yaml:5:20: COMPANION_TYPE companions.config.json[\"hidden_size\"]:")


def test_extra_keys_allow():
    fact = resolved("c.json", {"type": "object", "extra_keys": "allow", "keys": {"a": {"type": "int", "value": 1}}})
    assert check_json("c.json", {"a": 1, "b": 2}, fact) is None
    mutants = list(json_mutants({"a": 1, "b": 2}, fact, file="c.json"))
    add = [m for m in mutants if m.name.endswith(":add-key")]
    assert add and add[0].equivalent == "extra_keys: allow admits a key the contract does not name"
    assert rejects("c.json", None, fact, mutants)[2] == []


# --- exact keys, exact types -----------------------------------------------------------------


def test_keys_with_dots_are_keys():
    data = {"model.layers.0.weight": 1, "model": {"layers": 2}}
    fact = resolved("index.json", freeze_json(data))
    assert check_json("index.json", data, fact) is None
    found = check_json("index.json", {**data, "model.layers.0.weight": 2}, fact)
    assert found.field == 'companions.index.json["model.layers.0.weight"]'
    found = check_json("index.json", {"model": {"layers": 2}}, fact)
    assert (found.code, found.field) == (Code.COMPANION_MISSING, 'companions.index.json["model.layers.0.weight"]')


@pytest.mark.parametrize("key", ['a"]["b', "a]", "", "\\", "x\ny", "é"])
def test_field_paths_are_unambiguous(key):
    field = json_field("c.json", (key, 0))
    assert field == "companions.c.json[" + json.dumps(key, ensure_ascii=False) + "][0]"
    assert json.loads(field[len("companions.c.json["):-len("][0]")]) == key
    assert json_field("odd[1].json", ()) == 'companions."odd[1].json"'
    assert json_field("1_Pooling/config.json", (1,)) == "companions.1_Pooling/config.json[1]"


@pytest.mark.parametrize("fact, good, bad", [
    ({"type": "int", "value": 1}, 1, 1.0),
    ({"type": "float", "value": 1.0}, 1.0, 1),
    ({"type": "int", "value": 1}, 1, True),
    ({"type": "bool", "value": True}, True, 1),
    ({"type": "null"}, None, 0),
    ({"type": "float", "value": 0.0}, 0.0, -0.0),
    ({"type": "list", "value": [1, 1.0, True, None]}, [1, 1.0, True, None], [1, 1, True, None]),
    ({"type": "list", "value": [[1], []]}, [[1], []], [[1.0], []]),
])
def test_ints_floats_bools_nulls_differ(fact, good, bad):
    r = resolved("c.json", fact)
    assert check_json("c.json", good, r) is None
    assert check_json("c.json", bad, r) is not None


def test_parser_refuses_duplicate_keys_nan_and_infinity():
    for text in (b'{"a": 1, "a": 1}', b'{"a": NaN}', b'{"a": Infinity}', b'[-Infinity]', b'{"a": 1} x'):
        with pytest.raises(ValueError):
            parse_companion(text)


def test_out_of_range_number_is_an_infinity_only_a_digest_matches():
    data = parse_companion(b'{"a": 1e400}')
    assert data["a"] == math.inf
    frozen = freeze_json(data)
    assert frozen["keys"]["a"] == {"type": "float", "sha256": hashlib.sha256(b"Infinity").hexdigest()}
    fact = resolved("c.json", frozen)
    assert check_json("c.json", data, fact) is None
    assert check_json("c.json", {"a": 1.7976931348623157e308}, fact).code is Code.COMPANION_DIGEST


def test_lone_surrogates_and_long_values_are_pinned_by_digest():
    data = {"s": "\ud800", "long": "x" * 4097, "many": list(range(65)), "big": 2**64, "\udc00": 1}
    frozen = freeze_json({"inner": data})
    inner = frozen["keys"]["inner"]
    assert set(inner) == {"type", "sha256"}  # a key YAML cannot hold: the whole object by digest
    frozen = freeze_json({k: v for k, v in data.items() if k != "\udc00"})
    assert frozen["keys"]["s"].keys() == {"type", "sha256"}
    assert frozen["keys"]["long"].keys() == {"type", "sha256"}
    assert frozen["keys"]["many"] == {"type": "list", "length": 65, "sha256": frozen["keys"]["many"]["sha256"]}
    assert frozen["keys"]["big"].keys() == {"type", "sha256"}
    fact = resolved("c.json", frozen)
    source = {k: v for k, v in data.items() if k != "\udc00"}
    assert check_json("c.json", source, fact) is None
    assert rejects("c.json", source, fact, json_mutants(source, fact, file="c.json"))[2] == []


def test_canonical_json_is_sorted_compact_ascii():
    assert canonical_json({"b": 1, "a": [1.0, True, None, "é"]}) == b'{"a":[1.0,true,null,"\\u00e9"],"b":1}'
    assert canonical_json({"a": 1, "b": 2}) == canonical_json({"b": 2, "a": 1})


def test_deep_values_freeze_by_digest_below_the_limit():
    data: object = 1
    for _ in range(40):
        data = {"k": [data]}
    fact = resolved("c.json", freeze_json(data))
    assert check_json("c.json", data, fact) is None


# --- the contract side: validators and resolution --------------------------------------------


@pytest.mark.parametrize("fact, field, words", [
    ("{type: int, value: 1.0}", "keys.a.value", "integer or an expression"),
    ("{type: int, value: true}", "keys.a.value", "cannot be a bool"),
    ("{type: float, value: 1}", "keys.a.value", "write 1.0"),
    ("{type: bool, value: 1}", "keys.a.value", "true or false"),
    ("{type: string, value: 1}", "keys.a.value", "must be a string"),
    ("{type: \"null\", value: 0}", "keys.a.value", "states no value"),
    ("{type: int}", "keys.a", "needs a value"),
    ("{type: int, value: 1, keys: {}}", "keys.a.keys", "does not belong"),
    ("{type: list, value: [1], items: []}", "keys.a.value", "exactly one of"),
    ("{type: list}", "keys.a", "exactly one of"),
    ("{type: list, value: [1], length: 1}", "keys.a.length", "goes with sha256"),
    ("{type: list, sha256: " + "a" * 64 + "}", "keys.a.sha256", "length too"),
    ("{type: string, value: x, sha256: " + "a" * 64 + "}", "keys.a.value", "states nothing else"),
    ("{type: object}", "keys.a", "needs keys"),
    ("{type: string, value: x, extra_keys: allow}", "keys.a.extra_keys", "does not belong"),
    ("{type: float, value: 1.0e999}", "keys.a.value", "not a JSON number"),
    ("{type: list, value: [1, [1.0e999]]}", "keys.a.value[1][0]", "not a JSON number"),
    ("{type: list, value: [{b: 1}]}", "keys.a.value", ""),
    ("{type: map, value: 1}", "keys.a.type", ""),
])
def test_validators_point_at_the_sub_field(fact, field, words):
    text = f"companions:\n  c.json:\n    type: object\n    keys:\n      a: {fact}\n"
    found = refused("c.json", text)
    assert {d.code for d in found} == {Code.SPEC_SCHEMA}
    assert all(d.field.startswith("companions.c.json." + field) for d in found), [d.render() for d in found]
    assert any(words in d.message for d in found)
    assert {d.location.line for d in found} == {5}


def test_expressions_resolve_and_fail_located():
    fact = resolved("c.json", {"type": "float", "value": "hidden * 2"})
    assert fact.value == 768.0 and isinstance(fact.value, float)
    text = ("companions:\n  c.json:\n    type: list\n    items:\n"
            "      - {type: int, value: hidden * 2**0}\n"
            "      - {type: int, value: nope}\n"
            "      - {type: int, value: 9223372036854775808}\n"
            "      - {type: int, value: hidden > 1}\n"
            "      - {type: int, value: eps}\n")
    found = refused("c.json", text)
    assert [(d.code, d.location.line) for d in found] == [
        (Code.EXPR_SYNTAX, 5), (Code.EXPR_NAME, 6), (Code.EXPR_RANGE, 7), (Code.EXPR_TYPE, 8), (Code.EXPR_TYPE, 9)]


# --- round trip: hypothesis ------------------------------------------------------------------

keys = st.text(max_size=8)
scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=12)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(keys, inner, max_size=5),
                           max_leaves=25)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_freeze_round_trips_and_every_one_edit_change_is_rejected(value):
    text = json.dumps({"root": value}).encode()
    data = parse_companion(text)
    fact = resolved("v.json", freeze_json(data))
    assert check_json("v.json", data, fact) is None
    rejected, counted, failures = rejects("v.json", data, fact, json_mutants(data, fact, file="v.json"))
    assert not failures and rejected == counted


def _number_paths(value, path=()):
    """Paths of the ints and floats of a JSON value a contract can name (int64, finite)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _number_paths(v, path + (k,))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _number_paths(v, path + (i,))]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return []
    return [path] if not isinstance(value, int) or -2**63 <= value < 2**63 else []


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_freeze_with_constant_names_round_trips(value):
    data = parse_companion(json.dumps({"root": value}).encode())
    paths = _number_paths(data)
    names = {p: f"c{i}" for i, p in enumerate(paths)}
    env = {}
    for p, name in names.items():
        node = data
        for step in p:
            node = node[step]
        env[name] = node
    frozen = freeze_json(data, names=names)
    fact = resolved("v.json", frozen, env)
    assert check_json("v.json", data, fact) is None
    rejected, counted, failures = rejects("v.json", data, fact, json_mutants(data, fact, file="v.json"))
    assert not failures and rejected == counted
