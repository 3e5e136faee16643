"""derived_metadata: the `derived_from` statement is the producer, in a small checked grammar.

A derived array is computed from an already identified source, so its label names that source
precisely enough for a machine to follow. Note [Derived sources]: `derived_from` is one of

    model <model-id> constant <name>
        the resolved value of a model constant (plain or derived), cast to the label's dtype;
        an integer constant must fit exactly, a float is rounded to the label's float dtype
    artifact <artifact-id> sha256:<hex> tensor <name> blocks <first>:<end>
        the raw bytes of blocks [first, end) of a quantized tensor of the artifact's pinned file,
        as uint8[end - first, block_bytes], read at the tensor's absolute offset
    artifact <artifact-id> sha256:<hex> tensor <name> type
        the tensor's GGML type id, as a 0-d integer

`charter fixtures verify` checks offline that the named model or artifact contract exists, that
a model constant's value equals the stored array, and that the sha256 stated here is the one the
artifact contract pins (the statement cannot silently name another file). `capture` reads the
real file, only after its sha256 matches, and only the bytes it needs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from charter.contract.contractset import ContractSet
from charter.contract.models import ArtifactContract

_MODEL = re.compile(r"model (?P<id>[a-z0-9][a-z0-9._-]*) constant (?P<name>[A-Za-z_][A-Za-z0-9_]*)")
_ARTIFACT = re.compile(
    r"artifact (?P<id>[a-z0-9][a-z0-9._-]*) sha256:(?P<sha>[0-9a-f]{64}) tensor (?P<tensor>\S+) "
    r"(?:blocks (?P<first>0|[1-9][0-9]*):(?P<end>0|[1-9][0-9]*)|(?P<type>type))"
)
GRAMMAR = ("model <model-id> constant <name> | artifact <artifact-id> sha256:<hex> tensor <name> "
           "blocks <first>:<end> | artifact <artifact-id> sha256:<hex> tensor <name> type")


class SourceError(ValueError):
    """The source cannot be followed, or does not say what the label claims (FIXTURE_SOURCE)."""


@dataclass(frozen=True)
class ModelConstant:
    model: str
    name: str


@dataclass(frozen=True)
class TensorBytes:
    artifact: str
    sha256: str
    tensor: str
    first: int | None = None  # None: the tensor's type id rather than its blocks
    end: int | None = None


Source = ModelConstant | TensorBytes


def parse(text: str) -> Source:
    if m := _MODEL.fullmatch(text):
        return ModelConstant(m["id"], m["name"])
    if m := _ARTIFACT.fullmatch(text):
        if m["type"]:
            return TensorBytes(m["id"], m["sha"], m["tensor"])
        first, end = int(m["first"]), int(m["end"])
        if end <= first:
            raise SourceError(f"blocks {first}:{end} is empty")
        return TensorBytes(m["id"], m["sha"], m["tensor"], first, end)
    raise SourceError(f"derived_from must read: {GRAMMAR}")


def _constant(source: ModelConstant, cs: ContractSet) -> int | float:
    plan = cs.models.get(source.model)
    if plan is None:
        raise SourceError(f"no model contract {source.model!r} is loaded (see --search)")
    if source.name not in plan.constants:
        raise SourceError(f"model {source.model} has no constant {source.name!r}")
    return plan.constants[source.name]


def as_dtype(value: int | float, dtype: np.dtype) -> np.ndarray:
    """A constant as a 0-d array of `dtype`; an integer must fit exactly."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        if isinstance(value, float) and not value.is_integer():
            raise SourceError(f"constant {value!r} is not an integer, the label says {dtype}")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise SourceError(f"constant {value!r} does not fit {dtype}")
        return np.array(int(value), dtype=dtype)
    if dtype.kind == "f":
        return np.array(value, dtype=dtype)
    raise SourceError(f"a constant cannot be stored as {dtype}")


def _artifact(source: TensorBytes, cs: ContractSet) -> ArtifactContract:
    found = cs.contracts.get(source.artifact)
    if found is None or not isinstance(found.contract, ArtifactContract):
        raise SourceError(f"no artifact contract {source.artifact!r} is loaded (see --search)")
    pinned = found.contract.source
    if pinned is None:
        raise SourceError(f"artifact {source.artifact} pins no source file")
    if pinned.sha256 != source.sha256:
        raise SourceError(f"states sha256:{source.sha256}, but artifact {source.artifact} pins sha256:{pinned.sha256}")
    return found.contract


def check(text: str, cs: ContractSet, dtype: str, stored: np.ndarray | None) -> None:
    """Offline: the source parses, resolves, agrees with the contracts and the stored value."""
    source = parse(text)
    if isinstance(source, ModelConstant):
        value = _constant(source, cs)
        try:
            np_dtype = np.dtype(dtype)
        except TypeError:
            return  # a label dtype numpy does not know is FIXTURE_DTYPE's finding, not this one
        expected = as_dtype(value, np_dtype)
        if stored is not None and (stored.shape != () or stored.tobytes() != expected.tobytes()
                                   or stored.dtype != expected.dtype):
            raise SourceError(f"model {source.model} constant {source.name} is {expected.item()!r}, "
                              f"the fixture holds {stored.tolist()!r}")
    else:
        _artifact(source, cs)


def produce(text: str, cs: ContractSet, dtype: str, files: dict[str, Path]) -> np.ndarray:
    """Capture: compute the array from its source. `files` caches verified artifact paths."""
    source = parse(text)
    if isinstance(source, ModelConstant):
        return as_dtype(_constant(source, cs), np.dtype(dtype))
    from charter.formats.gguf import read_gguf

    artifact = _artifact(source, cs)
    path = _pinned_file(source, artifact, cs, files)
    header = read_gguf(path)
    info = next((t for t in header.tensors if t.name == source.tensor), None)
    if info is None:
        raise SourceError(f"artifact {source.artifact} has no tensor {source.tensor!r}")
    if source.first is None:
        return as_dtype(info.ggml_type.id, np.dtype(dtype))
    block_bytes = info.ggml_type.block_bytes
    if info.ggml_type.block_size == 1:
        raise SourceError(f"tensor {source.tensor} is {info.ggml_type.name}, not a block-quantized type")
    if info.ggml_type.row_header:  # Note [Row headers] in charter.formats.ggml_types
        raise SourceError(f"tensor {source.tensor} is {info.ggml_type.name}, whose rows start with a header: "
                          f"its blocks are not one contiguous run")
    blocks = info.nbytes // block_bytes
    if source.end > blocks:
        raise SourceError(f"tensor {source.tensor} has {blocks} blocks; blocks {source.first}:{source.end} is out of range")
    count = (source.end - source.first) * block_bytes
    with open(path, "rb") as f:
        f.seek(info.start + source.first * block_bytes)
        raw = f.read(count)
    if len(raw) != count:
        raise SourceError(f"{path.name} is truncated at tensor {source.tensor}")
    return np.frombuffer(raw, dtype=np.uint8).reshape(source.end - source.first, block_bytes).copy()


def _pinned_file(source: TensorBytes, artifact: ArtifactContract, cs: ContractSet, files: dict[str, Path]) -> Path:
    if source.artifact in files:
        return files[source.artifact]
    from charter.admission.locate import locate
    from charter.diagnostics import CharterError

    loaded = cs.contracts[source.artifact]
    spec_dir = loaded.path.parent if loaded.path is not None else Path(".")
    try:
        path = locate(artifact.source, spec_dir)
    except CharterError as exc:
        raise SourceError(exc.diagnostics[0].message) from None
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    if h.hexdigest() != source.sha256:
        raise SourceError(f"{path} has sha256:{h.hexdigest()}, the pinned file is sha256:{source.sha256}")
    files[source.artifact] = path
    return path
