"""Kernel contracts with a Metal backend -> one plan per model: its constants and the argument
structs of its Metal kernels, shared by host C++ and MSL (generated/metal/<model id>.h).

Decisions made here: the C type of every constant (32-bit where the value fits, float32 for floats:
MSL has no double), the fields of each kernel's `Args` struct (its free dims as uint32, then the
attributes the caller supplies, in contract order), the constants of fixed attributes, the byte
layout the host `static_assert`s, and the names (suffixed when they would collide with a C++ or MSL
word). Every field is 4 bytes, so host C++ and MSL lay the struct out identically.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from charter.codegen.common.cpp import cpp_comment
from charter.codegen.common.header import generated_header
from charter.codegen.common.names import identifier
from charter.contract import expr
from charter.contract.contractset import ContractSet
from charter.contract.load import LoadedContract
from charter.contract.models import KernelContract

# attribute type -> (C type in the struct, ctypes name); 4-byte types only
FIELD_TYPES = {"float32": ("float", "c_float"), "int32": ("int32_t", "c_int32"), "uint32": ("uint32_t", "c_uint32"),
               "bool": ("uint32_t", "c_uint32")}


class MetalError(ValueError):
    """A contract the Metal header generator cannot render, with the reason and location."""


@dataclass(frozen=True)
class ConstantView:
    ctype: str
    name: str
    literal: str
    comment: str  # comment-safe


@dataclass(frozen=True)
class FieldView:
    ctype: str
    name: str
    offset: int
    ctypes: str  # the ctypes type name, for hosts that pack the struct from Python
    comment: str  # comment-safe


@dataclass(frozen=True)
class KernelView:
    kernel_id: str  # comment-safe
    namespace: str
    source: str  # comment-safe
    functions: str  # comment-safe
    buffers: str  # comment-safe buffer map
    constants: tuple[ConstantView, ...]
    fields: tuple[FieldView, ...]
    size: int


@dataclass(frozen=True)
class ModelView:
    header: str
    model_id: str  # comment-safe
    namespace: str
    guard: str
    constants: tuple[ConstantView, ...]
    kernels: tuple[KernelView, ...]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def constant(name: str, value, text: str) -> ConstantView:
    """A constant with the narrowest faithful C type of both languages; `text` says where it comes from."""
    comment = cpp_comment(text)
    if isinstance(value, bool):
        return ConstantView("bool", name, "true" if value else "false", comment)
    if isinstance(value, int):
        if 0 <= value < 2**32:
            return ConstantView("uint32_t", name, f"{value}u", comment)
        if -(2**31) <= value < 0:
            return ConstantView("int32_t", name, f"({value})", comment)
        if 0 <= value < 2**64:
            return ConstantView("uint64_t", name, f"{value}ull", comment)
        raise MetalError(f"constant {name} = {value} does not fit 64 bits")
    f32 = struct.unpack("<f", struct.pack("<f", float(value)))[0] if abs(float(value)) <= 3.4028234663852886e38 else None
    if f32 is None or f32 != f32 or f32 in (float("inf"), float("-inf")):
        raise MetalError(f"constant {name} = {value!r} is not a finite float32")
    shortest = next(t for t in (f"{f32:.{p}g}" for p in range(1, 18)) if struct.unpack("<f", struct.pack("<f", float(t)))[0] == f32)
    literal = shortest if any(c in shortest for c in ".en") else shortest + ".0"
    note = "" if f32 == float(value) else f" (float32 of {value!r})"
    return ConstantView("float", name, f"{literal}f", cpp_comment(text + note))


def metal_kernels(cs: ContractSet) -> list[LoadedContract]:
    return sorted((lc for lc in cs.of_kind("kernel") if lc.contract.backends.metal is not None), key=lambda lc: lc.id)


def build_kernel(cs: ContractSet, lc: LoadedContract, model_id: str) -> KernelView:
    k = lc.contract
    assert isinstance(k, KernelContract) and k.backends.metal is not None
    env = cs.models[model_id].constants
    fields: list[FieldView] = []
    for d in k.dims:
        fields.append(FieldView("uint32_t", identifier(d), 4 * len(fields), "c_uint32", cpp_comment(f"free dim {d}")))
    constants: list[ConstantView] = []
    for name, attr in k.attributes.items():
        if attr.value is None:
            if attr.type not in FIELD_TYPES:
                raise MetalError(f"{lc.doc.where(('attributes', name))}: a Metal argument cannot be {attr.type} "
                                 "(4-byte int32, uint32, float32 or bool only)")
            ctype, ctypes_name = FIELD_TYPES[attr.type]
            fields.append(FieldView(ctype, identifier(name), 4 * len(fields), ctypes_name,
                                    cpp_comment(f"attribute {name} ({attr.type})")))
        else:
            value = attr.value if not isinstance(attr.value, str) else expr.parse(attr.value).evaluate(env)
            constants.append(constant(identifier(name), value, f"attribute {name} = {attr.value}"))
    if not fields:
        raise MetalError(f"{lc.doc.where(('dims',))}: a Metal kernel needs at least one argument field")
    names = [f.name for f in fields] + [c.name for c in constants]
    if len(set(names)) != len(names):
        raise MetalError(f"{lc.doc.where(('attributes',))}: argument names collide after escaping: {names}")
    buffers = [f"{i} {a.name} ({a.dtype})" for i, a in enumerate(k.inputs + k.outputs)]
    buffers.append(f"{len(buffers)} Args")
    metal = k.backends.metal
    return KernelView(
        kernel_id=cpp_comment(k.id), namespace=identifier(k.id), source=cpp_comment(metal.source),
        functions=cpp_comment(metal.function), buffers=cpp_comment(", ".join(buffers)),
        constants=tuple(constants), fields=tuple(fields), size=4 * len(fields))


def build_model(cs: ContractSet, model_id: str) -> ModelView:
    model = cs.models[model_id]
    lc = cs.contracts[model_id]
    kernels = [k for k in metal_kernels(cs) if model_id in k.contract.models]
    constants = [constant(identifier(name), value, str(model.locations.get(name, "")))
                 for name, value in model.constants.items()]
    views = tuple(build_kernel(cs, k, model_id) for k in kernels)
    names = [c.name for c in constants] + [v.namespace for v in views]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise MetalError(f"{lc.doc.where(('constants',))}: names collide in the Metal header of {model_id}: {dupes}")
    header = generated_header("//", (lc.doc.file, _sha(lc.doc.source)), {k.doc.file: _sha(k.doc.source) for k in kernels})
    ns = identifier(model_id)
    return ModelView(header=header, model_id=cpp_comment(model_id), namespace=ns,
                     guard=f"CHARTER_METAL_{ns.upper()}_H_", constants=tuple(constants), kernels=views)


def metal_models(cs: ContractSet) -> list[str]:
    """Models used by at least one kernel with a Metal backend, by id."""
    return sorted({m for lc in metal_kernels(cs) for m in lc.contract.models if m in cs.models})
