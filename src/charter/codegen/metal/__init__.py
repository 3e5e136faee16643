"""Metal target: per model, generated/metal/<model id>.h with the model's constants and the
argument structs of its Metal kernels, shared by host C++ and MSL (`#ifdef __METAL_VERSION__`),
with host-side static_asserts on sizeof and offsetof.

The kernels themselves are hand-written MSL in native/metal/*.metal; they include this header (one
compile per model) and native/metal/charter_metal.h, which is metal_stdlib on Metal and a small
C++17 shim elsewhere, so the same sources compile with g++ and run on the CPU in tests. No Metal
compiler runs here: docs/native.md says what that proves and what needs `xcrun metal`.
"""

from __future__ import annotations

import jinja2

from charter.codegen.common.render import environment, normalize
from charter.codegen.metal.build import MetalError, build_model, metal_kernels, metal_models
from charter.contract.contractset import ContractSet

__all__ = ["MetalError", "header_path", "metal_inputs", "render_metal"]


def header_path(model_id: str) -> str:
    return f"metal/{model_id}.h"


def _environment() -> jinja2.Environment:
    return environment("charter.codegen.metal")


def render_metal(cs: ContractSet) -> list[tuple[str, str]]:
    """(path relative to the output directory, text) of each model's Metal header."""
    template = _environment().get_template("model.h.jinja")
    return [(header_path(m), normalize(template.render(view=build_model(cs, m)))) for m in metal_models(cs)]


def metal_inputs(cs: ContractSet) -> dict[str, dict[str, str]]:
    """For the manifest: each header path -> {spec display path: sha256 of its bytes} (the model
    contract and the kernel contracts whose structs it holds)."""
    import hashlib

    def sha(lc) -> str:
        return hashlib.sha256(lc.doc.source.encode("utf-8")).hexdigest()

    out = {}
    for m in metal_models(cs):
        specs = [cs.contracts[m]] + [k for k in metal_kernels(cs) if m in k.contract.models]
        out[header_path(m)] = dict(sorted((lc.doc.file, sha(lc)) for lc in specs))
    return out
