"""Globs of named exclusions, compiled for the C++ runtime exactly as fnmatch reads them.

`compile_glob` follows fnmatch.translate (CPython 3.11) token for token, and reads each bracket
expression through the regular-expression parser that fnmatch itself ends in, so a class means
for C++ what it means for fnmatch.fnmatchcase: the same ranges, the same negation, the same empty
class that never matches. `match` is the Python twin of rt::glob_match, for tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

try:  # the parser fnmatch's regex goes through
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
    from re import _constants as _sre_const  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_constants as _sre_const  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]


@dataclass(frozen=True)
class Token:
    op: str  # "char" | "any" | "star" | "class" | "never"
    ch: int = 0
    negate: bool = False
    ranges: tuple[tuple[int, int], ...] = ()


def _class(stuff: str) -> Token:
    """The token for fnmatch's `[stuff]` regex class (after its own escaping)."""
    parsed = list(_sre_parse.parse(f"[{stuff}]"))
    if len(parsed) != 1:
        raise ValueError(f"unexpected class {stuff!r}")
    op, av = parsed[0]
    if op is _sre_const.LITERAL:
        return Token("class", ranges=((av, av),))
    if op is _sre_const.NOT_LITERAL:
        return Token("class", negate=True, ranges=((av, av),))
    if op is not _sre_const.IN:
        raise ValueError(f"unexpected class {stuff!r}: {op}")
    negate, ranges = False, []
    for item, val in av:
        if item is _sre_const.NEGATE:
            negate = True
        elif item is _sre_const.LITERAL:
            ranges.append((val, val))
        elif item is _sre_const.RANGE:
            ranges.append(tuple(val))
        else:
            raise ValueError(f"unexpected class item {item} in {stuff!r}")
    return Token("class", negate=negate, ranges=tuple(ranges))


def compile_glob(pat: str) -> tuple[Token, ...]:
    """fnmatch.translate (3.11), emitting tokens instead of regex text."""
    res: list[Token] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        i = i + 1
        if c == "*":
            if not res or res[-1].op != "star":
                res.append(Token("star"))
        elif c == "?":
            res.append(Token("any"))
        elif c == "[":
            j = i
            if j < n and pat[j] == "!":
                j = j + 1
            if j < n and pat[j] == "]":
                j = j + 1
            while j < n and pat[j] != "]":
                j = j + 1
            if j >= n:
                res.append(Token("char", ord("[")))
            else:
                stuff = pat[i:j]
                if "-" not in stuff:
                    stuff = stuff.replace("\\", r"\\")
                else:
                    chunks = []
                    k = i + 2 if pat[i] == "!" else i + 1
                    while True:
                        k = pat.find("-", k, j)
                        if k < 0:
                            break
                        chunks.append(pat[i:k])
                        i = k + 1
                        k = k + 3
                    chunk = pat[i:j]
                    if chunk:
                        chunks.append(chunk)
                    else:
                        chunks[-1] += "-"
                    for k in range(len(chunks) - 1, 0, -1):
                        if chunks[k - 1][-1] > chunks[k][0]:
                            chunks[k - 1] = chunks[k - 1][:-1] + chunks[k][1:]
                            del chunks[k]
                    stuff = "-".join(s.replace("\\", r"\\").replace("-", r"\-") for s in chunks)
                stuff = re.sub(r"([&~|])", r"\\\1", stuff)
                i = j + 1
                if not stuff:
                    res.append(Token("never"))
                elif stuff == "!":
                    res.append(Token("any"))
                else:
                    if stuff[0] == "!":
                        stuff = "^" + stuff[1:]
                    elif stuff[0] in ("^", "["):
                        stuff = "\\" + stuff
                    res.append(_class(stuff))
        else:
            res.append(Token("char", ord(c)))
    return tuple(res)


def _one(t: Token, c: int) -> bool:
    if t.op == "char":
        return c == t.ch
    if t.op == "any":
        return True
    if t.op == "class":
        return any(lo <= c <= hi for lo, hi in t.ranges) != t.negate
    return False


def match(tokens: tuple[Token, ...], name: str) -> bool:
    """The matcher of rt::glob_match (charter/checks.hpp), line for line."""
    s = [ord(ch) for ch in name]
    p = i = 0
    star_p, star_i = None, 0
    while i < len(s):
        if p < len(tokens) and tokens[p].op == "star":
            star_p, star_i = p, i
            p += 1
        elif p < len(tokens) and _one(tokens[p], s[i]):
            p += 1
            i += 1
        elif star_p is not None:
            p = star_p + 1
            star_i += 1
            i = star_i
        else:
            return False
    while p < len(tokens) and tokens[p].op == "star":
        p += 1
    return p == len(tokens)
