"""What a generated checker is generated from: the manifest's inputs of one artifact contract."""

from __future__ import annotations

import hashlib

from charter.contract.plan import ArtifactPlan


def checker_inputs(cs, plan: ArtifactPlan) -> dict[str, str]:
    """Spec display path -> sha256 of its bytes, for the artifact contract and its model: what both
    checkers of `plan` are generated from (generated/manifest.json records them)."""
    model = cs.contracts[plan.model]
    model_sha256 = hashlib.sha256(model.doc.source.encode("utf-8")).hexdigest()
    return {plan.spec_path: plan.spec_sha256, model.doc.file: model_sha256}
