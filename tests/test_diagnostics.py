"""The stage -> code family rule is one table beside the enums; expectations hold typed codes."""

from __future__ import annotations

import pytest

from charter.diagnostics import VALUE_STAGES, Code, Finding, Stage, code_for
from charter.mutation.mutant import Expect


@pytest.mark.parametrize("stage", VALUE_STAGES)
@pytest.mark.parametrize("finding", list(Finding))
def test_a_finding_is_reported_under_the_code_of_the_stage_that_owns_the_value(stage, finding):
    code = code_for(stage, finding)
    assert code.stage is stage and code.value.endswith("_" + finding.value)
    assert code_for(stage.value, finding) is code  # plans still name stages as text


def test_the_two_value_stages_report_distinct_codes():
    assert code_for(Stage.METADATA, Finding.VALUE) is Code.METADATA_VALUE
    assert code_for(Stage.TOKENIZER, Finding.ARRAY_DIGEST) is Code.TOKENIZER_ARRAY_DIGEST
    with pytest.raises(KeyError):
        code_for(Stage.TENSORS, Finding.VALUE)


def test_an_expectation_takes_its_stage_from_its_code():
    e = Expect.of(Code.TOKENIZER_STOP_ID, "tokenizer.stop.eos")
    assert (e.stage, e.code) == (Stage.TOKENIZER, Code.TOKENIZER_STOP_ID)
    assert str(e) == "tokenizer TOKENIZER_STOP_ID tokenizer.stop.eos"
    assert e.to_json() == {"stage": "tokenizer", "code": "TOKENIZER_STOP_ID", "field": "tokenizer.stop.eos"}
    assert str(Expect(None)) == "any rejection" and str(Expect(Stage.CONTAINER)) == "container * *"


def test_an_expectation_cannot_pair_a_code_with_another_stage():
    with pytest.raises(ValueError, match="belongs to stage metadata"):
        Expect(Stage.TOKENIZER, Code.METADATA_VALUE, "tokenizer.x")
