"""A battery's outcomes as Stryker's mutation-testing report, and back.

Note [Standard report]
~~~~~~~~~~~~~~~~~~~~~~
`charter mutate --report FILE` writes the mutation-testing-report schema (npm
`mutation-testing-report-schema` 3.8.4, the format Stryker, Stryker4s, Stryker.NET, Infection and
PIT's plugin write, and what the `mutation-testing-elements` viewer reads). Its files are the
contract YAML files, each with its source text, and each mutant sits at the contract fact that
owns it (`Outcome.location`, set by `locate`):

* a contract mutant at the leaf it changes (or, for a leaf the document does not locate, its
  nearest located ancestor), in the artifact or the model contract;
* an artifact mutant at the fact the diagnostic that rejected it cites; one no diagnostic cites
  (admitted, declared equivalent, or rejected by the reader, which cites no contract fact) at the
  artifact contract's section of the stage expected to reject it (`container:`, `tensors:`, ...),
  else at the contract's first line: the mutant concerns the whole contract.

Status: killed -> Killed; survived -> Survived, but NoCoverage for a contract leaf no generated
check depends on; regression (rejected, at another stage, code or field) and a refused control ->
Survived, with the reason: both fail the battery, as a survivor does; error -> RuntimeError;
declared equivalent -> Ignored, with the operator's reason; an admitted acceptance control ->
Ignored ("an acceptance control, admitted"), since it is no mutant the checker must kill. The
mutator name is the stage the rejection is expected at (the viewer's group), the replacement the
operator, the status reason the expected and actual diagnostics. Every mutant also carries its
outcome as charter wrote it (`charter`, with its place in the battery's order), which the schema
allows, so `from_json` rebuilds the outcomes and meta exactly: `to_json(*from_json(t)) == t`.
The meta (contract, spec, artifact, digests, and for a shard its place) and the summary (what
the stdout line counts, and `passed`) are the report's `config`; the source texts are the files. Nothing in it differs between two runs of one battery
(Note [Shards that merge] in charter.mutation.merge).
"""

from __future__ import annotations

import json

from charter import __version__
from charter.diagnostics import Location
from charter.mutation.mutant import Outcome, Verdict

SCHEMA_VERSION = "2"
LANGUAGE = "yaml"  # the viewer highlights by file extension; YAML shows as plain text
UNCOVERED = "no generated check changed"  # the start of a contract survivor's detail (charter.mutation.run)


def status(o: Outcome) -> str:
    """The schema's status of an outcome (Note [Standard report])."""
    match o.verdict:
        case Verdict.KILLED:
            return "Killed"
        case Verdict.SURVIVED:
            uncovered = o.mutant.side == "contract" and o.detail.startswith(UNCOVERED)
            return "NoCoverage" if uncovered else "Survived"
        case Verdict.REGRESSION | Verdict.REFUSED:
            return "Survived"
        case Verdict.ERROR:
            return "RuntimeError"
        case Verdict.EQUIVALENT | Verdict.ADMITTED:
            return "Ignored"
    raise ValueError(o.verdict)


def reason(o: Outcome) -> str:
    """What the viewer shows beside a mutant: the expected and the actual diagnostic."""
    m = o.mutant
    if o.verdict is Verdict.EQUIVALENT:
        return f"declared equivalent: {o.detail or m.equivalent or ''}".rstrip()
    if o.verdict is Verdict.ADMITTED:
        return "an acceptance control, admitted"
    expected = "admission (an acceptance control)" if m.expect is None else str(m.expect)
    got = (f"{o.stage} {o.code} {o.field}" if o.stage else "a crash" if o.verdict is Verdict.ERROR else "admitted")
    text = f"{o.verdict.value}: expected {expected}, got {got}"
    return f"{text}. {o.detail}" if o.detail else text


def to_json(outcomes: list[Outcome], meta: dict) -> str:
    """The report of `outcomes` in battery order; `meta["sources"]` maps each contract file (as
    its locations name it) to its text, the rest of `meta` is the report's `config`."""
    from charter.mutation.report import summary

    sources = dict(meta.get("sources") or {})
    config = {**{k: v for k, v in meta.items() if k not in ("sources", "summary")}, "summary": summary(outcomes)}
    files: dict[str, dict] = {path: {"language": LANGUAGE, "source": text, "mutants": []}
                              for path, text in sources.items()}
    for index, o in enumerate(outcomes):
        where = Location.parse(o.location) if o.location else Location(config.get("spec", ""), 1, 1)
        file = files.setdefault(where.file, {"language": LANGUAGE, "source": "", "mutants": []})
        line, col = max(where.line, 1), max(where.col, 1)
        file["mutants"].append({
            "id": o.mutant.id,
            "mutatorName": _stage(o),
            "replacement": o.mutant.operator,
            "description": f"{o.mutant.side} {o.mutant.target}",
            "location": {"start": {"line": line, "column": col}, "end": {"line": line, "column": col + 1}},
            "status": status(o),
            "statusReason": reason(o),
            "charter": {"index": index, **o.to_json()},
        })
    report = {
        "schemaVersion": SCHEMA_VERSION,
        "thresholds": {"high": 100, "low": 100},  # a battery passes only when every mutant is rejected
        "framework": {"name": "charter", "version": __version__},
        "config": config,
        "files": dict(sorted(files.items())),
    }
    return _written(report)


def _written(report: dict) -> str:
    """The report as JSON, indented by two, keys sorted, but each mutant on one line: a line per
    mutant to read and diff, and written by json's C encoder (indented, all of a 31,000-mutant
    report took 1.8 s in Python's)."""
    mutants = [f["mutants"] for f in report["files"].values()]
    marks = [f"@charter-mutants-{i}@" for i in range(len(mutants))]
    outline = {**report, "files": {path: {**f, "mutants": mark} for (path, f), mark in
                                   zip(report["files"].items(), marks)}}
    text = json.dumps(outline, indent=2, sort_keys=True, ensure_ascii=False)
    if any(text.count(f'"{mark}"') != 1 for mark in marks):  # a source text holding a mark: all in Python
        return json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    encode = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
    for mark, rows in zip(marks, mutants):
        lines = ",\n".join(f"        {encode(row)}" for row in rows)
        text = text.replace(f'"{mark}"', f"[\n{lines}\n      ]" if rows else "[]", 1)
    return text + "\n"


def from_json(text: str) -> tuple[list[Outcome], dict]:
    """The outcomes and meta `to_json` wrote them from; ValueError on text that is not such a report."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("schemaVersion") != SCHEMA_VERSION \
                or not isinstance(data.get("files"), dict) or not isinstance(data.get("config"), dict):
            raise ValueError("not a mutation-testing report of charter (schemaVersion 2, files, config)")
        rows = [m["charter"] for f in data["files"].values() for m in f["mutants"]]
        rows.sort(key=lambda r: r["index"])
        if [r["index"] for r in rows] != list(range(len(rows))):
            raise ValueError("its mutants' places in the battery are not 0, 1, 2, ...")
        outcomes = [Outcome.from_json({k: v for k, v in r.items() if k != "index"}) for r in rows]
        meta = {k: v for k, v in data["config"].items() if k != "summary"}
        sources = {path: f["source"] for path, f in data["files"].items() if f["source"] or not f["mutants"]}
        if sources:
            meta["sources"] = sources
        return outcomes, meta
    except (KeyError, TypeError, AttributeError) as exc:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"not a mutation-testing report of charter: {type(exc).__name__} {exc}") from None


def _stage(o: Outcome) -> str:
    e = o.mutant.expect
    if e is not None:
        return e.stage.value if e.stage is not None else "any"
    return "control"


def locate(outcomes: list[Outcome], artifact_doc, model_doc) -> list[Outcome]:
    """Each outcome at the contract fact that owns it (Note [Standard report])."""
    import dataclasses

    from charter.mutation.locations import ancestors

    root = artifact_doc.locations.get(())
    fallback = str(Location(root.file, 1, 1)) if root is not None else ""
    out = []
    for o in outcomes:
        m = o.mutant
        where = o.location
        if m.side == "contract":
            side = m.target.split(":", 1)[0]
            doc = model_doc if side == "model" and model_doc is not None else artifact_doc
            where = next(ancestors(doc, m.leaf), where) if m.leaf else where
        elif not where and m.expect is not None and m.expect.stage is not None:
            section = artifact_doc.locations.get((m.expect.stage.value,))  # e.g. `container:`, `tensors:`
            where = str(section) if section is not None else ""
        out.append(dataclasses.replace(o, location=where or fallback))
    return out


def sources(*docs) -> dict[str, str]:
    """file (as locations name it) -> text, for the report's files."""
    return {d.file: d.source for d in docs if d is not None and isinstance(d.source, str)}
