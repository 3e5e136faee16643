"""One diagnostic type for every failure charter reports: contracts, readers, admission.

Codes are a stable interface (documented in docs/diagnostics.md): a code is never renamed or
reused for another meaning. Each code belongs to exactly one stage; `Stage.SPEC` covers everything
found while loading and resolving contracts, the other stages are the ordered admission stages of
Note [Ordered admission] in charter.admission.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from enum import Enum


class Stage(str, Enum):
    """Where a diagnostic was found. Admission stages are listed in the order they run; the bundle
    stages (files, companions, shards) run between them when a bundle is admitted (BUNDLE_STAGES)."""

    SPEC = "spec"
    FILES = "files"
    CONTAINER = "container"
    IDENTITY = "identity"
    METADATA = "metadata"
    COMPANIONS = "companions"
    TOKENIZER = "tokenizer"
    SHARDS = "shards"
    TENSORS = "tensors"
    CODEC = "codec"
    LAYOUT = "layout"
    STORES = "stores"
    POLICY = "policy"
    PAYLOAD = "payload"


# The stages of one file's admission, and of a bundle's: the bundle-level stages own the facts
# across files (the file set, the companion JSON files, the shard of each tensor) and run where
# they are cheapest, each file's own stages running for every weight file in turn (charter.bundles).
BUNDLE_ONLY_STAGES: tuple[Stage, ...] = (Stage.FILES, Stage.COMPANIONS, Stage.SHARDS)
ADMISSION_STAGES: tuple[Stage, ...] = tuple(s for s in Stage if s is not Stage.SPEC and s not in BUNDLE_ONLY_STAGES)
BUNDLE_STAGES: tuple[Stage, ...] = tuple(s for s in Stage if s is not Stage.SPEC)


class Code(str, Enum):
    """Stable diagnostic codes. The value is the code's printed name; `stage` owns it."""

    # --- contracts: YAML --------------------------------------------------------------------
    FILE_UNREADABLE = "FILE_UNREADABLE"
    SOURCE_MISMATCH = "SOURCE_MISMATCH"
    YAML_SYNTAX = "YAML_SYNTAX"
    YAML_DUPLICATE_KEY = "YAML_DUPLICATE_KEY"
    YAML_AMBIGUOUS_SCALAR = "YAML_AMBIGUOUS_SCALAR"
    YAML_NON_STRING_KEY = "YAML_NON_STRING_KEY"
    YAML_ALIAS_LIMIT = "YAML_ALIAS_LIMIT"
    YAML_MERGE_KEY = "YAML_MERGE_KEY"
    YAML_TAG = "YAML_TAG"
    YAML_MULTI_DOCUMENT = "YAML_MULTI_DOCUMENT"
    YAML_EMPTY = "YAML_EMPTY"
    YAML_TOO_DEEP = "YAML_TOO_DEEP"
    YAML_TOO_LARGE = "YAML_TOO_LARGE"
    # --- contracts: schema and meaning ------------------------------------------------------
    SPEC_SCHEMA = "SPEC_SCHEMA"
    SPEC_VERSION = "SPEC_VERSION"
    SPEC_KIND = "SPEC_KIND"
    SPEC_INVALID = "SPEC_INVALID"
    EXPR_SYNTAX = "EXPR_SYNTAX"
    EXPR_NAME = "EXPR_NAME"
    EXPR_CYCLE = "EXPR_CYCLE"
    EXPR_DIVISION_BY_ZERO = "EXPR_DIVISION_BY_ZERO"
    EXPR_TYPE = "EXPR_TYPE"
    EXPR_RANGE = "EXPR_RANGE"
    INVARIANT_FALSE = "INVARIANT_FALSE"
    REF_DANGLING = "REF_DANGLING"
    ID_DUPLICATE = "ID_DUPLICATE"
    ID_COLLISION = "ID_COLLISION"
    # --- admission: container (the strict readers) ------------------------------------------
    CONTAINER_UNREADABLE = "CONTAINER_UNREADABLE"
    CONTAINER_MAGIC = "CONTAINER_MAGIC"
    CONTAINER_VERSION = "CONTAINER_VERSION"
    CONTAINER_TRUNCATED = "CONTAINER_TRUNCATED"
    CONTAINER_COUNT = "CONTAINER_COUNT"
    CONTAINER_STRING = "CONTAINER_STRING"
    CONTAINER_VALUE_TYPE = "CONTAINER_VALUE_TYPE"
    CONTAINER_BOOL = "CONTAINER_BOOL"
    CONTAINER_ARRAY = "CONTAINER_ARRAY"
    CONTAINER_KEY = "CONTAINER_KEY"
    CONTAINER_DUPLICATE_KEY = "CONTAINER_DUPLICATE_KEY"
    CONTAINER_ALIGNMENT = "CONTAINER_ALIGNMENT"
    CONTAINER_TENSOR_NAME = "CONTAINER_TENSOR_NAME"
    CONTAINER_TENSOR_RANK = "CONTAINER_TENSOR_RANK"
    CONTAINER_TENSOR_DIM = "CONTAINER_TENSOR_DIM"
    CONTAINER_TENSOR_TYPE = "CONTAINER_TENSOR_TYPE"
    CONTAINER_TENSOR_BLOCK = "CONTAINER_TENSOR_BLOCK"
    CONTAINER_OVERFLOW = "CONTAINER_OVERFLOW"
    CONTAINER_OFFSET = "CONTAINER_OFFSET"
    CONTAINER_EXTENT = "CONTAINER_EXTENT"
    CONTAINER_HEADER = "CONTAINER_HEADER"
    CONTAINER_JSON = "CONTAINER_JSON"
    CONTAINER_DTYPE = "CONTAINER_DTYPE"
    CONTAINER_METADATA = "CONTAINER_METADATA"
    CONTAINER_TRAILING = "CONTAINER_TRAILING"
    CONTAINER_FORMAT = "CONTAINER_FORMAT"
    # --- admission: identity ----------------------------------------------------------------
    IDENTITY_ARCHITECTURE = "IDENTITY_ARCHITECTURE"
    IDENTITY_MISSING = "IDENTITY_MISSING"
    IDENTITY_MISMATCH = "IDENTITY_MISMATCH"
    # --- admission: metadata ----------------------------------------------------------------
    METADATA_MISSING = "METADATA_MISSING"
    METADATA_UNEXPECTED = "METADATA_UNEXPECTED"
    METADATA_FORBIDDEN = "METADATA_FORBIDDEN"
    METADATA_TYPE = "METADATA_TYPE"
    METADATA_VALUE = "METADATA_VALUE"
    METADATA_ARRAY_LENGTH = "METADATA_ARRAY_LENGTH"
    METADATA_ARRAY_DIGEST = "METADATA_ARRAY_DIGEST"
    METADATA_DIGEST = "METADATA_DIGEST"
    METADATA_CONFIG = "METADATA_CONFIG"
    # --- admission: tokenizer ---------------------------------------------------------------
    TOKENIZER_VALUE = "TOKENIZER_VALUE"
    TOKENIZER_ARRAY_LENGTH = "TOKENIZER_ARRAY_LENGTH"
    TOKENIZER_ARRAY_DIGEST = "TOKENIZER_ARRAY_DIGEST"
    TOKENIZER_DIGEST = "TOKENIZER_DIGEST"
    TOKENIZER_SPECIAL_ID = "TOKENIZER_SPECIAL_ID"
    TOKENIZER_STOP_ID = "TOKENIZER_STOP_ID"
    TOKENIZER_DOMAIN = "TOKENIZER_DOMAIN"
    TOKENIZER_LOGITS_ROWS = "TOKENIZER_LOGITS_ROWS"
    TOKENIZER_SPECIAL_UNKNOWN = "TOKENIZER_SPECIAL_UNKNOWN"  # bundles: Note [Special ids across files]
    TOKENIZER_SPECIAL_MISMATCH = "TOKENIZER_SPECIAL_MISMATCH"
    TOKENIZER_SPECIAL_RANGE = "TOKENIZER_SPECIAL_RANGE"
    # --- admission: tensors -----------------------------------------------------------------
    TENSOR_MISSING = "TENSOR_MISSING"
    TENSOR_UNEXPECTED = "TENSOR_UNEXPECTED"
    TENSOR_DUPLICATE = "TENSOR_DUPLICATE"
    TENSOR_RANK = "TENSOR_RANK"
    TENSOR_SHAPE = "TENSOR_SHAPE"
    TENSOR_CODEC = "TENSOR_CODEC"
    # --- admission: codec -------------------------------------------------------------------
    CODEC_BLOCK = "CODEC_BLOCK"
    CODEC_SIZE = "CODEC_SIZE"
    CODEC_ROW_HEADER = "CODEC_ROW_HEADER"  # Note [Row headers] in charter.formats.ggml_types
    # --- admission: layout ------------------------------------------------------------------
    LAYOUT_ALIGNMENT = "LAYOUT_ALIGNMENT"
    LAYOUT_DATA_OFFSET = "LAYOUT_DATA_OFFSET"
    LAYOUT_BOUNDS = "LAYOUT_BOUNDS"
    LAYOUT_ORDER = "LAYOUT_ORDER"
    LAYOUT_OVERLAP = "LAYOUT_OVERLAP"
    LAYOUT_GAP = "LAYOUT_GAP"
    LAYOUT_PADDING = "LAYOUT_PADDING"
    LAYOUT_TRAILING = "LAYOUT_TRAILING"
    # --- admission: stores ------------------------------------------------------------------
    STORE_MISSING = "STORE_MISSING"
    STORE_MANIFEST = "STORE_MANIFEST"
    STORE_GEOMETRY = "STORE_GEOMETRY"
    STORE_DIGEST = "STORE_DIGEST"
    # --- admission: policy ------------------------------------------------------------------
    POLICY_EXCLUSION = "POLICY_EXCLUSION"
    POLICY_STATUS = "POLICY_STATUS"
    # --- admission: payload -----------------------------------------------------------------
    PAYLOAD_DIGEST = "PAYLOAD_DIGEST"
    PAYLOAD_PADDING = "PAYLOAD_PADDING"
    PAYLOAD_FILE_DIGEST = "PAYLOAD_FILE_DIGEST"
    PAYLOAD_VALUE = "PAYLOAD_VALUE"
    PAYLOAD_BOUND = "PAYLOAD_BOUND"
    # --- bundles: the file set (charter.bundles.files) ---------------------------------------
    BUNDLE_FILE_MISSING = "BUNDLE_FILE_MISSING"
    BUNDLE_FILE_UNEXPECTED = "BUNDLE_FILE_UNEXPECTED"
    BUNDLE_FILE_ESCAPES = "BUNDLE_FILE_ESCAPES"
    BUNDLE_FILE_KIND = "BUNDLE_FILE_KIND"
    BUNDLE_FILE_SIZE = "BUNDLE_FILE_SIZE"
    BUNDLE_FILE_DIGEST = "BUNDLE_FILE_DIGEST"
    BUNDLE_LIMIT = "BUNDLE_LIMIT"
    # --- bundles: the shard of each tensor (charter.bundles.shards) --------------------------
    SHARD_INDEX = "SHARD_INDEX"
    SHARD_INDEX_METADATA = "SHARD_INDEX_METADATA"
    SHARD_DUPLICATE = "SHARD_DUPLICATE"
    SHARD_UNINDEXED = "SHARD_UNINDEXED"
    SHARD_INDEX_STALE = "SHARD_INDEX_STALE"
    SHARD_TOTAL_SIZE = "SHARD_TOTAL_SIZE"
    SHARD_PLACEMENT = "SHARD_PLACEMENT"
    # --- fixtures: provenance (charter fixtures verify/capture; docs/provenance.md) ---------
    FIXTURE_UNREADABLE = "FIXTURE_UNREADABLE"
    FIXTURE_UNLABELLED = "FIXTURE_UNLABELLED"
    FIXTURE_MISSING = "FIXTURE_MISSING"
    FIXTURE_DTYPE = "FIXTURE_DTYPE"
    FIXTURE_SHAPE = "FIXTURE_SHAPE"
    FIXTURE_DIGEST = "FIXTURE_DIGEST"
    FIXTURE_PRODUCER = "FIXTURE_PRODUCER"
    FIXTURE_VERSION = "FIXTURE_VERSION"
    FIXTURE_CLASS = "FIXTURE_CLASS"
    FIXTURE_SHARED = "FIXTURE_SHARED"
    FIXTURE_SEED = "FIXTURE_SEED"
    FIXTURE_SOURCE = "FIXTURE_SOURCE"
    FIXTURE_INPUT = "FIXTURE_INPUT"
    FIXTURE_CAPTURE = "FIXTURE_CAPTURE"
    # --- bundles: companion files (charter.bundles.json_facts) -------------------------------
    COMPANION_JSON = "COMPANION_JSON"
    COMPANION_TYPE = "COMPANION_TYPE"
    COMPANION_VALUE = "COMPANION_VALUE"
    COMPANION_MISSING = "COMPANION_MISSING"
    COMPANION_UNEXPECTED = "COMPANION_UNEXPECTED"
    COMPANION_LENGTH = "COMPANION_LENGTH"
    COMPANION_DIGEST = "COMPANION_DIGEST"
    # --- bundles: gguf split sets (charter.bundles.gguf_split, Note [GGUF split sets]) -------
    SPLIT_KEY_MISSING = "SPLIT_KEY_MISSING"
    SPLIT_KEY_TYPE = "SPLIT_KEY_TYPE"
    SPLIT_COUNT = "SPLIT_COUNT"
    SPLIT_NUMBER = "SPLIT_NUMBER"
    SPLIT_FILE_NAME = "SPLIT_FILE_NAME"
    SPLIT_VERSION = "SPLIT_VERSION"
    SPLIT_ALIGNMENT = "SPLIT_ALIGNMENT"
    SPLIT_METADATA = "SPLIT_METADATA"
    SPLIT_TENSOR_DUPLICATE = "SPLIT_TENSOR_DUPLICATE"
    SPLIT_TENSOR_COUNT = "SPLIT_TENSOR_COUNT"
    # --- text contracts: tokenizer and chat cases (charter.text; docs/provenance.md#text-cases) -
    TEXT_SOURCE = "TEXT_SOURCE"
    TEXT_TOKENIZER = "TEXT_TOKENIZER"
    TEXT_ADDED_TOKEN = "TEXT_ADDED_TOKEN"
    TEXT_VOCABULARY = "TEXT_VOCABULARY"
    TEXT_COUNT = "TEXT_COUNT"
    TEXT_PRODUCER = "TEXT_PRODUCER"
    TEXT_ENCODE = "TEXT_ENCODE"
    TEXT_DECODE = "TEXT_DECODE"
    TEXT_TEMPLATE = "TEXT_TEMPLATE"
    TEXT_CHAT_POLICY = "TEXT_CHAT_POLICY"
    TEXT_RENDER = "TEXT_RENDER"
    TEXT_SEGMENTS = "TEXT_SEGMENTS"
    TEXT_CHAT_IDS = "TEXT_CHAT_IDS"
    TEXT_PROMOTION = "TEXT_PROMOTION"
    TEXT_CROSSCHECK = "TEXT_CROSSCHECK"
    TEXT_FINDING = "TEXT_FINDING"
    TEXT_CAPTURE = "TEXT_CAPTURE"
    # --- regions: contracts over a model and its artifact (charter.regions.plan) -----------
    REGION_STATUS = "REGION_STATUS"
    REGION_PRECISION = "REGION_PRECISION"
    REGION_LAYERS = "REGION_LAYERS"
    REGION_ORDER = "REGION_ORDER"
    REGION_OWNERSHIP = "REGION_OWNERSHIP"
    REGION_UNOWNED = "REGION_UNOWNED"
    REGION_PATTERN_UNUSED = "REGION_PATTERN_UNUSED"
    REGION_SHARE = "REGION_SHARE"
    REGION_FOREIGN_TENSOR = "REGION_FOREIGN_TENSOR"
    REGION_TENSOR_UNUSED = "REGION_TENSOR_UNUSED"
    REGION_SIGNATURE = "REGION_SIGNATURE"
    REGION_EDGE_TYPE = "REGION_EDGE_TYPE"
    REGION_EDGE_UNPRODUCED = "REGION_EDGE_UNPRODUCED"
    REGION_EDGE_UNWRITTEN = "REGION_EDGE_UNWRITTEN"
    REGION_VALUE_UNDEFINED = "REGION_VALUE_UNDEFINED"
    REGION_STATE = "REGION_STATE"
    REGION_SKIP = "REGION_SKIP"
    REGION_STORE = "REGION_STORE"
    REGION_ROUTER = "REGION_ROUTER"
    # --- regions: the F1 reference interpreter (charter.regions.gate, .interpreter) ---------
    F1_UNAVAILABLE = "F1_UNAVAILABLE"
    F1_CONDITIONAL = "F1_CONDITIONAL"
    F1_STATEFUL = "F1_STATEFUL"
    F1_QUANTIZED = "F1_QUANTIZED"
    F1_DOMAIN = "F1_DOMAIN"
    F1_INPUT = "F1_INPUT"
    F1_WEIGHT = "F1_WEIGHT"
    F1_NODE = "F1_NODE"
    F1_PARITY = "F1_PARITY"

    @property
    def stage(self) -> Stage:
        return _stage_of(self)


_PREFIX_STAGE = {
    "BUNDLE_": Stage.FILES,
    "COMPANION_": Stage.COMPANIONS,
    "SHARD_": Stage.SHARDS,
    "SPLIT_": Stage.SHARDS,
    "CONTAINER_": Stage.CONTAINER,
    "IDENTITY_": Stage.IDENTITY,
    "METADATA_": Stage.METADATA,
    "TOKENIZER_": Stage.TOKENIZER,
    "TENSOR_": Stage.TENSORS,
    "CODEC_": Stage.CODEC,
    "LAYOUT_": Stage.LAYOUT,
    "STORE_": Stage.STORES,
    "POLICY_": Stage.POLICY,
    "PAYLOAD_": Stage.PAYLOAD,
}


@functools.cache  # found once per code: a battery asks tens of thousands of times
def _stage_of(code: Code) -> Stage:
    for prefix, stage in _PREFIX_STAGE.items():
        if code.value.startswith(prefix):
            return stage
    return Stage.SPEC


class Finding(str, Enum):
    """What a value check found. The metadata and the tokenizer stage check values alike, and
    each reports a finding under its own code: `code_for(Stage.TOKENIZER, Finding.VALUE)` is
    TOKENIZER_VALUE. The one place that turns a stage into a code family."""

    VALUE = "VALUE"
    DIGEST = "DIGEST"
    ARRAY_LENGTH = "ARRAY_LENGTH"
    ARRAY_DIGEST = "ARRAY_DIGEST"


VALUE_STAGES: tuple[Stage, ...] = (Stage.METADATA, Stage.TOKENIZER)  # the stages that own values

_FINDING_CODES: dict[tuple[Stage, Finding], Code] = {
    (stage, finding): Code[prefix + finding.value]
    for prefix, stage in _PREFIX_STAGE.items() if stage in VALUE_STAGES
    for finding in Finding
}


def code_for(stage: Stage | str, finding: Finding) -> Code:
    """The code under which `stage` (metadata or tokenizer) reports `finding`."""
    return _FINDING_CODES[Stage(stage), finding]


@dataclass(frozen=True, order=True)
class Location:
    """A place in a text file; line and column are 1-based, as editors count them."""

    file: str
    line: int = 0
    col: int = 0

    @classmethod
    def parse(cls, text: str) -> "Location":
        """Inverse of str(): `file:line:col`, `file:line` or `file`."""
        parts = text.rsplit(":", 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            return cls(parts[0], int(parts[1]), int(parts[2]))
        parts = text.rsplit(":", 1)
        if len(parts) == 2 and parts[1].isdigit():
            return cls(parts[0], int(parts[1]))
        return cls(text)

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        if self.col <= 0:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    """One precise finding: what (code), where in the data (field), and which fact said so."""

    code: Code
    field: str
    message: str
    expected: str | None = None
    actual: str | None = None
    location: Location | None = None
    offset: int | None = None  # byte offset in the artifact, when the finding has one

    @property
    def stage(self) -> Stage:
        return self.code.stage

    def render(self, where: str | None = None) -> str:
        """The ruff/mypy-style line: `file:line:col: CODE field: message`. Always one line: text
        from an artifact or a contract (keys, names, values) is escaped, so it cannot forge output.
        `where` replaces the location's text (charter.console shows it from the working directory;
        "" leaves it out)."""
        if where is None:
            where = str(self.location) if self.location else ""
        where = f"{printable(where)}: " if where else ""
        subject = f" {printable(shorten(self.field))}" if self.field else ""
        return f"{where}{self.code.value}{subject}: {printable(shorten(self.message))}"

    def to_json(self) -> dict:
        return {
            "stage": self.stage.value,
            "code": self.code.value,
            "field": self.field,
            "message": self.message,
            "expected": self.expected,
            "actual": self.actual,
            "location": str(self.location) if self.location else None,
            "offset": self.offset,
        }


RENDER_LIMIT = 512


def shorten(text: str, limit: int = RENDER_LIMIT) -> str:
    """`text`, cut to `limit` characters with a count of the rest: a 64 KiB key from an artifact
    must not make a one-line diagnostic 64 KiB long (the JSON report keeps it whole)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text) - limit} more characters]"


def printable(text: str) -> str:
    """`text` with every non-printable character (newlines, escapes, U+2028, NUL) as a Python escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def mismatch(code: Code, field: str, expected: object, actual: object, **kw) -> Diagnostic:
    """The common shape: `expected X, got Y`."""
    return Diagnostic(
        code, field, f"expected {expected}, got {actual}", str(expected), str(actual), **kw
    )


@dataclass
class CharterError(Exception):
    """Raised at a boundary with one or more diagnostics; the CLI prints them and exits."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(d.render() for d in self.diagnostics)


def dumps(diagnostics: list[Diagnostic]) -> str:
    return json.dumps([d.to_json() for d in diagnostics], indent=2, sort_keys=True)
