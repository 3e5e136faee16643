"""Python text from contract values: one literal builder, one `#` comment and one docstring sanitiser.

`py_literal` is the only way a value reaches generated Python (Note [Generated text] in
charter.codegen.common): `repr` for strings, which escapes quotes, backslashes and every
non-printable character (NUL, CR, LF, U+2028, U+0085, bidi controls, ...) with `\\x..`, `\\u....`
or `\\U........`, whose digit counts are fixed, so the literal is one line that `ast.literal_eval`
reads back as the same string; printable non-ASCII stays as is (generated Python is UTF-8).
"""

from __future__ import annotations

import functools
import math
import re
import struct

from charter.codegen.common.text import unicode_text

# PEP 263: a comment on line 1 or 2 matching `coding[:=]` sets the encoding the file is read in
# (`coding=unicode_escape` would turn the `\n` of a literal into a line break, and so into code).
_CODING = re.compile(r"(coding)(?=[:=])", re.IGNORECASE)


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
    if type(value) is str:  # kept: a mutation battery renders the same keys and names per mutant
        return _str_literal(value)
    if isinstance(value, str):
        return repr(unicode_text(value))
    if isinstance(value, (tuple, list)):
        items = ", ".join(py_literal(v) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in sorted(value.items())) + "}"
    raise TypeError(f"no Python literal for {type(value).__name__}")


@functools.lru_cache(maxsize=1 << 16)
def _str_literal(value: str) -> str:
    return repr(unicode_text(value))


def py_docstring(text: str) -> str:
    """Text for one line of a docstring: a comment's text (py_comment) without the quote that
    could close the docstring or the backslash that could start an escape."""
    return py_comment(text).replace("\\", "_").replace('"', "_")


def py_comment(text: str) -> str:
    """Text for a `#` comment: one line of printable characters (others become `_`) that is never
    a PEP 263 encoding declaration."""
    line = "".join(c if c.isprintable() else "_" for c in text)
    return _CODING.sub(r"\1_", line)
