"""Unicode edges of the renderers (AFN-007): Jinja2's `trim` is Python's `str.strip`, which also
removes the information separators U+001C..U+001F; MiniJinja's follows Rust's White_Space, which
does not. SmolLM2's template trims nothing (case edge-separators-not-trimmed pins that), so this
finding does not touch its cases; it is why a second renderer's agreement is compared per case and
a disagreement must be documented, never assumed away."""

from __future__ import annotations

import pytest

from charter.text import chat

SEPARATORS = "\x1c\x1d\x1e\x1f"


@pytest.mark.parametrize("edge", list(SEPARATORS) + ["\u3000", "\u00a0", "\u2003", "\x85", "\u2028"])
def test_trim_is_python_strip(edge):
    text = f"{edge} hi {edge}"
    req = {"messages": [{"role": "user", "content": text}]}
    r = chat.render("[{{ messages[0].content | trim }}]", {}, req)
    assert r.rendered == f"[{text.strip()}]" == "[hi]"


def test_minijinja_trim_keeps_information_separators():
    text = f"{SEPARATORS} hi {SEPARATORS}"
    req = {"messages": [{"role": "user", "content": text}]}
    ours = chat.render("[{{ messages[0].content | trim }}]", {}, req).rendered
    theirs, error = chat.minijinja_render("[{{ messages[0].content | trim }}]", {}, req)
    assert error is None
    assert ours == "[hi]"
    assert theirs == f"[{text}]"  # the documented disagreement (docs/provenance.md, "Text cases")


def test_trim_removes_whole_code_points_only():
    text = "\u3000\U0001F642\u3000"
    req = {"messages": [{"role": "user", "content": text}]}
    assert chat.render("{{ messages[0].content | trim }}", {}, req).rendered == "\U0001F642"
