"""Contract mutation operators: change one leaf of the artifact contract or of its model.

Operators follow the leaf's type (ints: ±1, 0, uint32 max; floats: next float32, NaN; strings:
one-character edit, case, empty; bools: flip; enums: every other member; lists: drop, duplicate;
digests and float bit patterns: one bit; expressions: `(e) + 1` (a value bound's: `(e) + 1` and
`(e) - 1`); invariants: negation; mapping
keys: rename). A leaf whose change provably cannot change what admission checks is declared
equivalent here, with the reason, by the rules in EQUIVALENT; it is listed, never silently skipped.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
from collections.abc import Iterator
from enum import Enum
from typing import Any, get_args

import numpy as np
from pydantic import BaseModel

from charter.mutation.mutant import Mutant
from charter.contract import models

Path = tuple

def _members(model: type[BaseModel], field: str) -> tuple[str, ...]:
    """The values a contract field accepts, read off its Literal or Enum type (never restated here)."""
    kind = model.model_fields[field].annotation
    args = tuple(a for a in get_args(kind) if a is not type(None)) or (kind,)
    members: list[str] = []
    for arg in args:
        if isinstance(arg, type) and issubclass(arg, Enum):
            members.extend(m.value for m in arg)
        else:
            members.extend(get_args(arg) or (arg,))
    return tuple(members)


# Dotted path pattern (list indices dropped) -> every member its model type accepts.
ENUMS = {
    "status": _members(models.Header, "status"),
    "format": _members(models.ArtifactContract, "format"),
    "metadata.extra_keys": _members(models.Metadata, "extra_keys"),
    "layout.trailing": _members(models.Layout, "trailing"),
    "layout.padding": _members(models.Layout, "padding"),
    "values.default": _members(models.ValuePolicy, "default"),
    "metadata.keys.*.type": _members(models.MetaFact, "type"),
    "tokenizer.keys.*.type": _members(models.MetaFact, "type"),
    "config.keys.*.type": _members(models.ConfigFact, "type"),
    "metadata.keys.*.element": _members(models.MetaFact, "element"),
    "tokenizer.keys.*.element": _members(models.MetaFact, "element"),
}

# (side, dotted path pattern, reason): leaves whose change cannot change what admission checks.
EQUIVALENT = (
    ("*", "description", "documentation: not a fact about the artifact"),
    ("artifact", "id", "the id names the contract; admission checks the artifact, not the contract's name"),
    ("artifact", "source.*", "says where to find the file; its bytes are pinned by payload.file_sha256"),
    ("artifact", "source", "says where to find the file; its bytes are pinned by payload.file_sha256"),
    ("model", "source.*", "upstream provenance of the model, recorded for people; no artifact field states it"),
    ("model", "id", "renaming the model breaks the artifact's reference: checked by `charter check`, not admission"),
    ("artifact", "tensors[*].role", "a role names the tensor's purpose for diagnostics and kernels; GGUF does not "
                                    "store roles"),
    ("model", "tokenizer.non_stop_ids*", "non-stop ids constrain the stop set when the contract loads; no artifact "
                                         "field states them"),
    ("model", "layer_pattern.kinds*", "documentation of the layer kinds"),
    ("model", "status", "a model's status bounds its artifacts' (checked when contracts load); raising it cannot "
                        "be refuted by an artifact"),
    ("artifact", "stores.*.codec.name", "names the codec for people and reports; the store manifest states the codec "
                                        "by id (stores.*.codec.id is checked)"),
    ("artifact", "stores.*.codec.label", "the codec's qualification label is a claim for people; the manifest states "
                                         "the codec by id (stores.*.codec.id is checked)"),
    ("artifact", "exclusions[*].reason", "documentation: why the class is excluded"),
)

# Changes that only relax a policy the conforming artifact already satisfies; the artifact-side
# mutant named in the reason proves the stricter policy is enforced.
RELAXATIONS = (
    ("artifact", "metadata.extra_keys", "allow", "relaxes to allow extra keys; artifact mutant 'extra key' proves reject"),
    ("artifact", "layout.sorted", False, "relaxes ordering; artifact mutant 'alias neighbour offset' exercises order"),
    ("artifact", "layout.packed", False, "relaxes packing; gaps are proven by artifact layout mutants"),
    ("artifact", "layout.trailing", "alignment", "relaxes trailing bytes; artifact mutant 'append trailing bytes' "
                                                 "proves reject"),
    ("artifact", "layout.trailing", "allow", "relaxes trailing bytes; artifact mutant 'append trailing bytes' "
                                             "proves reject"),
    ("artifact", "layout.padding", "any", "relaxes padding content (a payload-stage policy)"),
    ("artifact", "values.default", "unchecked", "relaxes the value policy; the value mutants (charter.mutation."
                                                "value_ops) prove `finite` is enforced"),
)


def dotted(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _pattern_path(path: Path) -> str:
    return dotted(tuple("*" if isinstance(p, int) else p for p in path)).replace(".*", "[*]")


def _matches(text: str, generic: str, pattern: str) -> bool:
    """`tensors[*].role` means any index; other patterns are fnmatch patterns over the dotted path."""
    if "[*]" in pattern:
        return fnmatch.fnmatchcase(generic, pattern.replace("[*]", "[[]*[]]"))
    return fnmatch.fnmatchcase(text, pattern)


def equivalence(side: str, path: Path, new_value: Any) -> str | None:
    text, reason = _by_path(side, path)
    if reason is not None:
        return reason
    for s, pattern, value, reason in RELAXATIONS:
        if s == side and text == pattern and new_value == value:
            return reason
    return None


@functools.lru_cache(maxsize=1 << 16)
def _by_path(side: str, path: Path) -> tuple[str, str | None]:
    """The leaf's dotted path and the EQUIVALENT reason its path matches, once per leaf (every
    operator of a leaf asks)."""
    text = dotted(path)
    generic = _pattern_path(path)
    return text, next((reason for s, pattern, reason in EQUIVALENT
                       if s in (side, "*") and _matches(text, generic, pattern)), None)


def leaves(data: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield from leaves(v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from leaves(v, path + (i,))
    else:
        yield path, data


def _copy_path(data: Any, path: Path) -> tuple[Any, Any]:
    """(copy of `data`, the copied container that holds `path[-1]`): only the containers on the
    way to the leaf are copied, every other subtree is shared with `data`. A deep copy of the whole
    document per mutant made a battery quadratic in the contract's size (issue 14); sharing is safe
    because nothing downstream writes to a contract's data (tests/mutation/test_contract_ops.py)."""
    out = copy.copy(data)
    node = out
    for part in path[:-1]:
        node[part] = copy.copy(node[part])
        node = node[part]
    return out, node


def _set(data: Any, path: Path, value: Any) -> Any:
    out, node = _copy_path(data, path)
    node[path[-1]] = value
    return out


def _rename_key(data: Any, path: Path, new: str) -> Any:
    out, node = _copy_path(data, path)
    items = [(new if k == path[-1] else k, v) for k, v in node.items()]
    node.clear()
    node.update(items)
    return out


def _drop(data: Any, path: Path) -> Any:
    out, node = _copy_path(data, path)
    del node[path[-1]]
    return out


def _duplicate(data: Any, path: Path) -> Any:
    out, node = _copy_path(data, path)
    node.insert(path[-1] + 1, copy.deepcopy(node[path[-1]]))
    return out


def _enum_choices(path: Path) -> tuple | None:
    text = dotted(tuple(p for p in path if not isinstance(p, int)))
    for pattern, members in ENUMS.items():
        if fnmatch.fnmatchcase(text, pattern) or text == pattern:
            return members
    return None


def _is_digest(path: Path, value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value) and (
        path[-1] in ("sha256", "file_sha256") or (len(path) > 1 and path[-2] == "tensors"))


def _is_expression_leaf(side: str, path: Path) -> bool:
    """Strings that charter evaluates as expressions (rather than compares as text)."""
    text = dotted(path)
    if side == "model":
        return text.startswith(("derived.", "tokenizer.")) or text.startswith("layer_pattern.repeat")
    return (text.endswith((".value", ".length", ".block", ".bytes", ".header", ".source_count", ".alignment"))
            or "].shape[" in text or ".repeat." in text)


def _bound_side(side: str, path: Path) -> str | None:
    """"min" or "max" for a side of a value bound (`values.bounds.<name>.min`), else None."""
    if side == "artifact" and len(path) == 4 and path[:2] == ("values", "bounds") and path[3] in ("min", "max"):
        return path[3]
    return None


def _relaxes_bound(side: str, path: Path, value: Any, op: str, new: Any) -> str | None:
    """The reason a change of a bound only widens it (min lower, max higher): the conforming
    artifact cannot refute a wider bound; the artifact mutants one past the bound prove it holds."""
    which = _bound_side(side, path)
    if which is None:
        return None
    if isinstance(value, str):
        wider = op == ("expression -1" if which == "min" else "expression +1")
    else:
        wider = isinstance(new, int) and (new < value if which == "min" else new > value)
    if not wider:
        return None
    return (f"widens the bound's {which}; the artifact mutants 'write {which} {'-' if which == 'min' else '+'} 1' "
            "(charter.mutation.value_ops) prove the bound is enforced")


def operators(side: str, path: Path, value: Any) -> Iterator[tuple[str, Any]]:
    """(operator name, new value) for one leaf."""
    text = dotted(path)
    if side == "model" and text.startswith("invariants["):
        yield "negate", f"not ({value})"
        return
    if _bound_side(side, path) and isinstance(value, str):  # an expression: one step either way
        yield "expression +1", f"({value}) + 1"
        yield "expression -1", f"({value}) - 1"
        return
    choices = _enum_choices(path)
    if choices and isinstance(value, str) and value in choices:
        for other in choices:
            if other != value:
                yield f"enum {other}", other
        return
    if isinstance(value, bool):
        yield "flip", not value
    elif isinstance(value, int):
        for op, v in (("+1", value + 1), ("-1", value - 1), ("zero", 0), ("uint32 max", 2**32 - 1)):
            if v != value:
                yield op, v
    elif isinstance(value, float):
        yield "next float32", float(np.nextafter(np.float32(value), np.float32(np.inf)))
        yield "nan", float("nan")
    elif isinstance(value, str):
        if len(path) > 1 and path[-2] == "values" and isinstance(path[-1], int):
            yield "edit one char", value + "x"  # one element of a pinned array: one edit is its fact
        elif _is_digest(path, value) or path[-1] == "bits":  # a digest, or a float's bit pattern
            flipped = format(int(value[-1], 16) ^ 1, "x")
            yield "flip one bit", value[:-1] + flipped
        elif _is_expression_leaf(side, path):
            yield "expression +1", f"({value}) + 1"
        else:
            if value:
                yield "empty", ""
            if value.swapcase() != value:
                yield "case", value.swapcase()
            i = len(value) // 2  # an empty string gains one
            yield "edit one char", value[:i] + ("x" if value[i:i + 1] != "x" else "y") + value[i + 1:]


def mutants(artifact_data: dict, model_data: dict) -> Iterator[Mutant]:
    """Every contract mutant; `make()` returns (artifact data, model data)."""
    docs = {"artifact": artifact_data, "model": model_data}
    for side, data in docs.items():
        def build(new, side=side):
            return (new, model_data) if side == "artifact" else (artifact_data, new)

        for path, value in leaves(data):
            if path in (("charter",), ("kind",)):
                continue  # covered by the golden negatives (SPEC_VERSION, SPEC_KIND)
            for op, new in operators(side, path, value):
                yield _mutant(side, path, op, new, lambda p=path, n=new, b=build, d=data: b(_set(d, p, n)),
                              _relaxes_bound(side, path, value, op, new))
        if side == "artifact":
            for codec, fact in data.get("codecs", {}).items():
                if isinstance(fact, dict) and "header" not in fact:  # the default 0 is a fact too
                    path = ("codecs", codec, "header")
                    yield _mutant(side, path, "add header 1", 1, lambda p=path, b=build, d=data: b(_set(d, p, 1)))
        for path, node in _containers(data):
            if isinstance(node, dict):
                for key in node:
                    if _renamable(path):
                        yield _mutant(side, path + (key,), "rename key", key + "_",
                                      lambda p=path + (key,), b=build, d=data: b(_rename_key(d, p, p[-1] + "_")))
                    if _droppable(side, path):
                        yield _mutant(side, path + (key,), "drop entry", None,
                                      lambda p=path + (key,), b=build, d=data: b(_drop(d, p)))
            elif isinstance(node, list) and node and _list_ops(path):
                for i in range(len(node)):
                    yield _mutant(side, path + (i,), "drop item", None,
                                  lambda p=path + (i,), b=build, d=data: b(_drop(d, p)))
                yield _mutant(side, path + (0,), "duplicate item", None,
                              lambda p=path + (0,), b=build, d=data: b(_duplicate(d, p)))


def _mutant(side: str, path: Path, op: str, new: Any, make, relaxed: str | None = None) -> Mutant:
    reason = equivalence(side, path, new) or relaxed
    if side == "model" and path[:1] == ("invariants",) and op in ("drop item", "duplicate item"):
        reason = "an invariant constrains the contract's constants when it loads; no artifact check changes"
    return Mutant("contract", f"{side}:{dotted(path)}", op, None, make, equivalent=reason, leaf=path)


def _containers(data: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(data, (dict, list)):
        yield path, data
        items = data.items() if isinstance(data, dict) else enumerate(data)
        for k, v in items:
            yield from _containers(v, path + (k,))


_RENAMABLE = ("identity", "metadata.keys", "tokenizer.keys", "codecs", "constants", "derived", "tokenizer.special",
              "config.keys", "values.bounds")
_DROPPABLE = ("identity", "metadata.keys", "tokenizer.keys", "codecs", "tokenizer.special", "config.keys",
              "values.bounds")
_LISTS = ("tensors", "tokenizer.stop", "tokenizer.stop_ids", "invariants", "metadata.forbidden", "exclusions")


def _renamable(path: Path) -> bool:
    return dotted(path) in _RENAMABLE


def _droppable(side: str, path: Path) -> bool:
    return side == "artifact" and dotted(path) in _DROPPABLE


def _list_ops(path: Path) -> bool:
    return dotted(path) in _LISTS
