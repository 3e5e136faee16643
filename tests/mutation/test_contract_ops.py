"""Contract operators take their enum domains from the contract models, never from a restated list."""

from __future__ import annotations

import fnmatch
from enum import Enum
from typing import Literal

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from charter.language import STATUSES
from charter.mutation import contract_ops
from charter.contract import models

# Each pattern of ENUMS and the (model, field) whose type it must mirror.
OWNERS = {
    "status": (models.Header, "status"),
    "format": (models.ArtifactContract, "format"),
    "metadata.extra_keys": (models.Metadata, "extra_keys"),
    "layout.trailing": (models.Layout, "trailing"),
    "layout.padding": (models.Layout, "padding"),
    "metadata.keys.*.type": (models.MetaFact, "type"),
    "tokenizer.keys.*.type": (models.MetaFact, "type"),
    "config.keys.*.type": (models.ConfigFact, "type"),
    "metadata.keys.*.element": (models.MetaFact, "element"),
    "tokenizer.keys.*.element": (models.MetaFact, "element"),
    "values.default": (models.ValuePolicy, "default"),
}


def test_every_enum_pattern_names_a_model_field():
    assert set(contract_ops.ENUMS) == set(OWNERS)


@pytest.mark.parametrize("pattern", sorted(OWNERS))
def test_enums_are_exactly_what_the_model_accepts(pattern):
    model, field = OWNERS[pattern]
    accepts = TypeAdapter(model.model_fields[field].annotation)
    members = contract_ops.ENUMS[pattern]
    for member in members:
        accepts.validate_python(member)  # every member is a value the contract may state
    for other in ("", "not-a-member", *(m.upper() for m in members)):
        if other not in members:
            with pytest.raises(ValidationError):
                accepts.validate_python(other)
    assert len(set(members)) == len(members)


def test_element_types_are_every_gguf_scalar_type():
    """The hand-written list held five of the twelve: element mutants missed float32 arrays."""
    assert set(contract_ops.ENUMS["metadata.keys.*.element"]) >= {"float32", "bool", "int8"}
    assert "array" not in contract_ops.ENUMS["metadata.keys.*.element"]


def test_config_types_are_the_json_types_only():
    assert contract_ops.ENUMS["config.keys.*.type"] == ("int64", "float64", "bool", "string")


def test_status_members_are_the_language_order():
    assert contract_ops.ENUMS["status"] == STATUSES


def test_a_member_added_to_a_model_type_is_a_new_enum_member():
    class Color(str, Enum):
        RED = "red"
        GREEN = "green"

    class Before(BaseModel):
        mode: Literal["a", "b"]
        color: Color
        maybe: Literal["x"] | None = None

    class After(BaseModel):
        mode: Literal["a", "b", "c"]

    assert contract_ops._members(Before, "mode") == ("a", "b")
    assert contract_ops._members(After, "mode") == ("a", "b", "c")
    assert contract_ops._members(Before, "color") == ("red", "green")
    assert contract_ops._members(Before, "maybe") == ("x",)


def test_config_type_mutants_stay_in_the_config_domain():
    path = ("config", "keys", "hidden_size", "type")
    assert [new for _, new in contract_ops.operators("artifact", path, "int64")] == ["float64", "bool", "string"]
    assert fnmatch.fnmatchcase("config.keys.a.b.type", "config.keys.*.type")
