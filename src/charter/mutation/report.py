"""Battery results as a person reads them: a summary line, a table by stage, a trace, HTML."""

from __future__ import annotations

from collections import Counter, defaultdict

from charter.diagnostics import BUNDLE_STAGES
from charter.mutation.mutant import Outcome, Verdict

STAGE_ROWS = ["spec"] + [s.value for s in BUNDLE_STAGES] + ["any"]  # rows with no mutant are not printed
FAILING = (Verdict.SURVIVED, Verdict.REGRESSION, Verdict.REFUSED, Verdict.ERROR)


def summary(outcomes: list[Outcome]) -> dict:
    counts = Counter(o.verdict for o in outcomes)
    expected = [o for o in outcomes if o.mutant.expect is not None or o.verdict in (Verdict.SURVIVED,
                                                                                    Verdict.REGRESSION)]
    expected = [o for o in expected if o.verdict not in (Verdict.EQUIVALENT, Verdict.ADMITTED, Verdict.REFUSED)]
    rejected = sum(o.verdict in (Verdict.KILLED, Verdict.REGRESSION) for o in expected)
    return {
        "mutants": len(expected),
        "rejected": rejected,
        "killed": counts[Verdict.KILLED],
        "regressions": counts[Verdict.REGRESSION],
        "survivors": counts[Verdict.SURVIVED],
        "errors": counts[Verdict.ERROR],
        "equivalent": counts[Verdict.EQUIVALENT],
        "controls_admitted": counts[Verdict.ADMITTED],
        "controls_refused": counts[Verdict.REFUSED],
        "passed": not any(counts[v] for v in FAILING),
    }


def summary_line(s: dict) -> str:
    return (f"{s['rejected']}/{s['mutants']} mutations rejected ({s['killed']} at the expected stage, code and "
            f"field; {s['regressions']} regressions, {s['survivors']} survivors, {s['errors']} errors); "
            f"{s['equivalent']} declared equivalent; {s['controls_admitted']} acceptance controls admitted, "
            f"{s['controls_refused']} refused")


def _stage_of(o: Outcome) -> str:
    if o.mutant.expect is not None:
        return o.mutant.expect.stage or "any"
    return o.stage or "any"


def table(outcomes: list[Outcome]) -> str:
    """Killed mutants by stage and side, and every failing verdict by stage."""
    rows: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        if o.verdict in (Verdict.EQUIVALENT, Verdict.ADMITTED):
            continue
        key = "killed-" + o.mutant.side if o.verdict is Verdict.KILLED else o.verdict.value
        rows[_stage_of(o)][key] += 1
    cols = ["killed-artifact", "killed-contract", "regression", "survived", "refused", "error"]
    head = f"{'stage':<10}" + "".join(f"{c:>17}" for c in cols)
    lines = [head, "-" * len(head)]
    for stage in STAGE_ROWS:
        if stage in rows:
            lines.append(f"{stage:<10}" + "".join(f"{rows[stage][c]:>17}" for c in cols))
    total = Counter()
    for r in rows.values():
        total.update(r)
    lines.append("-" * len(head))
    lines.append(f"{'total':<10}" + "".join(f"{total[c]:>17}" for c in cols))
    return "\n".join(lines)


def failures(outcomes: list[Outcome]) -> list[str]:
    out = []
    for o in outcomes:
        if o.verdict in FAILING:
            expect = o.mutant.expect if o.mutant.expect is not None else "admission"
            got = (f"{o.stage} {o.code} {o.field}" if o.stage else
                   "a crash" if o.verdict is Verdict.ERROR else "admitted")
            out.append(f"{o.verdict.value.upper()} {o.mutant.id}: expected {expect}, got {got}. {o.detail}")
    return out


def to_json(outcomes: list[Outcome], meta: dict) -> str:
    """The standard report (Note [Standard report] in charter.mutation.standard)."""
    from charter.mutation import standard

    return standard.to_json(outcomes, meta)


def from_json(text: str) -> tuple[list[Outcome], dict]:
    """The outcomes and meta `to_json` wrote (`to_json(*from_json(t)) == t`); ValueError otherwise."""
    from charter.mutation import standard

    return standard.from_json(text)


# --- traceability -----------------------------------------------------------------------------


def trace(outcomes: list[Outcome]) -> tuple[list[str], bool]:
    """For every contract leaf: the generated checks that enforce it and the mutants that killed it.
    A leaf with a survivor, or with neither a killing mutant nor a declared equivalence, fails."""
    by_leaf: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        if o.mutant.side == "contract":
            by_leaf[o.mutant.target].append(o)
    lines, ok = [], True
    for leaf in sorted(by_leaf):
        group = by_leaf[leaf]
        killed = [o for o in group if o.verdict is Verdict.KILLED]
        bad = [o for o in group if o.verdict in FAILING]
        checks = sorted({o.enforced_by for o in killed if o.enforced_by})
        status = "ok"
        if bad:
            status, ok = "FAIL (" + ", ".join(f"{o.mutant.operator}: {o.verdict.value}" for o in bad) + ")", False
        elif not killed:
            reasons = sorted({o.detail for o in group})
            status = "equivalent: " + "; ".join(reasons)
        lines.append(f"{leaf}")
        lines.append(f"  enforced by: {' | '.join(checks) if checks else '-'}")
        lines.append(f"  killed by:   {', '.join(o.mutant.operator for o in killed) or '-'}")
        lines.append(f"  verdict:     {status}")
    return lines, ok


# --- HTML -------------------------------------------------------------------------------------


def render_html(outcomes: list[Outcome], meta: dict) -> str:
    """The standard report in Stryker's viewer, one self-contained page (charter.mutation.viewer)."""
    from charter.mutation import viewer

    return viewer.page(to_json(outcomes, meta), f"charter mutation battery: {meta.get('contract', '')}")
