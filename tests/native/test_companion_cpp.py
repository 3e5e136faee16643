"""The C++ engine checks a contract's companion config (native/include/charter/companion.hpp) with
the Python engine's verdicts: the same (stage, code, field, offset) on every config.json below,
on random edits of its text, and across the contract battery of a frozen safetensors contract."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charter.engines import Options, choose
from charter.engines import cpp as engine
from charter.admission.runtime import MAX_COMPANION_BYTES, admit
from charter.cli import main
from charter.mutation.run import checker_module
from charter.contract.contractset import load_set
class Frozen:
    """The frozen safetensors contract with a config (tests/frozen.py, shared by the session), its
    Python checker, the key of its C++ checker as `admit --engine cpp` finds it, and a copy of its
    weights and config.json that this process's tests edit."""

    def __init__(self, contract, folder: Path) -> None:
        shutil.copytree(contract.artifact.parent, folder / "model")
        self.spec = contract.contract
        self.weights = folder / "model" / contract.artifact.name
        self.config = self.weights.parent / "config.json"
        self.original = self.config.read_bytes()
        self.plan = contract.plan
        self.checker = checker_module(self.plan)
        cs = load_set([contract.contract], [contract.contract.parents[1]])
        self.key = choose.cpp_checker(cs, self.plan, folder / "cache").key

    def verdicts(self) -> tuple[tuple, tuple]:
        py = admit(str(self.weights), self.checker)
        cpp = engine.admit(self.weights, self.key)
        return _first(py), _first(cpp)


def _first(report) -> tuple:
    d = report.diagnostic
    return ("admitted",) if d is None else (d.stage, d.code, d.field, d.offset)


@pytest.fixture(scope="module")
def frozen(native, frozen_cpp, tmp_path_factory):
    f = Frozen(frozen_cpp["config"], tmp_path_factory.mktemp("companion"))
    assert f.plan.config_file.value == "config.json" and engine.info(f.key).companion == "config.json"
    return f


@pytest.fixture
def config(frozen):
    yield frozen
    if frozen.config.is_dir():
        frozen.config.rmdir()
    elif frozen.config.exists() and not frozen.config.is_file():
        frozen.config.unlink()  # a FIFO: writing to it would wait for a reader
    frozen.config.write_bytes(frozen.original)


def _edit(text: str, **changes) -> str:
    data = json.loads(text)
    for key, value in changes.items():
        if value is KeyError:
            del data[key]
        else:
            data[key] = value
    return json.dumps(data)


BASE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16, "intermediate_size": 24,
        "vocab_size": 32, "num_hidden_layers": 3, "rms_norm_eps": 1e-5, "tie_word_embeddings": True}
CASES = {
    "unchanged": (json.dumps(BASE), ("admitted",)),
    "spacing and key order": ('\r\n {"rms_norm_eps": 1.0e-5, ' + json.dumps(BASE)[1:] + " \t\n", None),
    "float written otherwise": (json.dumps(BASE).replace("1e-05", "0.00001000"), ("admitted",)),
    "float one ulp off": (json.dumps(BASE).replace("1e-05", "1.0000000000000002e-05"),
                          ("metadata", "METADATA_VALUE", "config.rms_norm_eps", None)),
    "float overflows": (json.dumps(BASE).replace("1e-05", "1e400"), ("metadata", "METADATA_VALUE", "config.rms_norm_eps", None)),
    "float underflows": (json.dumps(BASE).replace("1e-05", "-1e-400"), None),
    "int value": (_edit(json.dumps(BASE), hidden_size=17), ("metadata", "METADATA_VALUE", "config.hidden_size", None)),
    "huge int": (json.dumps(BASE).replace('"hidden_size": 16', '"hidden_size": ' + "9" * 40), None),
    "int as float": (json.dumps(BASE).replace('"hidden_size": 16', '"hidden_size": 16.0'),
                     ("metadata", "METADATA_TYPE", "config.hidden_size", None)),
    "bool for int": (_edit(json.dumps(BASE), hidden_size=True), ("metadata", "METADATA_TYPE", "config.hidden_size", None)),
    "int for bool": (_edit(json.dumps(BASE), tie_word_embeddings=1), None),
    "bool value": (_edit(json.dumps(BASE), tie_word_embeddings=False), None),
    "string value": (_edit(json.dumps(BASE), model_type="Llama"), None),
    "string with escapes": (json.dumps(BASE).replace('"llama"', '"ll\\u0061ma"'), ("admitted",)),
    "lone surrogate": (json.dumps(BASE).replace('"llama"', '"llama\\ud800"'), None),
    "null value": (_edit(json.dumps(BASE), vocab_size=None), None),
    "missing key": (_edit(json.dumps(BASE), vocab_size=KeyError), ("metadata", "METADATA_MISSING", "config.vocab_size", None)),
    "not an object": ("[1, 2]", None),
    "empty": ("", ("metadata", "METADATA_CONFIG", "config", None)),
    "truncated": (json.dumps(BASE)[:-1], None),
    "trailing data": (json.dumps(BASE) + " {}", None),
    "trailing comma": (json.dumps(BASE)[:-1] + ", }", None),
    "NaN": (json.dumps(BASE).replace("1e-05", "NaN"), None),
    "Infinity": (json.dumps(BASE).replace("1e-05", "-Infinity"), None),
    "duplicate key": (json.dumps(BASE)[:-1] + ', "hidden_size": 16}', None),
    "nested duplicate key": (_edit(json.dumps(BASE), extra={"a": 1}).replace('{"a": 1}', '{"a": 1, "a": 1}'), None),
    "byte order mark": ("\ufeff" + json.dumps(BASE), ("metadata", "METADATA_CONFIG", "config", None)),
    "5000-digit int": (_edit(json.dumps(BASE), extra=0).replace('"extra": 0', '"extra": ' + "1" * 5000), None),
    "deep nesting": (_edit(json.dumps(BASE), extra=0).replace('"extra": 0', '"extra": ' + "[" * 100_000), None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_both_engines_judge_the_config_alike(config, name):
    text, expected = CASES[name]
    config.config.write_text(text, "utf-8")
    py, cpp = config.verdicts()
    assert py == cpp
    if expected is not None:
        assert py == expected


@pytest.mark.parametrize("raw", [b'{"model_type": "\xff"}', b'{"model_type": "\xed\xa0\x80"}', b"\xef\xbb"])
def test_bytes_that_are_not_utf8(config, raw):
    config.config.write_bytes(raw)
    py, cpp = config.verdicts()
    assert py == cpp == ("metadata", "METADATA_CONFIG", "config", None)


def test_missing_unreadable_not_regular_and_too_large(config):
    config.config.unlink()
    assert config.verdicts() == (("metadata", "METADATA_CONFIG", "config", None),) * 2
    config.config.mkdir()
    assert config.verdicts() == (("metadata", "METADATA_CONFIG", "config", None),) * 2
    config.config.rmdir()
    os.mkfifo(config.config)  # no writer: an engine that opened it blocking, or read it to the end, would hang
    assert config.verdicts() == (("metadata", "METADATA_CONFIG", "config", None),) * 2
    config.config.unlink()
    config.config.write_bytes(json.dumps(BASE).encode() + b" " * MAX_COMPANION_BYTES)
    assert config.verdicts() == (("metadata", "METADATA_CONFIG", "config", None),) * 2
    report = engine.admit(config.weights, config.key)
    assert "config.json is more than 16777216 bytes" in report.diagnostic.message


def test_a_header_span_without_its_companion_is_refused(config):
    """The C++ engine over bytes takes the companion from the caller; none given reads as unreadable."""
    raw = config.weights.read_bytes()
    size = len(raw)
    report = engine.admit(raw, config.key, file_size=size)
    assert report.diagnostic.code == "METADATA_CONFIG"
    assert "not provided" in report.diagnostic.message
    assert engine.admit(raw, config.key, Options(companion=config.original), file_size=size).admitted


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["replace", "delete", "insert"]),
                                st.sampled_from(list(b'{}[]",:.-+eE0123456789 tnfaulrs\\'))), min_size=1, max_size=4))
def test_random_edits_of_the_config_text(config, edits):
    data = bytearray(json.dumps(BASE).encode())
    for at, op, byte in edits:
        i = at % (len(data) + 1)
        if op == "insert":
            data[i:i] = bytes([byte])
        elif i < len(data):
            if op == "delete":
                del data[i]
            else:
                data[i] = byte
    config.config.write_bytes(bytes(data))
    py, cpp = config.verdicts()
    assert py == cpp, bytes(data)


@pytest.mark.slow  # a C++ checker library of every contract mutant
def test_contract_battery_with_both_engines(frozen, capsys):
    """Every contract mutant of the frozen contract, config facts included, on both engines."""
    code = main(["mutate", "--contract", str(frozen.spec), "--artifact", str(frozen.weights), "--engine", "both",
                 "-j", "1", "-q"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 errors" in out
