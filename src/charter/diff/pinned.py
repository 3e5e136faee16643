"""The pinned artifacts a diff admits: found from NEW's `source`, parsed once, admitted per checker.

Note [Admitted, not predicted]: where a contract pins its artifact (charter.admission.locate, or
`--artifact ID=FILE`), the diff says a change rejects it only by admitting it with the checker
generated from the changed contract, as `charter admit` would, and with OLD's checker too: a
change "rejects the pinned artifact" when OLD admits it and NEW does not. Both run with OLD's
status required (lowering a contract's claim then rejects, as the battery judges it). The payload
stage (reading every tensor byte) runs only when a payload check changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from charter.admission.report import AdmissionReport
from charter.admission.runtime import admit_view
from charter.admission.view import ArtifactView, read_view
from charter.contract.checks import Check, checks_of
from charter.contract.load import LoadedContract
from charter.contract.plan import ArtifactPlan
from charter.diagnostics import CharterError
from charter.mutation.assemble import Pieces


@dataclass
class Pinned:
    """Where each artifact contract's file is, the admissions made of it, and what one diff run
    shares between the variants of a contract it resolves."""

    overrides: dict[str, Path] = field(default_factory=dict)  # contract id -> file (--artifact)
    views: dict[Path, ArtifactView] = field(default_factory=dict)
    baselines: dict[tuple, tuple] = field(default_factory=dict)  # OLD's admissions: (plan, key, report)
    recent: tuple | None = None  # the last admission with a NEW plan
    pieces: Pieces = field(default_factory=Pieces)
    checks: dict[int, tuple[ArtifactPlan, tuple[Check, ...]]] = field(default_factory=dict)
    located: dict[str, tuple[Path | None, str]] = field(default_factory=dict)
    leaves: dict[str, list] = field(default_factory=dict)  # artifact id -> the plan each leaf was judged with
    memos: dict[str, dict] = field(default_factory=dict)  # artifact id -> resolve_artifact's memo of its variants

    def memo(self, artifact_id: str) -> dict:
        """What resolving variants of one artifact contract shares (charter.contract.resolve)."""
        return self.memos.setdefault(artifact_id, {})

    def find(self, lc: LoadedContract) -> tuple[Path | None, str]:
        """(the pinned file, "") or (None, why none is)."""
        if lc.id not in self.located:
            self.located[lc.id] = self._find(lc)
        return self.located[lc.id]

    def _find(self, lc: LoadedContract) -> tuple[Path | None, str]:
        from charter.admission.locate import locate

        if lc.id in self.overrides:
            path = Path(self.overrides[lc.id])
            return (path, "") if path.is_file() else (None, f"--artifact {lc.id}={path}: no such file")
        source = getattr(lc.contract, "source", None)
        if source is None:
            return None, "no artifact is pinned (no `source`)"
        try:
            return locate(source, lc.path.parent if lc.path else Path(".")), ""
        except CharterError as exc:
            return None, f"the pinned artifact is not found: {exc.diagnostics[0].message}"

    def checks_of(self, plan: ArtifactPlan) -> tuple[Check, ...]:
        """checks_of(plan), once per plan object (a model leaf is compared against each artifact)."""
        kept = self.checks.get(id(plan))
        if kept is None or kept[0] is not plan:
            if len(self.checks) > 16:  # OLD's plans and the few of one diff; a test diffs thousands
                self.checks.clear()
            kept = self.checks[id(plan)] = (plan, checks_of(plan))
        return kept[1]

    def checker(self, plan: ArtifactPlan):
        """The generated checker of `plan`, rendered and executed in memory, what it shares with the
        checkers before it compiled once (as charter.mutation.run.checker_module does; that module is
        not imported: it brings the battery's operators, a fifth of a cold diff's time)."""
        return self.pieces.checker(plan, f"# in-memory checker for {plan.id}",
                                   f"charter_diff_{plan.id.replace('-', '_').replace('.', '_')}")

    def admit(self, plan: ArtifactPlan, path: Path, require_status: str, payload: bool,
              baseline: bool = False) -> AdmissionReport:
        """The report of admitting `path` with `plan`'s generated checker (Note [Admitted, not
        predicted]); `baseline`: OLD's plan, admitted once per file and payload choice."""
        key = (id(plan), path, payload)
        kept = self.baselines.get(key) if baseline else self.recent
        if kept is not None and kept[0] is plan and kept[1] == key:
            return kept[2]
        view = self.views.get(path)
        if view is None:
            view = self.views[path] = read_view(str(path), plan.format)
        report = admit_view(view, str(path), self.checker(plan), require_status=require_status,
                            verify_payload=payload)
        if baseline:
            self.baselines[key] = (plan, key, report)
        else:  # the last one: a diff's summary admits the plan its one changed leaf was judged with
            self.recent = (plan, key, report)
        return report
