"""The text battery: change one leaf of a text contract, expect `verify` to reject it where it belongs.

Note [Text mutants]
~~~~~~~~~~~~~~~~~~~
Every leaf of the contract document is mutated by its type: an int +1, a bool flipped, a string
edited (a digest: its last hex digit; a version: `.1` appended; other text: `x` appended), a null
set to 0; every list loses its last element; every segment changes kind; every mapping of
`tokenizer.config` loses each key; `status` takes every other member. Long id lists are mutated at
their first and last element (each element is one comparison: the first and last prove the whole
list is compared, and the drop proves its length is). A mutant is validated as the loader
validates a contract (a SPEC_SCHEMA refusal is a rejection at the leaf) and then verified, offline,
with the definition and the second implementation built once (answers memoized: only the expected
values change between mutants, and an input that changes is asked again).

A mutant is *killed* when a diagnostic names a field inside its owner: the case for a case field,
the leaf itself for a fact (`tokenizer.config.<key>`, `counts.<key>`, an added token). A rejection
elsewhere is a *misplaced* rejection, and one that is not rejected a *survivor*; both fail the
battery. Declared equivalent, with their reason, and never silently skipped:

* `description`, a control's `rule`, a finding's `reason`, a case's `name`, the contract `id`: words
  and names for people and reports; no behaviour depends on them;
* a weaker `status` than the contract's: a smaller claim is not a wrong one;
* `producers.capture` and `chat.capture`: refuted by `charter fixtures capture`, which runs the
  pinned upstream producer; the offline verify never imports it (it may not be installed);
* an input (`text`, `bytes`, `special`, `add_special`, `ids`, `skip_special`, a chat request's
  fields) whose change gives the same output from the second implementation, the renderer or the
  policy (no special spelling in the text, no special id among the ids, a tokenizer that adds no
  special, a field the template never reads, the same refusal): the case's expected value is
  unchanged, so there is nothing to notice;
* the expected ids of an encode case with a documented cross-check finding: the offline
  implementation gives other ids there by definition, so only `capture` can refute them.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

from pydantic import ValidationError

from charter.contract.load import LoadedContract, refusal
from charter.contract.yamlload import dotted
from charter.diagnostics import CharterError
from charter.text import verify as tv
from charter.text.contract import TextContract

CAPTURE_ONLY = (("producers", "capture"), ("chat", "capture"))
STATUSES = ("structural", "pinned-not-supported", "supported")


@dataclass
class TextMutant:
    path: tuple
    op: str
    owner: tuple
    data: object = field(repr=False, default=None)
    equivalent: str | None = None

    @property
    def label(self) -> str:
        return f"{dotted(self.path) or '<root>'} {self.op}"


@dataclass
class Outcome:
    mutant: TextMutant
    verdict: str  # killed | equivalent | survived | misplaced
    diagnostic: str = ""


def _owner(path: tuple) -> tuple:
    if path[:1] in (("encode",), ("decode",)) and len(path) >= 2:
        if path[2:3] == ("boundary",):
            return ("counts", "decode_boundary")
        return path[:2]
    if path[:2] == ("chat", "cases") and len(path) >= 3:
        return path[:3]
    if path[:2] == ("tokenizer", "added") and len(path) >= 3:
        return ("tokenizer", "added")
    if path[:2] == ("tokenizer", "config"):
        return path[:3]
    if path[:1] == ("counts",):
        return path[:2]
    if path[:1] == ("source",):
        return ("source",)
    if path[:2] in (("chat", "policy"), ("chat", "defaults"), ("chat", "variables")):
        return ()  # a policy or default changes the outcome of the cases that use it
    if path[:2] == ("tokenizer", "logits") or path == ("tokenizer", "ids"):
        return ("tokenizer",)  # the ids and the rows are one relation
    if path in (("encode",), ("decode",), ("chat", "cases"), ("tokenizer", "added")):
        return ()  # a dropped case changes a count, a dropped token the token list
    return path


def _set(data, path: tuple, value):
    """`data` with one leaf changed: the containers on the path are copied, everything else shared."""
    out = copy.copy(data)
    node = out
    for p in path[:-1]:
        node[p] = copy.copy(node[p])
        node = node[p]
    if value is _DROP:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


_DROP = object()


def _edit_str(path: tuple, s: str) -> tuple[str, str]:
    if len(s) == 64 and all(c in "0123456789abcdef" for c in s):
        return s[:-1] + ("0" if s[-1] != "0" else "1"), "digest bit"
    if path[-1] == "version":
        return s + ".1", "version"
    if path[-1] == "bytes":
        return s[:-2] + ("00" if s[-2:] != "00" else "01"), "last byte"
    if path[-1] == "text" and path[0] == "encode":
        return "x " + s, "prepend"  # a new first word: appended text could fall past a truncation
    return s + "x", "edit"


def mutants(lc: LoadedContract) -> list[TextMutant]:
    data = lc.doc.data
    out: list[TextMutant] = []

    def add(path, op, value, equivalent=None):
        out.append(TextMutant(path, op, _owner(path), None if equivalent else _set(data, path, value), equivalent))

    def walk(node, path):
        key = path[-1] if path else None
        if isinstance(node, dict):
            if path[:2] == ("tokenizer", "config") and len(path) == 2:
                for k in node:
                    add((*path, k), "drop key", _DROP)
            seg = path[-2:-1] == ("segments",)
            if seg:
                kind = next(iter(node))
                flipped = {"control" if kind == "data" else "data": node[kind]}
                add(path, "segment kind", flipped)
            for k, v in node.items():
                walk(v, (*path, k))
            return
        if isinstance(node, list):
            if node:
                add(path, "drop last", node[:-1])
            ints = node and all(isinstance(x, int) and not isinstance(x, bool) for x in node)
            chosen = sorted({0, len(node) - 1}) if ints else range(len(node))
            for i in chosen:
                walk(node[i], (*path, i))
            return
        if any(path[:len(p)] == p for p in CAPTURE_ONLY):
            add(path, "edit", None, "refuted by `charter fixtures capture` (runs the pinned upstream producer)")
            return
        if _words(path):
            add(path, "edit", None, "words and names for people and reports; no behaviour depends on them")
            return
        if key == "status" and len(path) == 1:
            mine = STATUSES.index(node)
            for s in STATUSES:
                if s != node:
                    add(path, f"-> {s}", s, "a weaker claim is not a wrong one" if STATUSES.index(s) < mine else None)
            return
        if isinstance(node, bool):
            add(path, "flip", not node)
        elif isinstance(node, int):
            add(path, "+1", node + 1)
        elif isinstance(node, float):
            add(path, "+1.0", node + 1.0)
        elif isinstance(node, str):
            value, op = _edit_str(path, node)
            add(path, op, value)
        elif node is None:
            add(path, "null -> 0", 0)

    walk(data, ())
    return out


def _words(path: tuple) -> bool:
    """Words and names for people: the contract's id and description, a case's name and rule, a finding's reason."""
    if path in (("id",), ("description",)):
        return True
    case = len(path) == 3 and path[0] in ("encode", "decode") or len(path) == 4 and path[:2] == ("chat", "cases")
    if case and path[-1] in ("name", "rule"):
        return True
    return len(path) >= 3 and path[-1] == "reason" and path[-3] == "findings"


def _chat_equivalent(m: TextMutant, lc, definition) -> str | None:
    """A chat input the outcome does not depend on: the policy refuses the same way, or the template
    renders the same text and segments (or raises the same error) without reading it."""
    from charter.text import chat as chatmod
    from charter.text.contract import ChatCase

    if m.path[:2] != ("chat", "cases") or len(m.path) < 4 or m.path[3] not in ("messages", "tools", "kwargs",
                                                                             "add_generation_prompt"):
        return None
    try:
        case = ChatCase.model_validate(m.data["chat"]["cases"][m.path[2]])
    except ValidationError:
        return None
    ch = lc.contract.chat
    refusal = chatmod.check_policy(case, ch.policy)
    if case.cls == "contract_control":
        return "the policy refuses the changed request in the same words" if refusal == case.error else None
    if refusal is not None:
        return None
    try:
        r = tv._memo(chatmod.render, definition.template, ch.variables, chatmod.request(case, ch.defaults))
    except chatmod.SegmentError:
        return None
    same = (r.error == case.error if case.error is not None else
            r.rendered == case.rendered and r.segments == [(x.kind, x.text) for x in case.segments])
    return "the template gives the same outcome without reading this input" if same else None


def _capture_only(m: TextMutant, lc) -> str | None:
    """The expected ids of an encode case whose documented finding says the offline implementation
    gives other ids: only `capture` (the pinned producer) can refute them."""
    if m.path[0] != "encode" or len(m.path) < 3 or m.path[2] != "ids":
        return None
    case = lc.contract.encode[m.path[1]]
    if any(f.by == "crosscheck" and f.ids is not None for f in case.findings):
        return "refuted by `charter fixtures capture`: a documented finding says the offline implementation differs"
    return None


def _input_equivalent(m: TextMutant, engine) -> str | None:
    """An input change after which the second implementation still gives the case's stated output
    (Note [Text mutants]): the expected value is still right, there is nothing to notice."""
    if m.path[0] not in ("encode", "decode") or len(m.path) < 3 or m.path[2] not in INPUTS[m.path[0]]:
        return None
    case = m.data[m.path[0]][m.path[1]]
    if isinstance(case, dict) and case.get("class") == "contract_control" and m.path[0] == "encode":
        try:
            raw = case["text"] if case.get("text") is not None else bytes.fromhex(case.get("bytes") or "")
        except (ValueError, TypeError):
            return None
        if tv.encode_refusal(raw) == case.get("error"):
            return "the policy refuses the changed input in the same words (a refused input reaches no tokenizer)"
        return None
    if not isinstance(case, dict) or case.get("class") != "upstream_capture":
        if m.path[0] == "decode" and m.path[2] == "skip_special" and case.get("error") is not None:
            return "a refused decode control never reaches a decoder: skipping specials cannot matter"
        return None
    try:
        if m.path[0] == "encode" and case.get("ids") is not None:
            raw = case["text"] if case.get("text") is not None else bytes.fromhex(case["bytes"])
            out = engine.encode(raw, case["special"], case["add_special"])
            if out == case["ids"]:
                return "the changed input gives the same ids from the second implementation"
            if any(f.get("by") == "crosscheck" and f.get("ids") == out for f in case.get("findings") or []):
                return "the changed input gives the second implementation's documented ids again"
        if m.path[0] == "decode" and case.get("error") is None:
            decode = getattr(engine, "decode_bytes", engine.decode)
            if tv._same_decode(_Case(case), decode(case["ids"], case["skip_special"])):
                return "the changed input gives the same text from the second implementation"
    except (TypeError, ValueError, OverflowError, KeyError, IndexError):
        return None
    return None


INPUTS = {"encode": ("text", "bytes", "special", "add_special"), "decode": ("ids", "skip_special")}


class _Case:
    def __init__(self, d):
        self.text = d.get("text")
        self.bytes = d.get("bytes")


def run(lc: LoadedContract, cs) -> list[Outcome]:
    report = tv._Report(lc)
    definition = tv._definition(lc, cs, report)
    if definition is None or report.diagnostics:
        raise CharterError(report.diagnostics)
    baseline = tv.verify(lc, cs, definition=definition)
    if baseline.diagnostics:
        raise CharterError(baseline.diagnostics)  # the unchanged contract must verify
    engine = tv.Memo(tv.crosscheck_engine(lc, definition))
    tv.RENDER_MEMO = {}
    outcomes = []
    try:
        for m in mutants(lc):
            if m.equivalent is None:
                m.equivalent = (_capture_only(m, lc) or _input_equivalent(m, engine)
                                or _chat_equivalent(m, lc, definition))
            if m.equivalent:
                outcomes.append(Outcome(m, "equivalent", m.equivalent))
                continue
            outcomes.append(_judge(m, lc, cs, definition, engine))
    finally:
        tv.RENDER_MEMO = None
    return outcomes


def _judge(m: TextMutant, lc, cs, definition, engine) -> Outcome:
    try:
        contract = TextContract.model_validate(m.data)
    except ValidationError as exc:
        diagnostics = refusal(exc, lc.doc).diagnostics
    else:
        mutated = LoadedContract(contract, lc.doc, lc.path)
        own = None if m.path[:1] == ("source",) else definition  # a source mutant reads its source again
        try:
            diagnostics = tv.verify(mutated, cs, definition=own, engine=engine).diagnostics
        except CharterError as exc:
            diagnostics = exc.diagnostics
    if not diagnostics:
        return Outcome(m, "survived")
    owners = [dotted(m.owner)] + (["chat.controls"] if m.owner == ("tokenizer", "added") else [])
    for d in diagnostics:
        for owner in owners:  # an added token's content and flags are also what chat.controls names
            if not owner or d.field == owner or d.field.startswith(owner + ".") or d.field.startswith(owner + "["):
                return Outcome(m, "killed", d.render())
    return Outcome(m, "misplaced", diagnostics[0].render())


def group(m: TextMutant) -> str:
    if m.path[:2] == ("chat", "cases"):
        return "chat cases"
    if m.path[:1] in (("encode",), ("decode",)):
        return f"{m.path[0]} cases"
    return ".".join(str(p) for p in m.path[:2]) if m.path[:1] in (("tokenizer",), ("chat",)) else str(m.path[0])


def table(outcomes: list[Outcome]) -> str:
    rows: dict[str, list[int]] = {}
    for o in outcomes:
        r = rows.setdefault(group(o.mutant), [0, 0, 0])
        r[0 if o.verdict == "killed" else 1 if o.verdict == "equivalent" else 2] += 1
    width = max(len(k) for k in rows) if rows else 5
    lines = [f"{'group':<{width}}  killed  equivalent  failed"]
    for k in sorted(rows):
        a, b, c = rows[k]
        lines.append(f"{k:<{width}}  {a:>6}  {b:>10}  {c:>6}")
    return "\n".join(lines)


def summary_line(outcomes: list[Outcome]) -> str:
    killed = sum(o.verdict == "killed" for o in outcomes)
    equivalent = sum(o.verdict == "equivalent" for o in outcomes)
    total = len(outcomes) - equivalent
    return f"{killed}/{total} mutations rejected ({equivalent} declared equivalent)"


def run_command(args, cs, contract_id: str) -> int:
    """`charter mutate --contract <text spec>`."""
    import sys

    from charter.console import EXIT_OK, EXIT_REJECTED, print_diagnostics

    lc = cs.contracts[contract_id]
    refused = [flag for flag, on in (("--artifact", getattr(args, "artifact", None)), ("--html", getattr(args, "html", None)),
                                     ("--trace", getattr(args, "trace", False)), ("--only", getattr(args, "only", None)),
                                     ("--engine both", getattr(args, "engine", "python") != "python")) if on]
    if refused:
        print(f"charter: a text battery mutates the contract and runs the offline verify; {', '.join(refused)} "
              "do not apply", file=sys.stderr)
        return 2
    start = time.monotonic()
    try:
        outcomes = run(lc, cs)
    except CharterError as exc:
        print_diagnostics(exc.diagnostics)
        print("charter: the unchanged text contract does not verify; no mutant was run", file=sys.stderr)
        return EXIT_REJECTED
    failed = [o for o in outcomes if o.verdict in ("survived", "misplaced")]
    for o in failed:
        print(f"{o.verdict}: {o.mutant.label}" + (f" ({o.diagnostic})" if o.diagnostic else ""))
    print(table(outcomes))
    print(f"{summary_line(outcomes)} in {time.monotonic() - start:.1f}s")
    if getattr(args, "report", None):
        import json

        from charter.console import print_or_write

        print_or_write(args.report, json.dumps({
            "contract": contract_id, "summary": summary_line(outcomes),
            "outcomes": [{"mutant": o.mutant.label, "group": group(o.mutant), "verdict": o.verdict,
                          "diagnostic": o.diagnostic} for o in outcomes]}, indent=2, ensure_ascii=False) + "\n")
    return EXIT_REJECTED if failed else EXIT_OK
