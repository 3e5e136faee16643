"""`charter fixtures capture`: run every array's producer and write the fixture deterministically.

Note [Capture]: capture is a reproducer first. It refuses before running anything if a label
breaks a rule (producers.check_labels; an upstream package whose installed version is not the
pinned one is FIXTURE_VERSION), runs the registered producers in input order, and refuses if an
output's dtype or shape differs from its label (no casting, padding or reshaping to make it fit).
The .npz is the deterministic archive of Note [Deterministic npz], arrays in spec order.

If every digest equals the spec's, the file is written (atomically, only when its bytes change).
If a digest differs, nothing is written and each difference is a FIXTURE_DIGEST: a fixture whose
producers no longer reproduce it is news, not something to overwrite. `--update-digests` accepts
the new values: it writes the .npz and rewrites just those `sha256:` scalars in the spec text
(charter.provenance.yamledit), keeping comments and layout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from charter import atomic
from charter.diagnostics import Code, Diagnostic, mismatch
from charter.provenance import derive, yamledit
from charter.provenance.digest import array_sha256, canonical_dtype
from charter.provenance.npz import npz_bytes
from charter.provenance.producers import DERIVED, LabelError, check_labels, entry_for, field_of, topological
from charter.provenance.verify import fixture_path, label_dtype
from charter.contract.contractset import ContractSet
from charter.contract.load import LoadedContract, contract_from_document
from charter.contract.models import FixtureArray, ProvenanceContract
from charter.contract.yamlload import load_text


@dataclass
class Captured:
    contract_id: str
    output: Path
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    wrote: bool = False
    updated: list[str] = field(default_factory=list)  # arrays whose digest was rewritten in the spec


def produce(label: FixtureArray, inputs: tuple, cs: ContractSet, files: dict) -> np.ndarray:
    """One array from its registered producer (or its derived_from source)."""
    if label.cls is DERIVED:
        return derive.produce(label.producer.derived_from, cs, label.dtype, files)
    entry, ref = entry_for(label)
    out = entry.run(inputs, label.producer.seed, tuple(label.shape))
    if ref.index is not None:
        if not isinstance(out, tuple) or len(out) != entry.outputs:
            raise TypeError(f"{ref.text} did not return {entry.outputs} results")
        out = out[ref.index]
    return out


def capture(loaded: LoadedContract, cs: ContractSet, *, output: Path | None = None,
            update_digests: bool = False) -> Captured:
    contract = loaded.contract
    assert isinstance(contract, ProvenanceContract)
    result = Captured(contract.id, output or fixture_path(loaded))
    where = loaded.doc.where
    result.diagnostics = check_labels(loaded, cs, capture=True)
    for i, label in enumerate(contract.arrays):
        try:
            label_dtype(label)
        except ValueError as exc:
            result.diagnostics.append(Diagnostic(Code.FIXTURE_DTYPE, f"{label.name}.dtype", str(exc),
                                                 location=where(("arrays", i, "dtype"))))
    if result.diagnostics:
        return result
    files: dict = {}
    produced: dict[str, np.ndarray] = {}
    index = {a.name: i for i, a in enumerate(contract.arrays)}
    for label in topological(contract):
        i = index[label.name]
        try:
            out = produce(label, tuple(produced[n] for n in label.inputs), cs, files)
        except derive.SourceError as exc:
            result.diagnostics.append(Diagnostic(Code.FIXTURE_SOURCE, field_of(label, ("producer", "derived_from")),
                                                 str(exc), location=where(("arrays", i, "producer", "derived_from"))))
            return result
        except LabelError as exc:
            result.diagnostics.append(Diagnostic(exc.code, field_of(label, exc.path), exc.message,
                                                 location=where(("arrays", i, *exc.path))))
            return result
        except Exception as exc:  # noqa: BLE001 - a producer's failure is a finding about this array
            result.diagnostics.append(Diagnostic(Code.FIXTURE_CAPTURE, field_of(label, ("producer",)),
                                                 f"producer failed: {type(exc).__name__}: {exc}",
                                                 location=where(("arrays", i, "producer"))))
            return result
        problems = _conforms(loaded, i, label, out)
        if problems:
            result.diagnostics.extend(problems)
            return result
        produced[label.name] = out
    result.arrays = {a.name: produced[a.name] for a in contract.arrays}
    data = npz_bytes(list(result.arrays.items()))
    stale: dict[int, yamledit.Edit] = {}
    for i, label in enumerate(contract.arrays):
        digest = array_sha256(produced[label.name])
        if digest != label.sha256:
            stale[i] = yamledit.Edit(where(("arrays", i, "sha256")), label.sha256, digest)
            if not update_digests:
                result.diagnostics.append(mismatch(
                    Code.FIXTURE_DIGEST, f"{label.name}.sha256", label.sha256, digest,
                    location=where(("arrays", i, "sha256"))))
    if result.diagnostics:
        return result
    try:
        text = _updated_spec(loaded, stale) if stale else None
    except yamledit.EditError as exc:
        result.diagnostics.append(Diagnostic(Code.FIXTURE_CAPTURE, "sha256", f"cannot rewrite the digests in place: {exc}",
                                             location=where(("arrays",))))
        return result
    result.wrote = atomic.write_bytes(result.output, data)
    if text is not None:
        atomic.write_text(loaded.path, text)
        result.updated = [contract.arrays[i].name for i in sorted(stale)]
    return result


def _conforms(loaded: LoadedContract, i: int, label: FixtureArray, out: object) -> list[Diagnostic]:
    where = loaded.doc.where
    if not isinstance(out, np.ndarray):
        return [Diagnostic(Code.FIXTURE_CAPTURE, field_of(label, ("producer",)),
                           f"producer returned {type(out).__name__}, not a numpy array",
                           location=where(("arrays", i, "producer")))]
    dtype = label_dtype(label)  # valid: checked before anything ran
    out_problems = []
    try:
        produced_dtype = canonical_dtype(out.dtype).str
    except ValueError as exc:
        produced_dtype = f"{out.dtype} ({exc})"
    if produced_dtype != canonical_dtype(dtype).str:
        out_problems.append(mismatch(Code.FIXTURE_DTYPE, f"{label.name}.dtype", label.dtype, out.dtype,
                                     location=where(("arrays", i, "dtype"))))
    if tuple(out.shape) != tuple(label.shape):
        out_problems.append(mismatch(Code.FIXTURE_SHAPE, f"{label.name}.shape", list(label.shape), list(out.shape),
                                     location=where(("arrays", i, "shape"))))
    return out_problems


def _updated_spec(loaded: LoadedContract, edits: dict[int, yamledit.Edit]) -> str:
    """The spec text with new digests, re-loaded to prove the edit changed exactly those values."""
    if loaded.path is None:
        raise yamledit.EditError("cannot update digests of a contract that has no file")
    text = yamledit.apply(loaded.doc.source, list(edits.values()))
    again = contract_from_document(load_text(text, loaded.doc.file))
    expected = loaded.contract.model_dump(by_alias=True)
    for i, e in edits.items():
        expected["arrays"][i]["sha256"] = e.new
    if again.model_dump(by_alias=True) != expected:
        raise yamledit.EditError("the digest edit would change more than the digests")
    return text
