"""Bad input never produces a traceback: random one-leaf edits of the shipped regions contract
either resolve or fail with diagnostics (CharterError), never with another exception."""

from __future__ import annotations

import copy

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from charter.diagnostics import CharterError
from charter.regions import battery
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "regions" / "smollm2-135m-instruct-q4_1.yaml"
DATA = battery.base_data(SPEC)
CS = battery.contract_set(SPEC)


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, (*path, i))
    yield path


LEAVES = [p for p in _leaves(DATA) if p]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 100), st.sampled_from(
    ["", "tokens", "hidden", "layers + 1", "blk.{i}.*", "{j}", "rmsnorm", "linear", "always", "routed", "x" * 70,
     "1 // 0", "kv_width", "no_kv", "session", "label"]), st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["a", "kind", "step"]), st.integers(0, 2), max_size=2))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(LEAVES), VALUES, st.booleans())
def test_one_leaf_edit_is_a_diagnostic_or_a_plan(path, value, drop):
    data = copy.deepcopy(DATA)
    target = data
    for p in path[:-1]:
        target = target[p]
    if drop and isinstance(target, dict):
        target.pop(path[-1])
    else:
        target[path[-1]] = value
    try:
        battery.resolve_text(yaml.safe_dump(data, sort_keys=False), CS)
    except CharterError as exc:
        assert exc.diagnostics and all(d.location is not None for d in exc.diagnostics)
