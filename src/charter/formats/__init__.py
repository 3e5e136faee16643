"""Strict header-only readers for the container formats charter admits (GGUF, safetensors).

Every failure is a `CharterError` with one `CONTAINER_*` diagnostic carrying the byte offset of
the offending field; see each module's docstring for the policies it decides.
"""

from charter.formats.ggml_types import GGML_TYPES, GGMLType, ggml_type
from charter.formats.gguf import (
    KV,
    GGUFArray,
    GGUFHeader,
    GGUFValueType,
    TensorInfo,
    parse_gguf,
    read_gguf,
    serialize_gguf_header,
)
from charter.formats.safetensors import (
    SafetensorsHeader,
    SafetensorsTensor,
    parse_safetensors,
    read_safetensors,
)

__all__ = [
    "GGML_TYPES",
    "GGMLType",
    "ggml_type",
    "KV",
    "GGUFArray",
    "GGUFHeader",
    "GGUFValueType",
    "TensorInfo",
    "parse_gguf",
    "read_gguf",
    "serialize_gguf_header",
    "SafetensorsHeader",
    "SafetensorsTensor",
    "parse_safetensors",
    "read_safetensors",
]
