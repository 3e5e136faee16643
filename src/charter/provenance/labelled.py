"""The runtime of generated label modules: a fixture array is loaded only through its label.

A generated module (charter.codegen.labels) holds one fixture's labels as literals and calls
this module. `load` reads the array from the .npz, bounded, and re-verifies dtype, shape and
digest against the label every time; `require_class` refuses an array whose label has another
provenance class before reading anything. A test that asserts upstream behaviour therefore
writes `require_class(name, UPSTREAM_CAPTURE)`, and a contract control or a locally computed
oracle output cannot satisfy it, whatever its values.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from charter.provenance.digest import array_sha256, canonical_dtype
from charter.provenance.npz import NpzError, read_npz
from charter.contract.models import ProvenanceClass

__all__ = ["Label", "LabelTable", "LabelledArray", "ProvenanceClass", "ProvenanceError"]


class ProvenanceError(Exception):
    """An array was asked for under a label it does not carry, or does not match its label."""


@dataclass(frozen=True)
class Label:
    name: str
    cls: ProvenanceClass
    producer: str
    inputs: tuple[str, ...]
    dtype: str
    shape: tuple[int, ...]
    sha256: str
    where: str  # spec file:line:col of the label


@dataclass(frozen=True)
class LabelledArray:
    array: np.ndarray  # read-only
    cls: ProvenanceClass
    producer: str
    inputs: tuple[str, ...]
    sha256: str


class LabelTable:
    """One fixture's labels and the way to its file."""

    def __init__(self, contract_id: str, spec: str, spec_sha256: str, fixture: str,
                 labels: tuple[Label, ...], anchor: str | None = None) -> None:
        self.contract_id = contract_id
        self.spec = spec
        self.spec_sha256 = spec_sha256
        self.fixture = fixture
        self.labels = {label.name: label for label in labels}
        self.anchor = anchor

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.labels)

    def label(self, name: str) -> Label:
        try:
            return self.labels[name]
        except KeyError:
            raise ProvenanceError(f"fixture {self.contract_id} labels no array {name!r}") from None

    def find_fixture(self, root: str | Path | None = None) -> Path:
        """The .npz: under `root`, else under the working directory or a parent of the module."""
        rel = Path(posixpath.normpath(self.fixture))
        bases = [Path(root)] if root is not None else [Path.cwd()]
        if root is None and self.anchor:
            bases.extend(Path(self.anchor).resolve().parents)
        for base in bases:
            if (base / rel).is_file():
                return base / rel
        raise ProvenanceError(f"fixture file {self.fixture} of {self.spec} not found under {bases[0]}"
                              + (" or the parents of the label module" if len(bases) > 1 else ""))

    def load(self, name: str, root: str | Path | None = None) -> LabelledArray:
        """The array `name` with its label; dtype, shape and digest re-verified on every load."""
        label = self.label(name)
        path = self.find_fixture(root)
        try:
            arrays = read_npz(path)
        except NpzError as exc:
            raise ProvenanceError(f"{path}: {exc}") from None
        if name not in arrays:
            raise ProvenanceError(f"{path.name} holds no array {name!r} (labelled at {label.where})")
        array = arrays[name]
        if array.dtype.str != canonical_dtype(np.dtype(label.dtype)).str or tuple(array.shape) != label.shape:
            raise ProvenanceError(f"{name} in {path.name} is {array.dtype}{list(array.shape)}, "
                                  f"its label says {label.dtype}{list(label.shape)} ({label.where})")
        digest = array_sha256(array)
        if digest != label.sha256:
            raise ProvenanceError(f"{name} in {path.name} has sha256 {digest}, its label pins {label.sha256} "
                                  f"({label.where})")
        array.flags.writeable = False
        return LabelledArray(array, label.cls, label.producer, label.inputs, label.sha256)

    def require_class(self, name: str, cls: ProvenanceClass, root: str | Path | None = None) -> LabelledArray:
        """The array `name`, only if its label's class is `cls`."""
        label = self.label(name)
        cls = ProvenanceClass(cls)
        if label.cls is not cls:
            raise ProvenanceError(f"{name} is labelled {label.cls.value} ({label.producer}), not {cls.value}: "
                                  f"it cannot stand in for {cls.value} evidence ({label.where})")
        return self.load(name, root)
