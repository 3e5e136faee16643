"""The independent implementations agree on text nobody chose: generated strings over the scripts,
marks, spaces and controls the Unicode cases pin (AFN-007)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from charter.text.tables import from_tokenizer_json, read_packaged_json

ALPHABET = st.sampled_from(list("aZ09 .,'!?-_\t\n[]#") + ["\u00e9", "e\u0301", "\u0928\u094d", "\u4eca", "\u3053",
                                                          "\U0001F642", "\u200d", "\u200f", "\u00a0", "\u3000",
                                                          "\x00", "\x1f", "\ufffd", "[CLS]", "[MASK]", "##"])
TEXT = st.lists(ALPHABET, max_size=24).map("".join)


@pytest.fixture(scope="module")
def minilm_pair(minilm):
    from charter.text.engines import HFTokenizer
    from charter.text.wordpiece import WordPiece

    lc, _ = minilm
    definition = from_tokenizer_json(read_packaged_json(lc.contract.source.tokenizer_json))
    return HFTokenizer(definition), WordPiece(definition)


@settings(max_examples=60, deadline=None)
@given(text=TEXT, special=st.booleans(), add=st.booleans())
def test_wordpiece_transcription_agrees_with_tokenizers(minilm_pair, text, special, add):
    hf, wp = minilm_pair
    assert wp.encode(text, special, add) == hf.encode(text, special, add)
    ids = hf.encode(text, special, add)
    for skip in (False, True):
        assert wp.decode(ids, skip) == hf.decode(ids, skip)


@pytest.fixture(scope="module")
def smollm2_pair(smollm2_definition):
    from charter.text.engines import ByteLevelTables, LlamaCppTokenizer

    llama = LlamaCppTokenizer(smollm2_definition.gguf_path)
    yield ByteLevelTables(smollm2_definition), llama
    llama.llm.close()


@pytest.mark.capture
@settings(max_examples=60, deadline=None)
@given(text=TEXT.map(lambda t: t.replace("[CLS]", "<|im_end|>")), special=st.booleans())
def test_gguf_bpe_agrees_with_llama_cpp(smollm2_pair, text, special):
    hf, llama = smollm2_pair
    ids = llama.encode(text, special, False)
    assert hf.encode(text, special, False) == ids
    assert hf.decode_bytes(ids, False) == llama.decode(ids, False)
