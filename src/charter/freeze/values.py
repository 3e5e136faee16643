"""`charter freeze --values`: the value policy the frozen file meets (Note [Value rules]).

A frozen contract pins the bytes by digest; a value policy is what still holds once the digest is
dropped to admit a family of files. With --values, freeze reads every tensor the way the payload
stage does (whole blocks, at most 1 MiB at a time) and writes `values: {default: finite}`, with
the tensors it cannot state that of as named exceptions, so the contract always admits its file:
`no_value_rule`, the tensors of a codec without a value rule (Q8_1, safetensors' F8 family, the
row-header types), and `not_finite`, the tensors that hold an infinity or a NaN. Tensor names are
written as fnmatch patterns that match only themselves. No bounds are written: the least and
greatest element of an integer tensor are facts of this file, not its range (write bounds by hand).
"""

from __future__ import annotations

import re
from pathlib import Path


def _literal(name: str) -> str:
    """An fnmatch pattern matching exactly `name`: each of `*?[` in a class of its own."""
    return re.sub(r"([*?\[])", r"[\1]", name)


def value_policy(path: Path, fmt: str) -> dict:
    from charter.admission.runtime import PAYLOAD_CHUNK, block_bytes_of
    from charter.admission.values import tensor_rules
    from charter.admission.view import read_view
    from charter.formats.values import VALUE_FIELDS

    view = read_view(str(path), fmt)
    fields = VALUE_FIELDS[fmt]
    rules = tensor_rules(view.tensors, (("default", ("*",), True, None),), fmt, block_bytes_of(fmt))
    no_rule = [t.name for t in view.tensors if t.codec not in fields]
    bad = []
    with open(path, "rb") as f:
        for t in sorted(view.tensors, key=lambda t: t.start):
            rule = rules.get(t.name)
            step = rule.chunk_bytes(PAYLOAD_CHUNK) if rule is not None else 0
            for pos in range(t.start, t.end, step) if rule is not None else ():
                f.seek(pos)
                if rule.first_bad(f.read(min(step, t.end - pos)), 0) is not None:
                    bad.append(t.name)
                    break
    if "" in no_rule + bad:  # safetensors allows the empty name; a pattern cannot be empty
        from charter.freeze import FreezeRefused

        raise FreezeRefused(f"{path}: --values would except the tensor with the empty name, which no pattern states")
    exceptions = {}
    if no_rule:
        exceptions["no_value_rule"] = {"tensors": [_literal(n) for n in no_rule],
                                       "reason": "codecs without a value rule (Note [Value rules])"}
    if bad:
        exceptions["not_finite"] = {"tensors": [_literal(n) for n in bad],
                                    "reason": "holds an infinity or a NaN in the frozen file"}
    return {"default": "finite", **({"exceptions": exceptions} if exceptions else {})}
