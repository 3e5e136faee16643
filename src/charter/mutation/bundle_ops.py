"""The bundle battery's mutants: one fact of a model folder, or one leaf of its bundle contract.

Note [Bundle predictions]
~~~~~~~~~~~~~~~~~~~~~~~~~
Each mutant carries the rejection it must get, stated from what the mutant changes and what the
contract pins, never from the checker: a changed file is caught by the cheapest fact that pins it,
in the order of Note [Bundle stages]:

* a listed file removed or renamed away -> BUNDLE_FILE_MISSING of that file (missing files are
  looked for first, in the contract's order); an unlisted file -> BUNDLE_FILE_UNEXPECTED under
  `extra_files: reject`, else an acceptance control;
* a file given new bytes -> BUNDLE_FILE_SIZE when the contract pins its size and the size changed;
  else, for a file that is not weights, BUNDLE_FILE_DIGEST when it pins its sha256; else the fact
  the change breaks (its "semantic" expectation: a shard index entry, a total size);
* a weight file's bytes changed in place (same size) -> PAYLOAD_FILE_DIGEST, under --verify-payload.

Contract leaves: a size +-1 -> BUNDLE_FILE_SIZE; a sha256 with one bit flipped -> BUNDLE_FILE_DIGEST
(PAYLOAD_FILE_DIGEST for weights, under --verify-payload); a tensor placed in the next shard ->
SHARD_PLACEMENT; total_size +-1 -> SHARD_INDEX_METADATA; a file entry dropped ->
BUNDLE_FILE_UNEXPECTED; a status above the artifact's, a placement dropped or doubled, an unknown
model or artifact -> a contract error (stage spec) at that leaf.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from charter.bundles.json_facts import json_field, json_mutants
from charter.bundles.plan import BundlePlan
from charter.diagnostics import Code
from charter.language import STATUSES
from charter.mutation.mutant import Expect, Mutant


@dataclass(frozen=True)
class BundleMutant:
    """A Mutant and how it runs: `folder(dst)` edits a linked copy of the folder in place (replacing
    files, never writing into one), or `contract()` gives the mutated contract data."""

    mutant: Mutant
    folder: Callable[[Path], None] | None = None
    contract: Callable[[], dict] | None = None
    verify_payload: bool = False


def _m(side: str, target: str, op: str, expect: Expect | None, equivalent: str | None = None) -> Mutant:
    return Mutant(side, target, op, expect, equivalent=equivalent)


def _rewritten(plan: BundlePlan, path: str, new_size: int, semantic: Expect) -> Expect:
    """Note [Bundle predictions]: the cheapest fact that pins a file given new bytes."""
    f = plan.file(path)
    if f.size is not None and new_size != f.size:
        return Expect.of(Code.BUNDLE_FILE_SIZE, f"files.{path}.size")
    if f.sha256 is not None and f.role != "weights":
        return Expect.of(Code.BUNDLE_FILE_DIGEST, f"files.{path}.sha256")
    return semantic


def _grown(plan: BundlePlan, path: str, semantic: Expect) -> Expect:
    """A file that gains bytes: its pinned size is the cheapest fact it breaks."""
    return semantic if plan.file(path).size is None else Expect.of(Code.BUNDLE_FILE_SIZE, f"files.{path}.size")


def _replace(path: Path, data: bytes) -> None:
    path.unlink()
    path.write_bytes(data)


def folder_mutants(plan: BundlePlan, folder: Path, companions=None) -> list[BundleMutant]:
    """Every folder mutant; `companions`: the files whose JSON edits to make (None: every one)."""
    out: list[BundleMutant] = []
    for f in plan.files:
        out.append(BundleMutant(_m("artifact", f"files.{f.path}", "drop file",
                                   Expect.of(Code.BUNDLE_FILE_MISSING, f"files.{f.path}")),
                                folder=lambda d, p=f.path: (d / p).unlink()))
    unknown = "charter-unknown.bin"
    expect = Expect.of(Code.BUNDLE_FILE_UNEXPECTED, f"files.{unknown}") if plan.extra_files.value == "reject" else None
    out.append(BundleMutant(_m("artifact", f"files.{unknown}", "add unknown file", expect),
                            folder=lambda d: (d / unknown).write_bytes(b"\0")))
    weights = [plan.file(w) for w in plan.weights]
    for w in weights:
        out.append(BundleMutant(_m("artifact", f"files.{w.path}", "rename shard",
                                   Expect.of(Code.BUNDLE_FILE_MISSING, f"files.{w.path}")),
                                folder=lambda d, p=w.path: os.rename(d / p, d / (p + ".old"))))
        if plan.artifact.format == "safetensors":
            out.append(BundleMutant(_m("artifact", f"files.{w.path}", "add stale tensor",
                                       _grown(plan, w.path, Expect.of(Code.SHARD_UNINDEXED))),
                                    folder=lambda d, p=w.path: _add_tensor(d / p, "charter.stale.weight")))
        out.append(BundleMutant(_m("artifact", f"files.{w.path}", "append a byte",
                                   _grown(plan, w.path, Expect.of(Code.LAYOUT_TRAILING))),
                                folder=lambda d, p=w.path: _replace(d / p, (d / p).read_bytes() + b"\0")))
        out.append(BundleMutant(_m("artifact", f"files.{w.path}", "flip last byte",
                                   Expect.of(Code.PAYLOAD_FILE_DIGEST, f"files.{w.path}.sha256")),
                                folder=lambda d, p=w.path: _flip_last(d / p), verify_payload=True))
    order = [f.path for f in plan.files]
    for i, a in enumerate(weights):
        for b in weights[i + 1:]:
            if a.size != b.size:
                first = min(a.path, b.path, key=order.index)
                out.append(BundleMutant(_m("artifact", f"files.{a.path}", f"swap with {b.path}",
                                           Expect.of(Code.BUNDLE_FILE_SIZE, f"files.{first}.size")),
                                        folder=lambda d, x=a.path, y=b.path: _swap(d / x, d / y)))
    if plan.index is not None:
        out += _index_mutants(plan, folder)
    for path, fact in plan.companions:
        if companions is None or path in companions:
            out += _companion_mutants(plan, folder, path, fact)
    return out


def _companion_mutants(plan: BundlePlan, folder: Path, path: str, fact) -> list[BundleMutant]:
    """Every edit each bound node allows (charter.bundles.json_facts.json_mutants, which predicts
    from the two documents), written as the file's new bytes."""
    from charter.admission.runtime import parse_companion

    data = parse_companion((folder / path).read_bytes())
    out = []
    for jm in json_mutants(data, fact, file=path):
        semantic = None if jm.code is None else Expect.of(jm.code, jm.field)
        expect = None if semantic is None else _rewritten(plan, path, len(jm.data), semantic)
        out.append(BundleMutant(_m("artifact", jm.name, "edit", expect, jm.equivalent),
                                folder=lambda d, b=jm.data: _replace(d / path, b)))
    return out


def _index_mutants(plan: BundlePlan, folder: Path) -> list[BundleMutant]:
    name = plan.index.path
    index = json.loads((folder / name).read_bytes())
    out = []
    shards = list(plan.weights)
    for tensor, shard in index["weight_map"].items():
        other = shards[(shards.index(shard) + 1) % len(shards)] if shard in shards else shards[0]
        edited = copy.deepcopy(index)
        edited["weight_map"][tensor] = other
        data = json.dumps(edited, indent=2).encode()
        out.append(BundleMutant(_m("artifact", f"index.weight_map.{tensor}", f"point at {other}",
                                   _rewritten(plan, name, len(data), Expect.of(
                                       Code.SHARD_INDEX_STALE, f"weights.index.weight_map.{tensor}"))),
                                folder=lambda d, b=data: _replace(d / name, b)))
    for delta in (1, -1):
        edited = copy.deepcopy(index)
        edited["metadata"]["total_size"] += delta
        data = json.dumps(edited, indent=2).encode()
        out.append(BundleMutant(_m("artifact", "index.metadata.total_size", f"{delta:+d}", _rewritten(
            plan, name, len(data), Expect.of(Code.SHARD_INDEX_METADATA, "weights.index_metadata.total_size"))),
                                folder=lambda d, b=data: _replace(d / name, b)))
    return out


def _add_tensor(path: Path, name: str) -> None:
    from safetensors.numpy import load_file, save_file
    import numpy as np

    tensors = load_file(path)
    tensors[name] = np.zeros(1, dtype=np.float32)
    path.unlink()
    save_file(tensors, path, metadata={"format": "pt"})


def _flip_last(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    _replace(path, bytes(data))


def _swap(a: Path, b: Path) -> None:
    tmp = a.with_name(a.name + ".swap")
    os.rename(a, tmp)
    os.rename(b, a)
    os.rename(tmp, b)


# --- contract leaves ------------------------------------------------------------------------------


def contract_mutants(plan: BundlePlan, data: dict, artifact_status: str, companions=None) -> list[BundleMutant]:
    out: list[BundleMutant] = []

    def add(target: str, op: str, expect: Expect | None, edit: Callable[[dict], None], equivalent: str | None = None,
            verify_payload: bool = False) -> None:
        def make(edit=edit) -> dict:
            new = copy.deepcopy(data)
            edit(new)
            return new

        out.append(BundleMutant(_m("contract", target, op, expect, equivalent), contract=make,
                                verify_payload=verify_payload))

    for f in plan.files:
        leaf = f"files.{f.path}"
        for delta in (1, -1) if f.size is not None else ():
            add(f"{leaf}.size", f"{delta:+d}", Expect.of(Code.BUNDLE_FILE_SIZE, f"{leaf}.size"),
                lambda d, p=f.path, x=delta: d["files"][p].update(size=d["files"][p]["size"] + x))
        if f.sha256 is not None:
            code = Code.PAYLOAD_FILE_DIGEST if f.role == "weights" else Code.BUNDLE_FILE_DIGEST
            add(f"{leaf}.sha256", "flip one bit", Expect.of(code, f"{leaf}.sha256"),
                lambda d, p=f.path: d["files"][p].update(sha256=_flip_hex(d["files"][p]["sha256"])),
                verify_payload=f.role == "weights")
        if f.role == "index":  # weights.index names it: no longer a file of the bundle
            add(leaf, "drop entry", Expect.of(Code.SPEC_SCHEMA, "weights.index"), lambda d, p=f.path: d["files"].pop(p))
        elif f.role == "companion":  # its fact under companions names it
            add(leaf, "drop entry", Expect.of(Code.SPEC_SCHEMA, f"companions.{f.path}"),
                lambda d, p=f.path: d["files"].pop(p))
            add(f"{leaf}.role", "enum other", Expect.of(Code.SPEC_SCHEMA, f"files.{f.path}"),
                lambda d, p=f.path: d["files"][p].update(role="other"))  # other files state their size
        elif f.role == "other":
            add(leaf, "drop entry", Expect.of(Code.BUNDLE_FILE_UNEXPECTED, leaf) if plan.extra_files.value == "reject"
                else None, lambda d, p=f.path: d["files"].pop(p))
            add(f"{leaf}.role", "enum companion", Expect.of(Code.SPEC_SCHEMA, f"files.{f.path}.role"),
                lambda d, p=f.path: d["files"][p].update(role="companion"))  # with no fact under companions
    add("extra_files", "enum allow", None, lambda d: d.update(extra_files="allow"),
        equivalent="relaxes the file set; the artifact mutant 'add unknown file' proves reject")
    for status in STATUSES[STATUSES.index(plan.status) + 1:]:
        above = STATUSES.index(status) > STATUSES.index(artifact_status)
        add("status", f"enum {status}", Expect.of(Code.SPEC_INVALID, "status") if above else None,
            lambda d, s=status: d.update(status=s),
            equivalent=None if above else f"a claim up to its artifact contract's status ({artifact_status}); no "
                                          "file of the folder states it")
    add("model", "edit one char", Expect.of(Code.REF_DANGLING, "model"), lambda d: d.update(model=d["model"] + "x"))
    add("artifact", "edit one char", Expect.of(Code.REF_DANGLING, "artifact"),
        lambda d: d.update(artifact=d["artifact"] + "x"))
    shards = data.get("weights", {}).get("shards", {})
    names = list(shards)
    for shard, listed in shards.items():
        nxt = names[(names.index(shard) + 1) % len(names)]
        for i, tensor in enumerate(listed):
            if nxt != shard:
                add(f"weights.shards.{tensor}", f"place in {nxt}",
                    Expect.of(Code.SHARD_PLACEMENT, f"weights.shards.{tensor}"),
                    lambda d, s=shard, n=nxt, t=tensor: (d["weights"]["shards"][s].remove(t),
                                                         d["weights"]["shards"][n].append(t)))
    for path in data.get("companions", {}):
        if companions is not None and path not in companions:
            continue
        for target, op, expect, edit, equivalent in _companion_leaves(data, path):
            add(target, op, expect, edit, equivalent)
    if plan.index is not None:
        for delta in (1, -1):
            add("weights.index_metadata.total_size", f"{delta:+d}",
                Expect.of(Code.SHARD_INDEX_METADATA, "weights.index_metadata.total_size"),
                lambda d, x=delta: d["weights"]["index_metadata"].update(
                    total_size=d["weights"]["index_metadata"]["total_size"] + x))
    return out


def _companion_leaves(data: dict, file: str, at: tuple = (), where: tuple = ()):
    """(target, operator, expect, edit, equivalent) for the leaves of one companion's fact: a
    scalar value changed -> COMPANION_VALUE there; a bound key dropped -> COMPANION_UNEXPECTED
    there (extra_keys: reject); extra_keys relaxed -> equivalent (the folder mutant that adds a
    key proves reject)."""
    fact = data["companions"][file]
    for step in at:
        fact = fact[step]
    field = json_field(file, where)
    full = ("companions", file) + at

    def edit_at(key, new, full=full):
        def edit(d):
            node = d
            for step in full:
                node = node[step]
            node[key] = new
        return edit

    kind, value = fact.get("type"), fact.get("value")
    if "value" in fact and kind in ("int", "float", "bool", "string"):
        new = (not value if kind == "bool" else f"({value}) + 1" if isinstance(value, str) and kind != "string"
               else value + "x" if kind == "string" else value + 1)
        yield f"{field}.value", "edit", Expect.of(Code.COMPANION_VALUE, field), edit_at("value", new), None
    if kind == "object" and "keys" in fact:
        if fact.get("extra_keys", "reject") == "reject":
            yield f"{field}.extra_keys", "enum allow", None, edit_at("extra_keys", "allow"), \
                "relaxes the key set; the folder mutant that adds a key proves reject"
        for key in fact["keys"]:
            sub = json_field(file, where + (key,))
            if fact.get("extra_keys", "reject") == "reject":
                def drop(d, full=full, key=key):
                    node = d
                    for step in full + ("keys",):
                        node = node[step]
                    del node[key]
                yield sub, "drop key", Expect.of(Code.COMPANION_UNEXPECTED, sub), drop, None
            yield from _companion_leaves(data, file, at + ("keys", key), where + (key,))
    if kind == "list" and "items" in fact:
        for i in range(len(fact["items"])):
            yield from _companion_leaves(data, file, at + ("items", i), where + (i,))


def _flip_hex(digest: str) -> str:
    return digest[:-1] + format(int(digest[-1], 16) ^ 1, "x")
