"""ArtifactPlan -> the view the C++ checker template renders.

The checks are exactly those of `charter.codegen.python.build.checks(plan)`, in the same order:
the Python and C++ checkers are two renderings of one list, so they cannot drift apart in what
they check (tests/native proves they agree in how, diagnostic for diagnostic). Facts that repeat
become constexpr tables the runtime loops over (a `{i}` tensor row is one row, expanded at run
time as the Python runtime does). Every literal goes through charter.codegen.cpp.escape.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from importlib import resources

import jinja2

from charter.codegen.render import environment, normalize

from charter import __version__
from charter.codegen.cpp.escape import (
    cpp_bool,
    cpp_comment,
    cpp_i64,
    cpp_int,
    cpp_lit,
    cpp_opt_sv,
    cpp_sv,
    identifier,
)
from charter.codegen.cpp.glob import compile_glob
from charter.codegen.python.build import DOCS, Check, checks
from charter.diagnostics import ADMISSION_STAGES
from charter.spec.plan import ArtifactPlan

TEMPLATE = "checker.hpp.jinja"


@dataclass(frozen=True)
class Stage:
    name: str
    doc: str
    statements: tuple[str, ...]


@dataclass(frozen=True)
class CheckerView:
    header: str
    contract_id: str
    model_id: str
    spec: str
    format: str
    format_enum: str
    status: str
    companion: str  # the file name a contract's `config` binds, or ""
    namespace: str
    inputs: tuple[tuple[str, str], ...]  # (spec path literal, sha256 literal)
    tables: tuple[str, ...]
    stores: tuple[str, ...]  # rt::StoreFacts rows of kStores, in the contract's order
    stages: tuple[Stage, ...]


@dataclass
class _Tables:
    """Named constexpr arrays, in the order they are first needed."""

    decls: list[str] = field(default_factory=list)
    counter: int = 0
    stores: list[str] = field(default_factory=list)  # rows of kStores, declared after the tables

    def add(self, stem: str, ctype: str, items: list[str], one_per_line: bool = True) -> str:
        """Declare `inline constexpr <ctype> kStemN[] = {...}` and return rt::span(...) of it, or an
        empty span for no items (C++ has no zero-length arrays)."""
        if not items:
            return f"rt::Span<{ctype}>{{}}"
        self.counter += 1
        name = f"k{stem}{self.counter}"
        if one_per_line:
            body = "".join(f"    {item},\n" for item in items)
            self.decls.append(f"inline constexpr {ctype} {name}[] = {{\n{body}}};")
        else:
            self.decls.append(f"inline constexpr {ctype} {name}[] = {{{', '.join(items)}}};")
        return f"rt::span({name})"


def _loc(at: str | None) -> str:
    return cpp_opt_sv(at)


def _glob(t: _Tables, pattern: str) -> str:
    tokens = []
    for tok in compile_glob(pattern):
        if tok.op == "class":
            ranges = t.add("Ranges", "rt::Range", [f"{{0x{lo:x}u, 0x{hi:x}u}}" for lo, hi in tok.ranges],
                           one_per_line=False)
            tokens.append(f"{{rt::GlobToken::Op::Class, 0u, {cpp_bool(tok.negate)}, {ranges}}}")
        else:
            op = {"char": "Char", "any": "Any", "star": "Star", "never": "Never"}[tok.op]
            tokens.append(f"{{rt::GlobToken::Op::{op}, 0x{tok.ch:x}u, false, {{}}}}")
    span = t.add("Glob", "rt::GlobToken", tokens, one_per_line=False)
    return f"rt::Glob{{{cpp_sv(pattern)}, {span}}}"


def _repeat(t: _Tables, placeholder: str, count) -> str:
    """A `{placeholder}` of a tensor row: range(count), or the listed indices."""
    if isinstance(count, int):
        return f"{{{cpp_sv(placeholder)}, {cpp_int(count)}, false, {{}}}}"
    indices = t.add("Indices", "rt::Int", [cpp_int(i) for i in count], one_per_line=False)
    return f"{{{cpp_sv(placeholder)}, rt::Int(0ull), true, {indices}}}"


def _call(method: str, *args: str) -> str:
    return f"if (!ctx.{method}({', '.join(args)})) return false;"


def _statement(c: Check, t: _Tables) -> tuple[str, str | None]:
    """(C++ statement, location of the fact) for one check; every method of runtime.Context a
    generated Python checker can call has its rendering here."""
    m, a = c.method, c.args
    if m == "container_format":
        fmt, at = a
        return _call(m, cpp_sv(fmt), _loc(at)), at
    if m in ("container_version", "container_alignment"):
        value, at = a
        return _call(m, cpp_int(value), _loc(at)), at
    if m == "container_header_aligned":
        value, at = a
        return _call(m, cpp_bool(value), _loc(at)), at
    if m == "identity":
        key, value, at = a
        return _call(m, cpp_sv(key), cpp_sv(value), _loc(at)), at
    if m == "meta_types":
        (facts,) = a
        rows = [f"{{{cpp_sv(k)}, {cpp_sv(ty)}, {cpp_opt_sv(el)}, {_loc(at)}}}" for k, ty, el, at in facts]
        return _call(m, t.add("MetaTypes", "rt::MetaTypeFact", rows)), None
    if m == "meta_key_set":
        pinned, forbidden, extra, at = a
        keys = t.add("Pinned", "std::string_view", [cpp_sv(k) for k in pinned])
        banned = t.add("Forbidden", "rt::KeyAt", [f"{{{cpp_sv(k)}, {_loc(loc)}}}" for k, loc in forbidden])
        return _call(m, keys, banned, cpp_sv(extra), _loc(at)), at
    if m == "value":
        stage, key, ctype, value, at = a
        return _call(m, cpp_sv(stage), cpp_sv(key), cpp_sv(ctype), cpp_lit(value), _loc(at)), at
    if m == "string_digest":
        stage, key, sha, at = a
        return _call(m, cpp_sv(stage), cpp_sv(key), cpp_sv(sha), _loc(at)), at
    if m == "array":
        stage, key, length, values, sha, at = a
        vals = t.add("Values", "rt::Lit", [cpp_lit(v) for v in values or ()])
        return _call(m, cpp_sv(stage), cpp_sv(key), cpp_int(length), cpp_bool(values is not None), vals,
                     cpp_opt_sv(sha), _loc(at)), at
    if m == "config":
        file, facts = a
        rows = [f"{{{cpp_sv(k)}, {cpp_sv(ty)}, {cpp_lit(v)}, {_loc(at)}}}" for k, ty, v, at in facts]
        return _call(m, cpp_sv(file), t.add("Config", "rt::ConfigFact", rows)), None
    if m == "special_id":
        key, name, value, at = a
        return _call(m, cpp_sv(key), cpp_sv(name), cpp_int(value), _loc(at)), at
    if m == "stop_id":
        key, ids, at = a
        return _call(m, cpp_sv(key), t.add("StopIds", "rt::Int", [cpp_int(i) for i in ids], False), _loc(at)), at
    if m == "token_domain":
        key, ids, at = a
        return _call(m, cpp_sv(key), cpp_int(ids), _loc(at)), at
    if m == "logits_rows":
        tensor, axis, rows, at = a
        return _call(m, cpp_sv(tensor), cpp_i64(axis), cpp_int(rows), _loc(at)), at
    if m == "exclude":
        (patterns,) = a
        return f"ctx.exclude({t.add('Excluded', 'rt::Glob', [_glob(t, p) for p in patterns])});", None
    if m == "tensors":
        table, at_set = a
        rows = []
        for name, repeat, role, shape, codec, at in table:
            reps = t.add("Repeat", "rt::Repeat", [_repeat(t, p, n) for p, n in repeat], False)
            dims = t.add("Shape", "rt::Int", [cpp_int(d) for d in shape], False)
            rows.append(f"{{{cpp_sv(name)}, {reps}, {cpp_sv(role)}, {dims}, {cpp_sv(codec)}, {_loc(at)}}}")
        return _call(m, t.add("Tensors", "rt::TensorRow", rows), _loc(at_set)), at_set
    if m == "codecs":
        (table,) = a
        rows = [f"{{{cpp_sv(n)}, {cpp_int(b)}, {cpp_int(nb)}, {_loc(at)}}}" for n, b, nb, at in table]
        return _call(m, t.add("Codecs", "rt::CodecRow", rows)), None
    if m == "layout":
        alignment, sorted_, packed, trailing, at = a
        known = ("alignment", "layout", "packed", "sorted", "trailing")
        where = ", ".join(_loc(at.get(k)) for k in known)
        return _call(m, cpp_bool(alignment is not None), cpp_int(alignment if alignment is not None else 0),
                     cpp_bool(sorted_), cpp_bool(packed), cpp_sv(trailing), f"rt::LayoutAt{{{where}}}"), at.get("layout")
    if m == "exclusions":
        (table,) = a
        rows = []
        for name, patterns, count_key, count, at in table:
            globs = t.add("Globs", "rt::Glob", [_glob(t, p) for p in patterns])
            counted = f"{cpp_opt_sv(count_key)}, {cpp_int(count if count_key is not None else 0)}"
            rows.append(f"{{{cpp_sv(name)}, {globs}, {counted}, {_loc(at)}}}")
        return _call(m, t.add("Exclusions", "rt::ExclusionRow", rows)), None
    if m in ("expert_major_store", "ple_store"):
        name, tensor, facts, rows, at = a
        fields = t.add("StoreFields", "rt::StoreField",
                       [f"{{{cpp_sv(f)}, {cpp_int(v)}, {_loc(loc)}}}" for f, v, loc in facts])
        if m == "expert_major_store":
            kind = "expert-major-v2"
            comps = t.add("Components", "rt::StoreComponent",
                          [f"{{{cpp_sv(n)}, {cpp_int(ne0)}, {cpp_int(ne1)}, {_loc(loc)}}}" for n, ne0, ne1, loc in rows])
            heads = "rt::Span<rt::HeadRow>{}"
        else:
            kind = "ple-rows-v1"
            comps = "rt::Span<rt::StoreComponent>{}"
            heads = t.add("HeadRows", "rt::HeadRow", [f"{{{cpp_int(v)}, {_loc(loc)}}}" for v, loc in rows], False)
        index = len(t.stores)
        t.stores.append(f"{{{cpp_sv(name)}, {cpp_sv(kind)}, {cpp_sv(tensor)}, {fields}, {comps}, {heads}, {_loc(at)}}}")
        return f"if (!ctx.{m}(kStores[{index}])) return false;", at
    if m == "status":
        status, at = a
        return _call(m, cpp_sv(status), _loc(at)), at
    if m == "payload":
        file_sha, tensors, padding, at = a
        digests = t.add("PayloadDigests", "rt::KeyAt",
                        [f"{{{cpp_sv(n)}, {cpp_sv(d)}}}" for n, d, _ in tensors])
        return _call(m, cpp_opt_sv(file_sha), digests, cpp_sv(padding), _loc(at.get("file_sha256")),
                     _loc(at.get("padding"))), at.get("file_sha256")
    raise ValueError(f"the C++ generator has no rendering for check {m!r}: add it to charter.codegen.cpp.build")


def build(plan: ArtifactPlan, header: str, inputs: dict[str, str], namespace: str | None = None) -> CheckerView:
    tables = _Tables()
    by_stage: dict[str, list[str]] = {s.value: [] for s in ADMISSION_STAGES}
    for c in checks(plan):
        statement, at = _statement(c, tables)
        comment = f"// {cpp_comment(at)}" if at else None
        by_stage[c.stage].extend(([comment] if comment else []) + [statement])
    stages = tuple(Stage(name, DOCS[name], tuple(st)) for name, st in by_stage.items())
    return CheckerView(
        header=header,
        contract_id=cpp_sv(plan.id),
        model_id=cpp_sv(plan.model),
        spec=cpp_sv(plan.spec_path),
        format=cpp_sv(plan.format),
        format_enum="rt::Format::Gguf" if plan.format == "gguf" else "rt::Format::Safetensors",
        status=cpp_sv(plan.status),
        companion=cpp_sv(plan.config_file or ""),
        namespace=namespace or identifier(plan.id),
        inputs=tuple((cpp_sv(p), cpp_sv(s)) for p, s in sorted(inputs.items())),
        tables=tuple(tables.decls),
        stores=tuple(tables.stores),
        stages=stages,
    )


def cpp_checker_path(contract_id: str) -> str:
    return f"cpp/{contract_id}.hpp"


def _environment() -> jinja2.Environment:
    return environment("charter.codegen.cpp")




def generated_line(spec: str, spec_sha: str, extra: dict[str, str]) -> str:
    lines = [f"// @generated by charter {__version__} from {cpp_comment(spec)} (sha256:{spec_sha}) — do not edit"]
    for path, sha in extra.items():
        lines.append(f"// with {cpp_comment(path)} (sha256:{sha})")
    return "\n".join(lines)


def render_checker_text(plan: ArtifactPlan, inputs: dict[str, str], namespace: str | None = None) -> str:
    """The C++ checker of one plan; `inputs` maps each spec display path to the sha256 of its bytes.
    `namespace` (default: from the contract id) lets many checkers of one contract share a
    translation unit (charter.codegen.cpp.library)."""
    extra = {k: v for k, v in inputs.items() if k != plan.spec_path}
    header = generated_line(plan.spec_path, plan.spec_sha256, extra)
    view = build(plan, header, inputs, namespace)
    return normalize(_environment().get_template(TEMPLATE).render(view=view))


def inputs_of(cs, plan: ArtifactPlan) -> dict[str, str]:
    """Spec display path -> sha256 of its bytes, for the artifact and its model (the manifest's inputs)."""
    model = cs.contracts[plan.model]
    return {plan.spec_path: plan.spec_sha256,
            model.doc.file: hashlib.sha256(model.doc.source.encode("utf-8")).hexdigest()}


def render_cpp_checker(cs, plan: ArtifactPlan) -> tuple[str, str, dict[str, str]]:
    inputs = inputs_of(cs, plan)
    return cpp_checker_path(plan.id), render_checker_text(plan, inputs), inputs


def render_cpp_checkers(cs) -> list[tuple[str, str, dict[str, str]]]:
    """(path relative to generated/, text, inputs) of the C++ checker of every artifact contract,
    sorted by path; charter.codegen.driver.render_all wraps each in an Output."""
    return sorted((render_cpp_checker(cs, cs.artifacts[i]) for i in sorted(cs.artifacts)), key=lambda o: o[0])


def template_hash() -> dict[str, str]:
    entry = resources.files("charter.codegen.cpp") / "templates" / TEMPLATE
    return {f"charter.codegen.cpp/{TEMPLATE}": hashlib.sha256(entry.read_bytes()).hexdigest()}
