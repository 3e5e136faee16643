"""ArtifactPlan -> the view the C++ checker template renders.

The checks are exactly those of `charter.contract.checks.checks_of(plan)`, in the same order: the
Python and C++ checkers are two renderings of one typed list (Note [Typed checks]), so they
cannot drift apart in what they check (tests/native proves they agree in how, diagnostic for diagnostic). Facts that repeat
become constexpr tables the runtime loops over (a `{i}` tensor row is one row, expanded at run
time as the Python runtime does). Every literal goes through charter.codegen.cpp.literals and
charter.codegen.common.cpp (Note [Generated text] in charter.codegen.common).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from importlib import resources
from typing import assert_never

import jinja2

from charter.codegen.common.cpp import cpp_bool, cpp_comment, cpp_sv
from charter.codegen.common.header import generated_header
from charter.codegen.common.inputs import checker_inputs
from charter.codegen.common.names import identifier
from charter.codegen.common.render import environment, normalize
from charter.codegen.common.stages import StageView, stage_views
from charter.codegen.cpp.glob import compile_glob
from charter.codegen.cpp.literals import cpp_i64, cpp_int, cpp_lit, cpp_opt_sv
from charter.contract import checks
from charter.contract.plan import ArtifactPlan, value_of

TEMPLATE = "checker.hpp.jinja"


@dataclass(frozen=True)
class CheckerView:
    header: str
    about: str  # comment-safe: "<format> artifact contract <id>"
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
    stages: tuple[StageView, ...]


@dataclass
class _Tables:
    """Named constexpr arrays, in the order they are first needed; equal tables are declared once."""

    decls: list[str] = field(default_factory=list)
    names: dict[tuple, str] = field(default_factory=dict)  # (ctype, items) -> declared name
    stores: list[str] = field(default_factory=list)  # rows of kStores, declared after the tables

    def add(self, stem: str, ctype: str, items: list[str], label: str = "", one_per_line: bool = True) -> str:
        """rt::span(...) of `inline constexpr <ctype> k<Stem>_<label>[] = {...}`, named for what it
        holds, or an empty span for no items (C++ has no zero-length arrays)."""
        if not items:
            return f"rt::Span<{ctype}>{{}}"
        key = (ctype, tuple(items))
        if key not in self.names:
            self.names[key] = name = self._fresh(f"k{stem}" + (f"_{_label(label)}" if label else ""))
            if one_per_line:
                body = "".join(f"    {item},\n" for item in items)
                self.decls.append(f"inline constexpr {ctype} {name}[] = {{\n{body}}};")
            else:
                self.decls.append(f"inline constexpr {ctype} {name}[] = {{{', '.join(items)}}};")
        return f"rt::span({self.names[key]})"

    def _fresh(self, name: str) -> str:
        taken = set(self.names.values())
        if name not in taken:
            return name
        n = 2
        while f"{name}_{n}" in taken:
            n += 1
        return f"{name}_{n}"


def _label(text: str) -> str:
    """A C++ identifier tail naming a table's owner: letters, digits, underscores, at most 40."""
    return "".join(c if c.isascii() and c.isalnum() else "_" for c in text)[:40]


def _loc(at) -> str:
    return cpp_opt_sv(str(at) if at is not None else None)


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
    span = t.add("Glob", "rt::GlobToken", tokens, label=pattern, one_per_line=False)
    return f"rt::Glob{{{cpp_sv(pattern)}, {span}}}"


def _repeat(t: _Tables, r: checks.Repeat) -> str:
    """A `{placeholder}` of a tensor row: range(count), or the listed indices."""
    if isinstance(r.count, int):
        return f"{{{cpp_sv(r.placeholder)}, {cpp_int(r.count)}, false, {{}}}}"
    indices = t.add("Indices", "rt::Int", [cpp_int(i) for i in r.count], label=r.placeholder, one_per_line=False)
    return f"{{{cpp_sv(r.placeholder)}, rt::Int(0ull), true, {indices}}}"


def _repeat_label(repeat: tuple[checks.Repeat, ...]) -> str:
    return "_".join(f"{r.placeholder}{r.count if isinstance(r.count, int) else 'listed'}" for r in repeat)


def _call(method: str, *args: str) -> str:
    return f"if (!ctx.{method}({', '.join(args)})) return false;"


def _statement(c: checks.Check, t: _Tables) -> str:
    """The C++ statement of one check: a call of charter::rt::Context (native/include/charter)."""
    m = c.method
    match c:
        case checks.ContainerFormat():
            return _call(m, cpp_sv(c.format), _loc(c.at))
        case checks.ContainerVersion():
            return _call(m, cpp_int(c.version), _loc(c.at))
        case checks.ContainerAlignment():
            return _call(m, cpp_int(c.alignment), _loc(c.at))
        case checks.ContainerHeaderAligned():
            return _call(m, cpp_bool(c.aligned), _loc(c.at))
        case checks.Identity():
            return _call(m, cpp_sv(c.key), cpp_sv(c.value), _loc(c.at))
        case checks.MetaTypes():
            rows = [f"{{{cpp_sv(f.key)}, {cpp_sv(f.ctype)}, {cpp_opt_sv(f.element)}, {_loc(f.at)}}}" for f in c.facts]
            return _call(m, t.add("MetaTypes", "rt::MetaTypeFact", rows))
        case checks.MetaKeySet():
            keys = t.add("Pinned", "std::string_view", [cpp_sv(k) for k in c.pinned])
            banned = t.add("Forbidden", "rt::KeyAt", [f"{{{cpp_sv(k.key)}, {_loc(k.at)}}}" for k in c.forbidden])
            return _call(m, keys, banned, cpp_sv(c.extra), _loc(c.at))
        case checks.Value():
            return _call(m, cpp_sv(c.stage.value), cpp_sv(c.key), cpp_sv(c.ctype), cpp_lit(c.value), _loc(c.at))
        case checks.StringDigest():
            return _call(m, cpp_sv(c.stage.value), cpp_sv(c.key), cpp_sv(c.sha256), _loc(c.at))
        case checks.ArrayFact():
            values = t.add("Values", "rt::Lit", [cpp_lit(v) for v in c.values or ()], label=c.key)
            return _call(m, cpp_sv(c.stage.value), cpp_sv(c.key), cpp_int(c.length), cpp_bool(c.values is not None),
                         values, cpp_opt_sv(c.sha256), _loc(c.at))
        case checks.Config():
            rows = [f"{{{cpp_sv(f.key)}, {cpp_sv(f.ctype)}, {cpp_lit(f.value)}, {_loc(f.at)}}}" for f in c.facts]
            return _call(m, cpp_sv(c.file), t.add("Config", "rt::ConfigFact", rows), _loc(c.at))
        case checks.SpecialId():
            return _call(m, cpp_sv(c.key), cpp_sv(c.name), cpp_int(c.value), _loc(c.at))
        case checks.StopId():
            ids = t.add("StopIds", "rt::Int", [cpp_int(i) for i in c.ids], one_per_line=False)
            return _call(m, cpp_sv(c.key), ids, _loc(c.at))
        case checks.TokenDomain():
            return _call(m, cpp_sv(c.key), cpp_int(c.ids), _loc(c.at))
        case checks.LogitsRows():
            return _call(m, cpp_sv(c.tensor), cpp_i64(c.axis), cpp_int(c.rows), _loc(c.at))
        case checks.Exclude():
            return f"ctx.exclude({t.add('Excluded', 'rt::Glob', [_glob(t, p) for p in c.patterns])});"
        case checks.Tensors():
            rows = []
            for r in c.rows:
                reps = t.add("Repeat", "rt::Repeat", [_repeat(t, x) for x in r.repeat], label=_repeat_label(r.repeat),
                             one_per_line=False)
                dims = t.add("Shape", "rt::Int", [cpp_int(d) for d in r.shape], label="x".join(map(str, r.shape)),
                             one_per_line=False)
                rows.append(f"{{{cpp_sv(r.template)}, {reps}, {cpp_sv(r.role)}, {dims}, {cpp_sv(r.codec)}, "
                            f"{_loc(r.at)}}}")
            return _call(m, t.add("Tensors", "rt::TensorRow", rows), _loc(c.at))
        case checks.Codecs():
            rows = [f"{{{cpp_sv(r.name)}, {cpp_int(r.block)}, {cpp_int(r.bytes)}, {cpp_int(r.header)}, {_loc(r.at)}}}"
                    for r in c.rows]
            return _call(m, t.add("Codecs", "rt::CodecRow", rows))
        case checks.Layout():
            where = ", ".join(_loc(a) for a in (c.alignment_at, c.at, c.packed_at, c.sorted_at, c.trailing_at))
            return _call(m, cpp_bool(c.alignment is not None), cpp_int(c.alignment if c.alignment is not None else 0),
                         cpp_bool(c.sorted), cpp_bool(c.packed), cpp_sv(c.trailing), f"rt::LayoutAt{{{where}}}")
        case checks.ExpertMajorStore():
            comps = t.add("Components", "rt::StoreComponent",
                          [f"{{{cpp_sv(x.name)}, {cpp_int(x.ne0)}, {cpp_int(x.ne1)}, {_loc(x.at)}}}"
                           for x in c.components], label=c.name)
            return _store(t, c, "expert-major-v2", comps, "rt::Span<rt::HeadRow>{}")
        case checks.PleStore():
            heads = t.add("HeadRows", "rt::HeadRow", [f"{{{cpp_int(h.value)}, {_loc(h.at)}}}" for h in c.head_rows],
                          label=c.name, one_per_line=False)
            return _store(t, c, "ple-rows-v1", "rt::Span<rt::StoreComponent>{}", heads)
        case checks.Exclusions():
            rows = []
            for r in c.rows:
                globs = t.add("Globs", "rt::Glob", [_glob(t, p) for p in r.patterns], label=r.name)
                counted = f"{cpp_opt_sv(r.count_key)}, {cpp_int(r.count if r.count_key is not None else 0)}"
                rows.append(f"{{{cpp_sv(r.name)}, {globs}, {counted}, {_loc(r.at)}}}")
            return _call(m, t.add("Exclusions", "rt::ExclusionRow", rows))
        case checks.Status():
            return _call(m, cpp_sv(c.status), _loc(c.at))
        case checks.Payload():
            digests = t.add("PayloadDigests", "rt::KeyAt", [f"{{{cpp_sv(d.tensor)}, {cpp_sv(d.sha256)}}}"
                                                            for d in c.tensors])
            rules = []
            for r in c.values:
                globs = t.add("Globs", "rt::Glob", [_glob(t, p) for p in r.patterns], label=f"values {r.name}")
                rules.append(f"{{{cpp_sv(r.name)}, {globs}, {cpp_bool(r.check)}, {_loc(r.at)}}}")
            values = t.add("ValueRules", "rt::ValueRuleRow", rules)
            rows = []
            for r in c.bounds:
                globs = t.add("Globs", "rt::Glob", [_glob(t, p) for p in r.patterns], label=f"bounds {r.name}")
                sides = ", ".join(f"{cpp_bool(v is not None)}, {cpp_int(v or 0)}" for v in (r.min, r.max))
                rows.append(f"{{{cpp_sv(r.name)}, {globs}, {sides}, {_loc(r.min_at)}, {_loc(r.max_at)}}}")
            bounds = t.add("ValueBounds", "rt::ValueBoundRow", rows)
            return _call(m, cpp_opt_sv(c.file_sha256), digests, cpp_sv(c.padding), _loc(c.at), _loc(c.padding_at),
                         values, bounds)
        case _:
            assert_never(c)


def _store(t: _Tables, c, kind: str, components: str, heads: str) -> str:
    """A store's facts are one row of kStores (declared after the tables); the check names its row."""
    fields_ = t.add("StoreFields", "rt::StoreField", [f"{{{cpp_sv(f.field)}, {cpp_int(f.value)}, {_loc(f.at)}}}"
                                                      for f in c.fields], label=c.name)
    index = len(t.stores)
    t.stores.append(f"{{{cpp_sv(c.name)}, {cpp_sv(kind)}, {cpp_sv(c.tensor)}, {fields_}, {components}, {heads}, "
                    f"{_loc(c.at)}}}")
    return f"if (!ctx.{c.method}(kStores[{index}])) return false;"


def _where(c: checks.Check):
    """The location a C++ statement's comment names: the fact the check enforces, if one owns it."""
    return getattr(c, "at", None)


def build(plan: ArtifactPlan, header: str, inputs: dict[str, str], namespace: str | None = None) -> CheckerView:
    tables = _Tables()
    statements = []
    for c in checks.checks_of(plan):
        statement, at = _statement(c, tables), _where(c)
        if at is not None:
            statements.append((c.stage, f"// {cpp_comment(str(at))}"))
        statements.append((c.stage, statement))
    stages = stage_views(statements, cpp_sv)
    return CheckerView(
        header=header,
        about=cpp_comment(f"{plan.format} artifact contract {plan.id}"),
        contract_id=cpp_sv(plan.id),
        model_id=cpp_sv(plan.model),
        spec=cpp_sv(plan.spec_path),
        format=cpp_sv(plan.format),
        format_enum="rt::Format::Gguf" if plan.format == "gguf" else "rt::Format::Safetensors",
        status=cpp_sv(plan.status),
        companion=cpp_sv(value_of(plan.config_file) or ""),
        namespace=namespace or identifier(plan.id),
        inputs=tuple((cpp_sv(p), cpp_sv(s)) for p, s in sorted(inputs.items())),
        tables=tuple(tables.decls),
        stores=tuple(tables.stores),
        stages=stages,
    )


def cpp_checker_path(contract_id: str) -> str:
    return f"cpp/{contract_id}.hpp"


@functools.lru_cache(maxsize=None)
def _environment() -> jinja2.Environment:
    """One environment per process, so the template compiles once (a mutation battery with both
    engines renders a C++ checker per contract mutant)."""
    return environment("charter.codegen.cpp")




def render_checker_text(plan: ArtifactPlan, inputs: dict[str, str], namespace: str | None = None) -> str:
    """The C++ checker of one plan; `inputs` maps each spec display path to the sha256 of its bytes.
    `namespace` (default: from the contract id) lets many checkers of one contract share a
    translation unit (charter.engines.library)."""
    extra = {k: v for k, v in inputs.items() if k != plan.spec_path}
    header = generated_header("//", (plan.spec_path, plan.spec_sha256), extra)
    view = build(plan, header, inputs, namespace)
    return normalize(_environment().get_template(TEMPLATE).render(view=view))


def render_cpp_checker(cs, plan: ArtifactPlan) -> tuple[str, str, dict[str, str]]:
    inputs = checker_inputs(cs, plan)
    return cpp_checker_path(plan.id), render_checker_text(plan, inputs), inputs


def render_cpp_checkers(cs) -> list[tuple[str, str, dict[str, str]]]:
    """(path relative to generated/, text, inputs) of the C++ checker of every artifact contract,
    sorted by path; charter.codegen.driver.render_all wraps each in an Output."""
    return sorted((render_cpp_checker(cs, cs.artifacts[i]) for i in sorted(cs.artifacts)), key=lambda o: o[0])


def template_hash() -> dict[str, str]:
    entry = resources.files("charter.codegen.cpp") / "templates" / TEMPLATE
    return {f"charter.codegen.cpp/{TEMPLATE}": hashlib.sha256(entry.read_bytes()).hexdigest()}
