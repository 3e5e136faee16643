"""Braces in contract text: `{name}` is a placeholder, `{{` and `}}` are literal braces.

Note [Brace escapes]
~~~~~~~~~~~~~~~~~~~~
Two kinds of contract strings hold placeholders: tensor names (`blk.{i}.attn_q.weight`, bound by
`repeat`) and identity values (`{model.architecture}`, `{model.family}`). An artifact's own text
can hold braces too: a tensor literally named `blk.{i}.norm`, a `general.basename` of
"{model.architecture}". So, as in Python's `str.format`, a literal brace is written twice, and
any other brace (a lone `{`, an unknown `{name}`) is an error at `charter check`: text is never
read as a placeholder by accident, and `charter freeze` writes artifact text with `escape`.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


def escape(text: str) -> str:
    """The contract spelling of literal text: every brace doubled."""
    return text.replace("{", "{{").replace("}", "}}")


def parts(text: str) -> list[tuple[str, str]]:
    """(kind, text) pieces, kind `literal` or `placeholder`, in order; ValueError for a brace that is
    neither doubled nor a `{name}` (the message says which)."""
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        if m.start() > pos:
            out.append(("literal", text[pos:m.start()]))
        token = m.group(0)
        if token in ("{{", "}}"):
            out.append(("literal", token[0]))
        elif m.group(1) is not None:
            out.append(("placeholder", m.group(1)))
        else:
            raise ValueError(f"a lone {token!r} at character {m.start()}: write a literal brace twice "
                             f"({token * 2}), a placeholder as {{name}}")
        pos = m.end()
    if pos < len(text):
        out.append(("literal", text[pos:]))
    return out


def placeholders(text: str) -> list[str]:
    return [t for kind, t in parts(text) if kind == "placeholder"]


def unescape(text: str) -> str:
    """The literal text of a string without placeholders (ValueError if it has one)."""
    found = placeholders(text)
    if found:
        raise ValueError(f"unexpected placeholder {{{found[0]}}}")
    return "".join(t for _, t in parts(text))


def has_literal_braces(text: str) -> bool:
    return any(kind == "literal" and ("{" in t or "}" in t) for kind, t in parts(text))
