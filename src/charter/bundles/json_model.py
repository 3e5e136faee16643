"""The contract model of a JSON fact (Note [JSON facts] in charter.bundles.json_facts): what a
bundle's `companions:` section may state, validated by pydantic when the contract is loaded. Kept
apart from the check, so that admitting from a resolved plan imports no pydantic."""

from __future__ import annotations

import math
from typing import Literal, Union

from pydantic import Field, StrictBool, StrictFloat, StrictInt, model_validator
from typing_extensions import TypeAliasType

from charter.bundles.json_facts import json_type
from charter.contract.models import Sha256, Strict, located

JsonType = Literal["int", "float", "bool", "string", "null", "list", "object"]

# The elements of a list pinned by value: plain JSON without objects (bind objects with items).
PlainJson = TypeAliasType(
    "PlainJson", Union[StrictBool, StrictInt, StrictFloat, str, None, list["PlainJson"]]  # type: ignore[misc]
)

# Which fields each type may state besides `type` (every type may state sha256).
_FIELDS: dict[str, frozenset[str]] = {
    "int": frozenset({"value"}),
    "float": frozenset({"value"}),
    "bool": frozenset({"value"}),
    "string": frozenset({"value"}),
    "null": frozenset({"value"}),
    "list": frozenset({"value", "items", "length"}),
    "object": frozenset({"keys", "extra_keys"}),
}


class JsonFact(Strict):
    """One JSON node: its exact type and its value (Note [JSON facts])."""

    type: JsonType = Field(description="The exact JSON type: `int` and `float` differ (`1` is not `1.0`), "
                                       "`null` is a stated null.")
    value: Union[StrictBool, StrictInt, StrictFloat, str, list[PlainJson], None] = Field(
        None, description="int/float: a literal or an expression over model constants; bool, string: the "
                          "literal; list: the list, compared exactly; null: absent.")
    items: list["JsonFact"] | None = Field(None, description="list: one fact per element.")
    length: StrictInt | None = Field(None, ge=0, description="list: its length (with sha256).")
    sha256: Sha256 | None = Field(None, description="The sha256 of the node's canonical JSON.")
    keys: dict[str, "JsonFact"] | None = Field(None, description="object: exact JSON key -> fact.")
    extra_keys: Literal["reject", "allow"] = Field("reject", description="object: keys `keys` does not name.")

    @model_validator(mode="after")
    def _shape_of_fact(self) -> "JsonFact":
        given = self.model_fields_set - {"type"}
        if self.value is None:
            given.discard("value")  # `value: null` states no value
        for name in ("value", "items", "length", "keys", "extra_keys"):
            if name in given and name not in _FIELDS[self.type]:
                raise located((name,), f"{name} does not belong to a {self.type} fact")
        if self.sha256 is not None:
            clash = sorted(given - {"sha256", "length"})
            if clash:
                raise located((clash[0],), f"a fact pinned by sha256 states nothing else (here: {clash[0]})")
            if self.type == "list" and self.length is None:
                raise located(("sha256",), "a list pinned by sha256 states its length too")
            return self
        if self.type == "list":
            return self._list_shape(given)
        if self.type == "object":
            if self.keys is None:
                raise located((), "an object fact needs keys (or sha256)")
            return self
        if self.type != "null" and "value" not in given:
            raise located((), f"a {self.type} fact needs a value (or sha256)")
        _check_scalar(self.type, self.value)
        return self

    def _list_shape(self, given: set[str]) -> "JsonFact":
        chosen = sorted(given & {"value", "items"})
        if len(chosen) != 1:
            raise located((chosen[1],) if chosen else (), "a list fact needs exactly one of value, items, or "
                                                           "length with sha256")
        if self.length is not None:
            raise located(("length",), "length goes with sha256; value and items state the length themselves")
        if not isinstance(self.value, (list, type(None))):
            raise located(("value",), "a list fact's value must be a list")
        _check_finite(self.value, ("value",))
        return self


def _check_scalar(kind: str, value) -> None:
    """A scalar fact's value is of its own type: a bool is never an int, an int is not a float."""
    where = ("value",)
    if kind == "null":
        if value is not None:
            raise located(where, "a null fact states no value")
        return
    if kind == "bool":
        if not isinstance(value, bool):
            raise located(where, "a bool fact's value must be true or false")
        return
    if isinstance(value, bool) or isinstance(value, list):
        raise located(where, f"a {kind} fact's value cannot be a {json_type(value)}")
    if kind == "string" and not isinstance(value, str):
        raise located(where, f"a string fact's value must be a string, got the {json_type(value)} {value!r}")
    if kind == "int" and isinstance(value, float):
        raise located(where, f"an int fact's value must be an integer or an expression, got the float {value!r}")
    if kind == "float" and isinstance(value, int):
        raise located(where, f"a float fact's value must be a float (write {value}.0) or an expression")
    if isinstance(value, float) and not math.isfinite(value):
        raise located(where, f"{value!r} is not a JSON number")


def _check_finite(value, where: tuple) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise located(where, f"{value!r} is not a JSON number")
    if isinstance(value, list):
        for i, element in enumerate(value):
            _check_finite(element, where + (i,))


JsonFact.model_rebuild()
