"""The leaves that differ between two versions of one contract document, and one leaf applied alone.

A leaf is a scalar, or a list whose length changed (its items cannot be paired by position), or a
mapping key added, removed or renamed (one key gone and one new key holding an equal value: the
battery's `rename` operator, reported as one change). Equality is exact: types must match (a bool
is not an int) and floats compare by their bits (Note [Float bits]), so `1.0` -> `1` and NaN ->
NaN are what the strict loader reads them as.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<absent>"})()


@dataclass(frozen=True)
class Leaf:
    path: tuple  # in the OLD document (a rename: the old key's path)
    old: Any  # MISSING: added
    new: Any  # MISSING: removed
    new_path: tuple | None = None  # a renamed key's path in NEW

    @property
    def at(self) -> tuple:
        """The path of the fact in NEW (the parent, for a removed key)."""
        if self.new_path is not None:
            return self.new_path
        return self.path[:-1] if self.new is MISSING else self.path


def same(a: Any, b: Any) -> bool:
    """Exact equality of plain YAML data (Note [Float bits] for floats)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def changed_leaves(old: Any, new: Any, path: tuple = ()) -> list[Leaf]:
    """Every leaf that differs, in NEW's order (removed keys after the kept ones)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[Leaf] = []
        gone = [k for k in old if k not in new]
        added = [k for k in new if k not in old]
        if len(gone) == 1 and len(added) == 1 and same(old[gone[0]], new[added[0]]):
            renamed = Leaf((*path, gone[0]), gone[0], added[0], (*path, added[0]))
            return [renamed, *(leaf for k in new if k in old for leaf in changed_leaves(old[k], new[k], (*path, k)))]
        for k in new:
            if k in old:
                out.extend(changed_leaves(old[k], new[k], (*path, k)))
            else:
                out.append(Leaf((*path, k), MISSING, new[k]))
        out.extend(Leaf((*path, k), old[k], MISSING) for k in gone)
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [leaf for i, (a, b) in enumerate(zip(old, new)) for leaf in changed_leaves(a, b, (*path, i))]
    return [] if same(old, new) else [Leaf(path, old, new)]


def applied(data: Any, leaf: Leaf) -> Any:
    """`data` (OLD) with this one leaf as NEW has it; every other subtree is shared, not copied."""
    return _set(data, leaf.path, leaf)


def _set(node: Any, path: tuple, leaf: Leaf) -> Any:
    key, rest = path[0], path[1:]
    if isinstance(node, list):
        copy = list(node)
        copy[key] = _set(node[key], rest, leaf) if rest else leaf.new
        return copy
    if rest:
        return {k: (_set(v, rest, leaf) if k == key else v) for k, v in node.items()}
    if leaf.new_path is not None:  # a rename keeps the key's place
        return {(leaf.new if k == key else k): v for k, v in node.items()}
    if leaf.new is MISSING:
        return {k: v for k, v in node.items() if k != key}
    if key in node:
        return {k: (leaf.new if k == key else v) for k, v in node.items()}
    return {**node, key: leaf.new}


def field_name(path: tuple) -> str:
    """A leaf path as the battery names contract leaves: `tensors[0].role`, `metadata.keys.x`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
