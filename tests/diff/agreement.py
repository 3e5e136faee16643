"""What the diff says of one contract mutant, turned into an OLD/NEW pair of documents."""

from __future__ import annotations

import dataclasses

from charter.contract.load import LoadedContract, contract_from_document
from charter.contract.yamlload import Document
from charter.diagnostics import CharterError
from charter.diff.classify import side_of, diff_sides
from charter.diff.pinned import Pinned


def document(original: LoadedContract, data) -> LoadedContract:
    """NEW's contract: the mutant's data, at the original's file and locations."""
    if data is original.doc.data:
        return original
    doc = Document(data, original.doc.locations, original.doc.source, original.doc.file)
    return LoadedContract(contract_from_document(doc), doc, original.path)


def diff_verdict(b, old, pinned: Pinned, m) -> str:
    """refused (NEW is not a valid contract set), rejects (a finding rejects the battery's
    artifact), equivalent (no finding changed a check) or changed (checks changed, the artifact
    is still admitted)."""
    artifact_data, model_data = m.make()
    try:
        new = side_of([document(b.loaded, artifact_data), document(b.model, model_data)])
    except CharterError:
        return "refused"
    result = diff_sides(old, new, pinned)
    if any(r.contract == b.plan.id for f in result.findings for r in f.rejects):
        return "rejects"
    if all(f.checks == "equivalent" and not f.changed for f in result.findings):
        return "equivalent"
    return "changed"


def battery_verdict(outcome) -> str:
    """The same four words for the battery's outcome (Note [Diff agreement] in charter.diff)."""
    v = outcome.verdict.value
    if v == "killed":
        return "refused" if outcome.stage == "spec" else "rejects"
    if v == "equivalent":
        return "changed" if outcome.enforced_by else "equivalent"
    return v  # survived, regression, error: never agree with a diff verdict


def old_side(b):
    return side_of([b.loaded, b.model])
