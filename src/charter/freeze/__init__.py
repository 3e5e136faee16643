"""`charter freeze ARTIFACT --id ID`: bootstrap a model skeleton and an artifact contract.

The contracts pin everything the artifact states; admitting the same artifact against them passes
and changing any pinned fact fails. They are a starting point: a spec author renames constants,
adds derived expressions and invariants, and decides the status (frozen contracts are
`structural`: freezing proves nothing about support).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

from charter import atomic
from charter.diagnostics import CharterError
from charter.formats.gguf import read_gguf
from charter.formats.safetensors import read_safetensors
from charter.formats.sniff import read_head, require_format
from charter.freeze.gguf import freeze_gguf
from charter.freeze.safetensors import freeze_safetensors
from charter.spec.load import load_contract_text
from charter.spec.yamldump import dump


CONTRACT_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")


def freeze_file(path: Path, artifact_id: str, model_id: str) -> tuple[dict, dict]:
    head = read_head(path)
    fmt = require_format(*head) if head is not None else "safetensors"  # unreadable: the reader says so
    if fmt == "gguf":
        model, artifact = freeze_gguf(read_gguf(path), artifact_id, model_id, str(path))
    else:
        model, artifact = freeze_safetensors(read_safetensors(path), artifact_id, model_id, str(path))
    artifact["source"] = {"path": path.name, "sha256": _file_sha256(path), "size": path.stat().st_size}
    artifact["payload"] = {"file_sha256": artifact["source"]["sha256"]}
    return model, _ordered(artifact)


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
    """YAML text with the editor schema link when the target sits in a tree that has schemas/."""
    head = ""
    for parent in target.resolve().parents:
        if (parent / "schemas" / f"{kind}.schema.json").is_file():
            rel = os.path.relpath(parent / "schemas" / f"{kind}.schema.json", target.resolve().parent)
            head = f"# yaml-language-server: $schema={Path(rel).as_posix()}\n"
            break
    return head + dump(data)


def freeze(args) -> int:
    from charter.cli import EXIT_OK, EXIT_USAGE, not_a_file, print_diagnostics

    path = Path(args.artifact)
    if not path.is_file():
        print(f"charter: {path}: {not_a_file(path)}", file=sys.stderr)
        return EXIT_USAGE
    if not CONTRACT_ID.fullmatch(args.id) or len(args.id) > 120:
        print(f"charter: --id {args.id!r} is not a contract id ([a-z0-9][a-z0-9._-]*, at most 120 characters)",
              file=sys.stderr)
        return EXIT_USAGE
    model_id = f"{args.id}-model"
    out = Path(args.output)
    targets = {"model": out / "models" / f"{model_id}.yaml", "artifact": out / "artifacts" / f"{args.id}.yaml"}
    existing = [str(p) for p in targets.values() if p.exists()]
    if existing and not args.force:
        print(f"charter: refusing to overwrite {', '.join(existing)} (use --force)", file=sys.stderr)
        return EXIT_USAGE
    try:
        model, artifact = freeze_file(path, args.id, model_id)
    except CharterError as exc:
        print_diagnostics(exc.diagnostics, "text")
        return 1
    texts = {"model": render("model", model, targets["model"]), "artifact": render("artifact", artifact,
                                                                                    targets["artifact"])}
    for kind, text in texts.items():  # a frozen contract must itself be a valid contract
        load_contract_text(text, str(targets[kind]))
    atomic.write_many({targets[kind]: text.encode("utf-8") for kind, text in texts.items()})
    for kind in texts:
        print(f"wrote {targets[kind]}")
    return EXIT_OK
