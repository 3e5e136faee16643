"""Bindings target: kernel contracts -> nanobind bindings of charter's C++ kernels.

    bindings/<kernel id>.cpp   charter_bind_<kernel>(m): one checked function per kernel contract
    bindings/_register.cpp     charter_register_kernels(m): calls every charter_bind_<kernel>

A generated binding checks dtype, rank, C-contiguity, device, shape (literals, free dims bound by
their first occurrence, and values fixed by the contract's models) and aliasing, with errors that
name the argument and the dim; takes every array `.noconvert()`; allocates missing outputs; and
releases the GIL only around the kernel call. The runtime it calls is native/kernels/bind_support.hpp;
native/kernels/kernels.cmake adds the kernels and these files to the module target.

Data flows one way: contract -> `build` (a plan of ready-made C++ literals) -> Jinja2 templates
that only loop and substitute. Output is deterministic (kernels by id, no timestamps), LF, one
trailing newline.
"""

from __future__ import annotations

import jinja2

from charter.codegen.bindings.build import BindingError, build_kernel, build_register, kernel_contracts, spec_sha
from charter.codegen.common.render import environment, normalize
from charter.contract.contractset import ContractSet

__all__ = ["BindingError", "REGISTER_FUNCTION", "REGISTER_PATH", "bindings_inputs", "render_bindings"]

REGISTER_PATH = "bindings/_register.cpp"
REGISTER_FUNCTION = "charter_register_kernels"


def _environment() -> jinja2.Environment:
    return environment("charter.codegen.bindings")


def render_bindings(cs: ContractSet) -> list[tuple[str, str]]:
    """(path relative to the output directory, text) of every binding file of a contract set.

    A set without kernel contracts renders nothing (not even the registration file)."""
    kernels = kernel_contracts(cs)
    if not kernels:
        return []
    env = _environment()
    views = [build_kernel(cs, lc) for lc in kernels]
    out = [(f"bindings/{lc.id}.cpp", normalize(env.get_template("binding.cpp.jinja").render(view=view)))
           for lc, view in zip(kernels, views)]
    register = build_register(views, {lc.doc.file: spec_sha(lc) for lc in kernels})
    out.append((REGISTER_PATH, normalize(env.get_template("register.cpp.jinja").render(view=register))))
    return sorted(out)


def bindings_inputs(cs: ContractSet) -> dict[str, dict[str, str]]:
    """For the manifest: each output path -> {spec display path: sha256 of its bytes}. A binding
    depends on its kernel contract and the contract's models; the registration file on every
    kernel contract."""
    kernels = kernel_contracts(cs)
    if not kernels:
        return {}
    out = {}
    for lc in kernels:
        specs = {lc.doc.file: spec_sha(lc)}
        specs.update({cs.contracts[m].doc.file: spec_sha(cs.contracts[m]) for m in lc.contract.models if m in cs.contracts})
        out[f"bindings/{lc.id}.cpp"] = dict(sorted(specs.items()))
    out[REGISTER_PATH] = dict(sorted((lc.doc.file, spec_sha(lc)) for lc in kernels))
    return out
