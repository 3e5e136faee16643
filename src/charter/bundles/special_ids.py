"""Special token ids across the files of a bundle (the tokenizer stage's cross-file rule).

Note [Special ids across files]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A Hugging Face folder states a special token up to five times: by string in tokenizer_config.json
(`eos_token`, a string or an AddedToken object with `content`) and special_tokens_map.json, by id in
config.json and generation_config.json (`eos_token_id`, an int or a list of ints), and a GGUF file
states it once more in its metadata (`tokenizer.ggml.eos_token_id`). They drift (Qwen3#1422,
InfiniLM#386), and each consumer reads another one. The rule, per role (bos, eos, unk, sep, pad,
cls, mask), in that order:

* the token string is tokenizer_config.json's, else special_tokens_map.json's (transformers keeps a
  value tokenizer_config.json states over the map's);
* its id is tokenizer.json's: an added token with that content, else the vocabulary's entry; a
  special token the tokenizer does not have is TOKENIZER_SPECIAL_UNKNOWN;
* the reference id is that id, else (no string) config.json's single id;
* every id config.json, generation_config.json and the weights state for the role is the reference
  (a list: the reference is among them), else TOKENIZER_SPECIAL_MISMATCH;
* every stated id is below the tokenizer's size (its vocabulary and added tokens), below
  config.json's `vocab_size` (the embedding rows the weights are checked to have) and below the
  model's `tokenizer.ids` when it states one, else TOKENIZER_SPECIAL_RANGE.

Before the roles, the vocabulary itself (the padded-logits rule, AFN-005: the tokenizer's id domain
and the physical rows of the embedding and the output are two facts, and the rows may be padded):

* every token id has a row: tokenizer.json's size is at most config.json's `vocab_size` (or, in a
  multimodal config, its `text_config`'s), else TOKENIZER_LOGITS_ROWS;
* when the model contract states `tokenizer.ids`, tokenizer.json's size is that (TOKENIZER_DOMAIN),
  and when it states `tokenizer.logits_rows`, config.json's `vocab_size` is that
  (TOKENIZER_LOGITS_ROWS): Qwen4Exp's 248,077 ids in 248,320 rows are both checked, and an id in the
  243 padded rows is no token (the range rule below uses the smallest of the three limits).

Only files the bundle binds take part: a folder without tokenizer.json checks only the ids the
other files state against each other. The field is the key that disagrees, in the companion field
syntax (`companions.config.json["eos_token_id"]`), at the contract fact that binds it.
"""

from __future__ import annotations

import json

from charter.admission.view import ArtifactView
from charter.bundles.files import reject
from charter.bundles.json_facts import json_field
from charter.bundles.plan import BundlePlan
from charter.contract.plan import value_of
from charter.diagnostics import Code

ROLES = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")
GGUF_ROLE = {"bos": "bos", "eos": "eos", "unk": "unknown", "sep": "separator", "pad": "padding", "cls": "cls",
             "mask": "mask"}
ID_FILES = ("config.json", "generation_config.json")


def check_special_ids(plan: BundlePlan, documents: dict[str, object], views: dict[str, ArtifactView]) -> None:
    tokenizer = _object(documents.get("tokenizer.json"))
    size = tokenizer_size(tokenizer)
    config = _object(documents.get("config.json"))
    rows, rows_path = _vocab_size(config)
    meta = views[plan.weights[0]].meta if plan.artifact.format == "gguf" else {}
    _check_vocabulary(plan, size, rows, rows_path)
    limits = [x for x in (size, rows, value_of(plan.tokenizer_ids)) if x is not None]
    limit = min(limits) if limits else None
    for role in ROLES:
        stated = _stated_ids(role, documents, meta, plan.weights[0])
        token, source = _token(role, documents)
        reference = None
        if token is not None and tokenizer:
            reference = _id_of(token, tokenizer)
            if reference is None:
                raise reject(Code.TOKENIZER_SPECIAL_UNKNOWN, json_field(source, (f"{role}_token",)),
                             f"{source} names {role}_token {json.dumps(token)}, which tokenizer.json does not have",
                             _at(plan, source, f"{role}_token"), "a token of tokenizer.json", json.dumps(token), source)
        if reference is None and "config.json" in stated and isinstance(stated["config.json"], int):
            reference = stated["config.json"]
        for file, value in stated.items():
            ids = value if isinstance(value, list) else [value]
            for i in ids:
                if limit is not None and not 0 <= i < limit:
                    raise _reject(Code.TOKENIZER_SPECIAL_RANGE, plan, file, role,
                                  f"{file} states {role} id {i}, outside the {limit} token ids of the tokenizer "
                                  "and the embedding rows", f"below {limit}", i)
            if reference is not None and reference not in ids:
                why = f"the id of {json.dumps(token)} in tokenizer.json" if token is not None else "config.json's"
                raise _reject(Code.TOKENIZER_SPECIAL_MISMATCH, plan, file, role,
                              f"{file} states {role} id {json.dumps(value)}, but {why} is {reference}", reference,
                              json.dumps(value))


def _vocab_size(config: dict) -> tuple[int | None, tuple]:
    """config.json's embedding rows and their key path: `vocab_size`, else the text model's
    (`text_config`, as transformers' get_text_config() finds it in a multimodal config)."""
    for path in (("vocab_size",), ("text_config", "vocab_size")):
        node: object = config
        for key in path:
            node = _object(node).get(key)
        if _is_id(node):
            return node, path
    return None, ()


def _check_vocabulary(plan: BundlePlan, size: int | None, rows: int | None, rows_path: tuple) -> None:
    """The tokenizer's ids against the embedding rows and the model's two facts (Note [Special ids
    across files], the padded-logits rule)."""
    if size is not None and rows is not None and size > rows:
        raise reject(Code.TOKENIZER_LOGITS_ROWS, json_field("config.json", rows_path),
                     f"tokenizer.json has {size} token ids, but config.json's vocab_size gives the embedding "
                     f"only {rows} rows", _at(plan, "config.json", rows_path[0]), f">= {size}", rows, "config.json")
    ids, logits = plan.tokenizer_ids, plan.logits_rows
    if ids is not None and size is not None and size != ids.value:
        raise reject(Code.TOKENIZER_DOMAIN, "tokenizer.ids", f"tokenizer.json has {size} token ids, but the "
                     f"model's tokenizer domain is {ids.value} ids", ids.at, ids.value, size, "tokenizer.json")
    if logits is not None and rows is not None and rows != logits.value:
        raise reject(Code.TOKENIZER_LOGITS_ROWS, "tokenizer.logits_rows", f"config.json's vocab_size is {rows}, "
                     f"but the model's physical logits rows are {logits.value}", logits.at, logits.value, rows,
                     "config.json")


def _reject(code: Code, plan: BundlePlan, file: str, role: str, message: str, expected, actual):
    if file in ID_FILES:
        key = f"{role}_token_id"
        return reject(code, json_field(file, (key,)), message, _at(plan, file, key), expected, actual, file)
    key = f"tokenizer.ggml.{GGUF_ROLE[role]}_token_id"
    return reject(code, f"metadata.{key}", message, None, expected, actual, file)


def _stated_ids(role: str, documents: dict, meta, weights: str) -> dict[str, int | list[int]]:
    """File -> the id(s) it states for `role` (config.json, generation_config.json, and the weights:
    `weights`, whose metadata `meta` is)."""
    out: dict[str, int | list[int]] = {}
    for file in ID_FILES:
        value = _object(documents.get(file)).get(f"{role}_token_id")
        if _is_id(value) or (isinstance(value, list) and value and all(_is_id(v) for v in value)):
            out[file] = value
    key = f"tokenizer.ggml.{GGUF_ROLE[role]}_token_id"
    if key in meta and _is_id(meta[key].value):
        out[weights] = meta[key].value
    return out


def _token(role: str, documents: dict) -> tuple[str | None, str | None]:
    for file in ("tokenizer_config.json", "special_tokens_map.json"):
        value = _object(documents.get(file)).get(f"{role}_token")
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            return value, file
    return None, None


def _id_of(token: str, tokenizer: dict) -> int | None:
    for added in tokenizer.get("added_tokens") or []:
        if isinstance(added, dict) and added.get("content") == token and _is_id(added.get("id")):
            return added["id"]
    vocab = _object(tokenizer.get("model")).get("vocab")
    if isinstance(vocab, dict) and _is_id(vocab.get(token)):
        return vocab[token]
    if isinstance(vocab, list):  # Unigram: [token, score] pairs, the id is the position
        return next((i for i, e in enumerate(vocab) if isinstance(e, list) and e and e[0] == token), None)
    return None


def tokenizer_size(tokenizer: object) -> int | None:
    """The number of token ids: one past the largest id of the vocabulary and the added tokens."""
    tokenizer = _object(tokenizer)
    if not tokenizer:
        return None
    vocab = _object(tokenizer.get("model")).get("vocab")
    ids = [v for v in vocab.values() if _is_id(v)] if isinstance(vocab, dict) else \
        list(range(len(vocab))) if isinstance(vocab, list) else []
    ids += [a["id"] for a in tokenizer.get("added_tokens") or [] if isinstance(a, dict) and _is_id(a.get("id"))]
    return max(ids) + 1 if ids else None


def _at(plan: BundlePlan, file: str, key: str):
    fact = dict(plan.companions).get(file)
    if fact is None or fact.keys is None:
        return None
    return next((sub.at for k, sub in fact.keys if k == key), fact.at)


def _object(value) -> dict:
    return value if isinstance(value, dict) else {}


def _is_id(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
