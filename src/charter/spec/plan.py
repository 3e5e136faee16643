"""Resolved plans: contracts with every expression evaluated and every fact located.

A plan is what the code generators and the admission runtime consume. It holds literal values
only (no expressions, no YAML) and, for each fact, the `file:line:col` of the contract text that
stated it, so a diagnostic can point back at the fact it enforces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from charter.diagnostics import Location

Scalar = int | float | bool | str


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
    ids: int | None
    ids_location: Location | None
    logits_tensor: str | None
    logits_axis: int | None
    logits_rows: int | None
    logits_location: Location | None
    special: tuple[SpecialIdCheck, ...]
    stop_keys: tuple[tuple[str, Location], ...]
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
    fields: tuple[tuple[str, int, Location], ...]
    components: tuple[tuple[str, int, int, Location], ...] = ()  # expert-major: (name, ne0, ne1, at)
    head_rows: tuple[tuple[int, Location], ...] = ()  # ple: the prime segment of each hash head
    codec_name: str = ""
    codec_label: str = ""


@dataclass(frozen=True)
class ArtifactPlan:
    id: str
    status: str
    model: str
    format: str
    spec_path: str
    spec_sha256: str
    version: int | None
    version_location: Location | None
    alignment: int | None
    alignment_location: Location | None
    header_aligned: bool | None
    header_aligned_location: Location | None
    identity: tuple[MetaCheck, ...]
    metadata: tuple[MetaCheck, ...]
    extra_keys: str
    extra_keys_location: Location
    forbidden: tuple[tuple[str, Location], ...]
    tokenizer: TokenizerPlan | None
    config_file: str | None
    config: tuple[MetaCheck, ...]
    tensors: tuple[TensorCheck, ...]
    tensor_rows: tuple[TensorRow, ...]
    tensors_location: Location
    codecs: tuple[CodecCheck, ...]
    stores: tuple[StorePlan, ...]
    layout: dict[str, object]
    layout_locations: dict[str, Location]
    exclusions: tuple[ExclusionCheck, ...]
    payload_file_sha256: str | None
    payload_tensors: tuple[tuple[str, str, Location], ...]
    payload_location: Location | None
    status_location: Location
    source_sha256: str | None = None
