"""Trust segments (AFN-006): caller text stays DATA whatever it spells; tracking fails closed."""

from __future__ import annotations

import pytest

from charter.text import chat
from charter.text.verify import segment_ids

REQ = {"tools": None, "add_generation_prompt": True}


def test_control_spellings_in_every_role_stay_data(smollm2, smollm2_definition):
    lc, _ = smollm2
    d = smollm2_definition
    spellings = "".join(a["content"] for a in d.added)
    messages = [{"role": r, "content": f"x{spellings}y"} for r in ("system", "user", "assistant", "tool")]
    r = chat.render(d.template, lc.contract.chat.variables, {**REQ, "messages": messages})
    assert r.rendered == chat.plain_render(d.template, lc.contract.chat.variables, {**REQ, "messages": messages})
    data = [t for k, t in r.segments if k == "data"]
    assert all(f"x{spellings}y" in data for _ in messages)
    assert all(spellings not in t for k, t in r.segments if k == "control")
    from charter.text.engines import HFTokenizer

    engine = HFTokenizer(d)
    control_ids = {a["id"] for a in d.added if a["special"]}
    ids, promoted = segment_ids(engine, r.segments, control_ids)
    assert promoted == []
    flat = engine.encode(r.rendered, True, False)
    assert sum(x in control_ids for x in flat) > sum(x in control_ids for x in ids)  # what flattening would do


def test_segments_are_gap_free_and_alternate(smollm2):
    lc, _ = smollm2
    for case in lc.contract.chat.cases:
        if case.segments is None:
            continue
        assert "".join(s.text for s in case.segments) == case.rendered
        assert all(a.kind != b.kind for a, b in zip(case.segments, case.segments[1:]))


def test_untracked_derivation_fails_closed():
    req = {"messages": [{"role": "user", "content": "<|im_end|>"}]}
    with pytest.raises(chat.SegmentError):
        chat.render("{{ messages[0].content ~ '!' }}", {}, req)
    with pytest.raises(chat.SegmentError):
        chat.render("{{ ['a', messages[0].content] | join(',') }}", {}, req)


def test_tracked_operations_keep_data_data():
    req = {"messages": [{"role": "user", "content": "  hi <|im_end|>  "}]}
    r = chat.render("<|im_start|>{{ messages[0].content | trim | upper }}{{ messages[0] | tojson }}", {}, req)
    assert r.segments == [("control", "<|im_start|>"),
                          ("data", 'HI <|IM_END|>{"role": "user", "content": "  hi <|im_end|>  "}')]
    assert r.rendered == '<|im_start|>HI <|IM_END|>{"role": "user", "content": "  hi <|im_end|>  "}'


def test_errors_are_the_plain_renders_errors():
    template = "{{ 'a' + messages[0].content }}"
    for message in ({"role": "user"}, {"role": "user", "content": None}, {"role": "user", "content": 3},
                    {"role": "user", "content": [{"type": "text"}]}):
        r = chat.render(template, {}, {"messages": [message]})
        with pytest.raises(Exception) as exc:
            chat.plain_render(template, {}, {"messages": [message]})
        assert r.error == chat.error_text(exc.value) and r.rendered is None and r.segments is None


def test_raise_exception_and_tojson_follow_transformers():
    r = chat.render("{{ raise_exception('no system role') }}", {}, {"messages": []})
    assert r.error == "TemplateError: no system role"
    r = chat.render("{{ x | tojson }}", {"x": {"b": "<é>", "a": 1}}, {"messages": []})
    assert r.rendered == '{"b": "<é>", "a": 1}'  # not HTML-escaped, not sorted, not ASCII-escaped


def test_policy_refuses_media_and_unknown_roles(smollm2):
    lc, _ = smollm2
    controls = [c for c in lc.contract.chat.cases if c.cls == "contract_control"]
    assert {c.name for c in controls} >= {"image-part", "unknown-role"}
    for c in controls:
        assert chat.check_policy(c, lc.contract.chat.policy) == c.error


from hypothesis import given, settings, strategies as st  # noqa: E402

PIECES = st.sampled_from(["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<file_sep>", "assistant\n", "system",
                          "hi", " ", "\n", "\u00e9", "\U0001F642", "{{ x }}", "\x1f", "\x00", "<|im_end", "|>"])
MESSAGES = st.lists(st.fixed_dictionaries({
    "role": st.sampled_from(["system", "user", "assistant", "tool"]),
    "content": st.lists(PIECES, max_size=6).map("".join)}), max_size=5)


@pytest.fixture(scope="module")
def smollm2_engine(smollm2_definition):
    from charter.text.engines import HFTokenizer

    return HFTokenizer(smollm2_definition)


@settings(max_examples=60, deadline=None)
@given(messages=MESSAGES, agp=st.booleans())
def test_segments_hold_for_any_request(smollm2, smollm2_definition, smollm2_engine, messages, agp):
    lc, _ = smollm2
    d = smollm2_definition
    variables = lc.contract.chat.variables
    req = {"messages": messages, "tools": None, "add_generation_prompt": agp}
    r = chat.render(d.template, variables, req)
    assert r.error is None
    assert r.rendered == chat.plain_render(d.template, variables, req)
    assert "".join(t for _, t in r.segments) == r.rendered
    data = "".join(t for k, t in r.segments if k == "data")
    assert data == "".join(m["role"] + m["content"] for m in messages)  # exactly the caller's text, in order
    control_ids = {a["id"] for a in d.added if a["special"]}
    ids, promoted = segment_ids(smollm2_engine, r.segments, control_ids)
    assert promoted == []
    # The template's own atoms, and only those: <|im_start|> and <|im_end|> per message, per default
    # system prompt (when the first message is not a system one), and <|im_start|> for the prompt.
    default_system = bool(messages) and messages[0]["role"] != "system"
    assert sum(x in control_ids for x in ids) == 2 * len(messages) + 2 * default_system + agp


@pytest.mark.capture
def test_raise_exception_type_differs_between_transformers_and_llama_cpp_python():
    """A documented difference of the two Jinja2 environments (docs/provenance.md): transformers'
    `raise_exception` raises TemplateError, llama-cpp-python's raises ValueError. SmolLM2's template
    never raises, so no shipped case depends on it."""
    from types import SimpleNamespace

    from charter.text.verify import upstream_render

    template = "{{ raise_exception('only user and assistant roles are supported') }}"
    req = {"messages": [], "tools": None, "add_generation_prompt": False}
    ours = chat.render(template, {}, req).error
    theirs = upstream_render(template, SimpleNamespace(variables={}), req)[1]
    assert ours == "TemplateError: only user and assistant roles are supported"
    assert theirs == "ValueError: only user and assistant roles are supported"
