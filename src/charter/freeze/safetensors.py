"""Freeze a safetensors file, and bind a sibling config.json to its tensor dims.

Integer and float values of config.json become model constants; the artifact's `config` section
requires the companion file to keep stating them, and tensor dims equal to a config value are
written as that constant. So a config.json that disagrees with the weights (say, a different
`hidden_size`) is rejected at admission: a cross-artifact constraint.
"""

from __future__ import annotations

import math
from pathlib import Path

from charter.formats.safetensors import DTYPE_BITS, SafetensorsHeader
from charter.admission.runtime import MAX_COMPANION_BYTES, parse_companion, read_companion
from charter.freeze.common import constant_names, fold_tensors, layout_policy, strictest_common

# config.json keys whose values are tensor widths worth naming in shapes, in order of preference.
_DIM_KEYS = ("hidden_size", "intermediate_size", "vocab_size", "num_attention_heads", "num_key_value_heads",
             "head_dim", "max_position_embeddings")


def freeze_safetensors(h: SafetensorsHeader, artifact_id: str, model_id: str, path: str) -> tuple[dict, dict]:
    return freeze_safetensors_set([(path, h)], artifact_id, model_id)


def freeze_safetensors_set(files: list[tuple[str, SafetensorsHeader]], artifact_id: str,
                           model_id: str) -> tuple[dict, dict]:
    """One model and one artifact contract that admit every file of `files` (the shards of one
    model, in order: the inventory is their union, the layout policy the strictest all satisfy).
    Raises ValueError when no one contract can: shards whose metadata or header padding differ."""
    path, h = files[0]
    for other, o in files[1:]:
        if o.metadata != h.metadata or o.header_len_aligned != h.header_len_aligned:
            raise ValueError(f"{other} and {path} differ in their metadata or header padding: one artifact "
                             "contract cannot admit both")
    config = _companion(Path(path).parent / "config.json")
    constants: dict[str, int | float] = {}
    config_keys: dict[str, dict] = {}
    name_of = constant_names(sorted(k for k, v in config.items() if _bindable(k, v)))
    for key, name in name_of.items():
        value = config[key]
        constants[name] = value
        config_keys[key] = {"type": "int64" if isinstance(value, int) else "float64", "value": name}
    by_value = {constants[name_of[k]]: name_of[k] for k in reversed(_DIM_KEYS)
                if k in name_of and isinstance(constants[name_of[k]], int)}
    where = path if len(files) == 1 else f"the {len(files)} shards of {Path(path).parent}"
    model = {
        "charter": 1, "kind": "model", "id": model_id, "status": "structural",
        "description": f"Frozen by `charter freeze` from {where}.",
        "architecture": _first_text(config.get("architectures")) or "unknown",
        "family": _text(config.get("model_type")) or "unknown",
        "constants": constants,
    }
    artifact: dict = {
        "charter": 1, "kind": "artifact", "id": artifact_id, "status": "structural", "model": model_id,
        "format": "safetensors",
        "container": {"header_aligned": h.header_len_aligned},
        "metadata": {"extra_keys": "reject",
                     "keys": {k: {"type": "string", "value": v} for k, v in (h.metadata or {}).items()}},
    }
    if config_keys:
        artifact["config"] = {"file": "config.json", "keys": config_keys}
    layers = constants.get("num_hidden_layers")
    tensors = [t for _, header in files for t in header.tensors]
    artifact["tensors"] = fold_tensors([(t.name, tuple(t.shape), t.dtype) for t in tensors], by_value,
                                       ("num_hidden_layers", layers) if isinstance(layers, int) else None)
    used = sorted({t.dtype for t in tensors})
    artifact["codecs"] = {d: _geometry(d) for d in used}
    artifact["layout"] = strictest_common([
        layout_policy(p, [(f.data_offset + t.begin, f.data_offset + t.end) for t in f.tensors], f.data_offset,
                      f.file_size, 1) for p, f in files])
    return model, artifact


def _bindable(key: str, value) -> bool:
    """A top-level number the config check can find again: a finite int64 or float64 under a key
    without a dot (config keys are dotted paths)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not key or "." in key:
        return False
    return -(2**63) <= value < 2**63 if isinstance(value, int) else math.isfinite(value)


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _first_text(value) -> str:
    return _text(value[0]) if isinstance(value, list) and value else ""


def _geometry(dtype: str) -> dict:
    bits = DTYPE_BITS[dtype]
    return {"block": 8 // bits, "bytes": 1} if bits < 8 else {"block": 1, "bytes": bits // 8}


def _companion(path: Path) -> dict:
    """The config as admission will read it (charter.admission.runtime), or {} if it cannot."""
    try:
        raw = read_companion(path)
        if len(raw) > MAX_COMPANION_BYTES:
            return {}
        data = parse_companion(raw)
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}
