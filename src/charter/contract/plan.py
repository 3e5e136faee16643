"""Resolved plans: contracts with every expression evaluated and every fact located.

A plan is what the code generators and the admission runtime consume. It holds literal values
only (no expressions, no YAML) and, for each fact, the `file:line:col` of the contract text that
stated it, so a diagnostic can point back at the fact it enforces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from charter.contract.paths import PinnedSource
from charter.diagnostics import Location

Scalar = int | float | bool | str
T = TypeVar("T")


@dataclass(frozen=True)
class Located(Generic[T]):
    """A contract value and the `file:line:col` of the text that stated it."""

    value: T
    at: Location | None


def value_of(fact: Located[T] | None) -> T | None:
    return None if fact is None else fact.value


class KeyAt(NamedTuple):
    key: str
    at: Location | None


class StoreField(NamedTuple):
    field: str
    value: int
    at: Location | None


class Component(NamedTuple):
    """One expert-major component table row."""

    name: str
    ne0: int
    ne1: int
    at: Location | None


class HeadRow(NamedTuple):
    """The prime segment of one PLE hash head."""

    value: int
    at: Location | None


class TensorDigest(NamedTuple):
    tensor: str
    sha256: str
    at: Location | None


@dataclass(frozen=True)
class ModelPlan:
    id: str
    status: str
    architecture: str
    family: str
    constants: dict[str, int | float]
    locations: dict[str, Location]
    tokenizer_ids: int | None = None
    logits_rows: int | None = None
    special_ids: dict[str, int] = field(default_factory=dict)
    stop_ids: tuple[int, ...] = ()
    non_stop_ids: tuple[int, ...] = ()
    layer_kinds: tuple[str, ...] = ()


@dataclass(frozen=True)
class MetaCheck:
    """One metadata key; `stage` is the admission stage that owns its value."""

    key: str
    type: str
    stage: str
    location: Location
    value: Scalar | None = None
    element: str | None = None
    length: int | None = None
    values: tuple[Scalar, ...] | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class TensorCheck:
    name: str
    role: str
    shape: tuple[int, ...]
    codec: str
    location: Location


@dataclass(frozen=True)
class TensorRow:
    """A tensor fact as the contract states it: a name template and its repeat counts."""

    template: str
    repeat: tuple[tuple[str, int | tuple[int, ...]], ...]  # a count, or the listed indices
    role: str
    shape: tuple[int, ...]
    codec: str
    location: Location


@dataclass(frozen=True)
class CodecCheck:
    name: str
    block: int
    bytes: int
    header: int  # bytes in front of every row (Note [Row headers] in charter.formats.ggml_types)
    location: Location


@dataclass(frozen=True)
class SpecialIdCheck:
    key: str
    name: str
    value: int
    location: Location


@dataclass(frozen=True)
class TokenizerPlan:
    tokens_key: str | None
    ids: Located[int] | None  # the model's id domain, at the model's `tokenizer.ids`
    logits_tensor: str | None
    logits_axis: int | None
    logits_rows: Located[int] | None  # the model's logits rows, at the artifact's `tokenizer.logits` binding
    special: tuple[SpecialIdCheck, ...]
    stop_keys: tuple[KeyAt, ...]
    stop_ids: tuple[int, ...]


@dataclass(frozen=True)
class ExclusionCheck:
    name: str
    source_count: int
    patterns: tuple[str, ...]
    reason: str
    location: Location
    count_key: str | None = None


@dataclass(frozen=True)
class StorePlan:
    """One embedded store: its manifest facts in check order, and its tables' expected rows."""

    name: str
    kind: str
    tensor: str
    location: Location
    fields: tuple[StoreField, ...]
    components: tuple[Component, ...] = ()  # expert-major
    head_rows: tuple[HeadRow, ...] = ()  # ple
    codec_name: str = ""
    codec_label: str = ""


@dataclass(frozen=True)
class LayoutPlan:
    """The layout policy, each rule with its location; `at` is the `layout:` mapping's."""

    sorted: Located[bool]
    packed: Located[bool]
    trailing: Located[str]
    padding: Located[str]
    at: Location | None

    def policy(self) -> dict[str, object]:
        """The rules' values by name, as charter.mutation.oracle.layout takes them."""
        return {"sorted": self.sorted.value, "packed": self.packed.value, "trailing": self.trailing.value,
                "padding": self.padding.value}


class ValueRule(NamedTuple):
    """One rule of the value policy. The runtime tries the rules in order and the first whose
    pattern matches a tensor decides: exceptions, then `finite` patterns, then the default (`*`)."""

    name: str  # the exception's name, "finite" or "default"
    patterns: tuple[str, ...]  # fnmatch patterns over tensor names
    check: bool  # True: every value field of the tensor's codec must be finite (Note [Value rules])
    at: Location | None


class BoundRule(NamedTuple):
    """One bound of the value policy (Note [Value bounds] in charter.formats.values): every element
    of the integer tensors its patterns match lies in [min, max]; None: that side is unbounded."""

    name: str
    patterns: tuple[str, ...]  # fnmatch patterns over tensor names
    min: int | None
    max: int | None
    min_at: Location | None  # the fact each side's finding cites
    max_at: Location | None


@dataclass(frozen=True)
class PayloadPlan:
    file_sha256: str | None
    tensors: tuple[TensorDigest, ...]
    at: Location | None


@dataclass(frozen=True)
class ArtifactPlan:
    id: str
    status_fact: Located[str]  # the contract's `status`; `status` is its value
    model: str
    format: str
    spec_path: str
    spec_sha256: str
    version: Located[int] | None
    alignment: Located[int] | None
    header_aligned: Located[bool] | None
    identity: tuple[MetaCheck, ...]
    metadata: tuple[MetaCheck, ...]
    extra_keys: Located[str]
    forbidden: tuple[KeyAt, ...]
    tokenizer: TokenizerPlan | None
    config_file: Located[str] | None  # `config.file`: what an unreadable companion breaks
    config: tuple[MetaCheck, ...]
    tensors: tuple[TensorCheck, ...]
    tensor_rows: Located[tuple[TensorRow, ...]]  # at the `tensors:` list, the fact an unexpected tensor breaks
    codecs: tuple[CodecCheck, ...]
    stores: tuple[StorePlan, ...]
    layout: LayoutPlan
    exclusions: tuple[ExclusionCheck, ...]
    payload: PayloadPlan | None
    source: PinnedSource | None = None  # where `charter admit --contract` finds the file
    values: tuple[ValueRule, ...] = ()  # the value policy's rules, in order; () when there is none
    bounds: tuple[BoundRule, ...] = ()  # the value policy's bounds on integer tensors

    @property
    def status(self) -> str:
        """The support status every engine reports and `--require-status` compares."""
        return self.status_fact.value
