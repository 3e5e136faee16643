"""Battery results as a person reads them: a summary line, a table by stage, a trace, HTML."""

from __future__ import annotations

import html
import json
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
    return json.dumps({"battery": meta, "summary": summary(outcomes), "outcomes": [o.to_json() for o in outcomes]},
                      indent=2, sort_keys=True) + "\n"


def from_json(text: str) -> tuple[list[Outcome], dict]:
    """The outcomes and meta `to_json` wrote, rebuilt equal (`to_json(*from_json(t)) == t`): what
    `charter mutate merge` reads shards with (Note [Shards that merge] in charter.mutation.merge).
    Raises ValueError on text that is not such a report."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("battery"), dict) \
                or not isinstance(data.get("outcomes"), list):
            raise ValueError("not a charter battery report (no battery and outcomes)")
        return [Outcome.from_json(o) for o in data["outcomes"]], data["battery"]
    except (KeyError, TypeError, AttributeError) as exc:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"not a charter battery report: {type(exc).__name__} {exc}") from None


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

_CSS = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px}table{border-collapse:collapse;margin:12px 0}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f2f2f2;position:sticky;top:0}
.killed{background:#d8f0d8}.equivalent{background:#eeeeee}.admitted{background:#dde8f8}
.survived{background:#f4a0a0;font-weight:bold}.regression{background:#f8d090;font-weight:bold}
.refused{background:#e0b0f0;font-weight:bold}.error{background:#c06060;color:#fff;font-weight:bold}
td.leaf,th.leaf{position:sticky;left:0;background:#fff;z-index:1}.legend span{padding:2px 8px;margin-right:6px}
.summary{font-size:16px;margin:8px 0}.pass{color:#176317}.fail{color:#a01010}
td.leaf{font-family:monospace;white-space:nowrap}
"""


def render_html(outcomes: list[Outcome], meta: dict) -> str:
    """A self-contained page: summary, table by stage, and a matrix of fields x operators."""
    s = summary(outcomes)
    ops = sorted({o.mutant.operator for o in outcomes})
    by_target: dict[str, dict[str, list[Outcome]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        by_target[f"{o.mutant.side}:{o.mutant.target}"][o.mutant.operator].append(o)
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>charter mutation battery: {e(meta.get('contract', ''))}</title><style>{_CSS}</style></head><body>",
        f"<h1>Mutation battery: {e(meta.get('contract', ''))}</h1>",
        f"<p>spec: <code>{e(str(meta.get('spec', '')))}</code> &middot; artifact: "
        f"<code>{e(str(meta.get('artifact', '')))}</code> &middot; {e(str(meta.get('seconds', '')))} s</p>",
        "<p class='legend'>" + "".join(f"<span class='{v.value}'>{v.value}</span>" for v in Verdict) + "</p>",
        f"<p class='summary {'pass' if s['passed'] else 'fail'}'>{e(summary_line(s))}</p>",
        f"<pre>{e(table(outcomes))}</pre>",
    ]
    bad = failures(outcomes)
    if bad:
        parts.append("<h2>Failing mutants</h2><ul>" + "".join(f"<li>{e(b)}</li>" for b in bad) + "</ul>")
    parts.append("<h2>Fields &times; operators</h2><table><tr><th class='leaf'>field</th>"
                 + "".join(f"<th>{e(op)}</th>" for op in ops) + "</tr>")
    for target in sorted(by_target):
        cells = []
        for op in ops:
            group = by_target[target].get(op, [])
            if not group:
                cells.append("<td></td>")
                continue
            worst = max(group, key=lambda o: o.verdict in FAILING)
            tip = "; ".join(f"{o.verdict.value}: {o.stage or ''} {o.code or ''} {o.field or ''} {o.detail}"
                            for o in group)
            cells.append(f"<td class='{worst.verdict.value}' title='{e(tip)}'>{e(worst.verdict.value)}"
                         f"{'' if worst.stage is None else ' @' + e(worst.stage)}</td>")
        parts.append(f"<tr><td class='leaf'>{e(target)}</td>{''.join(cells)}</tr>")
    parts.append("</table></body></html>\n")
    return "".join(parts)
