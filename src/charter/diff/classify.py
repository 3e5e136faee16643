"""Classify every changed leaf between two versions of a contract set.

Note [Diff by checks]: a leaf's meaning is what it does to generated checkers, so the diff asks
the battery's question of each changed leaf: apply it alone to OLD (the battery's contract
mutant, made from a real edit), resolve, list the typed checks (charter.contract.checks) and
compare them with OLD's (charter.mutation.expect.added_and_removed, the battery's comparison).
No changed check is EQUIVALENT; otherwise the checks' moves (charter.diff.direction) and, where an
artifact is pinned, its admission by both checkers (Note [Admitted, not predicted] in
charter.diff.pinned) decide between tightened and loosened. A model leaf is judged on every
artifact contract of that model. A leaf that does not resolve alone (a constant renamed with its
uses) is judged with all of NEW's changes of its contract, and says so.

Note [Identity leaves]: a model's `id`, `architecture`, `family` and upstream `source`
(repository, revision), an artifact's `model` and `id` say *which* model or profile a contract
is about (docs/contracts.md, `kind: model`); changing one is an identity change whatever it does
to the checks, and fails the gate as a loosening does. The finding still carries the check-level
verdict (`checks`: equivalent, tightened or loosened), which is what the battery agreement test
compares: the battery judges an edit of `source.repository` equivalent, and so does the diff at
that level, while it reports the edit as IDENTITY_MODEL_SOURCE.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from charter.contract.load import LoadedContract, contract_from_document
from charter.contract.models import ArtifactContract, ModelContract
from charter.contract.plan import ArtifactPlan, ModelPlan
from charter.contract.resolve import resolve_artifact, resolve_model
from charter.contract.yamlload import Document
from charter.diagnostics import CharterError, Code, Diagnostic, Location
from charter.diff.direction import Move, describe, moves
from charter.diff.leaves import MISSING, Leaf, applied, changed_leaves, field_name, same
from charter.diff.pinned import Pinned
from charter.diff.rules import Category, Rule, identity_rule
from charter.mutation.expect import added_and_removed


@dataclass
class Side:
    """One version of the contracts: every contract by id, and the plans it resolves to."""

    contracts: dict[str, LoadedContract]
    models: dict[str, ModelPlan]
    artifacts: dict[str, ArtifactPlan]
    files: dict[str, str] = field(default_factory=dict)  # id -> file name relative to its tree (pairs renames)


def side_of_set(cs, files: dict[str, str] | None = None) -> Side:
    """The Side of a loaded, resolved ContractSet (charter.contract.contractset.load_set)."""
    return Side(dict(cs.contracts), dict(cs.models), dict(cs.artifacts), files or {})


def side_of(loaded: list[LoadedContract], pinned: Pinned | None = None) -> Side:
    """The Side of already validated contracts: models resolved, then their artifacts (other kinds
    are not: their leaves are not classified by checks); raises CharterError as loading a contract
    set would, and on two contracts of one id. `pinned`: the run whose resolutions it shares."""
    contracts: dict[str, LoadedContract] = {}
    for lc in loaded:
        first = contracts.setdefault(lc.id, lc)
        if first is not lc:
            raise CharterError([Diagnostic(Code.ID_DUPLICATE, "id", f"id {lc.id!r} is already used by "
                                           f"{first.doc.where(('id',))}", location=lc.doc.where(("id",)))])
    models = {lc.id: resolve_model(lc) for lc in loaded if isinstance(lc.contract, ModelContract)}
    artifacts = {}
    for lc in loaded:
        if isinstance(lc.contract, ArtifactContract):
            if lc.contract.model not in models:
                raise CharterError([Diagnostic(Code.REF_DANGLING, "model", f"no model {lc.contract.model!r}",
                                               location=lc.doc.where(("model",)))])
            artifacts[lc.id] = resolve_artifact(lc, models[lc.contract.model],
                                                memo=pinned.memo(lc.id) if pinned else None)
    return Side(contracts, models, artifacts, {lc.id: lc.doc.file for lc in loaded})


@dataclass(frozen=True)
class Rejection:
    """A pinned artifact the checker generated from the change rejects, and how."""

    contract: str
    artifact: str
    diagnostic: Diagnostic


@dataclass(frozen=True)
class Finding:
    """One changed leaf (or an added, removed or renamed contract), classified."""

    rule: Rule
    contract: str
    kind: str
    field: str
    old: str | None
    new: str | None
    location: Location | None  # the fact in NEW (in OLD for a removed contract)
    checks: str = "equivalent"  # the check-level verdict: equivalent, tightened or loosened
    changed: tuple[str, ...] = ()  # "added: check_metadata: ctx.value('llama.block_count')", ...
    rejects: tuple[Rejection, ...] = ()
    note: str = ""
    allowed: str | None = None  # the allowlist entry's reason, when one allows it

    @property
    def code(self) -> Rule:  # charter.console.Output prints a finding as it prints a Diagnostic
        return self.rule

    @property
    def fails(self) -> bool:
        return self.rule.category.fails and self.allowed is None

    def message(self) -> str:
        change = f"{self.old if self.old is not None else '<absent>'} -> " \
                 f"{self.new if self.new is not None else '<absent>'}"
        parts = [f"{self.rule.category.value}: {change}"]
        if self.rejects:
            parts.append("rejects " + ", ".join(f"{r.artifact} ({r.contract}: {r.diagnostic.code.value} "
                                                f"{r.diagnostic.field})" for r in self.rejects))
        if self.changed:
            parts.append(f"{len(self.changed)} check(s) changed: {self.changed[0]}"
                         + (f" and {len(self.changed) - 1} more" if len(self.changed) > 1 else ""))
        if self.note:
            parts.append(self.note)
        if self.allowed is not None:
            parts.append(f"allowed: {self.allowed}")
        return "; ".join(parts)

    def render(self, where: str | None = None) -> str:
        from charter.diagnostics import printable

        if where is None:
            where = str(self.location) if self.location else ""
        head = f"{printable(where)}: " if where else ""
        return f"{head}{self.rule.value} {printable(self.contract)}:{printable(self.field)}: " \
               f"{printable(self.message())}"


@dataclass
class ArtifactVerdict:
    """A pinned artifact admitted by OLD's and NEW's whole checkers (the diff's summary)."""

    contract: str
    artifact: str | None  # None: none pinned (`reason` says why)
    old: bool | None = None
    new: bool | None = None
    diagnostic: Diagnostic | None = None
    reason: str = ""


@dataclass
class DiffResult:
    findings: list[Finding]
    artifacts: list[ArtifactVerdict]


def diff_sides(old: Side, new: Side, pinned: Pinned | None = None, only: set[str] | None = None) -> DiffResult:
    """Every finding between `old` and `new`, in a stable order (contract id, then NEW's leaf
    order); `only`: the contract ids to diff (the others are there to resolve references)."""
    pinned = pinned or Pinned()
    pairs, findings = _pair(old, new, only)
    touched: dict[str, int] = {}  # artifact contract id -> how many changed leaves may move its checks
    changed = []
    for old_id, new_id in pairs:
        o, n = old.contracts[old_id], new.contracts[new_id]
        if same(o.doc.data, n.doc.data):
            continue
        leaves = changed_leaves(o.doc.data, n.doc.data)
        changed.append((o, n, leaves))
        for a in _artifacts_of(new, n):
            touched[a] = touched.get(a, 0) + len(leaves)
    for o, n, leaves in changed:
        for leaf in leaves:
            findings.append(_leaf(old, new, o, n, leaf, pinned, touched))
    findings.sort(key=lambda f: (f.contract, f.kind))  # stable: leaves keep NEW's order within one
    verdicts = [_whole(old, new, aid, pinned, dict((n, o) for o, n in pairs)) for aid in sorted(touched)]
    return DiffResult(findings, [v for v in verdicts if v is not None])


def _artifacts_of(side: Side, lc: LoadedContract) -> list[str]:
    """The artifact contracts whose checks a change of `lc` may move: itself, or a model's artifacts."""
    if isinstance(lc.contract, ArtifactContract):
        return [lc.id]
    if isinstance(lc.contract, ModelContract):
        return [a for a, other in side.contracts.items()
                if isinstance(other.contract, ArtifactContract) and other.contract.model == lc.id]
    return []


def _pair(old: Side, new: Side, only: set[str] | None) -> tuple[list[tuple[str, str]], list[Finding]]:
    """Contracts of one id are one contract; a file that states another id is that contract
    renamed (IDENTITY_*_ID); the rest were added or removed."""
    findings: list[Finding] = []
    pairs = [(i, i) for i in sorted(old.contracts.keys() & new.contracts.keys())]
    by_file = {f: i for i, f in new.files.items() if i not in old.contracts}
    for i in sorted(old.contracts.keys() - new.contracts.keys()):
        renamed = by_file.pop(old.files.get(i, ""), None) if old.files.get(i) else None
        o = old.contracts[i]
        if renamed is not None and new.contracts[renamed].kind == o.kind:
            if only is None or renamed in only or i in only:
                pairs.append((i, renamed))
            continue
        if only is None or i in only:
            findings.append(Finding(Rule.LOOSEN_CONTRACT_REMOVED, i, o.kind, "id", repr(i), None, None,
                                    checks="loosened", note=f"OLD's {old.files.get(i, o.doc.file)}"))
    for i in sorted(by_file.values()):
        n = new.contracts[i]
        if only is None or i in only:
            findings.append(Finding(Rule.TIGHTEN_CONTRACT_ADDED, i, n.kind, "id", None, repr(i), n.doc.where(("id",)),
                                    checks="tightened"))
    if only is not None:
        pairs = [(o, n) for o, n in pairs if o in only or n in only]
    return pairs, findings


def _shown(value) -> str | None:
    if value is MISSING:
        return None
    text = repr(value) if not isinstance(value, (dict, list)) else f"<{type(value).__name__} of {len(value)}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _leaf(old: Side, new: Side, o: LoadedContract, n: LoadedContract, leaf: Leaf, pinned: Pinned,
          touched: dict[str, int]) -> Finding:
    base = dict(contract=n.id, kind=n.kind, field=field_name(leaf.path), old=_shown(leaf.old), new=_shown(leaf.new),
                location=n.doc.where(leaf.at))
    if leaf.new_path is not None:  # a renamed key: the key names are the change
        base.update(field=field_name(leaf.new_path), old=repr(leaf.old), new=repr(leaf.new))
    identity = identity_rule(o.kind, leaf.path)
    if isinstance(o.contract, ArtifactContract):
        targets = [(o.id, n.id)]
    elif isinstance(o.contract, ModelContract):
        targets = sorted((a, a) for a, lc in old.contracts.items()
                         if isinstance(lc.contract, ArtifactContract) and lc.contract.model == o.id and a in new.contracts)
    else:
        rule = Rule.EQUIVALENT_DOCUMENTATION if leaf.path == ("description",) else Rule.LOOSEN_UNCLASSIFIED_KIND
        return Finding(identity or rule, **base, checks="equivalent" if rule.category is Category.EQUIVALENT
                       else "loosened")
    judged = [_judge(old, new, leaf, o, a_old, a_new, pinned, touched.get(a_new, 0) == 1) for a_old, a_new in targets]
    return _decide(identity, base, judged,
                   "" if targets else "no artifact contract of this model: no generated check depends on it")


@dataclass(frozen=True)
class _Judged:
    """One leaf on one artifact contract."""

    moved: tuple[tuple[Move, str], ...]
    rejection: Rejection | None
    pinned: bool
    note: str = ""


def _judge(old: Side, new: Side, leaf: Leaf, o: LoadedContract, a_old: str, a_new: str, pinned: Pinned,
           lone: bool) -> _Judged:
    """The checks one leaf moves on one artifact contract, and whether its pinned artifact is now
    rejected (Note [Diff by checks]). `lone`: no other leaf touches this artifact contract, so
    NEW's plan of it is the leaf applied alone (not resolved again)."""
    before_plan = old.artifacts[a_old]
    note = ""
    try:
        plan = new.artifacts[a_new] if lone and a_old == a_new else _alone(old, o, leaf, a_old, pinned)
    except CharterError as exc:
        d = exc.diagnostics[0] if exc.diagnostics else None
        plan = new.artifacts[a_new]
        note = f"alone it does not resolve ({d.code.value if d else '?'}); judged with all of NEW's changes"
    before = pinned.checks_of(before_plan)
    added, removed = added_and_removed(before, pinned.checks_of(plan))
    moved = moves(added, removed)
    pinned.leaves.setdefault(a_new, []).append(None if note else plan if moved.items else before_plan)
    described = tuple((m, f"{m.value}: {describe(c)}") for m, c in moved.items)
    if not moved.items:
        return _Judged((), None, False, note)
    lc = new.contracts[a_new]
    path, why = pinned.find(lc)
    if path is None:
        return _Judged(described, None, False, "; ".join(filter(None, [note, why + ": judged by the checks alone"])))
    from charter.contract import checks

    payload = any(isinstance(c, checks.Payload) for _, c in moved.items)
    try:
        was = pinned.admit(before_plan, path, before_plan.status, payload, baseline=True)
        now = pinned.admit(plan, path, before_plan.status, payload)
    except CharterError as exc:
        return _Judged(described, None, False, "; ".join(filter(None, [
            note, f"the pinned artifact {path} cannot be read ({exc.diagnostics[0].code.value}): judged by the "
                  "checks alone"])))
    rejection = None
    if was.admitted and not now.admitted:
        d = now.diagnostic
        from charter.console import as_diagnostic

        rejection = Rejection(lc.id, _file(path), as_diagnostic(d))
    elif not was.admitted:
        note = "; ".join(filter(None, [note, f"OLD already rejects {_file(path)}"]))
    return _Judged(described, rejection, True, note)


def _file(path: Path) -> str:
    from charter.contract.paths import shown

    return shown(path)


def _alone(old: Side, o: LoadedContract, leaf: Leaf, artifact_id: str, pinned: Pinned) -> ArtifactPlan:
    """The plan of `artifact_id` with this one leaf of contract `o` changed (raises CharterError)."""
    changed = _reloaded(o, applied(o.doc.data, leaf))
    if isinstance(o.contract, ModelContract):
        art = old.contracts[artifact_id]
        if art.contract.model != changed.id:
            raise CharterError([Diagnostic(Code.REF_DANGLING, "model", f"no model {art.contract.model!r}")])
        return resolve_artifact(art, resolve_model(changed), memo=pinned.memo(art.id))
    model = old.contracts.get(changed.contract.model)
    if model is None or not isinstance(model.contract, ModelContract):
        raise CharterError([Diagnostic(Code.REF_DANGLING, "model", f"no model {changed.contract.model!r}")])
    return resolve_artifact(changed, old.models[model.id], memo=pinned.memo(changed.id))


def _reloaded(original: LoadedContract, data) -> LoadedContract:
    doc = Document(data, original.doc.locations, original.doc.source, original.doc.file)
    return LoadedContract(contract_from_document(doc), doc, original.path)


def _decide(identity: Rule | None, base: dict, judged: list[_Judged], empty_note: str) -> Finding:
    """The rule of a leaf from what it did on each artifact contract (Note [Diff by checks])."""
    moved = [m for j in judged for m, _ in j.moved]
    changed = tuple(dict.fromkeys(text for j in judged for _, text in j.moved))
    rejects = tuple(j.rejection for j in judged if j.rejection is not None)
    note = "; ".join(dict.fromkeys(j.note for j in judged if j.note)) or ("" if moved else empty_note)
    if not moved:
        rule, checks = Rule.EQUIVALENT_NO_CHECK_CHANGED, "equivalent"
    elif Move.REMOVED in moved and not any(m in moved for m in (Move.ADDED, Move.CHANGED, Move.NARROWED)):
        rule, checks = Rule.LOOSEN_CHECK_REMOVED, "loosened"
    elif Move.WIDENED in moved:
        rule, checks = Rule.LOOSEN_CHECK_WIDENED, "loosened"
    elif rejects:
        rule, checks = Rule.TIGHTEN_REJECTS_PINNED, "tightened"
    elif Move.CHANGED in moved or Move.REMOVED in moved:
        rule, checks = Rule.LOOSEN_CHECK_CHANGED, "loosened"
    elif Move.NARROWED in moved:
        rule, checks = Rule.TIGHTEN_CHECK_NARROWED, "tightened"
    else:
        rule, checks = Rule.TIGHTEN_CHECK_ADDED, "tightened"
    return Finding(identity or rule, **base, checks=checks, changed=changed, rejects=rejects, note=note)


def _whole(old: Side, new: Side, artifact_id: str, pinned: Pinned, old_of: dict[str, str]) -> ArtifactVerdict | None:
    """A pinned artifact of a changed contract (or model), admitted by OLD's and NEW's checkers."""
    old_id = old_of.get(artifact_id, artifact_id if artifact_id in old.artifacts else None)  # unchanged: its model did
    if old_id is None or artifact_id not in new.artifacts or old_id not in old.artifacts:
        return None
    lc = new.contracts[artifact_id]
    path, why = pinned.find(lc)
    if path is None:
        return ArtifactVerdict(artifact_id, None, reason=why)
    before, after = old.artifacts[old_id], new.artifacts[artifact_id]
    alone = pinned.leaves.get(artifact_id, [])
    if len(alone) == 1 and alone[0] is not None:  # one leaf changed it: that leaf's plan checks what NEW's does
        after = alone[0]
    try:
        was = pinned.admit(before, path, before.status, False, baseline=True)
        now = pinned.admit(after, path, before.status, False)
    except CharterError as exc:
        return ArtifactVerdict(artifact_id, None, reason=f"cannot read {path}: {exc.diagnostics[0].message}")
    from charter.console import as_diagnostic

    return ArtifactVerdict(artifact_id, _file(path), was.admitted, now.admitted,
                           None if now.diagnostic is None else as_diagnostic(now.diagnostic))
