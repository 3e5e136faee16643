"""A provenance contract -> the view the label templates render.

Every decision is made here: names, order (the spec's), the producer description, and the exact
literal of every value, through the escapers of charter.codegen.common. The templates only loop
and substitute.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass

from charter.codegen.common.cpp import cpp_int64, cpp_sv
from charter.codegen.common.header import generated_header
from charter.codegen.common.names import identifier
from charter.codegen.common.python import py_literal
from charter.contract.load import LoadedContract
from charter.contract.models import FixtureArray, ProvenanceClass, ProvenanceContract

MAX_RANK = 32  # the C++ Label holds shapes in a std::array of this size

CLASS_NAMES = {
    ProvenanceClass.UPSTREAM_CAPTURE: ("UPSTREAM_CAPTURE", "UpstreamCapture"),
    ProvenanceClass.INDEPENDENT_CROSSCHECK: ("INDEPENDENT_CROSSCHECK", "IndependentCrosscheck"),
    ProvenanceClass.CONTRACT_CONTROL: ("CONTRACT_CONTROL", "ContractControl"),
    ProvenanceClass.DERIVED_METADATA: ("DERIVED_METADATA", "DerivedMetadata"),
}


@dataclass(frozen=True)
class LabelView:
    """One array's label, every field already a literal of the target language."""

    py_name: str
    py_class: str
    py_producer: str
    py_inputs: str
    py_dtype: str
    py_shape: str
    py_sha256: str
    py_where: str
    cpp_name: str
    cpp_class: str
    cpp_dtype: str
    cpp_rank: str
    cpp_shape: str
    cpp_sha256: str
    cpp_producer: str


@dataclass(frozen=True)
class LabelsView:
    py_header: str
    cpp_header: str
    identifier: str
    py_contract_id: str
    py_spec: str
    py_spec_sha256: str
    py_fixture: str
    cpp_contract_id: str
    cpp_spec: str
    cpp_spec_sha256: str
    cpp_fixture: str
    labels: tuple[LabelView, ...]
    max_rank: int


def producer_text(a: FixtureArray) -> str:
    """One line saying who produced the array, as its label states it."""
    p = a.producer
    if a.cls is ProvenanceClass.UPSTREAM_CAPTURE:
        where = f"{p.module}.{p.callable}" if p.module else p.callable
        return f"{p.package}=={p.version} {where}"
    if a.cls is ProvenanceClass.INDEPENDENT_CROSSCHECK:
        return f"{p.module}.{p.callable} (checks {a.checks})"
    if a.cls is ProvenanceClass.CONTRACT_CONTROL:
        seed = f" seed {p.seed}" if p.seed is not None else ""
        generator = f"{p.module}.{p.callable}" if p.module and p.callable else "rule"
        return f"{generator}{seed}: {' '.join(p.rule.split())}"
    return f"derived from {p.derived_from}"


def build(loaded: LoadedContract, spec_display_path: str) -> LabelsView:
    contract = loaded.contract
    if not isinstance(contract, ProvenanceContract):
        raise TypeError(f"labels are generated from provenance contracts, not {contract.kind}")
    spec_sha = hashlib.sha256(loaded.doc.source.encode("utf-8")).hexdigest()
    fixture = posixpath.normpath(posixpath.join(posixpath.dirname(spec_display_path), contract.fixture))
    labels = []
    for i, a in enumerate(contract.arrays):
        if len(a.shape) > MAX_RANK:
            raise ValueError(f"array {a.name} has rank {len(a.shape)}; labels support up to {MAX_RANK}")
        py_class, cpp_class = CLASS_NAMES[a.cls]
        producer = producer_text(a)
        labels.append(LabelView(
            py_name=py_literal(a.name), py_class=py_class, py_producer=py_literal(producer),
            py_inputs=py_literal(tuple(a.inputs)), py_dtype=py_literal(a.dtype), py_shape=py_literal(tuple(a.shape)),
            py_sha256=py_literal(a.sha256), py_where=py_literal(str(loaded.doc.where(("arrays", i)))),
            cpp_name=cpp_sv(a.name), cpp_class=f"ProvenanceClass::{cpp_class}",
            cpp_dtype=cpp_sv(a.dtype), cpp_rank=str(len(a.shape)),
            cpp_shape="{" + ", ".join(cpp_int64(d) for d in a.shape) + "}",
            cpp_sha256=cpp_sv(a.sha256), cpp_producer=cpp_sv(producer),
        ))
    return LabelsView(
        py_header=generated_header("#", (spec_display_path, spec_sha)),
        cpp_header=generated_header("//", (spec_display_path, spec_sha)),
        identifier=identifier(contract.id),
        py_contract_id=py_literal(contract.id), py_spec=py_literal(spec_display_path),
        py_spec_sha256=py_literal(spec_sha), py_fixture=py_literal(fixture),
        cpp_contract_id=cpp_sv(contract.id), cpp_spec=cpp_sv(spec_display_path),
        cpp_spec_sha256=cpp_sv(spec_sha), cpp_fixture=cpp_sv(fixture),
        labels=tuple(labels), max_rank=MAX_RANK,
    )
