"""The shipped text contracts verify offline, hold the cases issue 19 asks for, and fail closed."""

from __future__ import annotations

import pytest

from charter.cli import main
from charter.contract.load import LoadedContract
from charter.diagnostics import Code
from charter.text import verify as tv
from charter.text.contract import TextContract
from tests.text.conftest import MINILM, SMOLLM2


@pytest.mark.parametrize("which", ["minilm", "smollm2"])
def test_shipped_contract_verifies_offline(which, request):
    lc, cs = request.getfixturevalue(which)
    result = tv.verify(lc, cs)
    assert result.diagnostics == []
    assert result.crosschecked >= 59


@pytest.mark.parametrize("which", ["minilm", "smollm2"])
def test_case_counts_meet_the_issue(which, request):
    lc, cs = request.getfixturevalue(which)
    c = lc.contract
    assert c.count_of("encode") + c.count_of("decode") >= 59
    assert c.count_of("decode_boundary") >= 6
    definition = tv.load_definition(lc, cs)
    assert [t.id for t in c.tokenizer.added] == [a["id"] for a in definition.added]  # every added token
    if which == "smollm2":
        assert c.count_of("chat") + c.count_of("chat_controls") >= 39
        assert c.count_of("chat_controls") == 5


def test_every_case_has_a_provenance_class_and_controls_state_their_rule(smollm2, minilm):
    for lc, _ in (smollm2, minilm):
        c = lc.contract
        for case in [*c.encode, *c.decode, *(c.chat.cases if c.chat else [])]:
            assert case.cls in ("upstream_capture", "contract_control")
            assert (case.rule is not None) == (case.cls == "contract_control")


def _with(lc, edit):
    data = lc.doc.data
    import copy

    data = copy.deepcopy(data)
    edit(data)
    return LoadedContract(TextContract.model_validate(data), lc.doc, lc.path)


def test_a_changed_id_is_a_located_crosscheck_finding(minilm):
    lc, cs = minilm

    def edit(d):
        d["encode"][2]["ids"][0] += 1

    result = tv.verify(_with(lc, edit), cs)
    (d,) = result.diagnostics
    assert d.code is Code.TEXT_CROSSCHECK and d.field == "encode[2].ids"
    assert d.location.file.endswith("all-minilm-l6-v2-text.yaml") and d.location.line > 0


def test_a_stale_finding_is_reported(smollm2):
    lc, cs = smollm2
    i = next(i for i, c in enumerate(lc.contract.decode) if c.findings)

    def edit(d):
        d["decode"][i]["findings"][0]["text"] = "something else"

    result = tv.verify(_with(lc, edit), cs)
    assert [(d.code, d.field) for d in result.diagnostics] == [(Code.TEXT_CROSSCHECK, f"decode[{i}].bytes")]


def test_a_producer_at_another_version_is_refused(smollm2):
    lc, cs = smollm2

    def edit(d):
        d["producers"]["crosscheck"]["version"] = "0.0.1"

    (d,) = tv.verify(_with(lc, edit), cs).diagnostics
    assert d.code is Code.TEXT_PRODUCER and d.field == "producers.crosscheck.version"


def test_cli_verify_and_exit_codes(capsys, tmp_path):
    assert main(["fixtures", "verify", str(MINILM), str(SMOLLM2)]) == 0
    out = capsys.readouterr().out
    assert "text cases" in out and "documented findings" in out
    bad = tmp_path / "specs" / "text" / "x.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_text(MINILM.read_text().replace("model: WordPiece", "model: BPE"))
    assert main(["fixtures", "verify", "--search", str(MINILM.parents[1]), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "TEXT_TOKENIZER tokenizer.model: expected 'BPE', got 'WordPiece'" in out


def test_capture_reproduces_the_minilm_cases(minilm):
    lc, cs = minilm  # the pinned producer, tokenizers, is in the test extra
    result = tv.capture(lc, cs)
    assert result.diagnostics == []
    assert result.cases == sum(c.cls == "upstream_capture" for c in [*lc.contract.encode, *lc.contract.decode])


@pytest.mark.capture
def test_capture_reproduces_the_smollm2_cases(smollm2):
    lc, cs = smollm2
    result = tv.capture(lc, cs)
    assert result.diagnostics == []
    assert result.cases >= 59 + 36


@pytest.mark.parametrize("edit, code, field", [
    (lambda d: d["source"]["gguf"].update(artifact="tiny-llama-gguf"), Code.TEXT_SOURCE, "source"),
    (lambda d: d["tokenizer"]["logits"].update(tensor="output.weight"), Code.TEXT_VOCABULARY, "tokenizer.logits.tensor"),
    (lambda d: d["tokenizer"]["logits"].update(rows=49153), Code.TEXT_VOCABULARY, "tokenizer.logits.rows"),
    (lambda d: d["tokenizer"]["config"].pop("tokenizer.ggml.add_bos_token"), Code.TEXT_TOKENIZER,
     "tokenizer.config.tokenizer.ggml.add_bos_token"),
    (lambda d: d["tokenizer"]["config"].update({"tokenizer.ggml.add_bos_token": 0}), Code.TEXT_TOKENIZER,
     "tokenizer.config.tokenizer.ggml.add_bos_token"),
    (lambda d: d["chat"]["variables"].update(bos_token="<s>"), Code.TEXT_TEMPLATE, "chat.variables.bos_token"),
    (lambda d: d["decode"][0]["ids"].append(-5), Code.TEXT_CROSSCHECK, "decode[0]"),
])
def test_bad_facts_are_diagnostics_not_tracebacks(smollm2, edit, code, field):
    lc, cs = smollm2
    diagnostics = tv.verify(_with(lc, edit), cs).diagnostics
    assert diagnostics and diagnostics[0].code is code and diagnostics[0].field == field, diagnostics


def test_a_gguf_converted_with_the_wrong_pre_tokenizer_is_caught_by_behaviour(smollm2, smollm2_definition):
    """llama.cpp#7476's class of bug: the same tables with another pre-tokenizer. Beyond the `pre`
    fact, the cases themselves fail. Not where one would guess: SmolLM2's vocabulary has no multi-digit
    tokens, so a digit run comes out as single digits either way (`numbers`, `digits-split` agree);
    a space before digits does not (GPT-2's regex glues it to the run, SmolLM2's splits digits first)."""
    import dataclasses

    lc, cs = smollm2
    wrong = dataclasses.replace(smollm2_definition, pre="gpt2", _digests={})
    diagnostics = tv.verify(lc, cs, definition=wrong).diagnostics
    assert diagnostics[0].code is Code.TEXT_TOKENIZER and diagnostics[0].field == "tokenizer.pre"
    failed = {lc.contract.encode[int(d.field.split("[")[1].split("]")[0])].name
              for d in diagnostics if d.code is Code.TEXT_CROSSCHECK}
    assert failed == {"spaces-before-digits", "pre-other-numerals", "math-letters"}
