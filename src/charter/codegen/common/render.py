"""One Jinja2 environment policy and one text normal form for every target.

Templates only loop and substitute (Note [Generated text] in charter.codegen.common); output has no
trailing spaces, LF line endings and exactly one trailing newline, so it is byte-for-byte stable.
"""

from __future__ import annotations

import jinja2


def environment(package: str, **globals_: object) -> jinja2.Environment:
    """The environment of one target package's `templates/` folder."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.globals.update(globals_)
    return env


def normalize(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).rstrip("\n") + "\n"
