"""The text contract language: exact data, located refusals, a round trip, the vocabulary boundary."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from charter.contract.load import load_contract_text
from charter.contract.yamldump import dump
from charter.diagnostics import CharterError, Code
from charter.text.contract import TextContract, TextTokenizer
from tests.text.conftest import SMOLLM2


def test_round_trip_keeps_meaning(smollm2):
    lc, _ = smollm2
    data = lc.contract.model_dump(mode="json", by_alias=True, exclude_unset=True)
    again = load_contract_text(dump(data), "again.yaml").contract
    assert again == lc.contract


def test_unknown_key_is_located():
    text = SMOLLM2.read_text().replace("  model: gpt2\n", "  model: gpt2\n  modle: gpt2\n", 1)
    with pytest.raises(CharterError) as exc:
        load_contract_text(text, "x.yaml")
    (d,) = exc.value.diagnostics
    assert d.code is Code.SPEC_SCHEMA and d.field == "tokenizer.modle" and d.location.line > 1


def _tok(**kw):
    base = {"model": "gpt2", "pre": "smollm", "vocab": {"count": 3, "sha256": "a" * 64}, "ids": 3,
            "logits": {"artifact": "a", "tensor": "t", "axis": 0, "rows": 3}, "added": []}
    base.update(kw)
    return TextTokenizer.model_validate(base)


def test_padded_rows_are_allowed_and_fewer_rows_refused():
    assert _tok(logits={"artifact": "a", "tensor": "t", "axis": 0, "rows": 8}).logits.rows == 8
    with pytest.raises(ValidationError, match="physical rows cannot hold"):
        _tok(logits={"artifact": "a", "tensor": "t", "axis": 0, "rows": 2})
    with pytest.raises(ValidationError, match="outside the vocabulary"):
        _tok(added=[{"id": 3, "content": "x", "special": True, "type": "control"}])


def test_a_failed_render_has_no_output():
    from charter.text.contract import ChatCase

    with pytest.raises(ValidationError, match="no output"):
        ChatCase.model_validate({"name": "x", "class": "upstream_capture", "messages": [], "error": "E: e",
                                 "rendered": ""})


def test_schema_lists_the_text_kind():
    from charter.contract.schema import all_schemas

    assert "text.schema.json" in all_schemas()
    assert TextContract.model_json_schema(by_alias=True)["properties"]["kind"]["const"] == "text"
