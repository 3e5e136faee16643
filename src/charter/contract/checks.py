"""The checks an artifact contract makes: one frozen dataclass per kind, built once from the plan.

Note [Typed checks]
~~~~~~~~~~~~~~~~~~~
`checks_of(plan)` lists, in execution order, every check of the generated checker of one artifact
contract. Four consumers read this list and nothing else of the plan:

* charter.codegen.python renders each check as one keyword call of admission.runtime.Context;
* charter.codegen.cpp renders each as one call of charter::rt::Context (native/include/charter);
* charter.mutation.expect predicts, check by check, where a mutated contract must reject;
* `charter mutate --trace` names the checks that enforce each contract leaf.

The C++ renderer and the prediction match on the check's type and end in `assert_never`, so a new
kind one of them forgets fails type checking; tests/contract/test_checks.py hands every consumer one
check of every kind, so it also fails a test. A check holds typed literals and `at`, the location
of the contract fact it enforces (None where no single fact owns it: the rows own theirs).
Repeated facts are rows (named tuples): a row renders as a plain tuple in generated Python.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar, NamedTuple, Union, assert_never

from charter.diagnostics import ADMISSION_STAGES, Code, Finding, Location, Stage, code_for
from charter.contract.plan import (
    ArtifactPlan, BoundRule, Component, HeadRow, KeyAt, MetaCheck, Scalar, StoreField, TensorDigest, ValueRule,
    value_of,
)
from charter.memo import IdMemo

At = Location | None


STAGE_DOCS = {  # each stage's one-line docstring in both generated checkers
    "container": "The container's own facts; the strict reader has already bounded the header.",
    "identity": "The artifact is the model the contract names.",
    "metadata": "Exact key set and exact types of every key, then the values metadata owns.",
    "tokenizer": "Tokenizer values, special and stop ids, id domain vs physical logits rows.",
    "tensors": "Exact tensor set, then rank, shape and codec of each (name, repeat, role, shape, codec, at).",
    "codec": "Block geometry of each codec: the block divides the row, the extent has the computed size.",
    "layout": "Extents aligned, in order, disjoint, packed; trailing bytes per policy.",
    "stores": "Embedded store manifests and geometry.",
    "policy": "Named exclusions stay out; the support status meets what the caller requires.",
    "payload": "Opt-in: streams the file once (bounded memory) for digests, zero padding and the value policy.",
}


# --- rows ---------------------------------------------------------------------------------------

class MetaType(NamedTuple):
    key: str
    ctype: str
    element: str | None
    at: At


class ConfigFact(NamedTuple):
    key: str  # dotted path in the companion JSON
    ctype: str
    value: Scalar
    at: At


class Repeat(NamedTuple):
    placeholder: str
    count: int | tuple[int, ...]  # range(count), or the listed indices


class TensorFact(NamedTuple):
    template: str  # a name, or a template with `{placeholder}`s expanded by `repeat`
    repeat: tuple[Repeat, ...]
    role: str
    shape: tuple[int, ...]
    codec: str
    at: At


class CodecFact(NamedTuple):
    name: str
    block: int  # elements per block
    bytes: int  # bytes per block
    header: int  # bytes in front of every row (Note [Row headers] in charter.formats.ggml_types)
    at: At


class ExclusionFact(NamedTuple):
    name: str
    patterns: tuple[str, ...]
    count_key: str | None  # the artifact's own count of the excluded source tensors, if it has one
    count: int
    at: At


# --- checks, by stage ---------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ContainerFormat:
    stage: ClassVar[Stage] = Stage.CONTAINER
    method: ClassVar[str] = "container_format"
    format: str
    at: At = None


@dataclass(frozen=True, kw_only=True)
class ContainerVersion:
    stage: ClassVar[Stage] = Stage.CONTAINER
    method: ClassVar[str] = "container_version"
    version: int
    at: At


@dataclass(frozen=True, kw_only=True)
class ContainerAlignment:
    stage: ClassVar[Stage] = Stage.CONTAINER
    method: ClassVar[str] = "container_alignment"
    alignment: int
    at: At


@dataclass(frozen=True, kw_only=True)
class ContainerHeaderAligned:
    stage: ClassVar[Stage] = Stage.CONTAINER
    method: ClassVar[str] = "container_header_aligned"
    aligned: bool
    at: At


@dataclass(frozen=True, kw_only=True)
class Identity:
    stage: ClassVar[Stage] = Stage.IDENTITY
    method: ClassVar[str] = "identity"
    key: str
    value: str
    at: At


@dataclass(frozen=True, kw_only=True)
class MetaTypes:
    stage: ClassVar[Stage] = Stage.METADATA
    method: ClassVar[str] = "meta_types"
    facts: tuple[MetaType, ...]


@dataclass(frozen=True, kw_only=True)
class MetaKeySet:
    stage: ClassVar[Stage] = Stage.METADATA
    method: ClassVar[str] = "meta_key_set"
    pinned: tuple[str, ...]
    forbidden: tuple[KeyAt, ...]
    extra: str  # "reject" or "allow"
    at: At


@dataclass(frozen=True, kw_only=True)
class Value:
    """A scalar value; metadata or the tokenizer owns it (`stage`)."""

    method: ClassVar[str] = "value"
    stage: Stage
    key: str
    ctype: str
    value: Scalar
    at: At


@dataclass(frozen=True, kw_only=True)
class StringDigest:
    method: ClassVar[str] = "string_digest"
    stage: Stage
    key: str
    sha256: str
    at: At


@dataclass(frozen=True, kw_only=True)
class ArrayFact:
    method: ClassVar[str] = "array"
    stage: Stage
    key: str
    length: int
    values: tuple[Scalar, ...] | None
    sha256: str | None
    at: At


@dataclass(frozen=True, kw_only=True)
class Config:
    stage: ClassVar[Stage] = Stage.METADATA
    method: ClassVar[str] = "config"
    file: str
    facts: tuple[ConfigFact, ...]
    at: At  # `config.file`: cited when the companion cannot be read


@dataclass(frozen=True, kw_only=True)
class SpecialId:
    stage: ClassVar[Stage] = Stage.TOKENIZER
    method: ClassVar[str] = "special_id"
    key: str
    name: str
    value: int
    at: At


@dataclass(frozen=True, kw_only=True)
class StopId:
    stage: ClassVar[Stage] = Stage.TOKENIZER
    method: ClassVar[str] = "stop_id"
    key: str
    ids: tuple[int, ...]
    at: At


@dataclass(frozen=True, kw_only=True)
class TokenDomain:
    stage: ClassVar[Stage] = Stage.TOKENIZER
    method: ClassVar[str] = "token_domain"
    key: str
    ids: int
    at: At


@dataclass(frozen=True, kw_only=True)
class LogitsRows:
    stage: ClassVar[Stage] = Stage.TOKENIZER
    method: ClassVar[str] = "logits_rows"
    tensor: str
    axis: int
    rows: int
    at: At


@dataclass(frozen=True, kw_only=True)
class Exclude:
    """Names the policy stage owns: the tensors check that follows does not count them."""

    stage: ClassVar[Stage] = Stage.TENSORS
    method: ClassVar[str] = "exclude"
    patterns: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Tensors:
    stage: ClassVar[Stage] = Stage.TENSORS
    method: ClassVar[str] = "tensors"
    rows: tuple[TensorFact, ...]
    at: At  # the tensor list: the fact an unexpected tensor breaks


@dataclass(frozen=True, kw_only=True)
class Codecs:
    stage: ClassVar[Stage] = Stage.CODEC
    method: ClassVar[str] = "codecs"
    rows: tuple[CodecFact, ...]


@dataclass(frozen=True, kw_only=True)
class Layout:
    stage: ClassVar[Stage] = Stage.LAYOUT
    method: ClassVar[str] = "layout"
    alignment: int | None
    sorted: bool
    packed: bool
    trailing: str  # "reject", "alignment" or "allow"
    at: At  # the layout mapping (overlap has no field of its own)
    alignment_at: At
    sorted_at: At
    packed_at: At
    trailing_at: At


@dataclass(frozen=True, kw_only=True)
class ExpertMajorStore:
    stage: ClassVar[Stage] = Stage.STORES
    method: ClassVar[str] = "expert_major_store"
    name: str
    tensor: str
    fields: tuple[StoreField, ...]
    components: tuple[Component, ...]
    at: At


@dataclass(frozen=True, kw_only=True)
class PleStore:
    stage: ClassVar[Stage] = Stage.STORES
    method: ClassVar[str] = "ple_store"
    name: str
    tensor: str
    fields: tuple[StoreField, ...]
    head_rows: tuple[HeadRow, ...]
    at: At


@dataclass(frozen=True, kw_only=True)
class Exclusions:
    stage: ClassVar[Stage] = Stage.POLICY
    method: ClassVar[str] = "exclusions"
    rows: tuple[ExclusionFact, ...]


@dataclass(frozen=True, kw_only=True)
class Status:
    stage: ClassVar[Stage] = Stage.POLICY
    method: ClassVar[str] = "status"
    status: str
    at: At


@dataclass(frozen=True, kw_only=True)
class Payload:
    stage: ClassVar[Stage] = Stage.PAYLOAD
    method: ClassVar[str] = "payload"
    file_sha256: str | None
    tensors: tuple[TensorDigest, ...]
    padding: str  # "zero" or "any"
    at: At  # file_sha256's
    padding_at: At
    values: tuple[ValueRule, ...] = ()  # the value policy, first matching rule decides (Note [Value rules])
    bounds: tuple[BoundRule, ...] = ()  # bounds on integer tensors (Note [Value bounds])


Check = Union[
    ContainerFormat, ContainerVersion, ContainerAlignment, ContainerHeaderAligned, Identity, MetaTypes, MetaKeySet,
    Value, StringDigest, ArrayFact, Config, SpecialId, StopId, TokenDomain, LogitsRows, Exclude, Tensors, Codecs,
    Layout, ExpertMajorStore, PleStore, Exclusions, Status, Payload,
]
KINDS: tuple[type, ...] = Check.__args__


def text_of(check: Check) -> str:
    """The check as text: its kind, every field and each value with its type (1, 1.0 and True
    differ), so two checks with one text render and run alike (a key for memos and caches)."""
    return repr(check)


def arguments(check: Check) -> dict[str, object]:
    """The check's fields by name, in declaration order: the keyword arguments of its call."""
    return {f.name: getattr(check, f.name) for f in fields(check)}


# --- what each check reads ----------------------------------------------------------------------

Fact = tuple[str, ...]
"""A fact of the artifact a check may read, as charter.mutation.facts names them: ("format",),
("version",), ("alignment",), ("header_aligned",), ("keys",) (the keys the conforming file does
not hold: the key set check passes on any subset of a key set it admits), ("meta", key) (its
type and value), ("tensor-list",) (the tensor names in order), ("tensor", name) (its shape and
codec), ("extents",) (the extents relative to the data section, the data section's size, its
offset modulo the alignment) and ("file",) (any byte of the file). A fact is also every fact it
is a prefix of: ("tensor",) is every tensor's, () everything."""

EVERYTHING: frozenset[Fact] = frozenset({()})


def reads(check: Check) -> frozenset[Fact]:
    """The facts of the artifact whose values decide whether `check` passes (Note [Verdict cache]
    in charter.mutation.cache). Too few makes the verdict cache reuse a wrong verdict: a kind says
    what it reads here before the cache can use it (the match is exhaustive)."""
    match check:
        case ContainerFormat():
            return frozenset({("format",)})
        case ContainerVersion():
            return frozenset({("version",)})
        case ContainerAlignment():
            return frozenset({("alignment",)})
        case ContainerHeaderAligned():
            return frozenset({("header_aligned",)})
        case (Identity() | Value() | StringDigest() | ArrayFact() | SpecialId() | StopId() | TokenDomain()):
            return frozenset({("meta", check.key)})
        case MetaTypes():
            return frozenset(("meta", f.key) for f in check.facts)
        case MetaKeySet():
            return frozenset({("keys",)})
        case Config() | Exclude() | Status():
            return frozenset()  # the companion file, the excluded patterns, the required status: not the artifact
        case LogitsRows():
            return frozenset({("tensor", check.tensor)})
        case Tensors():
            return frozenset({("tensor-list",), ("tensor",)})
        case Codecs():
            return frozenset({("tensor",), ("extents",)})
        case Layout():
            # its alignment, if any, is the container's, which the conforming file has (the
            # battery's baseline): the data offset counts only modulo it (charter.mutation.facts)
            return frozenset({("extents",)})
        case Exclusions():
            return frozenset({("tensor-list",), *(("meta", r.count_key) for r in check.rows if r.count_key)})
        case ExpertMajorStore() | PleStore() | Payload():
            return EVERYTHING  # they read the data section
        case _:
            assert_never(check)


def rejects_with(check: Check) -> frozenset[Code] | None:
    """The codes `check` may reject with (None: any): a rejection with another code was not its
    own, so the checks after it never ran (Note [Verdict cache]). tests/mutation/test_verdict_cache.py
    reads each kind's runtime method for the codes it can raise."""
    C = Code
    match check:
        case ContainerFormat():
            return frozenset({C.CONTAINER_FORMAT})
        case ContainerVersion():
            return frozenset({C.CONTAINER_VERSION})
        case ContainerAlignment():
            return frozenset({C.CONTAINER_ALIGNMENT})
        case ContainerHeaderAligned():
            return frozenset({C.CONTAINER_HEADER})
        case Identity():
            return frozenset({C.IDENTITY_MISSING, C.IDENTITY_MISMATCH, C.IDENTITY_ARCHITECTURE})
        case MetaTypes():
            return frozenset({C.METADATA_MISSING, C.METADATA_TYPE})
        case MetaKeySet():
            return frozenset({C.METADATA_FORBIDDEN, C.METADATA_UNEXPECTED})
        case Value():
            return frozenset({code_for(check.stage, Finding.VALUE)})
        case StringDigest():
            return frozenset({code_for(check.stage, Finding.DIGEST)})
        case ArrayFact():
            return frozenset(code_for(check.stage, f) for f in (Finding.ARRAY_LENGTH, Finding.VALUE,
                                                                Finding.ARRAY_DIGEST))
        case Config():
            return frozenset({C.METADATA_MISSING, C.METADATA_TYPE, C.METADATA_VALUE, C.METADATA_CONFIG})
        case SpecialId():
            return frozenset({C.TOKENIZER_SPECIAL_ID})
        case StopId():
            return frozenset({C.TOKENIZER_STOP_ID})
        case TokenDomain():
            return frozenset({C.TOKENIZER_DOMAIN})
        case LogitsRows():
            return frozenset({C.TOKENIZER_LOGITS_ROWS})
        case Exclude():
            return frozenset()
        case Tensors():
            return frozenset({C.TENSOR_DUPLICATE, C.TENSOR_MISSING, C.TENSOR_UNEXPECTED, C.TENSOR_RANK,
                              C.TENSOR_SHAPE, C.TENSOR_CODEC})
        case Codecs():
            return frozenset({C.CODEC_BLOCK, C.CODEC_ROW_HEADER, C.CODEC_SIZE})
        case Layout():
            return frozenset({C.LAYOUT_DATA_OFFSET, C.LAYOUT_ALIGNMENT, C.LAYOUT_BOUNDS, C.LAYOUT_ORDER,
                              C.LAYOUT_OVERLAP, C.LAYOUT_GAP, C.LAYOUT_TRAILING})
        case Exclusions():
            return frozenset({C.POLICY_EXCLUSION})
        case Status():
            return frozenset({C.POLICY_STATUS})
        case ExpertMajorStore() | PleStore() | Payload():
            return None
        case _:
            assert_never(check)

# --- from the plan ------------------------------------------------------------------------------

def checks_of(plan: ArtifactPlan) -> tuple[Check, ...]:
    """Every check of the generated checker, in execution order (Note [Ordered admission]). The
    last plan's are kept: a plan is immutable, and a mutation battery asks for a mutant plan's
    checks to predict its verdict and again to render its checker."""
    return _last_checks(plan)


def _checks(plan: ArtifactPlan) -> tuple[Check, ...]:
    return tuple(c for stage in ADMISSION_STAGES for c in _BUILDERS[stage](plan))


_last_checks = IdMemo(_checks, bound=1)


def _container(p: ArtifactPlan):
    yield ContainerFormat(format=p.format)
    if p.version is not None:
        yield ContainerVersion(version=p.version.value, at=p.version.at)
    if p.alignment is not None:
        yield ContainerAlignment(alignment=p.alignment.value, at=p.alignment.at)
    if p.header_aligned is not None:
        yield ContainerHeaderAligned(aligned=p.header_aligned.value, at=p.header_aligned.at)


def _identity(p: ArtifactPlan):
    for m in p.identity:
        yield Identity(key=m.key, value=m.value, at=m.location)


def _metadata(p: ArtifactPlan):
    every = p.identity + p.metadata
    yield MetaTypes(facts=tuple(MetaType(m.key, "string" if m.stage == Stage.IDENTITY else m.type, m.element,
                                         m.location) for m in every))
    yield MetaKeySet(pinned=tuple(m.key for m in every), forbidden=p.forbidden, extra=p.extra_keys.value,
                     at=p.extra_keys.at)
    yield from _values(Stage.METADATA, [m for m in p.metadata if m.stage == Stage.METADATA])
    if p.config_file is not None:
        yield Config(file=p.config_file.value, at=p.config_file.at,
                     facts=tuple(ConfigFact(m.key, m.type, m.value, m.location) for m in p.config))


def _values(stage: Stage, facts: list[MetaCheck]):
    for m in facts:
        if m.type == "array":
            yield ArrayFact(stage=stage, key=m.key, length=m.length, values=m.values, sha256=m.sha256, at=m.location)
        elif m.sha256 is not None:
            yield StringDigest(stage=stage, key=m.key, sha256=m.sha256, at=m.location)
        elif m.value is not None:
            yield Value(stage=stage, key=m.key, ctype=m.type, value=m.value, at=m.location)


def _tokenizer(p: ArtifactPlan):
    t = p.tokenizer
    if t is None:
        return
    yield from _values(Stage.TOKENIZER, [m for m in p.metadata if m.stage == Stage.TOKENIZER])
    for s in t.special:
        yield SpecialId(key=s.key, name=s.name, value=s.value, at=s.location)
    for stop in t.stop_keys:
        yield StopId(key=stop.key, ids=t.stop_ids, at=stop.at)
    if t.tokens_key is not None and t.ids is not None:
        yield TokenDomain(key=t.tokens_key, ids=t.ids.value, at=t.ids.at)
    if t.logits_tensor is not None and t.logits_rows is not None:
        yield LogitsRows(tensor=t.logits_tensor, axis=t.logits_axis, rows=t.logits_rows.value, at=t.logits_rows.at)


def _tensors(p: ArtifactPlan):
    yield Exclude(patterns=tuple(pat for e in p.exclusions for pat in e.patterns))
    yield Tensors(rows=_tensor_facts(p.tensor_rows.value), at=p.tensor_rows.at)


def _tensor_facts(rows) -> tuple[TensorFact, ...]:
    """One TensorFact per resolved row object: a mutation battery resolves a contract once per
    mutant and reuses the rows a mutant did not change (charter.contract.resolve, `memo`), so each
    row's check, and what consumers derive from it, is made once (Note [Incremental battery]; Note
    [Identity memo] in charter.memo)."""
    return _tensor_fact.each(rows)


_tensor_fact = IdMemo(lambda r: TensorFact(r.template, tuple(Repeat(*rep) for rep in r.repeat), r.role, r.shape,
                                           r.codec, r.location))


def _codec(p: ArtifactPlan):
    if p.codecs:
        yield Codecs(rows=tuple(CodecFact(c.name, c.block, c.bytes, c.header, c.location) for c in p.codecs))


def _layout(p: ArtifactPlan):
    lay = p.layout
    yield Layout(alignment=value_of(p.alignment), sorted=lay.sorted.value, packed=lay.packed.value,
                 trailing=lay.trailing.value, at=lay.at, alignment_at=p.alignment.at if p.alignment else None,
                 sorted_at=lay.sorted.at,
                 packed_at=lay.packed.at, trailing_at=lay.trailing.at)


def _stores(p: ArtifactPlan):
    for st in p.stores:
        if st.kind == "expert-major-v2":
            yield ExpertMajorStore(name=st.name, tensor=st.tensor, fields=st.fields, components=st.components,
                                   at=st.location)
        else:
            yield PleStore(name=st.name, tensor=st.tensor, fields=st.fields, head_rows=st.head_rows, at=st.location)


def _policy(p: ArtifactPlan):
    yield Exclusions(rows=tuple(ExclusionFact(e.name, e.patterns, e.count_key, e.source_count, e.location)
                                for e in p.exclusions))
    yield Status(status=p.status, at=p.status_fact.at)


def _payload(p: ArtifactPlan):
    yield Payload(file_sha256=p.payload.file_sha256 if p.payload else None, tensors=p.payload.tensors if p.payload else (),
                  padding=p.layout.padding.value, at=p.payload.at if p.payload else None, padding_at=p.layout.padding.at,
                  values=p.values, bounds=p.bounds)


_BUILDERS = {
    Stage.CONTAINER: _container, Stage.IDENTITY: _identity, Stage.METADATA: _metadata, Stage.TOKENIZER: _tokenizer,
    Stage.TENSORS: _tensors, Stage.CODEC: _codec, Stage.LAYOUT: _layout, Stage.STORES: _stores, Stage.POLICY: _policy,
    Stage.PAYLOAD: _payload,
}
