"""Plans carry each fact once: a Located value, never a value field beside a `*_location` twin."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from charter.contract import plan as plan_mod
from charter.contract.contractset import load_set
from charter.contract.plan import Located

ROOT = Path(__file__).resolve().parents[2]
SMOLLM2 = "smollm2-135m-instruct-q4_1"


@pytest.fixture(scope="module")
def cs():
    return load_set(sorted((ROOT / "specs").rglob("*.yaml")), [ROOT / "specs"])


PLANS = [c for c in vars(plan_mod).values() if dataclasses.is_dataclass(c) and c.__module__ == plan_mod.__name__]


@pytest.mark.parametrize("kind", PLANS, ids=lambda c: c.__name__)
def test_no_plan_field_is_the_location_twin_of_another(kind):
    names = {f.name for f in dataclasses.fields(kind)}
    assert not {n for n in names if n.endswith("_location")}, kind.__name__


def _at(cs, path: str, *keys) -> str:
    loaded = cs.contracts[SMOLLM2] if path == "artifact" else cs.contracts[cs.artifacts[SMOLLM2].model]
    return str(loaded.doc.locations[keys])


def test_the_tokenizer_facts_are_located_values(cs):
    t = cs.artifacts[SMOLLM2].tokenizer
    assert isinstance(t.ids, Located) and t.ids.value == cs.models[cs.artifacts[SMOLLM2].model].tokenizer_ids
    assert str(t.ids.at) == _at(cs, "model", "tokenizer", "ids")  # the model states the id domain
    assert t.logits_rows is None or isinstance(t.logits_rows, Located)
    assert [(s.key, str(s.at)) for s in t.stop_keys] == [
        (k, _at(cs, "artifact", "tokenizer", "stop", i)) for i, k in enumerate(k for k, _ in t.stop_keys)]


def test_status_and_tensor_rows_are_located_values(cs):
    p = cs.artifacts[SMOLLM2]
    assert (p.status_fact.value, str(p.status_fact.at)) == (p.status, _at(cs, "artifact", "status"))
    assert str(p.tensor_rows.at) == _at(cs, "artifact", "tensors") and len(p.tensor_rows.value) > 0


def test_a_config_binding_is_a_located_file_name(cs, tmp_path):
    """No shipped contract binds a companion config; a frozen safetensors one does (charter freeze)."""
    field = {f.name: f.type for f in dataclasses.fields(plan_mod.ArtifactPlan)}["config_file"]
    assert field == "Located[str] | None"
