"""Strict header-only readers for the container formats charter admits (GGUF, safetensors).

Every failure is a `CharterError` with one `CONTAINER_*` diagnostic carrying the byte offset of
the offending field; see each module's docstring for the policies it decides.
"""

import importlib

# Public name -> the submodule that defines it, imported on first use (PEP 562): the contract
# loader reads the codec tables (ggml_types, safetensors.DTYPE_BITS) without importing the GGUF
# reader and numpy, so `charter check` stays small (tests/hardening/test_contract_hazards.py runs
# it under a 256 MiB address-space limit).
_EXPORTS = {
    "GGML_TYPES": "ggml_types", "GGMLType": "ggml_types", "ggml_type": "ggml_types",
    "KV": "gguf", "GGUFArray": "gguf", "GGUFHeader": "gguf", "GGUFValueType": "gguf", "TensorInfo": "gguf",
    "parse_gguf": "gguf", "read_gguf": "gguf", "serialize_gguf_header": "gguf",
    "SafetensorsHeader": "safetensors", "SafetensorsTensor": "safetensors", "parse_safetensors": "safetensors",
    "read_safetensors": "safetensors",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
