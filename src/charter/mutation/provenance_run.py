"""Run the provenance battery: every mutant of one provenance contract and its fixture through
`charter fixtures verify` (charter.provenance.verify), judged by Note [Mutation verdicts].

Contract mutants are loaded as charter.contract.load loads a contract (a refusal by the contract
language is a rejection at stage "spec", judged on its code and field like any other), their
references are checked as charter.contract.contractset checks them (REF_DANGLING), and then the
shipped fixture is verified against the mutated labels. Fixture mutants are written into a
temporary directory and verified against the unchanged labels; the shipped files are only read.

verify reports every finding, not just the first, so the verdict is stricter than admission's:
a mutant is killed when verify's first diagnostic has the expected stage, code and field AND
nothing else is reported except the mutant's declared `also` (provenance_ops.ProvenanceMutant).
Any other diagnostic is a cascade and the verdict a regression, with every diagnostic in the detail.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from charter.diagnostics import CharterError, Diagnostic
from charter.mutation import provenance_ops
from charter.mutation.mutant import Mutant, Outcome, Verdict, judge
from charter.provenance import verify as verify_mod
from charter.provenance.npz import read_npz
from charter.contract.contractset import ContractSet, _check_references
from charter.contract.load import LoadedContract, contract_from_document
from charter.contract.yamlload import Document


@dataclass
class ProvenanceBattery:
    """One provenance contract, the set it was loaded with, and its fixture (read once)."""

    cs: ContractSet
    loaded: LoadedContract
    fixture: Path
    arrays: dict[str, np.ndarray]
    raw: bytes


def load_battery(cs: ContractSet, contract_id: str) -> ProvenanceBattery:
    loaded = cs.contracts[contract_id]
    path = verify_mod.fixture_path(loaded)
    return ProvenanceBattery(cs, loaded, path, read_npz(path), path.read_bytes())


def all_mutants(b: ProvenanceBattery, only: str | None = None) -> list[Mutant]:
    return provenance_ops.mutants(b.loaded.doc.data, b.loaded.contract.fixture, b.arrays, b.raw, only)


def battery_of(cs: ContractSet, contract_id: str, only: str | None = None) -> tuple[ProvenanceBattery, list[Mutant]]:
    b = load_battery(cs, contract_id)
    return b, all_mutants(b, only)


# --- one mutant ----------------------------------------------------------------------------------


def run_mutant(b: ProvenanceBattery, m: Mutant) -> Outcome:
    if m.make is None:
        return Outcome(m, Verdict.EQUIVALENT, detail=m.equivalent or "")
    try:
        made = m.make()
        diagnostics = contract_diagnostics(b, made) if m.side == "contract" else fixture_diagnostics(b, made)
    except Exception as exc:  # noqa: BLE001 - a crash is a finding, not a verdict to hide
        return Outcome(m, Verdict.ERROR, detail=f"{type(exc).__name__}: {exc}")
    return verdict(m, diagnostics)


def contract_diagnostics(b: ProvenanceBattery, data: dict) -> list[Diagnostic]:
    """What loading the mutated contract, then verifying the shipped fixture against it, reports."""
    original = b.loaded
    doc = Document(data, original.doc.locations, original.doc.source, original.doc.file)
    try:
        contract = contract_from_document(doc)
    except CharterError as exc:
        return exc.diagnostics
    loaded = LoadedContract(contract, doc, original.path)
    contracts = {cid: lc for cid, lc in b.cs.contracts.items() if cid != original.id}
    contracts[loaded.id] = loaded
    cs = dataclasses.replace(b.cs, contracts=contracts, primary={loaded.id}, diagnostics=[])
    _check_references(cs, {loaded.id})  # the provenance rules of charter.contract.contractset.load_set
    if cs.diagnostics:
        return cs.diagnostics
    return verify_mod.verify(loaded, cs).diagnostics


def fixture_diagnostics(b: ProvenanceBattery, data: bytes) -> list[Diagnostic]:
    """What verifying a mutated fixture file (in a temporary directory) against the labels reports."""
    original = b.loaded
    with tempfile.TemporaryDirectory(prefix="charter-provenance-battery-") as tmp:
        spec = Path(tmp) / (original.path.name if original.path is not None else "spec.yaml")
        target = (Path(tmp) / original.contract.fixture).resolve()
        if Path(tmp).resolve() not in target.parents:
            raise ValueError(f"fixture {original.contract.fixture!r} is outside the spec's directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return verify_mod.verify(LoadedContract(original.contract, original.doc, spec), b.cs).diagnostics


def verdict(m: Mutant, diagnostics: list[Diagnostic]) -> Outcome:
    """Note [Mutation verdicts] on verify's first diagnostic; any further one not in `also` is a cascade."""
    if not diagnostics:
        return judge(m, True, None, None, None)
    first = diagnostics[0]
    detail = " | ".join(d.render() for d in diagnostics)
    outcome = judge(m, False, first.stage.value, first.code.value, first.field, detail)
    outcome = dataclasses.replace(outcome, enforced_by=_enforced_by(first))
    if outcome.verdict is Verdict.KILLED:
        also = tuple(getattr(m, "also", ()))
        rest = tuple((d.code, d.field) for d in diagnostics[1:])
        if rest != also:
            expected = ", ".join(f"{c.value} {f}" for c, f in also) or "nothing"
            got = ", ".join(f"{c.value} {f}" for c, f in rest)
            return dataclasses.replace(outcome, verdict=Verdict.REGRESSION,
                                       detail=f"expected {expected} after the first diagnostic, got {got}: {detail}")
    return outcome


def _enforced_by(d: Diagnostic) -> str:
    code = d.code.value
    return f"charter fixtures verify ({code})" if code.startswith("FIXTURE_") else f"contract loading ({code})"


# --- many ----------------------------------------------------------------------------------------


def _bare(o: Outcome) -> Outcome:
    """The outcome without the mutant's closure (for JSON and for comparing outcomes)."""
    m = o.mutant
    also = getattr(m, "also", ())
    return dataclasses.replace(o, mutant=provenance_ops.ProvenanceMutant(m.side, m.target, m.operator, m.expect,
                                                                         None, m.equivalent, also=also))


def run(b: ProvenanceBattery, mutants: list[Mutant],
        progress: Callable[[int, int, Outcome], None] | None = None) -> list[Outcome]:
    """Outcomes in mutant order (serial: a verify takes milliseconds)."""
    outcomes = []
    for i, m in enumerate(mutants, 1):
        outcomes.append(_bare(run_mutant(b, m)))
        if progress:
            progress(i, len(mutants), outcomes[-1])
    return outcomes


def run_command(args, cs: ContractSet, contract_id: str) -> int:
    """`charter mutate --contract <provenance spec>`: the same output as the artifact battery."""
    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, print_or_write
    from charter.mutation import report, standard
    from charter.mutation.run import stderr_progress

    if getattr(args, "artifact", None) or getattr(args, "engine", "python") != "python":
        print("charter: a provenance battery mutates the contract's own fixture with the Python verifier; "
              "--artifact and --engine do not apply", file=sys.stderr)
        return EXIT_USAGE
    start = time.monotonic()
    b, mutants = battery_of(cs, contract_id, getattr(args, "only", None))
    if not args.quiet:
        print(f"battery {contract_id}: {len(mutants)} mutants of {b.fixture} and its labels (provenance)",
              file=sys.stderr)
    outcomes = run(b, mutants, progress=None if args.quiet else stderr_progress(start))
    elapsed = time.monotonic() - start
    outcomes = standard.locate(outcomes, b.loaded.doc, None)
    meta = {"contract": contract_id, "spec": b.loaded.doc.file, "artifact": str(b.fixture), "kind": "provenance",
            "sources": standard.sources(b.loaded.doc)}
    summary = report.summary(outcomes)
    if args.report:
        print_or_write(args.report, report.to_json(outcomes, meta))
    if args.html:
        print_or_write(args.html, report.render_html(outcomes, meta))
    ok = summary["passed"]
    if getattr(args, "trace", False):
        lines, traced = report.trace(outcomes)
        print("\n".join(lines))
        ok = ok and traced
    for line in report.failures(outcomes):
        print(line)
    print(report.table(outcomes))
    print(f"{report.summary_line(summary)} in {elapsed:.1f}s ({len(mutants) / max(elapsed, 1e-9):.0f} mutants/s)")
    return EXIT_OK if ok else EXIT_REJECTED
