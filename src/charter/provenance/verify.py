"""`charter fixtures verify`: a fixture file and its labels agree, offline.

Order of checks (Note [Fixture verification]): the labels first (each names a producer of its
own class: charter.provenance.producers.check_labels), then the file: it must be a readable,
bounded .npz; every array in it has a label and every label its array; each array has the
label's dtype and shape, and only then is its digest compared (a wrong dtype already explains a
wrong digest). derived_metadata values that come from model constants are compared with the
resolved constants. Nothing here touches the network or runs a producer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from charter.diagnostics import Code, Diagnostic, mismatch
from charter.provenance.digest import array_sha256, canonical_dtype
from charter.provenance.npz import NpzError, read_npz
from charter.provenance.producers import check_labels
from charter.contract.contractset import ContractSet
from charter.contract.load import LoadedContract
from charter.contract.models import FixtureArray, ProvenanceContract


@dataclass
class Verified:
    contract_id: str
    arrays: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)


def fixture_path(loaded: LoadedContract) -> Path:
    base = loaded.path.parent if loaded.path is not None else Path(".")
    return base / loaded.contract.fixture


def label_dtype(label: FixtureArray) -> np.dtype:
    """The label's dtype, which must be a canonical numpy name (float32, uint8, ...)."""
    try:
        dtype = np.dtype(label.dtype)
        canonical_dtype(dtype)
    except (TypeError, ValueError):
        raise ValueError(f"{label.dtype!r} is not a numpy dtype with a digest (bool, integer, float, complex)") from None
    if dtype.name != label.dtype:
        raise ValueError(f"write the dtype as {dtype.name!r}, not {label.dtype!r}")
    return dtype


def _same_layout(label: FixtureArray, array: np.ndarray) -> bool:
    """The stored array has the label's dtype (byte order included) and shape."""
    try:
        dtype = canonical_dtype(label_dtype(label))
    except ValueError:
        return False
    return array.dtype.str == dtype.str and list(array.shape) == list(label.shape)


def check_array(loaded: LoadedContract, i: int, label: FixtureArray, array: np.ndarray) -> list[Diagnostic]:
    """dtype, then shape, then digest of one array against its label."""
    where = loaded.doc.where
    try:
        dtype = label_dtype(label)
    except ValueError as exc:
        return [Diagnostic(Code.FIXTURE_DTYPE, f"{label.name}.dtype", str(exc), location=where(("arrays", i, "dtype")))]
    out = []
    if array.dtype.str != canonical_dtype(dtype).str:
        actual = array.dtype.name if array.dtype.str == canonical_dtype(array.dtype).str else array.dtype.str
        out.append(mismatch(Code.FIXTURE_DTYPE, f"{label.name}.dtype", label.dtype, actual,
                            location=where(("arrays", i, "dtype"))))
    if tuple(array.shape) != tuple(label.shape):
        out.append(mismatch(Code.FIXTURE_SHAPE, f"{label.name}.shape", list(label.shape), list(array.shape),
                            location=where(("arrays", i, "shape"))))
    if not out:
        digest = array_sha256(array)
        if digest != label.sha256:
            out.append(mismatch(Code.FIXTURE_DIGEST, f"{label.name}.sha256", label.sha256, digest,
                                location=where(("arrays", i, "sha256"))))
    return out


def verify(loaded: LoadedContract, cs: ContractSet) -> Verified:
    contract = loaded.contract
    assert isinstance(contract, ProvenanceContract)
    result = Verified(contract.id)
    path = fixture_path(loaded)
    try:
        arrays = read_npz(path)
    except NpzError as exc:
        result.diagnostics.extend(check_labels(loaded, cs))
        result.diagnostics.append(Diagnostic(Code.FIXTURE_UNREADABLE, "fixture", str(exc),
                                             location=loaded.doc.where(("fixture",))))
        return result
    result.arrays = len(arrays)
    # Labels are checked against stored values only where dtype and shape already agree: a wrong
    # dtype or shape is reported below, and explains any other difference.
    agreeing = {a.name: arrays[a.name] for a in contract.arrays
                if a.name in arrays and _same_layout(a, arrays[a.name])}
    result.diagnostics.extend(check_labels(loaded, cs, agreeing))
    labelled = {a.name for a in contract.arrays}
    for name in arrays:
        if name not in labelled:
            result.diagnostics.append(Diagnostic(
                Code.FIXTURE_UNLABELLED, name, f"array {name!r} in {path.name} has no label "
                "(every array states its provenance)", location=loaded.doc.where(("arrays",))))
    for i, label in enumerate(contract.arrays):
        if label.name not in arrays:
            result.diagnostics.append(Diagnostic(
                Code.FIXTURE_MISSING, label.name, f"labelled array {label.name!r} is not in {path.name}",
                location=loaded.doc.where(("arrays", i, "name"))))
            continue
        result.diagnostics.extend(check_array(loaded, i, label, arrays[label.name]))
    return result
