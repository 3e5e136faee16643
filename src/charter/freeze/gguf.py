"""Freeze a GGUF file: every fact it states becomes a contract fact.

Numeric keys of the architecture's namespace become model constants and the artifact refers to
them by name; tensor names that repeat per layer fold into `blk.{i}.…` patterns; dims that equal
a width-like constant are written as that constant; long strings and arrays are pinned by length
and sha256. The result is admitted by its own checker, and any changed fact is rejected.
"""

from __future__ import annotations

import math
import re

from charter.floatbits import float_bits
from charter.formats.ggml_types import GGML_TYPES_BY_NAME
from charter.formats.gguf import GGUFArray, GGUFHeader, GGUFValueType
from charter.freeze.common import SHORT_ARRAY, SHORT_STRING, constant_names, fold_tensors, layout_policy
from charter.contract import braces

_SPECIAL = re.compile(r"^tokenizer\.ggml\.(?P<name>[a-z_][a-z0-9_]{0,63})_token_id$")
_IDENTITY = ("general.architecture", "general.basename", "general.size_label", "general.finetune")
_NUMBERS = frozenset(GGUFValueType) - {GGUFValueType.BOOL, GGUFValueType.STRING, GGUFValueType.ARRAY}
_FLOATS = (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64)
_U32_MAX = 2**32 - 1
# Constants freeze itself adds; no key's constant may take these names.
_OWN_CONSTANTS = ("tokenizer_ids", "logits_rows")


def _type(t: GGUFValueType) -> str:
    return t.name.lower()


def freeze_gguf(h: GGUFHeader, artifact_id: str, model_id: str, path: str, layout: dict | None = None) -> tuple[dict, dict]:
    """`layout`: the layout policy to state, when the caller read it from several files (a split set)."""
    arch = h.value("general.architecture")
    if not isinstance(arch, str) or not arch:
        arch = "unknown"
    prefix = f"{arch}."
    constants: dict[str, int | float] = {}
    const_of_key: dict[str, str] = {}
    # A NaN or an infinity is no model constant (constants are finite): its fact pins its bits.
    numeric = [k for k, kv in h.kvs.items()
               if k.startswith(prefix) and kv.type in _NUMBERS and math.isfinite(kv.value)]
    names = constant_names([k[len(prefix):] for k in numeric], reserved=_OWN_CONSTANTS)
    for key in numeric:
        const_of_key[key] = names[key[len(prefix):]]
        constants[const_of_key[key]] = h.kvs[key].value

    tokens = h.kvs.get("tokenizer.ggml.tokens")
    output = next((t for t in h.tensors if t.name == "output.weight"), None) or next(
        (t for t in h.tensors if t.name == "token_embd.weight"), None)
    model_tok = None
    if tokens is not None and isinstance(tokens.value, GGUFArray):
        constants["tokenizer_ids"] = tokens.value.count
        model_tok = {"ids": "tokenizer_ids"}
        if not _binds_logits(output, tokens.value.count):
            output = None  # the model states logits_rows = ids, the artifact does not bind a tensor
        if output is not None:
            constants["logits_rows"] = output.dims[1]
            model_tok["logits_rows"] = "logits_rows"
        else:
            model_tok["logits_rows"] = "tokenizer_ids"

    # Identity values are artifact text: their braces are literal (Note [Brace escapes]).
    identity = {k: h.kvs[k].value for k in _IDENTITY if k in h.kvs and h.kvs[k].type is GGUFValueType.STRING}
    ids = constants.get("tokenizer_ids")
    metadata, tok_keys, bindings, stop = {}, {}, {}, []
    for key, kv in h.kvs.items():
        if key in identity or key == "general.alignment":
            continue
        match = _SPECIAL.match(key)
        bound = (match is not None and ids is not None and kv.type in _NUMBERS and kv.type not in _FLOATS
                 and 0 <= kv.value < ids)
        fact = _fact(kv, const_of_key.get(key), bound, tokens)
        if not key.startswith("tokenizer."):
            metadata[key] = fact
            continue
        tok_keys[key] = fact
        if bound:
            bindings[key] = match.group("name")
            if match.group("name") in ("eos", "eot", "eom"):
                stop.append(key)
    if model_tok is not None:
        model_tok["special"] = {name: h.kvs[key].value for key, name in bindings.items()}
        model_tok["stop_ids"] = sorted({h.kvs[key].value for key in stop})

    model = {
        "charter": 1, "kind": "model", "id": model_id, "status": "structural",
        "description": f"Frozen by `charter freeze` from {path}; rename constants and add derived facts by hand.",
        "architecture": arch, "family": _text(h, "general.basename") or arch,
        "constants": dict(sorted(constants.items())),
    }
    if model_tok is not None:
        model["tokenizer"] = model_tok

    artifact: dict = {
        "charter": 1, "kind": "artifact", "id": artifact_id, "status": "structural", "model": model_id,
        "format": "gguf",
        "container": {"version": h.version, "alignment": h.alignment},
        "identity": {k: braces.escape(v) for k, v in identity.items()},
        "metadata": {"extra_keys": "reject", "keys": metadata},
    }
    if tok_keys:
        tok: dict = {"keys": tok_keys}
        if tokens is not None and isinstance(tokens.value, GGUFArray):
            tok["tokens"] = "tokenizer.ggml.tokens"
        if output is not None and model_tok is not None:
            tok["logits"] = {"tensor": output.name, "axis": 1}
        if bindings:
            tok["special"] = bindings
        if stop:
            tok["stop"] = stop
        artifact["tokenizer"] = tok
    artifact["tensors"] = _tensors(h, constants)
    used = sorted({t.ggml_type.name for t in h.tensors})
    artifact["codecs"] = {n: _codec(GGML_TYPES_BY_NAME[n]) for n in used}
    artifact["layout"] = layout or gguf_layout(path, h)
    return model, artifact


def gguf_layout(path: str, h: GGUFHeader) -> dict:
    """The strictest layout policy the file at `path` (header `h`) satisfies."""
    return layout_policy(path, [(t.start, t.end) for t in h.tensors], h.data_offset, h.file_size, h.alignment)


def _fact(kv, constant: str | None, bound: bool, tokens) -> dict:
    t = _type(kv.type)
    if isinstance(kv.value, GGUFArray):
        arr = kv.value
        fact = {"type": "array", "element": _type(arr.elem_type)}
        same_as_vocab = tokens is not None and isinstance(tokens.value, GGUFArray) and arr.count == tokens.value.count
        fact["length"] = "tokenizer_ids" if same_as_vocab and kv.key.startswith("tokenizer.") else arr.count
        if arr.count <= SHORT_ARRAY and arr.elem_type is not GGUFValueType.FLOAT32 and \
                arr.elem_type is not GGUFValueType.FLOAT64:
            fact["values"] = arr.items()
        else:
            fact["sha256"] = arr.sha256()
        return fact
    if bound:
        return {"type": t}
    if t == "string":
        if len(kv.value) <= SHORT_STRING and kv.value.isprintable():
            return {"type": t, "value": kv.value}
        import hashlib

        return {"type": t, "sha256": hashlib.sha256(kv.value.encode("utf-8")).hexdigest()}
    if constant is not None:
        return {"type": t, "value": constant}
    if kv.type in _FLOATS and not math.isfinite(kv.value):  # YAML cannot write it: pin its bits
        return {"type": t, "bits": f"0x{float_bits(t, kv.value):0{8 if t == 'float32' else 16}x}"}
    return {"type": t, "value": kv.value}


def _binds_logits(output, ids: int) -> bool:
    """Whether the model can name this tensor's rows as its physical logits width (>= the ids)."""
    return output is not None and len(output.dims) >= 2 and ids <= output.dims[1] <= _U32_MAX


def _text(h: GGUFHeader, key: str) -> str:
    kv = h.kvs.get(key)
    return kv.value if kv is not None and kv.type is GGUFValueType.STRING else ""


def _tensors(h: GGUFHeader, constants: dict) -> list[dict]:
    by_value: dict[int, str] = {}
    for name in sorted(constants):
        value = constants[name]
        if isinstance(value, int) and (name.endswith("_length") or name in ("logits_rows", "vocab_size")):
            by_value.setdefault(value, name)
    layers = ("block_count", constants["block_count"]) if isinstance(constants.get("block_count"), int) else None
    return fold_tensors([(t.name, tuple(t.dims), t.ggml_type.name) for t in h.tensors], by_value, layers)


def _codec(t) -> dict:
    """The codec fact of a ggml type; a row header only where the type has one (Note [Row headers])."""
    fact = {"block": t.block_size, "bytes": t.block_bytes}
    return {**fact, "header": t.row_header} if t.row_header else fact
