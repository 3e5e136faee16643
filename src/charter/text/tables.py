"""The tokenizer's own definition, read from where the text contract says it lives.

Two sources: the GGUF tables of an artifact (tokenizer.ggml.*, read with charter's strict GGUF
reader from the artifact contract's pinned file) and a `tokenizer.json` inside a pinned package's
archive (read as strict JSON: no duplicate keys, no NaN). Both become one `Definition`: tokens by id,
merges, the other facts, the added tokens and the chat template.

Note [Table digests]
~~~~~~~~~~~~~~~~~~~~
A vocabulary or merge table is pinned by its count and the sha256 of its canonical JSON: the list of
token strings by id (a tokenizer.json vocabulary must be dense: ids 0..n-1, each once), or the list of
[left, right] merge pairs, as `json.dumps(..., ensure_ascii=False, separators=(",", ":"))` in UTF-8.
The same digest for both sources, so a GGUF converted from a tokenizer.json can be compared with it;
it names the values, not the bytes of either file.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from charter.admission.runtime import parse_companion
from charter.diagnostics import CharterError, Code, Diagnostic

GGUF_TOKEN_TYPES = {1: "normal", 2: "unknown", 3: "control", 4: "user_defined", 5: "unused", 6: "byte"}
JSON_FLAGS = ("lstrip", "rstrip", "single_word", "normalized")
# The tokenizer.ggml keys that are tables or the template; every other tokenizer.ggml key is a fact.
GGUF_TABLE_KEYS = ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
                   "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.scores")
MAX_TOKENIZER_JSON = 64 << 20


@dataclass(frozen=True)
class Definition:
    """A tokenizer as its source defines it."""

    kind: str  # "gguf" | "tokenizer.json"
    model: str
    pre: str
    tokens: list[str]
    merges: list[list[str]] | None
    config: dict
    added: list[dict]  # {id, content, special, type} (gguf) or {id, content, special, flags}
    template: str | None
    gguf_path: Path | None = None
    json_text: str | None = field(default=None, repr=False)
    _digests: dict = field(default_factory=dict, repr=False, compare=False)

    def digest(self, table: str) -> str:
        """table_sha256 of `tokens` or `merges`, computed once per definition."""
        if table not in self._digests:
            self._digests[table] = table_sha256(getattr(self, table))
        return self._digests[table]


def canonical(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def table_sha256(values: list) -> str:
    return hashlib.sha256(canonical(values)).hexdigest()


def _refuse(field: str, message: str) -> CharterError:
    return CharterError([Diagnostic(Code.TEXT_SOURCE, field, message)])


def from_gguf(path: Path) -> Definition:
    from charter.formats.gguf import GGUFArray, read_gguf

    header = read_gguf(path)
    value = header.value

    def need(key: str, kind: type):
        v = value(key)
        if not isinstance(v, kind):
            raise _refuse("source.gguf", f"{path}: {key} is missing or not a {kind.__name__}")
        return v

    tokens = need("tokenizer.ggml.tokens", GGUFArray).items()
    types = need("tokenizer.ggml.token_type", GGUFArray).items()
    merges = value("tokenizer.ggml.merges")
    if len(types) != len(tokens):
        raise _refuse("source.gguf", f"{path}: {len(types)} token types for {len(tokens)} tokens")
    added = []
    for i, t in enumerate(types):
        if t != 1:
            kind = GGUF_TOKEN_TYPES.get(t)
            if kind is None:
                raise _refuse("source.gguf", f"{path}: token {i} has token type {t}, not one of llama.cpp's")
            added.append({"id": i, "content": tokens[i], "special": kind in ("control", "unknown"), "type": kind})
    config = {k: kv.value for k, kv in header.kvs.items()
              if k.startswith("tokenizer.ggml.") and k not in GGUF_TABLE_KEYS and not isinstance(kv.value, GGUFArray)}
    template = value("tokenizer.chat_template")
    return Definition(
        "gguf", need("tokenizer.ggml.model", str), need("tokenizer.ggml.pre", str), tokens,
        None if merges is None else [m.split(" ", 1) for m in merges.items()],
        config, added, template if isinstance(template, str) else None, gguf_path=path)


def read_packaged_json(src) -> str:
    """The tokenizer.json member of a pinned archive, checked against both digests."""
    from charter.admission.locate import locate
    from charter.contract.paths import PinnedSource

    from importlib import metadata

    package = src.package
    name, sep, version = package.partition("==")
    try:
        installed = metadata.version(name) if sep else None
    except metadata.PackageNotFoundError:
        installed = None
    if installed != version or not version:
        raise _refuse("source.tokenizer_json.package", f"{package!r} is not an installed `name==version` "
                                                       f"(installed: {installed})")
    archive = locate(PinnedSource(package=package, path=src.archive, sha256=src.archive_sha256,
                                  size=src.archive_size), Path("."), digest=True)
    try:
        with zipfile.ZipFile(archive) as z:
            info = z.getinfo(src.member)
            if info.file_size > MAX_TOKENIZER_JSON:
                raise _refuse("source.tokenizer_json.member", f"{src.member} is {info.file_size} bytes (limit "
                                                              f"{MAX_TOKENIZER_JSON})")
            raw = z.read(info)
    except KeyError:
        raise _refuse("source.tokenizer_json.member", f"{archive} has no member {src.member!r}") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise _refuse("source.tokenizer_json.archive", f"{archive}: {exc}") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != src.sha256:
        raise CharterError([Diagnostic(Code.TEXT_SOURCE, "source.tokenizer_json.sha256",
                                       f"expected {src.sha256}, got {digest}", src.sha256, digest)])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse("source.tokenizer_json.member", f"{src.member} is not UTF-8: {exc}") from None


def from_tokenizer_json(text: str, where: str = "source.tokenizer_json") -> Definition:
    try:
        doc = parse_companion(text.encode("utf-8"))  # the JSON a bundle's companion is read as
    except (ValueError, RecursionError) as exc:
        raise _refuse(where, f"tokenizer.json is not strict JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise _refuse(where, "tokenizer.json has no `model` object")
    model = doc["model"]
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        raise _refuse(where, "tokenizer.json model.vocab is not an object")
    tokens: list[str | None] = [None] * len(vocab)
    for tok, i in vocab.items():
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(vocab) or tokens[i] is not None:
            raise _refuse(where, f"tokenizer.json vocabulary is not dense: {tok!r} -> {i!r}")
        tokens[i] = tok
    added = []
    for t in doc.get("added_tokens") or []:
        try:
            added.append({"id": t["id"], "content": t["content"], "special": t["special"],
                          "flags": [f for f in JSON_FLAGS if t[f]]})
        except (KeyError, TypeError):
            raise _refuse(where, f"tokenizer.json added token {t!r:.80} lacks a field") from None
    added.sort(key=lambda t: t["id"])
    config = {k: v for k, v in doc.items() if k not in ("model", "added_tokens")}
    config["model"] = {k: v for k, v in model.items() if k not in ("vocab", "merges")}
    pre = doc.get("pre_tokenizer")
    merges = model.get("merges")
    return Definition("tokenizer.json", str(model.get("type")), str(pre.get("type") if isinstance(pre, dict) else pre),
                      tokens, None if merges is None else [m.split(" ", 1) if isinstance(m, str) else m for m in merges],
                      config, added, None, json_text=text)


def load_definition(lc, cs) -> Definition:
    """The definition a loaded text contract names (raises CharterError with TEXT_SOURCE)."""
    from charter.admission.locate import locate

    src = lc.contract.source
    if src.gguf is not None:
        art = cs.contracts.get(src.gguf.artifact)
        if art is None or art.kind != "artifact" or art.contract.source is None:
            raise _refuse("source.gguf.artifact", f"artifact contract {src.gguf.artifact!r} with a source is not loaded")
        return from_gguf(locate(art.contract.source, art.path.parent))
    return from_tokenizer_json(read_packaged_json(src.tokenizer_json))
