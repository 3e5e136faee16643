"""A kernel contract -> the plan its nanobind binding is rendered from.

Every decision is made here: which shape entries are literals, free dims or model-fixed values;
the per-model value table (one Variant per distinct set of values); the kernel's C++ parameter
list (Note [Kernel signature] in native/src/kernels.hpp); the Python signature; and the exact C++
literal of every string and number, through charter.codegen.common.cpp (the C++ escaper). The
templates only loop and substitute.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass

from charter.codegen.common.cpp import cpp_comment, cpp_float, cpp_int64, cpp_str
from charter.codegen.common.header import generated_header
from charter.codegen.common.names import PYTHON_WORDS, identifier
from charter.contract import expr
from charter.contract.contractset import ContractSet
from charter.contract.load import LoadedContract
from charter.contract.models import KernelContract

MAX_RANK = 4  # charter::bind::kMaxRank

# dtype -> (C++ element type, charter::bind::DType enumerator)
DTYPES = {
    "float32": ("float", "Float32"),
    "float16": ("std::uint16_t", "Float16"),  # IEEE half bits; kernels decode them
    "int32": ("std::int32_t", "Int32"),
    "int64": ("std::int64_t", "Int64"),
    "uint8": ("std::uint8_t", "UInt8"),
    "uint32": ("std::uint32_t", "UInt32"),
}
# attribute type -> (C++ type, Python annotation)
ATTR_TYPES = {
    "int32": "std::int32_t",
    "int64": "std::int64_t",
    "uint32": "std::uint32_t",
    "float32": "float",
    "float64": "double",
    "bool": "bool",
}
_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class BindingError(ValueError):
    """A kernel contract the bindings generator cannot render, with the reason and location."""


@dataclass(frozen=True)
class DimView:
    cpp: str  # a charter::bind::Dim initializer


@dataclass(frozen=True)
class ArgView:
    name: str  # the contract's argument name (validated Name, not a Python keyword)
    param: str  # C++ parameter: a_<name>
    data: str  # C++ data pointer: p_<name>
    const: str  # the ArgSpec constant: k_<name>
    cpp_spec: str  # ArgSpec initializer
    element: str  # C++ element type
    is_output: bool
    where: str  # comment-safe spec location
    shape_text: str  # comment-safe "float32 (rows, hidden)"
    doc_shape: str  # "float32[rows, hidden]", for the docstring (a C++ string literal)


@dataclass(frozen=True)
class ParamView:
    """One argument of the kernel call, in Note [Kernel signature] order."""

    expr: str  # the C++ expression passed


@dataclass(frozen=True)
class PyParamView:
    name: str
    cpp_type: str
    nb_arg: str  # nb::arg(...) with modifiers
    kw_only: bool = False  # nb::kw_only() goes before this parameter (the first output)


@dataclass(frozen=True)
class KernelView:
    header: str
    kernel_id: str  # comment-safe
    identifier: str
    binder: str  # the registration function, charter_bind_<identifier>
    cpp_py_name: str  # literal of the Python function name
    function: str  # C++ kernel function (validated qualified name)
    include: str  # header name literal for #include
    oracle: str  # comment-safe
    n_slots: int
    n_variants: int
    n_free: int
    cpp_free: str  # initializer list of free-dim names
    cpp_slots: str  # initializer list of slot names
    variants: tuple[str, ...]  # Variant initializers
    variant_comments: tuple[str, ...]
    fixed_fields: tuple[str, ...]  # members of struct Fixed: the fixed float attributes ("float theta")
    fixed_rows: tuple[str, ...]  # one Fixed initializer per variant (empty without fixed floats)
    fixed_comments: tuple[str, ...]
    inputs: tuple[ArgView, ...]
    outputs: tuple[ArgView, ...]
    call_params: tuple[ParamView, ...]
    py_params: tuple[PyParamView, ...]
    cpp_doc: str
    signature: str  # comment-safe Python signature


@dataclass(frozen=True)
class RegisterView:
    header: str
    binders: tuple[str, ...]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _cpp_int(value: object, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BindingError(f"{what} must be an integer, got {value!r}")
    return cpp_int64(value)


def _fail(lc: LoadedContract, path: tuple, message: str) -> BindingError:
    return BindingError(f"{lc.doc.where(path)}: {message}")


def _check_backends(lc: LoadedContract, k: KernelContract) -> None:
    if k.backends.cpp is None:
        raise _fail(lc, ("backends",), "a kernel binding needs backends.cpp (the C++ function it calls)")
    module_name, _, attr = k.oracle.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise _fail(lc, ("oracle",), f"oracle module {module_name} cannot be imported: {exc}") from None
    if not callable(getattr(module, attr, None)):
        raise _fail(lc, ("oracle",), f"oracle {k.oracle} is not a function")
    header = k.backends.cpp.header or "kernels.hpp"
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_./-]*\.(h|hpp)", header) or ".." in header:
        raise _fail(lc, ("backends", "cpp", "header"), f"header {header!r} must be a relative .h/.hpp path")


def build_kernel(cs: ContractSet, lc: LoadedContract) -> KernelView:
    k = lc.contract
    if not isinstance(k, KernelContract):
        raise TypeError(f"bindings are generated from kernel contracts, not {k.kind}")
    _check_backends(lc, k)
    models = [cs.models[m] for m in k.models if m in cs.models]
    if len(models) != len(k.models):
        missing = [m for m in k.models if m not in cs.models]
        raise _fail(lc, ("models",), f"models not resolved in this contract set: {missing}")
    free = list(k.dims)
    slots: list[str] = []  # model-fixed values: shape texts, then fixed attribute texts
    slot_paths: dict[str, tuple] = {}
    bare_names: list[str] = []  # Note [Kernel signature]: distinct bare shape names, first appearance
    args: list[tuple[str, int, object]] = []  # (group, index, arg)
    for group in ("inputs", "outputs"):
        for i, a in enumerate(getattr(k, group)):
            args.append((group, i, a))

    def classify(raw, path: tuple) -> tuple[str, object]:
        if isinstance(raw, int):
            if raw < 0:
                raise _fail(lc, path, f"a dim must be >= 0, got {raw}")
            return "literal", raw
        text = raw.strip()
        parsed = expr.parse(raw, lc.doc.where(path), ".".join(map(str, path)))
        names = set(parsed.names)
        if _BARE.fullmatch(text) and text in free:
            if text not in bare_names:
                bare_names.append(text)
            return "free", free.index(text)
        if names & set(free):
            raise _fail(lc, path, f"shape entry {text!r} combines free dims in an expression; bindings support "
                                  "literals, bare names and expressions over model constants only")
        if _BARE.fullmatch(text) and text not in bare_names:
            bare_names.append(text)
        if text not in slots:
            slots.append(text)
            slot_paths[text] = path
        return "model", slots.index(text)

    classified: list[list[tuple[str, object, str]]] = []
    for group, i, a in args:
        if a.name in PYTHON_WORDS:
            raise _fail(lc, (group, i, "name"), f"argument name {a.name!r} is a Python keyword")
        if len(a.shape) > MAX_RANK:
            raise _fail(lc, (group, i, "shape"), f"rank {len(a.shape)} exceeds {MAX_RANK}")
        dims = []
        for j, raw in enumerate(a.shape):
            kind, value = classify(raw, (group, i, "shape", j))
            dims.append((kind, value, raw if isinstance(raw, str) else str(raw)))
        classified.append(dims)
    input_free = {v for (g, _, _), dims in zip(args, classified) if g == "inputs" for kind, v, _ in dims if kind == "free"}
    for n, name in enumerate(free):
        if n not in input_free:
            raise _fail(lc, ("dims",), f"free dim {name!r} must appear as a bare name in an input shape, so every "
                                       "call binds it before outputs are checked or allocated")

    # Attributes: fixed ones are contract facts (model-fixed slots), the others are call arguments.
    attr_params: list[tuple[str, str, str | None]] = []  # (name, C++ type, slot text or None)
    py_attrs: list[tuple[str, str]] = []  # (name, C++ type)
    attr_types: dict[str, str] = {name: attr.type for name, attr in k.attributes.items()}
    reals: list[tuple[str, str, str, tuple]] = []  # fixed float attributes: (name, C++ type, text, path)
    fixed_params: set[str] = set()
    for name, attr in k.attributes.items():
        if name in PYTHON_WORDS:
            raise _fail(lc, ("attributes", name), f"attribute name {name!r} is a Python keyword")
        ctype = ATTR_TYPES[attr.type]
        if attr.value is None:
            attr_params.append((name, ctype, None))
            py_attrs.append((name, ctype))
            continue
        if isinstance(attr.value, str) and attr.value.strip() in bare_names:
            continue  # the same number as a shape name, already passed (Note [Kernel signature])
        if attr.type == "bool" or isinstance(attr.value, bool):
            raise _fail(lc, ("attributes", name, "value"), "fixed bool attributes are not supported by the bindings "
                                                           "generator; make the attribute a call argument")
        text = attr.value.strip() if isinstance(attr.value, str) else str(attr.value)
        if attr.type.startswith("float"):  # a per-model number of the kernel's C type (struct Fixed)
            reals.append((name, ctype, text, ("attributes", name, "value")))
            attr_params.append((name, ctype, None))
            fixed_params.add(name)
            continue
        if text not in slots:
            slots.append(text)
            slot_paths[text] = ("attributes", name, "value")
        attr_params.append((name, ctype, text))

    # One value per slot per model; models with equal values share a variant. A fixed float attribute
    # is a number of its C type, exactly as the literal rounds it (cpp_float), part of the variant.
    variants: dict[tuple[int, ...], list[str]] = {}
    fixed: dict[tuple[int, ...], tuple[str, ...]] = {}
    shown: dict[tuple[int, ...], str] = {}  # the fixed floats of a variant, for its docstring line
    for model in models:
        values = []
        for text in slots:
            path = slot_paths[text]
            value = expr.parse(text, lc.doc.where(path), ".".join(map(str, path))).evaluate(model.constants)
            low = -(2**63) if path[0] == "attributes" else 0  # a dim is a size; an attribute may be negative
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value < 2**63:
                raise _fail(lc, path, f"{text} = {value!r} in model {model.id} is not an integer in [{low}, 2**63)")
            values.append(value)
        literals = []
        for name, ctype, text, path in reals:
            value = expr.parse(text, lc.doc.where(path), ".".join(map(str, path))).evaluate(model.constants)
            try:
                literals.append(cpp_float(value, ctype))
            except (TypeError, ValueError) as exc:
                raise _fail(lc, path, f"{name} = {value!r} in model {model.id} is not a finite {ctype}: {exc}") from None
        if tuple(values) in fixed and fixed[tuple(values)] != tuple(literals):
            other = variants[tuple(values)][0]
            raise _fail(lc, reals[0][3], f"models {other} and {model.id} differ only in fixed float attributes: "
                                         "the shapes of a call cannot tell which one is meant")
        fixed[tuple(values)] = tuple(literals)
        shown[tuple(values)] = ", ".join(f"{name} = {float.fromhex(lit.rstrip('f'))!r}"
                                         for (name, _, _, _), lit in zip(reals, literals))
        variants.setdefault(tuple(values), []).append(model.id)

    ident = identifier(k.id)
    arg_views = []
    for (group, i, a), dims in zip(args, classified):
        dim_inits = []
        for kind, value, text in dims:
            lit_text = cpp_str(text.strip())
            if kind == "literal":
                dim_inits.append(f"{{Dim::Kind::Literal, {_cpp_int(value, 'dim')}, 0, {lit_text}}}")
            elif kind == "free":
                dim_inits.append(f"{{Dim::Kind::Free, 0, {value}, {lit_text}}}")
            else:
                dim_inits.append(f"{{Dim::Kind::Model, 0, {value}, {lit_text}}}")
        element, enum = DTYPES[a.dtype]
        spec = (f"{{{cpp_str(a.name)}, DType::{enum}, {len(dims)}, {{{{{', '.join(dim_inits)}}}}}}}")
        dims_text = ", ".join(t.strip() for _, _, t in dims)
        arg_views.append(ArgView(
            name=a.name, param=f"a_{a.name}", data=f"p_{a.name}", const=f"k_{a.name}", cpp_spec=spec, element=element, is_output=group == "outputs",
            where=cpp_comment(str(lc.doc.where((group, i)))),
            shape_text=cpp_comment(f"{a.dtype} ({dims_text})"), doc_shape=f"{a.dtype}[{dims_text}]"))
    inputs = tuple(v for v in arg_views if not v.is_output)
    outputs = tuple(v for v in arg_views if v.is_output)

    params: list[ParamView] = []
    for v in inputs + outputs:
        params.append(ParamView(v.data))
    for name in bare_names:
        if name in free:
            params.append(ParamView(f"c.free_dim({free.index(name)})"))
        else:
            params.append(ParamView(f"static_cast<std::size_t>(c.model_value({slots.index(name)}))"))
    for name, ctype, slot_text in attr_params:
        if name in fixed_params:
            params.append(ParamView(f"kFixed[c.variant()].{name}"))
        elif slot_text is None:
            params.append(ParamView(f"attr_{name}"))
        else:
            params.append(ParamView(f"static_cast<{ctype}>(c.model_value({slots.index(slot_text)}))"))

    py_params = [PyParamView(v.param, "nb::ndarray<nb::ro>", f"nb::arg({cpp_str(v.name)}).noconvert()")
                 for v in inputs]
    py_params += [PyParamView(f"attr_{n}", ctype, f"nb::arg({cpp_str(n)})") for n, ctype in py_attrs]
    py_params += [PyParamView(v.param, "std::optional<nb::ndarray<>>",
                              f"nb::arg({cpp_str(v.name)}).noconvert().none() = nb::none()", kw_only=n == 0)
                  for n, v in enumerate(outputs)]

    py_name = ident
    positional = ", ".join([v.name for v in inputs] + [n for n, _ in py_attrs])
    keywords = ", ".join(v.name + "=None" for v in outputs)
    returns = outputs[0].name if len(outputs) == 1 else "(" + ", ".join(v.name for v in outputs) + ")"
    signature = f"{py_name}({positional}, *, {keywords}) -> {returns}"
    doc = _docstring(k, signature, inputs, outputs, [(n, attr_types[n]) for n, _ in py_attrs], slots, variants, free,
                     shown)
    model_sources = {cs.contracts[m.id].doc.file: _sha(cs.contracts[m.id].doc.source) for m in models}
    include = k.backends.cpp.header or "kernels.hpp"
    return KernelView(
        header=generated_header("//", (lc.doc.file, _sha(lc.doc.source)), model_sources),
        kernel_id=cpp_comment(k.id), identifier=ident, binder=f"charter_bind_{ident}",
        cpp_py_name=cpp_str(py_name),
        function=k.backends.cpp.function, include=cpp_str(include), oracle=cpp_comment(k.oracle),
        n_slots=len(slots), n_variants=len(variants), n_free=len(free),
        cpp_free=", ".join(cpp_str(f) for f in free),
        cpp_slots=", ".join(cpp_str(s) for s in slots),
        variants=tuple(f"{{{cpp_str(', '.join(ms))}, {{{{{', '.join(_cpp_int(v, 'value') for v in vals)}}}}}}}"
                       for vals, ms in variants.items()),
        variant_comments=tuple(cpp_comment(", ".join(f"{s} = {v}" for s, v in zip(slots, vals)) or "no model-fixed values")
                               for vals in variants),
        fixed_fields=tuple(f"{ctype} {name}" for name, ctype, _, _ in reals),
        fixed_rows=tuple(f"{{{', '.join(fixed[vals])}}}" for vals in variants) if reals else (),
        fixed_comments=tuple(cpp_comment(f"{shown[vals]} ({', '.join(ms)})") for vals, ms in variants.items()),
        inputs=inputs, outputs=outputs, call_params=tuple(params), py_params=tuple(py_params),
        cpp_doc=cpp_str(doc), signature=cpp_comment(signature),
    )


def _docstring(k: KernelContract, signature: str, inputs, outputs, py_attrs, slots, variants, free, shown) -> str:
    lines = [" ".join((k.description or k.id).split()), ""]
    for v in inputs:
        lines.append(f"{v.name}: {v.doc_shape}, C-contiguous, CPU (never converted)")
    for name, attr_type in py_attrs:
        lines.append(f"{name}: {attr_type} scalar")
    for v in outputs:
        lines.append(f"{v.name}: {v.doc_shape}, written in place if given, else allocated; returned")
    if slots or any(shown.values()):
        lines.append("")
        for vals, ms in variants.items():
            facts = [f"{s} = {val}" for s, val in zip(slots, vals)] + ([shown[vals]] if shown[vals] else [])
            lines.append(", ".join(facts) + f" ({', '.join(ms)})")
    if free:
        lines.append(f"Free dims: {', '.join(free)} (>= 0, bound by the first input that has them).")
    lines += ["", f"Oracle: {k.oracle}. Contract: kernel {k.id}. The GIL is released while the kernel runs."]
    return "\n".join(lines)


def build_register(views: list[KernelView], specs: dict[str, str]) -> RegisterView:
    return RegisterView(header=generated_header("//", None, specs), binders=tuple(v.binder for v in views))


def kernel_contracts(cs: ContractSet) -> list[LoadedContract]:
    """The kernel contracts of a set, by id; ids whose identifiers collide are an error."""
    kernels = sorted((lc for lc in cs.of_kind("kernel") if not lc.contract.backends.oracle_only), key=lambda lc: lc.id)
    seen: dict[str, str] = {}
    for lc in kernels:
        ident = identifier(lc.id)
        if ident in seen:
            raise BindingError(f"{lc.doc.where(('id',))}: kernel ids {seen[ident]!r} and {lc.id!r} both bind as {ident}")
        seen[ident] = lc.id
    return kernels


def spec_sha(lc: LoadedContract) -> str:
    return _sha(lc.doc.source)


__all__ = ["BindingError", "KernelView", "RegisterView", "build_kernel", "build_register", "kernel_contracts",
           "spec_sha"]
