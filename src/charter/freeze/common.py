"""Pieces both freezers share: naming constants, pinning limits, and observing the layout policy."""

from __future__ import annotations

import re
from collections import defaultdict

from charter.language import align_up
from charter.contract import braces
from charter.contract.models import RESERVED_NAMES

SHORT_ARRAY = 16  # arrays up to this many elements are pinned element by element
SHORT_STRING = 256  # longer strings (chat templates) are pinned by sha256
MAX_NAME = 64  # a contract name's length limit (charter.contract.models.Name)


def constant_name(text: str) -> str:
    """`attention.head_count_kv` -> `attention_head_count_kv`; always a valid contract name."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_") or "value"
    if name[0].isdigit() or name in RESERVED_NAMES:
        name = f"k_{name}"
    return name[:MAX_NAME]


def constant_names(texts: list[str], reserved=()) -> dict[str, str]:
    """Injective constant names for `texts`: those that read alike once made names (`a-b` and
    `a_b`, two non-ASCII keys that both become `value`, names cut at 64 characters) get `_2`,
    `_3`, ...; a text that is a name already keeps it; no name is ever one of `reserved`."""
    taken = set(reserved)
    out: dict[str, str] = {}
    exact = [t for t in texts if constant_name(t) == t and t not in taken]
    for text in exact + [t for t in texts if t not in exact]:
        base = constant_name(text)
        name, n = base, 2
        while name in taken:
            suffix = f"_{n}"
            name, n = base[:MAX_NAME - len(suffix)] + suffix, n + 1
        taken.add(name)
        out[text] = name
    return {t: out[t] for t in texts}


def layout_policy(path: str, spans: list[tuple[int, int]], data_offset: int, file_size: int,
                  alignment: int) -> dict:
    """The strictest layout policy the file satisfies (read back from the file itself)."""
    ordered = sorted(spans)
    is_sorted = spans == ordered
    packed, cursor = True, data_offset
    for start, end in ordered:
        if start != align_up(cursor, alignment) and not (cursor == data_offset and start == cursor):
            packed = False
        cursor = end
    end = ordered[-1][1] if ordered else data_offset
    if file_size == end:
        trailing = "reject"
    elif file_size <= align_up(end, alignment):
        trailing = "alignment"
    else:
        trailing = "allow"
    return {"sorted": is_sorted, "packed": packed, "trailing": trailing,
            "padding": "zero" if _padding_is_zero(path, ordered, data_offset, file_size, alignment) else "any"}


TRAILING = ("reject", "alignment", "allow")  # strictest first


def strictest_common(policies: list[dict]) -> dict:
    """The strictest layout policy every one of `policies` (each a file's own) allows."""
    return {"sorted": all(p["sorted"] for p in policies), "packed": all(p["packed"] for p in policies),
            "trailing": max((p["trailing"] for p in policies), key=TRAILING.index),
            "padding": "zero" if all(p["padding"] == "zero" for p in policies) else "any"}


def _padding_is_zero(path: str, ordered, data_offset: int, file_size: int, alignment: int) -> bool:
    """Read only the gaps between extents (each at most an alignment's worth when packed)."""
    gaps, cursor = [], data_offset
    for start, end in ordered:
        if start > cursor:
            gaps.append((cursor, start))
        cursor = max(cursor, end)
    if file_size > cursor:
        gaps.append((cursor, file_size))
    budget = 64 * 1024 * 1024
    with open(path, "rb") as f:
        for start, end in gaps:
            if end - start > budget:
                return False
            budget -= end - start
            f.seek(start)
            if f.read(end - start).count(0) != end - start:
                return False
    return True


def _template(name: str) -> tuple[str, int] | None:
    """`blk.7.attn_q.weight` -> (`blk.{i}.attn_q.weight`, 7): the first all-digit component."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.isdigit() and (part == "0" or not part.startswith("0")):
            return ".".join(parts[:i] + ["{i}"] + parts[i + 1:]), int(part)
    return None


def fold_tensors(items: list[tuple[str, tuple[int, ...], str]], by_value: dict[int, str],
                 layers: tuple[str, int] | None) -> list[dict]:
    """Rows of the contract's tensor list: per-layer names that every layer has with one shape and
    codec fold into one `{i}` pattern; everything else is listed by name. Deterministic order."""
    groups: dict[str, list] = defaultdict(list)
    singles = []
    for name, dims, codec in items:
        # A name with braces of its own is stated literally, never folded (Note [Brace escapes]).
        found = None if "{" in name or "}" in name else _template(name)
        if found:
            groups[found[0]].append((found[1], name, dims, codec))
        else:
            singles.append((name, dims, codec))
    rows = [_row(braces.escape(name), None, dims, codec, by_value) for name, dims, codec in sorted(singles)]
    for template in sorted(groups):
        members = sorted(groups[template])
        _, _, dims, codec = members[0]
        uniform = all(m[2] == dims and m[3] == codec for m in members)
        if len(members) > 1 and uniform and [m[0] for m in members] == list(range(len(members))):
            count = layers[0] if layers and layers[1] == len(members) else len(members)
            rows.append(_row(template, {"i": count}, dims, codec, by_value))
        else:
            rows.extend(_row(name, None, d, c, by_value) for _, name, d, c in members)
    return rows


def _row(name: str, repeat, dims, codec: str, by_value: dict[int, str]) -> dict:
    row: dict = {"name": name}
    if repeat:
        row["repeat"] = repeat
    role = re.sub(r"\{i\}|\.weight$|\.bias$", "", name)
    row["role"] = re.sub(r"[^a-z0-9]+", "_", role.lower()).strip("_") or "tensor"
    row["shape"] = [by_value.get(d, d) for d in dims]
    row["codec"] = codec
    return row
