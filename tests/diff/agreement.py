"""What the diff says of one contract mutant, turned into an OLD/NEW pair of documents."""

from __future__ import annotations

from charter.contract.load import LoadedContract
from charter.diagnostics import CharterError
from charter.diff.classify import side_of, diff_sides
from charter.diff.pinned import Pinned


def document(original: LoadedContract, data) -> LoadedContract:
    """NEW's contract: the mutant's data, at the original's file and locations, validated as the
    battery validates it (only what changed is validated again: the same contract a full
    validation builds, Note [Incremental battery])."""
    from charter.mutation.run import _reload

    return _reload(original, data)


def diff_verdict(b, old, pinned: Pinned, m) -> str:
    """refused (NEW is not a valid contract set), rejects (a finding rejects the battery's
    artifact), equivalent (no finding changed a check) or changed (checks changed, the artifact
    is still admitted)."""
    artifact_data, model_data = m.make()
    try:
        new = side_of([document(b.loaded, artifact_data), document(b.model, model_data)], pinned)
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


_JOB = None  # (battery, old side, mutants) the forked workers share


def _one(i: int) -> tuple[int, str]:
    b, old, pinned, mutants = _JOB
    return i, diff_verdict(b, old, pinned, mutants[i])


def diff_all(b, mutants, jobs: int = 2) -> list[str]:
    """diff_verdict of every mutant, in order, on `jobs` forked workers."""
    import multiprocessing

    from charter.mutation.run import default_signals

    global _JOB
    _JOB = (b, old_side(b), Pinned({b.plan.id: b.artifact_path}), mutants)
    try:
        if jobs <= 1:
            return [_one(i)[1] for i in range(len(mutants))]
        import gc

        out = [""] * len(mutants)
        gc.collect()
        gc.freeze()  # forked workers share the battery's pages untouched (as charter.mutation.run does)
        with multiprocessing.get_context("fork").Pool(jobs, initializer=default_signals) as pool:
            for i, verdict in pool.imap_unordered(_one, range(len(mutants)), chunksize=16):
                out[i] = verdict
        return out
    finally:
        import gc

        gc.unfreeze()
        _JOB = None
