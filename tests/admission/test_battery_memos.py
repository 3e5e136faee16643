"""What the admission runtime keeps between admissions for a mutation battery (the value rules of
the last header, the digest of an array's bytes) never changes a verdict."""

from __future__ import annotations

import dataclasses

import pytest

from charter.admission import runtime
from charter.admission.values import tensor_rules
from charter.admission.view import read_view
from charter.formats.gguf import GGUFArray


@pytest.fixture(scope="module")
def view(smollm2_path):
    return read_view(str(smollm2_path), "gguf")


def _selection(rules: dict) -> dict:
    return {name: (r.codec, r.fields, r.block_bytes, r.at, r._native is not None) for name, r in rules.items()}


def test_value_rules_are_selected_again_when_the_rules_or_the_tensors_change(view, smollm2_path):
    """The kept selection is reused only for the same tensors (names, codecs), rules and engine."""
    everything = (("default", ("*",), True, "a:1:1"),)
    excepted = (("norms", ("*norm*",), False, "a:2:1"), ("default", ("*",), True, "a:1:1"))
    renamed = dataclasses.replace(view, tensors=(view.tensors[0]._replace(name="renamed"),
                                                 *view.tensors[1:]))
    recoded = dataclasses.replace(view, tensors=(view.tensors[0]._replace(codec="F16"),
                                                 *view.tensors[1:]))
    for v, rules, native in [(view, everything, False), (view, excepted, False), (renamed, excepted, False),
                             (recoded, excepted, False), (view, everything, True), (view, everything, False),
                             (view, everything, True), (view, everything, False)]:
        ctx = runtime.Context(v, str(smollm2_path), native_values=native)
        got = ctx._value_rules(rules)
        want = tensor_rules(v.tensors, rules, v.format, runtime.block_bytes_of(v.format), native)
        assert _selection(got) == _selection(want)
        got.clear()  # the caller owns what it gets (bounds are added to it)
        assert ctx._value_rules(rules).keys() == want.keys()


def test_an_array_digest_is_kept_per_bytes_object_only():
    a = GGUFArray.from_items(8, ["x", "y"])
    b = GGUFArray.from_items(8, ["x", "z"])
    assert a.sha256() != b.sha256()
    assert dataclasses.replace(a, raw=b.raw).sha256() == b.sha256()
    mutable = dataclasses.replace(a, raw=bytearray(a.raw))
    assert mutable.sha256() == a.sha256()
    mutable.raw[-1:] = b"z"
    assert mutable.sha256() == b.sha256()  # not kept: its bytes can change
