"""The battery's location oracle: a contract mutant's diagnostic must cite the fact it changed.

Note [Location oracle]
~~~~~~~~~~~~~~~~~~~~~~
charter promises that a rejection names the `file:line:col` of the contract fact it enforces. A
contract mutant changes one leaf, so its diagnostic may cite only:

* the leaf, or one of its ancestors (a check owns a whole entry: `llama.block_count: {...}`);
* for a dropped key, the rule that closes its set (`metadata.extra_keys: reject`);
* a fact whose text names what the leaf defines, directly or through derived names: changing
  the model constant `layers` moves the artifact's `value: layers` and its `{i: layers}` rows;
  a model special id, stop id or logits fact is cited where the artifact binds it (BINDINGS).

This oracle reads the two YAML documents and their locations only, never the resolver or the
plan, so it stays independent of the code it judges. A killed mutant whose diagnostic cites
another place is a regression.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from charter.contract.yamlload import Document

Path = tuple


# A dropped key is then rejected by the rule that closes its set: `metadata.extra_keys: reject`.
CLOSED_BY = {"identity": ("metadata", "extra_keys"), "metadata": ("metadata", "extra_keys"),
             "tokenizer": ("metadata", "extra_keys")}


# The artifact section that binds each model tokenizer fact to its own keys and tensors.
BINDINGS = {("tokenizer", "stop_ids"): ("tokenizer", "stop"), ("tokenizer", "logits_rows"): ("tokenizer", "logits"),
            ("tokenizer", "ids"): ("tokenizer", "tokens")}


def allowed(artifact: Document, model: Document, side: str, leaf: Path, dropped: bool = False) -> set[str]:
    """Every location (as text) a diagnostic may cite after the leaf `side:leaf` changed (or,
    with `dropped`, was removed)."""
    docs = {"artifact": artifact, "model": model}
    out = set(ancestors(docs[side], leaf))
    if dropped and side == "artifact" and leaf[:1] and leaf[0] in CLOSED_BY:
        out.update(ancestors(artifact, CLOSED_BY[leaf[0]]))
    model_facts = [leaf] if side == "model" else []
    names = _defined_names(model, artifact, side, leaf)
    for which, doc in docs.items():
        for path, text in _texts(doc.data) if names else ():
            if any(_mentions(text, name) for name in names):
                out.update(ancestors(doc, path))
                if which == "model":
                    model_facts.append(path)
    for fact in model_facts:
        for prefix, binding in BINDINGS.items():
            if tuple(fact[:len(prefix)]) == prefix:
                out.update(str(loc) for path, loc in artifact.locations.items() if path[:len(binding)] == binding)
    return out


def ancestors(doc: Document, path: Path) -> Iterator[str]:
    """The located leaf and each located ancestor, short of the document itself."""
    for k in range(len(path), 0, -1):
        loc = doc.locations.get(tuple(path[:k]))
        if loc is not None:
            yield str(loc)


def _defined_names(model: Document, artifact: Document, side: str, leaf: Path) -> set[str]:
    """The names whose value the leaf decides: the constant or derived name it defines, closed
    over the derived definitions (model and artifact profile) that mention one of them."""
    if len(leaf) >= 2 and leaf[0] in ("constants", "derived"):
        names = {str(leaf[1])}
    elif side == "artifact" and len(leaf) >= 3 and leaf[0] == "profile" and leaf[1] in ("constants", "derived"):
        names = {str(leaf[2])}
    elif side == "model" and leaf[:1] in (("architecture",), ("family",)):
        return {f"model.{leaf[0]}"}
    elif side == "model" and len(leaf) >= 3 and leaf[:2] == ("tokenizer", "special"):
        return {str(leaf[2])}  # the artifact binds its keys to special ids by these names
    elif side == "model" and isinstance(_at(model.data, leaf), str):
        return {_at(model.data, leaf)}  # a name the artifact uses (a layer kind)
    else:
        return set()
    definitions = dict(_definitions(model.data)) | dict(_definitions((artifact.data or {}).get("profile")))
    grown = True
    while grown:
        grown = False
        for name, text in definitions.items():
            if name not in names and any(_mentions(text, n) for n in names):
                names.add(name)
                grown = True
    return names


def _at(data, path: Path):
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _definitions(data) -> Iterator[tuple[str, str]]:
    derived = data.get("derived") if isinstance(data, dict) else None
    if isinstance(derived, dict):
        for name, text in derived.items():
            if isinstance(text, str):
                yield str(name), text


def _texts(data, path: Path = ()) -> Iterator[tuple[Path, str]]:
    """Every string leaf, and every mapping key (a tensor name template can name a constant)."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield path + (key,), str(key)
            yield from _texts(value, path + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _texts(value, path + (i,))
    elif isinstance(data, str):
        yield path, data


def _mentions(text: str, name: str) -> bool:
    """`name` as a whole word of an expression or template (`model.architecture` inside braces)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text) is not None
