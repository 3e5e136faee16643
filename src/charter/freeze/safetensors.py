"""Freeze a safetensors file, and bind a sibling config.json to its tensor dims.

Integer and float values of config.json become model constants; the artifact's `config` section
requires the companion file to keep stating them, and tensor dims equal to a config value are
written as that constant. So a config.json that disagrees with the weights (say, a different
`hidden_size`) is rejected at admission: a cross-artifact constraint.
"""

from __future__ import annotations

import json
from pathlib import Path

from charter.formats.safetensors import DTYPE_BITS, SafetensorsHeader
from charter.freeze.common import constant_name, fold_tensors, layout_policy

# config.json keys whose values are tensor widths worth naming in shapes, in order of preference.
_DIM_KEYS = ("hidden_size", "intermediate_size", "vocab_size", "num_attention_heads", "num_key_value_heads",
             "head_dim", "max_position_embeddings")


def freeze_safetensors(h: SafetensorsHeader, artifact_id: str, model_id: str, path: str) -> tuple[dict, dict]:
    config = _companion(Path(path).parent / "config.json")
    constants: dict[str, int | float] = {}
    config_keys: dict[str, dict] = {}
    for key, value in sorted(config.items()):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        name = constant_name(key)
        constants[name] = value
        config_keys[key] = {"type": "int64" if isinstance(value, int) else "float64", "value": name}
    by_value = {constants[constant_name(k)]: constant_name(k) for k in reversed(_DIM_KEYS)
                if constant_name(k) in constants and isinstance(constants[constant_name(k)], int)}
    model = {
        "charter": 1, "kind": "model", "id": model_id, "status": "structural",
        "description": f"Frozen by `charter freeze` from {path}.",
        "source": {"repository": str(config.get("_name_or_path") or "unknown")},
        "architecture": str((config.get("architectures") or ["unknown"])[0]),
        "family": str(config.get("model_type") or "unknown"),
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
    artifact["tensors"] = fold_tensors([(t.name, tuple(t.shape), t.dtype) for t in h.tensors], by_value,
                                       ("num_hidden_layers", layers) if isinstance(layers, int) else None)
    used = sorted({t.dtype for t in h.tensors})
    artifact["codecs"] = {d: _geometry(d) for d in used}
    spans = [(h.data_offset + t.begin, h.data_offset + t.end) for t in h.tensors]
    artifact["layout"] = layout_policy(path, spans, h.data_offset, h.file_size, 1)
    return model, artifact


def _geometry(dtype: str) -> dict:
    bits = DTYPE_BITS[dtype]
    return {"block": 8 // bits, "bytes": 1} if bits < 8 else {"block": 1, "bytes": bits // 8}


def _companion(path: Path) -> dict:
    try:
        if path.stat().st_size > 1 << 24:
            return {}
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}
