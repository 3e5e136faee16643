"""The parts of the diff the battery has no counterpart for: leaves, directions, rule ids."""

from __future__ import annotations

import re

from charter.contract import checks
from charter.diff.direction import Move, moves
from charter.diff.leaves import MISSING, Leaf, applied, changed_leaves, field_name
from charter.diff.rules import Category, Rule, identity_rule
from tests.conftest import ROOT


def test_leaves_of_mappings_lists_and_renames():
    old = {"a": 1, "b": [1, 2], "c": {"x": 1.0}, "d": {"k": 5}}
    new = {"a": True, "b": [1, 2, 3], "c": {"x": 1}, "d": {"j": 5}}
    leaves = changed_leaves(old, new)
    assert [(field_name(l.path), l.old, l.new) for l in leaves] == [
        ("a", 1, True), ("b", [1, 2], [1, 2, 3]), ("c.x", 1.0, 1), ("d.k", "k", "j")]
    assert leaves[3].at == ("d", "j") and applied(old, leaves[3]) == {**old, "d": {"j": 5}}
    assert changed_leaves({"a": float("nan")}, {"a": float("nan")}) == []
    removed = Leaf(("d", "k"), 5, MISSING)
    assert applied(old, removed)["d"] == {} and old["d"] == {"k": 5} and removed.at == ("d",)
    assert field_name(("tensors", 0, "role")) == "tensors[0].role"


def _stop(*ids):
    return checks.StopId(key="tokenizer.ggml.eos_token_id", ids=ids, at=None)


def test_directions_of_replaced_checks():
    assert moves([_stop(1, 2)], [_stop(1)]).items[0][0] is Move.WIDENED
    assert moves([_stop(1)], [_stop(1, 2)]).items[0][0] is Move.NARROWED
    assert moves([_stop(3)], [_stop(1)]).items[0][0] is Move.CHANGED
    assert [m for m, _ in moves([], [_stop(1)]).items] == [Move.REMOVED]
    assert [m for m, _ in moves([_stop(1)], []).items] == [Move.ADDED]
    keys = lambda extra, *forbidden: checks.MetaKeySet(pinned=("a",), forbidden=tuple((k, None) for k in forbidden),
                                                       extra=extra, at=None)
    assert moves([keys("allow")], [keys("reject")]).items[0][0] is Move.WIDENED
    assert moves([keys("reject", "x")], [keys("reject")]).items[0][0] is Move.NARROWED
    assert moves([keys("allow", "x")], [keys("reject")]).items[0][0] is Move.CHANGED


def test_identity_leaves():
    assert identity_rule("model", ("family",)) is Rule.IDENTITY_FAMILY
    assert identity_rule("model", ("source",)) is Rule.IDENTITY_MODEL_SOURCE
    assert identity_rule("model", ("source", "license")) is None
    assert identity_rule("artifact", ("family",)) is None


def test_every_rule_has_a_category_and_is_documented():
    docs = (ROOT / "docs" / "mutation.md").read_text("utf-8")
    documented = set(re.findall(r"`((?:EQUIVALENT|TIGHTEN|LOOSEN|IDENTITY)_[A-Z_]+)`", docs))
    assert documented == {r.value for r in Rule}
    assert {r.category for r in Rule} == set(Category)
    assert {c for c in Category if c.fails} == {Category.LOOSEN, Category.IDENTITY}
