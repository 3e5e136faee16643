"""`charter admit [ARTIFACT] --contract REGIONS`: the artifact admitted by the regions contract's
artifact contract (every stage, as `charter admit` runs it), then the region ownership of the
file's own tensor table (Note [Ownership at admission]).

Note [Ownership at admission]: `charter check` verifies ownership against the artifact contract's
inventory; a file the artifact contract admits has exactly that inventory (TENSOR_MISSING,
TENSOR_UNEXPECTED), so the check below cannot find what admission let through. It is run anyway,
over the tensor table the strict reader read from the file, because the claim "this file's tensors
are owned" is about the file, and the cost is a set comparison. In this order (`file_regions`):

  REGION_OWNERSHIP  a name the file holds twice (one region instance owns one tensor per name);
  REGION_UNOWNED    a tensor of the file no region instance, store record or exclusion owns, in file
                    order; then a tensor a region owns that the file lacks, by name;
  REGION_SIGNATURE  a tensor whose stored shape is not the one the graph's nodes were verified with;
  REGION_PRECISION  a tensor whose codec is not the one its precision step was verified for.

The artifact side of the region battery (charter.regions.artifact_battery) changes the file so
that one of these facts must fail, and checks both layers: the admit path rejects the file at the
artifact stage that owns the fact, and this check, run on the same table, says which region fact
it breaks.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from charter.admission.report import _SCHEMA_CONFIG, AdmissionReport


@dataclass(frozen=True)
class RegionsAdmission:
    """`charter admit --contract REGIONS --format json`: the admission, then the ownership check."""

    __pydantic_config__ = _SCHEMA_CONFIG
    admission: AdmissionReport
    """the admission by the regions contract's artifact contract"""
    regions: str
    """the regions contract's id"""
    status: str
    """the regions contract's status (a claim boundary, docs/contracts.md#status)"""
    owned: bool | None
    """every tensor owned once; null when the admission rejected the file first"""


def run_admit_regions(args) -> int:
    from charter.admission.locate import locate
    from charter.admission.view import read_view
    from charter.admission.commands import show_report
    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, current, not_a_file, print_diagnostics, search_paths
    from charter.contract.contractset import load_set
    from charter.contract.paths import PinnedSource
    from charter.diagnostics import CharterError
    from charter.engines import Options, python
    from charter.engines.choose import python_checker

    if args.engine != "python":
        print("charter: a regions contract is admitted with the Python engine (--engine python)", file=sys.stderr)
        return EXIT_USAGE
    search = search_paths([args.contract], args.search)
    cs = load_set([args.contract], search)
    if cs.diagnostics:
        print_diagnostics(cs.diagnostics)
        return EXIT_USAGE
    (plan,) = [cs.regions[i] for i in cs.regions]
    artifact_lc = cs.contracts[plan.artifact]
    if plan.artifact not in cs.artifacts:
        cs = load_set([artifact_lc.path], search)
        cs.raise_if_failed()
    if args.artifact:
        path = Path(args.artifact)
        if not path.is_file():
            print(f"charter: {path}: {not_a_file(path)}", file=sys.stderr)
            return EXIT_USAGE
    else:
        s = artifact_lc.contract.source
        if s is None:
            print("charter: name the artifact file (the artifact contract pins no source)", file=sys.stderr)
            return EXIT_USAGE
        try:
            path = locate(PinnedSource(s.package, s.path, s.sha256, s.size), artifact_lc.path.parent,
                          digest=args.verify_payload)
        except CharterError as exc:
            print_diagnostics(exc.diagnostics)
            return EXIT_USAGE
    checker = python_checker(cs, plan.artifact, Path(args.generated))
    if args.verbose:
        print(f"checker: {checker.origin}", file=sys.stderr)
    report = python.admit(path, checker.module, Options(require_status=args.require_status,
                                                        verify_payload=args.verify_payload))
    out = current()
    if not report.admitted:
        show_report(report)
        out.result = {"admission": report.to_dict(), "regions": plan.id, "status": plan.status, "owned": None}
        return EXIT_REJECTED
    tensors = read_view(str(path), checker.module.FORMAT).tensors
    names = [t.name for t in tensors]
    problems = file_regions(plan, tensors)
    out.result = {"admission": report.to_dict(), "regions": plan.id, "status": plan.status, "owned": not problems}
    if problems and out.format == "json":
        out.diagnostics(problems)
    elif problems:
        if out.format == "github":
            out.diagnostics(problems[:1])
        out.verdict(f"rejected at regions: {out.line(problems[0])}", False)
    elif out.format != "json":
        out.verdict(f"{report.render(out.place)}; regions {plan.id} (status {plan.status}): {len(plan.instances)} "
                    f"region instances own all {len(names)} tensors"
                    + (f" ({len(plan.excluded)} excluded)" if plan.excluded else ""), True)
    return EXIT_REJECTED if problems else EXIT_OK


def file_regions(plan, tensors) -> list:
    """Note [Ownership at admission] over a file's tensor table (objects with `name`, `shape` in the
    container's order and `codec`), every finding in the note's order."""
    from collections import Counter

    from charter.diagnostics import Code, Diagnostic

    names = [t.name for t in tensors]
    counts = Counter(names)
    out = [Diagnostic(Code.REGION_OWNERSHIP, n, f"tensor {n} appears {counts[n]} times in the file: a region "
                                                "instance owns one tensor per name")
           for n in dict.fromkeys(names) if counts[n] > 1]
    out += ownership(plan, list(dict.fromkeys(names)))
    owner = {n: inst.name for inst in plan.instances for n in inst.tensors}
    first = {t.name: t for t in reversed(tensors)}
    for n, t in ((n, first[n]) for n in dict.fromkeys(names)):
        w = plan.weights.get(n)
        if w is not None and tuple(t.shape) != w.stored_shape:
            out.append(Diagnostic(Code.REGION_SIGNATURE, n, f"{owner.get(n, 'a region')} reads {n} as "
                                                            f"{list(w.stored_shape)} (its nodes were verified with "
                                                            f"that shape); the file's is {list(t.shape)}",
                                  str(list(w.stored_shape)), str(list(t.shape))))
    for n, t in ((n, first[n]) for n in dict.fromkeys(names)):
        codec = plan.codecs.get(n)
        if codec is not None and t.codec != codec:
            out.append(Diagnostic(Code.REGION_PRECISION, n, f"{n} is {t.codec} in the file; its precision step "
                                                            f"({plan.precision.get(codec)}) was verified for {codec}",
                                  codec, t.codec))
    return out


def ownership(plan, names: list[str]) -> list:
    """Every tensor of the file owned once (by name, by a store's records, or excluded), and every
    owned tensor in the file."""
    from charter.diagnostics import Code, Diagnostic

    owners: dict[str, list[str]] = {}
    for inst in plan.instances:
        for n in inst.tensors:
            owners.setdefault(n, []).append(inst.name)
    stores = {n for n, c in plan.codecs.items() if n not in owners and n not in plan.excluded}
    out = []
    for n in names:
        held = owners.get(n, [])
        if len(held) > 1:
            out.append(Diagnostic(Code.REGION_OWNERSHIP, n, f"tensor {n} is owned by {', '.join(held)}"))
        elif not held and n not in plan.excluded and n not in stores:
            out.append(Diagnostic(Code.REGION_UNOWNED, n, f"tensor {n} of the file belongs to no region of {plan.id}"))
    present = set(names)
    for n in sorted(set(owners) - present):
        out.append(Diagnostic(Code.REGION_UNOWNED, n, f"region {owners[n][0]} owns {n}, which the file does not hold"))
    return out
