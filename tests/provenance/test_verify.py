"""`charter fixtures verify`: shipped fixtures pass; each kind of tampering has its own code."""

from __future__ import annotations

import re

import numpy as np
import pytest

from charter.provenance.npz import npz_bytes, read_npz

from .conftest import PROVENANCE, SHIPPED, edit, run


def test_every_shipped_fixture_verifies(capsys):
    code, out, err = run(capsys, "fixtures", "verify", str(PROVENANCE))
    assert code == 0, out + err
    assert re.fullmatch(r"ok: 5 fixtures verified \(\d+ arrays\)\n", out)
    assert len(SHIPPED) == 5


def test_shipped_specs_follow_the_conventions():
    for stem in SHIPPED:
        text = (PROVENANCE / f"{stem}.yaml").read_text()
        assert text.splitlines()[0] == "# yaml-language-server: $schema=../../schemas/provenance.schema.json"
        assert "\nstatus: structural\n" in text and f"\nfixture: {stem}.npz\n" in text


def _verify(capsys, spec):
    code, out, err = run(capsys, "fixtures", "verify", str(spec))
    return code, out


def _codes(out: str) -> list[str]:
    return re.findall(r"^\S+:\d+:\d+: (FIXTURE_[A-Z]+) ", out, flags=re.M)


# (spec, old text, new text, expected code): one edit of the YAML each.
LABEL_TAMPERING = [
    # An upstream capture relabelled as a control still names its upstream package: refused.
    ("dequant-smollm2", "    class: upstream_capture\n    producer: {package: gguf, version: 0.19.0, module: gguf.quants, callable: dequantize}",
     "    class: contract_control\n    producer: {package: gguf, version: 0.19.0, module: gguf.quants, callable: dequantize, rule: made up}",
     "FIXTURE_CLASS"),
    # A control relabelled as an upstream capture: its producer is charter's own code.
    ("router-topk-ties", "    class: contract_control\n    producer:\n      module: charter.provenance.controls",
     "    class: upstream_capture\n    producer:\n      package: charter\n      version: 0.1.0\n      module: charter.provenance.controls",
     "FIXTURE_CLASS"),
    # An oracle output relabelled as an upstream capture (with a made-up package).
    ("dequant-smollm2", "    class: independent_crosscheck\n    producer: {module: charter.oracles.dequant, callable: dequantize_q8_0}\n    checks: charter._native.dequantize_q8_0\n",
     "    class: upstream_capture\n    producer: {package: numpy, version: 2.0.0, module: charter.oracles.dequant, callable: dequantize_q8_0}\n",
     "FIXTURE_CLASS"),
    # A registered oracle named for a control.
    ("rmsnorm-seeded", "      module: charter.provenance.controls\n      callable: eps_1e_6",
     "      module: charter.oracles.rmsnorm\n      callable: rmsnorm", "FIXTURE_CLASS"),
    ("dequant-smollm2", "version: 0.19.0", "version: 0.18.0", "FIXTURE_VERSION"),
    ("dequant-smollm2", "{package: gguf, version: 0.19.0", "{package: numpy, version: %NUMPY%", "FIXTURE_PRODUCER"),
    ("dequant-smollm2", "{package: gguf,", "{package: not-a-real-package-xyz,", "FIXTURE_PRODUCER"),
    ("dequant-smollm2", "callable: dequantize}", "callable: dequantize_everything}", "FIXTURE_PRODUCER"),
    ("dequant-smollm2", "callable: dequantize_q4_1}", "callable: dequantize_q4_2}", "FIXTURE_PRODUCER"),
    ("router-topk-ties", 'callable: "router_topk[1]"', "callable: router_topk", "FIXTURE_PRODUCER"),
    ("router-topk-ties", "      seed: 20260101\n", "", "FIXTURE_SEED"),
    ("rmsnorm-seeded", "      callable: eps_1e_6\n", "      callable: eps_1e_6\n      seed: 1\n", "FIXTURE_SEED"),
    ("dequant-smollm2", "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 tensor token_embd.weight blocks",
     "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db54 tensor token_embd.weight blocks", "FIXTURE_SOURCE"),
    ("router-topk-ties", "constant experts_per_token", "constant routed_experts", "FIXTURE_SOURCE"),
    ("router-topk-ties", "constant experts_per_token", "constant no_such_constant", "FIXTURE_SOURCE"),
    ("router-topk-ties", "derived_from: model qwen4exp constant", "derived_from: the model's config, probably", "FIXTURE_SOURCE"),
    ("rmsnorm-seeded", "checks: charter._native.rmsnorm\n", "checks: numpy.add\n", "FIXTURE_SHARED"),
    ("dequant-smollm2", "    inputs: [q4_1_blocks, q4_1_type]", "    inputs: [q4_1_blocks]", "FIXTURE_INPUT"),
    ("dequant-smollm2", "    inputs: [q8_0_blocks]\n", "    inputs: [q8_0_oracle]\n", "FIXTURE_INPUT"),
    ("router-topk-ties", "    dtype: int32\n    shape: [4, 10]", "    dtype: int64\n    shape: [4, 10]", "FIXTURE_DTYPE"),
    ("router-topk-ties", "    dtype: int32\n    shape: [4, 10]", "    dtype: i4\n    shape: [4, 10]", "FIXTURE_DTYPE"),
    ("router-topk-ties", "    shape: [4, 512]", "    shape: [512, 4]", "FIXTURE_SHAPE"),
]


@pytest.mark.parametrize("stem, old, new, expected", LABEL_TAMPERING,
                         ids=[f"{t[3]}-{i}" for i, t in enumerate(LABEL_TAMPERING)])
def test_label_tampering_has_its_own_diagnostic(capsys, tamper, stem, old, new, expected):
    spec = tamper(stem)
    edit(spec, old, new.replace("%NUMPY%", np.__version__))
    code, out = _verify(capsys, spec)
    assert code == 1, out
    assert _codes(out) == [expected], out


def test_one_flipped_digest_bit(capsys, tamper):
    spec = tamper("dequant-smollm2")
    text = spec.read_text()
    digest = re.search(r"sha256: ([0-9a-f]{64})", text).group(1)
    flipped = f"{int(digest, 16) ^ 1:064x}"
    spec.write_text(text.replace(digest, flipped, 1))
    line = text[: text.index(digest)].count("\n") + 1
    code, out = _verify(capsys, spec)
    assert code == 1 and _codes(out) == ["FIXTURE_DIGEST"]
    assert f"dequant-smollm2.yaml:{line}:13: FIXTURE_DIGEST q8_0_blocks.sha256: expected {flipped}, got {digest}" in out


def _rewrite(npz, change):
    arrays = read_npz(npz)
    npz.write_bytes(npz_bytes(list(change(arrays).items())))


def test_dropped_array(capsys, tamper):
    spec = tamper("router-topk-ties")
    _rewrite(spec.with_suffix(".npz"), lambda a: {k: v for k, v in a.items() if k != "topk_weights"})
    code, out = _verify(capsys, spec)
    assert code == 1 and _codes(out) == ["FIXTURE_MISSING"] and "topk_weights" in out


def test_unlabelled_array(capsys, tamper):
    spec = tamper("router-topk-ties")
    _rewrite(spec.with_suffix(".npz"), lambda a: {**a, "extra": np.zeros(3, np.float32)})
    code, out = _verify(capsys, spec)
    assert code == 1 and _codes(out) == ["FIXTURE_UNLABELLED"] and "'extra'" in out


def test_changed_array_value_and_dtype(capsys, tamper):
    spec = tamper("masked-argmax-padded")
    _rewrite(spec.with_suffix(".npz"), lambda a: {**a, "expected_ids": a["expected_ids"] - 1})
    assert _codes(_verify(capsys, spec)[1]) == ["FIXTURE_DIGEST"]
    _rewrite(spec.with_suffix(".npz"), lambda a: {**a, "expected_ids": (a["expected_ids"] + 1).astype(np.int64)})
    assert _codes(_verify(capsys, spec)[1]) == ["FIXTURE_DTYPE"]
    # A derived value that disagrees with the model contract, with a digest to match.
    _rewrite(spec.with_suffix(".npz"), lambda a: {**a, "valid_ids": np.array(248320, np.int64),
                                                  "expected_ids": (a["expected_ids"] + 1).astype(np.int32)})
    code, out = _verify(capsys, spec)
    assert "FIXTURE_SOURCE" in _codes(out)


def test_unreadable_fixture(capsys, tamper):
    spec = tamper("router-topk-ties")
    spec.with_suffix(".npz").write_bytes(b"not a zip file")
    code, out = _verify(capsys, spec)
    assert code == 1 and _codes(out) == ["FIXTURE_UNREADABLE"]


def test_contract_errors_exit_2(capsys, tamper):
    spec = tamper("router-topk-ties")
    edit(spec, "class: contract_control", "class: upstream_capture")  # no package/version: the model refuses
    code, out = _verify(capsys, spec)
    assert code == 2 and "SPEC_SCHEMA" in out
    spec.with_suffix(".npz").unlink()
    edit(spec, "class: upstream_capture", "class: contract_control")
    code, out = _verify(capsys, spec)
    assert code == 2 and "REF_DANGLING" in out


def test_non_provenance_specs_only_is_a_usage_error(capsys):
    code, _, err = run(capsys, "fixtures", "verify", "specs/models")
    assert code == 2 and "no provenance contracts" in err


def test_json_output(capsys, tamper):
    import json

    spec = tamper("router-topk-ties")
    code, out, _ = run(capsys, "fixtures", "verify", str(spec), "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["result"]["verified"] is True and report["diagnostics"] == []


def test_upstream_callable_may_be_a_dotted_path(capsys, tamper):
    spec = tamper("dequant-smollm2")
    edit(spec, "module: gguf.quants, callable: dequantize}", "callable: gguf.quants.dequantize}", count=2)
    code, out = _verify(capsys, spec)
    assert code == 0, out


# Note [Opt-in upstream packages]: the llama.cpp fixture verifies without llama-cpp-python.
@pytest.fixture()
def _without_llama_cpp(monkeypatch):
    """The machine as the default install leaves it: the opt-in `capture` extra (llama-cpp-python)
    absent, whether or not this venv has it."""
    import importlib.metadata
    import importlib.util

    version, find_spec = importlib.metadata.version, importlib.util.find_spec

    def absent_version(name):
        if name.lower().replace("_", "-") == "llama-cpp-python":
            raise importlib.metadata.PackageNotFoundError(name)
        return version(name)

    monkeypatch.setattr(importlib.metadata, "version", absent_version)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] == "llama_cpp" else find_spec(name, *a))


_NO_LLAMA = pytest.mark.usefixtures("_without_llama_cpp")


@_NO_LLAMA
def test_an_opt_in_upstream_verifies_offline_without_its_package(capsys, tamper):
    spec = tamper("smollm2-llamacpp-logits")
    code, out = _verify(capsys, spec)
    assert code == 0, out


@_NO_LLAMA
def test_a_pin_the_extra_does_not_declare_is_not_opt_in(capsys, tamper):
    spec = tamper("smollm2-llamacpp-logits")
    edit(spec, "version: 0.3.36", "version: 0.3.35")
    code, out = _verify(capsys, spec)
    assert code == 1
    assert _codes(out) == ["FIXTURE_PRODUCER"] and "not installed (pin: llama-cpp-python==0.3.35)" in out


@_NO_LLAMA
def test_capture_refuses_an_opt_in_upstream_that_is_not_installed(capsys, tamper, tmp_path):
    spec = tamper("smollm2-llamacpp-logits")
    code, out, err = run(capsys, "fixtures", "capture", str(spec), "-o", str(tmp_path / "x.npz"))
    assert code == 1
    assert set(_codes(out)) == {"FIXTURE_PRODUCER"} and "not installed" in out


@_NO_LLAMA
def test_an_opt_in_fixture_is_still_checked_offline(capsys, tamper):
    spec = tamper("smollm2-llamacpp-logits")
    arrays = read_npz(spec.with_suffix(".npz"))
    arrays["last_logits"] = arrays["last_logits"].copy()
    arrays["last_logits"][3, 7] += 1.0
    spec.with_suffix(".npz").write_bytes(npz_bytes(list(arrays.items())))
    code, out = _verify(capsys, spec)
    assert code == 1 and _codes(out) == ["FIXTURE_DIGEST"]
