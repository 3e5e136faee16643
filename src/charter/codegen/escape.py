"""The only ways a contract's strings reach generated code: one escaping function per target.

A contract can never inject code: every string is emitted as a literal built here, never spliced
into source text by a template.
"""

from __future__ import annotations

import math
import struct


def py_literal(value: object) -> str:
    """A Python literal that evaluates to exactly `value` (str, int, float, bool, None, tuples, dicts)."""
    if value is None or isinstance(value, (bool, int)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):  # sign, quiet bit and payload are part of the value (Note [Float bits])
            return f"__import__('struct').unpack('<d', bytes.fromhex('{struct.pack('<d', value).hex()}'))[0]"
        if math.isinf(value):
            return f"float({repr(value)!r})"
        return repr(value)
    if isinstance(value, str):
        return _py_str(value)
    if isinstance(value, (tuple, list)):
        items = ", ".join(py_literal(v) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in sorted(value.items())) + "}"
    raise TypeError(f"no Python literal for {type(value).__name__}")


def _py_str(s: str) -> str:
    """repr() escapes quotes, backslashes, NUL and non-printables; make sure of the rest too."""
    out = repr(s)
    # repr leaves printable non-ASCII as is; U+2028/2029 are escaped by repr already (not printable).
    assert "\n" not in out and "\r" not in out
    return out


def py_comment(text: str) -> str:
    """Text for a `#` comment: one line, no control characters."""
    return "".join(c if c.isprintable() else "?" for c in text)[:200]
