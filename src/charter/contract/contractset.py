"""A directory of contracts, loaded together: ids unique, references resolved, plans built.

Loading never stops at the first bad file: every file is checked and every diagnostic kept, so
`charter check specs/` reports all problems of a tree in one run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from charter.codegen.common.names import identifier
from charter.diagnostics import CharterError, Code, Diagnostic
from charter.contract.load import LoadedContract, contract_from_document
from charter.contract.yamlload import load_file
from charter.contract.paths import display_path
from charter.contract.models import ArtifactContract, KernelContract, ModelContract, ProvenanceContract
from charter.contract.plan import ArtifactPlan, ModelPlan
from charter.contract.resolve import check_kernel, resolve_artifact, resolve_model
from charter.bundles.contract import BundleContract
from charter.regions.contract import RegionsContract
from charter.bundles.plan import BundlePlan
from charter.bundles.resolve import resolve_bundle
from charter.text.contract import TextContract, text_references
from charter.language import STATUSES

SPEC_SUFFIXES = (".yaml", ".yml")


@dataclass
class ContractSet:
    contracts: dict[str, LoadedContract] = field(default_factory=dict)
    primary: set[str] = field(default_factory=set)  # ids loaded from the given paths (not the search path)
    side_failures: list[Diagnostic] = field(default_factory=list)  # search-path files that failed to load
    # The ids of files that are YAML but not valid contracts, with their diagnostics: a reference to
    # one is that file's problem, reported once, never REF_DANGLING (Note [Root causes]).
    unloaded: dict[str, list[Diagnostic]] = field(default_factory=dict)
    models: dict[str, ModelPlan] = field(default_factory=dict)
    artifacts: dict[str, ArtifactPlan] = field(default_factory=dict)
    bundles: dict[str, "BundlePlan"] = field(default_factory=dict)
    regions: dict[str, object] = field(default_factory=dict)  # charter.regions.plan.RegionsPlan by id
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.diagnostics

    def of_kind(self, kind: str) -> list[LoadedContract]:
        """Contracts of one kind among those loaded from the given paths."""
        return [c for c in self.contracts.values() if c.kind == kind and c.id in self.primary]

    def raise_if_failed(self) -> None:
        if self.diagnostics:
            raise CharterError(self.diagnostics)


def discover(paths: list[str | Path]) -> list[Path]:
    """Spec files under the given files and directories, in a stable order."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(sorted(q for q in p.rglob("*") if q.suffix in SPEC_SUFFIXES and q.is_file()))
        else:
            found.append(p)
    unique: dict[Path, None] = {}
    for p in found:
        unique.setdefault(p.resolve(), None)
    return sorted(unique, key=lambda q: display_path(q))


def load_set(paths: list[str | Path], extra_search: list[str | Path] = (), *, whole_search: bool = False) -> ContractSet:
    """Load, index and resolve. `extra_search` supplies referenced contracts (e.g. the model of
    an artifact checked on its own) without reporting their problems as the set's own; only the
    ones referenced are parsed, when that is certain to be the same (Note [Referenced search]),
    unless `whole_search` (a caller that looks for what refers to the given contracts)."""
    cs = ContractSet()
    files = discover(paths)
    if not files:
        cs.diagnostics.append(Diagnostic(Code.FILE_UNREADABLE, "", "no contract files found",
                                         location=None if not paths else _loc_of(paths[0])))
    for f in files:
        _add(cs, f)
    primary = set(cs.contracts)
    cs.primary = primary
    _check_identifiers(cs)
    if extra_search:
        listed = set(files)
        candidates = [f for f in discover(list(extra_search)) if f not in listed]
        side = _referenced(cs, candidates) if not whole_search and _references_say_it_all(cs) else None
        if side is None:
            side = ContractSet()
            for f in candidates:
                _add(side, f)
        for cid, lc in side.contracts.items():
            cs.contracts.setdefault(cid, lc)
        for cid, diagnostics in side.unloaded.items():
            cs.unloaded.setdefault(cid, diagnostics)
        cs.side_failures = side.diagnostics
    _check_references(cs, primary)
    _resolve(cs, primary)
    return cs


# Note [Referenced search]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# A search path is a tree of contracts, of which one admission needs two or three (an artifact's
# model; a bundle's artifact and model): parsing all of specs/ was most of a first `charter admit`
# (0.33 s of 0.38 s for the MiniLM bundle) and of every battery process's start. So when the given
# contracts are models, artifacts and bundles, whose `references` name everything they resolve
# against, the search path is read by id: each file's first top-level `id:` line is found in its
# raw text (no YAML), the files declaring a referenced id are parsed, then those their contracts
# reference, until nothing referenced is missing. A file is only ever used once parsed, so a
# guessed id that is wrong costs a parse, never a wrong contract. When a referenced id is still
# missing (no file declares it, its declaration is not a plain `id:` line, or the file does not
# load), the whole search path is parsed, as it always was, so every diagnostic of a dangling
# reference (Note [Root causes], the search path's failures) is what it was. Regions, text,
# provenance and kernel contracts resolve against contracts they do not reference (kernels, a
# provenance of a step): for them the whole search path is parsed.

_DECLARED_ID = re.compile(rb"""^id:[ \t]*(['"]?)([A-Za-z0-9._-]+)\1[ \t]*(?:#[^\n]*)?\r?$""", re.M)


def _references_say_it_all(cs: ContractSet) -> bool:
    return all(isinstance(cs.contracts[cid].contract, (ModelContract, ArtifactContract, BundleContract))
               for cid in cs.primary)


def _declared_id(path: Path) -> str | None:
    """The id the file's first top-level `id:` line declares, read without YAML (a guess: the
    parse decides)."""
    try:
        found = _DECLARED_ID.search(path.read_bytes())
    except OSError:
        return None
    return found[2].decode("ascii") if found else None


def _referenced(cs: ContractSet, candidates: list[Path]) -> ContractSet | None:
    """The search path's contracts that `cs` references, directly or through each other, parsed
    alone; None when one of them cannot be found that way (Note [Referenced search])."""
    side = ContractSet()
    pending = {f: _declared_id(f) for f in candidates}
    while True:
        known = cs.contracts.keys() | side.contracts.keys()
        wanted = {target for lc in [*cs.contracts.values(), *side.contracts.values()]
                  for _, target, _ in references(lc)} - known
        if not wanted:
            return side
        picks = [f for f, declared in pending.items() if declared in wanted]
        if not picks:
            return None
        for f in picks:
            del pending[f]
            _add(side, f)
        if side.diagnostics:  # a referenced file that does not load: the whole path's diagnostics
            return None


def _loc_of(p):
    from charter.diagnostics import Location

    return Location(str(p))


def _add(cs: ContractSet, path: Path) -> None:
    try:
        doc = load_file(path, display_path(path))
    except CharterError as exc:
        cs.diagnostics.extend(exc.diagnostics)
        return
    try:
        lc = LoadedContract(contract_from_document(doc), doc, path)
    except CharterError as exc:
        cs.diagnostics.extend(exc.diagnostics)
        cid = doc.data.get("id") if isinstance(doc.data, dict) else None
        if isinstance(cid, str):
            cs.unloaded.setdefault(cid, exc.diagnostics)  # Note [Root causes]
        return
    previous = cs.contracts.get(lc.id)
    if previous is not None:
        cs.diagnostics.append(Diagnostic(
            Code.ID_DUPLICATE, "id", f"id {lc.id!r} is already used by {previous.doc.where(('id',))}",
            location=lc.doc.where(("id",))))
        return
    cs.contracts[lc.id] = lc


def _check_identifiers(cs: ContractSet) -> None:
    """Two ids of one set must not name the same generated module or namespace (`c18-x` and
    `c18_x` are both `c18_x`): one would silently replace the other (Note [Generated identifiers]
    in charter.codegen.common.names)."""
    seen: dict[str, LoadedContract] = {}
    for lc in sorted(cs.contracts.values(), key=lambda x: x.doc.file):
        name = identifier(lc.id)
        first = seen.setdefault(name, lc)
        if first is not lc:
            cs.diagnostics.append(Diagnostic(
                Code.ID_COLLISION, "id",
                f"id {lc.id!r} names the same generated code as id {first.id!r} of {first.doc.where(('id',))}: "
                f"both become the identifier {name} (a Python module, C++ namespaces); rename one",
                location=lc.doc.where(("id",))))


def references(lc: LoadedContract) -> list[tuple[tuple, str, str]]:
    """(path, id, kind) of every contract that `lc` names, in the order they are checked."""
    c = lc.contract
    if isinstance(c, ArtifactContract):
        return [(("model",), c.model, "model")]
    if isinstance(c, (BundleContract, RegionsContract)):
        return [(("model",), c.model, "model"), (("artifact",), c.artifact, "artifact")]
    if isinstance(c, KernelContract):
        return [(("models", i), m, "model") for i, m in enumerate(c.models)]
    if isinstance(c, ProvenanceContract):
        return ([(("model",), c.model, "model")] if c.model else []) + \
               ([(("artifact",), c.artifact, "artifact")] if c.artifact else [])
    if isinstance(c, TextContract):
        return text_references(c)
    return []


# Note [Root causes]: a contract that does not validate (an unknown key, a value of the wrong type)
# still names its id, and the contracts that refer to it would each report REF_DANGLING: one typo
# in a model, a dangling reference in every artifact of it. The set keeps the ids of the files
# that failed to validate, and a reference to one reports that file's own diagnostics, once
# (already there when the file is one of the given paths; added when it is on the search path),
# instead. The set stays failed: nothing that refers to it is resolved or admitted.


def _check_references(cs: ContractSet, primary: set[str]) -> None:
    for cid in sorted(primary):
        lc = cs.contracts[cid]
        c = lc.contract
        refs = references(lc)
        if isinstance(c, ProvenanceContract) and lc.path is not None and not (lc.path.parent / c.fixture).is_file():
            cs.diagnostics.append(Diagnostic(
                Code.REF_DANGLING, "fixture", f"fixture file {c.fixture!r} does not exist next to the spec",
                location=lc.doc.where(("fixture",))))
        for path, target, kind in refs:
            found = cs.contracts.get(target)
            if found is None and target in cs.unloaded:  # Note [Root causes]
                cs.diagnostics.extend(d for d in cs.unloaded[target] if d not in cs.diagnostics)
                continue
            if found is None or found.kind != kind:
                what = "no contract" if found is None else f"a {found.kind} contract"
                note = ""
                if found is None and cs.side_failures:
                    note = f" ({len({d.location.file for d in cs.side_failures if d.location})} contract file(s) " \
                           "on the search path failed to load, below)"
                cs.diagnostics.append(Diagnostic(
                    Code.REF_DANGLING, ".".join(map(str, path)),
                    f"refers to {kind} {target!r}, but {what} has that id{note}", location=lc.doc.where(path)))
                if found is None:
                    cs.diagnostics.extend(d for d in cs.side_failures if d not in cs.diagnostics)


def _resolve(cs: ContractSet, primary: set[str]) -> None:
    failed: dict[str, list[Diagnostic]] = {}
    for lc in sorted(cs.contracts.values(), key=lambda x: x.id):
        if isinstance(lc.contract, ModelContract):
            try:
                cs.models[lc.id] = resolve_model(lc)
            except CharterError as exc:
                failed[lc.id] = exc.diagnostics
                if lc.id in primary:
                    cs.diagnostics.extend(exc.diagnostics)
    # A model found on the search path that does not resolve is the primary contract's problem too:
    # its diagnostics are reported, never dropped (the artifact cannot be checked without it).
    bundled = {cs.contracts[cid].contract.artifact for cid in primary
               if isinstance(cs.contracts[cid].contract, BundleContract)}
    artifacts = [cid for cid in sorted(primary | bundled) if cid in cs.contracts]
    referenced = {cs.contracts[cid].contract.model for cid in artifacts
                  if isinstance(cs.contracts[cid].contract, ArtifactContract)}
    for model_id in sorted(referenced - primary):
        cs.diagnostics.extend(failed.get(model_id, []))
    for cid in artifacts:
        lc = cs.contracts[cid]
        try:
            if isinstance(lc.contract, ArtifactContract) and lc.contract.model in cs.models:
                cs.artifacts[cid] = resolve_artifact(lc, cs.models[lc.contract.model])
            elif isinstance(lc.contract, KernelContract):
                check_kernel(lc, cs.models)
        except CharterError as exc:
            cs.diagnostics.extend(exc.diagnostics)
    for cid in sorted(primary):
        lc = cs.contracts[cid]
        if isinstance(lc.contract, BundleContract) and lc.contract.artifact in cs.artifacts:
            plan = cs.artifacts[lc.contract.artifact]
            if plan.model != lc.contract.model:
                cs.diagnostics.append(Diagnostic(
                    Code.SPEC_INVALID, "model", f"bundle model {lc.contract.model!r} is not the model of artifact "
                    f"{plan.id!r} ({plan.model!r})", location=lc.doc.where(("model",))))
                continue
            if STATUSES.index(lc.contract.status.value) > STATUSES.index(plan.status):
                cs.diagnostics.append(Diagnostic(
                    Code.SPEC_INVALID, "status", f"status {lc.contract.status.value} claims more than its artifact "
                    f"contract {plan.id} ({plan.status})", location=lc.doc.where(("status",))))
                continue
            try:
                cs.bundles[cid] = resolve_bundle(lc, plan, cs.models[plan.model])
            except CharterError as exc:
                cs.diagnostics.extend(exc.diagnostics)
    _resolve_regions(cs, primary)


def _resolve_regions(cs: ContractSet, primary: set[str]) -> None:
    """Regions contracts over their model, artifact and kernel contracts (charter.regions.plan)."""
    from charter.regions.plan import kernel_and_provenance, resolve_regions

    kernels, provenance = kernel_and_provenance(cs.contracts)
    for cid in sorted(primary):
        lc = cs.contracts[cid]
        if not isinstance(lc.contract, RegionsContract) or lc.contract.model not in cs.models:
            continue
        artifact = cs.artifacts.get(lc.contract.artifact)
        if artifact is None:
            found = cs.contracts.get(lc.contract.artifact)
            if found is None or not isinstance(found.contract, ArtifactContract) or found.contract.model not in cs.models:
                continue
            try:
                artifact = resolve_artifact(found, cs.models[found.contract.model])
            except CharterError as exc:
                cs.diagnostics.extend(d for d in exc.diagnostics if d not in cs.diagnostics)
                continue
        try:
            cs.regions[cid] = resolve_regions(lc, cs.models[lc.contract.model], artifact, kernels, provenance,
                                              cs.contracts.get(lc.contract.artifact))
        except CharterError as exc:
            cs.diagnostics.extend(exc.diagnostics)
