"""`charter freeze ARTIFACT --id ID`: bootstrap a model skeleton and an artifact contract.

The contracts pin everything the artifact states; admitting the same artifact against them passes
and changing any pinned fact fails. They are a starting point: a spec author renames constants,
adds derived expressions and invariants, and decides the status (frozen contracts are
`structural`: freezing proves nothing about support).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from pathlib import Path

from charter import atomic
from charter.console import not_a_file
from charter.diagnostics import CharterError, Code, Diagnostic
from charter.formats.sniff import read_head, require_format


CONTRACT_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")


def freeze_file(path: Path, artifact_id: str, model_id: str, contract_dir: Path | None = None) -> tuple[dict, dict]:
    """The model and artifact contracts of `path`; `source.path` is relative to `contract_dir`, the
    directory the artifact contract will be written to (default: beside the artifact)."""
    # The readers and the contract models load here, not when the package does: every command
    # registers `freeze` (charter.freeze.commands), and `charter admit` must not pay for them.
    from charter.formats.gguf import read_gguf
    from charter.formats.safetensors import read_safetensors
    from charter.freeze.gguf import freeze_gguf
    from charter.freeze.safetensors import freeze_safetensors

    head = read_head(path)
    fmt = require_format(*head) if head is not None else "safetensors"  # unreadable: the reader says so
    if fmt == "gguf":
        model, artifact = freeze_gguf(read_gguf(path), artifact_id, model_id, str(path))
    else:
        model, artifact = freeze_safetensors(read_safetensors(path), artifact_id, model_id, str(path))
    artifact["source"] = {"path": source_path(path, contract_dir or path.parent), "sha256": _file_sha256(path),
                          "size": path.stat().st_size}
    artifact["payload"] = {"file_sha256": artifact["source"]["sha256"]}
    return model, _ordered(artifact)


def source_path(artifact: Path, contract_dir: Path) -> str:
    """The artifact's path relative to the contract's directory, as `charter admit` resolves it."""
    return Path(os.path.relpath(artifact.resolve(), contract_dir.resolve())).as_posix()


# Comments freeze writes above a top-level key: what a frozen contract leaves to its author.
NOTES = {
    "model": {"architecture": (
        "source: left for you to fill in (repository, revision, license of the weights). freeze cannot\n"
        "know it: an artifact's general.name or a config's _name_or_path is a display name or a local\n"
        "path, not a repository.\n")},
    "artifact": {"source": (
        "source: the file this contract was frozen from, relative to this file, with its size and\n"
        "sha256; `charter admit --contract THIS_FILE` and `charter locate` find it there.\n")},
    "bundle": {"files": (
        "files: every file of the folder this bundle was frozen from: weights and other files with their\n"
        "size and sha256, companion JSON files bound key by key under `companions`, the index by its\n"
        "metadata and the shard of each tensor; `charter admit FOLDER --contract THIS_FILE` admits that\n"
        "folder and nothing else.\n")},
}


_ARTIFACT_ORDER = ("charter", "kind", "id", "status", "model", "format", "source", "container", "identity",
                   "metadata", "tokenizer", "config", "tensors", "codecs", "layout", "payload")


def _ordered(artifact: dict) -> dict:
    return {k: artifact[k] for k in _ARTIFACT_ORDER if k in artifact}


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def render(kind: str, data: dict, target: Path) -> str:
    """YAML text with the editor schema link when the target sits in a tree that has schemas/, and
    the NOTES of its kind as comments above their keys."""
    from charter.contract.yamldump import dump

    head = ""
    for parent in target.resolve().parents:
        if (parent / "schemas" / f"{kind}.schema.json").is_file():
            rel = os.path.relpath(parent / "schemas" / f"{kind}.schema.json", target.resolve().parent)
            head = f"# yaml-language-server: $schema={Path(rel).as_posix()}\n"
            break
    text, chunk = [head], {}
    for key, value in data.items():  # one top-level mapping, dumped in pieces between the comments
        if key in NOTES[kind]:
            text += [dump(chunk) if chunk else "", "".join(f"# {line}\n" for line in NOTES[kind][key].splitlines())]
            chunk = {}
        chunk[key] = value
    return "".join(text) + dump(chunk)


def admits_its_input(path: Path, texts: dict[str, str], targets: dict[str, Path]) -> None:
    """Freeze is total and exact: the frozen contracts are valid, resolve, and admit their artifact
    (header-only, Python engine) before anything is written. Anything else is a bug in charter
    (FreezeError: exit 3, nothing written), never a contract handed to the user to find out."""
    from charter.admission.runtime import admit
    from charter.contract.load import load_contract_text
    from charter.contract.resolve import resolve_artifact, resolve_model

    try:
        model = resolve_model(load_contract_text(texts["model"], str(targets["model"])))
        plan = resolve_artifact(load_contract_text(texts["artifact"], str(targets["artifact"])), model)
    except CharterError as exc:
        raise FreezeError(f"the frozen contract is not valid: {exc.diagnostics[0].render()}") from None
    report = admit(str(path), self_check_checker(plan))
    if not report.admitted:
        raise FreezeError(f"the frozen contract rejects its own artifact: {report.render()}")


def self_check_checker(plan):
    """The Python checker of a frozen artifact plan, rendered and loaded in memory (never written)."""
    from types import ModuleType

    from charter.codegen.driver import render_checker_text

    checker = ModuleType("charter_freeze_self_check")
    exec(compile(render_checker_text(plan, "# freeze self-check"), checker.__name__, "exec"), checker.__dict__)
    return checker


class FreezeError(RuntimeError):
    """A frozen contract that is invalid or rejects its input: a bug in charter, never the user's."""


class FreezeRefused(ValueError):
    """A request freeze cannot carry out (no such file, a bad id, files in the way): the caller's
    mistake, exit 2 on the command line; nothing is written."""


# Note [Contract limits]: a contract is bounded by the loader (yamlload.MAX_BYTES, 16 MiB;
# yamlload.MAX_NODES, 200,000 YAML nodes) and by resolution (resolve.MAX_EXPANDED_TENSORS,
# 1,000,000 tensors); they bound what a hostile contract costs, so they stay. Freeze checks the
# contract it would write against the same constants before rendering it, and refuses (exit 2,
# nothing written) instead of writing what `charter check` refuses. A listed tensor costs about
# 11 nodes (13 with a 4-D shape), so about 18,000 tensors whose names do not fold into `{i}`
# patterns can be frozen; folded rows cost the same 11 nodes for any number of layers.
def within_contract_limits(artifact: Path, data: dict | None, constants: dict | None = None,
                           size: int | None = None) -> None:
    """Freeze writes only what `charter check` loads (Note [Contract limits]): the YAML node and
    byte limits of the loader, the expanded-tensor limit of resolution. Checked on the data
    before it is rendered (rendering a contract past the node limit takes tens of seconds)."""
    from charter.contract import resolve, yamlload
    from charter.contract.yamldump import node_count

    beyond = "a contract may (docs/security.md, \"Contract limits\"); nothing written"
    if size is not None and size > yamlload.MAX_BYTES:
        raise FreezeRefused(f"{artifact}: the contract would be {size:,} bytes, more than the {yamlload.MAX_BYTES:,} "
                            f"bytes {beyond}")
    if data is None:
        return
    rows = data.get("tensors", [])
    counts = [[constants[v] if isinstance(v, str) else v for v in row.get("repeat", {}).values()] for row in rows]
    expanded = sum(math.prod(c) for c in counts)  # a count is a number or a model constant's name
    if expanded > resolve.MAX_EXPANDED_TENSORS:
        raise FreezeRefused(f"{artifact}: the contract would state {expanded:,} tensors, more than the "
                            f"{resolve.MAX_EXPANDED_TENSORS:,} {beyond}")
    nodes = node_count(data)
    if nodes > yamlload.MAX_NODES:
        raise FreezeRefused(f"{artifact}: the contract would hold {nodes:,} YAML nodes ({len(rows):,} tensor rows: "
                            f"names that do not fold into patterns are listed one by one), more than the "
                            f"{yamlload.MAX_NODES:,} {beyond}")


def freeze_folder(root: Path, bundle_id: str, output: Path, *, force: bool = False) -> list[Path]:
    """Write `output/models/ID-model.yaml`, `output/artifacts/ID-FORMAT.yaml` and
    `output/bundles/ID.yaml` for the model folder (or GGUF split set) `root`, atomically and only once they admit it;
    the paths written, model first (FreezeRefused, CharterError: as `freeze`)."""
    from charter.bundles.freeze import freeze_bundle

    _check_id(bundle_id)
    data = freeze_bundle(root, bundle_id)
    targets = {"model": output / "models" / f"{data['model']['id']}.yaml",
               "artifact": output / "artifacts" / f"{data['artifact']['id']}.yaml",
               "bundle": output / "bundles" / f"{bundle_id}.yaml"}
    _refuse_overwrite(targets, force)
    within_contract_limits(root, data["artifact"], data["model"].get("constants", {}))
    for kind in ("model", "bundle"):
        within_contract_limits(root, data[kind])
    texts = {kind: render(kind, data[kind], targets[kind]) for kind in targets}
    for text in texts.values():
        within_contract_limits(root, None, size=len(text.encode("utf-8")))
    bundle_admits_its_input(root, texts, targets)
    atomic.write_many({targets[kind]: text.encode("utf-8") for kind, text in texts.items()})
    return list(targets.values())


def bundle_admits_its_input(root: Path, texts: dict[str, str], targets: dict[str, Path]) -> None:
    """As admits_its_input, for a folder and its three contracts."""
    from charter.bundles.admit import admit_bundle
    from charter.bundles.resolve import resolve_bundle
    from charter.contract.load import load_contract_text
    from charter.contract.resolve import resolve_artifact, resolve_model

    try:
        model = resolve_model(load_contract_text(texts["model"], str(targets["model"])))
        plan = resolve_artifact(load_contract_text(texts["artifact"], str(targets["artifact"])), model)
        bundle = resolve_bundle(load_contract_text(texts["bundle"], str(targets["bundle"])), plan, model)
    except CharterError as exc:
        raise FreezeError(f"the frozen contract is not valid: {exc.diagnostics[0].render()}") from None
    report = admit_bundle(root, bundle, self_check_checker(plan))
    if report.admitted:
        return
    if report.diagnostic.code in FOLDER_FAULTS:  # the folder contradicts itself: no contract can admit it
        d = report.diagnostic
        raise CharterError([Diagnostic(Code(d.code), d.field, f"{report.file}: {d.message}")])
    raise FreezeError(f"the frozen contracts reject their own folder: {report.render()}")


# What freeze cannot state away: a folder whose files disagree with each other (Note [Shard index]).
FOLDER_FAULTS = {"SHARD_DUPLICATE", "SHARD_UNINDEXED", "SHARD_INDEX_STALE", "SHARD_TOTAL_SIZE",
                 "TOKENIZER_SPECIAL_UNKNOWN", "TOKENIZER_SPECIAL_MISMATCH", "TOKENIZER_SPECIAL_RANGE"}


def _check_id(contract_id: str) -> None:
    if not CONTRACT_ID.fullmatch(contract_id) or len(contract_id) > 120:
        raise FreezeRefused(f"--id {contract_id!r} is not a contract id ([a-z0-9][a-z0-9._-]*, at most 120 characters)")


def _refuse_overwrite(targets: dict[str, Path], force: bool) -> None:
    existing = [str(p) for p in targets.values() if p.exists()]
    if existing and not force:
        raise FreezeRefused(f"refusing to overwrite {', '.join(existing)} (use --force)")


def freeze(artifact: Path, artifact_id: str, output: Path, *, force: bool = False) -> list[Path]:
    """Write `output/models/ID-model.yaml` and `output/artifacts/ID.yaml` for `artifact`, atomically
    and only once they admit it; the paths written, model first. Raises FreezeRefused for a request
    it cannot carry out and CharterError when the artifact itself is rejected (nothing written)."""
    if artifact.is_dir():
        return freeze_folder(artifact, artifact_id, output, force=force)
    if not artifact.is_file():
        raise FreezeRefused(f"{artifact}: {not_a_file(artifact)}")
    _check_id(artifact_id)
    model_id = f"{artifact_id}-model"
    targets = {"model": output / "models" / f"{model_id}.yaml",
               "artifact": output / "artifacts" / f"{artifact_id}.yaml"}
    _refuse_overwrite(targets, force)
    model, artifact_data = freeze_file(artifact, artifact_id, model_id, targets["artifact"].parent)
    within_contract_limits(artifact, artifact_data, model.get("constants", {}))
    within_contract_limits(artifact, model)
    texts = {kind: render(kind, data, targets[kind]) for kind, data in (("model", model), ("artifact", artifact_data))}
    for kind, text in texts.items():
        within_contract_limits(artifact, None, size=len(text.encode("utf-8")))
    admits_its_input(artifact, texts, targets)
    atomic.write_many({targets[kind]: text.encode("utf-8") for kind, text in texts.items()})
    return [targets["model"], targets["artifact"]]
