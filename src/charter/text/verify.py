"""`charter fixtures verify|capture` for text contracts: every tokenizer fact and every case.

Note [Text case classes]
~~~~~~~~~~~~~~~~~~~~~~~~
A case's `class` says who owns its expected output (AFN-014):

* `upstream_capture`: the contract's pinned producer (`producers.capture`, `chat.capture`) emitted
  it. `capture` re-runs that producer and requires the same ids, bytes, rendered text or error,
  byte for byte (TEXT_CAPTURE). `verify`, offline, runs the second implementation
  (`producers.crosscheck`, or charter's own transcription) and the chat renderer and requires the
  same; a difference is a TEXT_CROSSCHECK unless the case documents it as a finding with exactly
  what the second implementation gives and why (a finding that no longer happens is TEXT_FINDING).
* `contract_control`: charter's own policy, stated in `rule`: ids outside the vocabulary are refused
  before any decoder sees them, roles outside `chat.policy.roles` and structured media in a
  text-only model are refused before rendering. Upstream does not own these, and they are never
  labelled as its output.

In a chat case, `rendered` (or `error`) is the renderer's; `segments`, `ids` and
`flattened_controls` are charter's derivation (Note [Trust segments] in charter.text.chat), checked
by the tokenizers: DATA segments are tokenized without special-token parsing, control segments
with it; no DATA segment may yield a control id (TEXT_PROMOTION).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from charter.contract.yamlload import dotted
from charter.diagnostics import CharterError, Code, Diagnostic
from charter.text import chat as chatmod
from charter.text.tables import Definition, canonical, load_definition

COUNT_KEYS = ("encode", "decode", "decode_boundary", "added", "chat", "chat_controls")


@dataclass
class TextResult:
    contract_id: str
    cases: int = 0
    crosschecked: int = 0
    findings: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)


class _Report:
    def __init__(self, lc):
        self.lc = lc
        self.diagnostics: list[Diagnostic] = []

    def __call__(self, code: Code, path: tuple, message: str, expected=None, actual=None) -> None:
        self.diagnostics.append(Diagnostic(code, dotted(path), message,
                                           None if expected is None else str(expected),
                                           None if actual is None else str(actual),
                                           location=self.lc.doc.where(path)))

    def mismatch(self, code: Code, path: tuple, expected, actual, what: str = "") -> None:
        self(code, path, f"{what}expected {_show(expected)}, got {_show(actual)}", _show(expected), _show(actual))


def _show(v) -> str:
    text = repr(v)
    return text if len(text) <= 200 else text[:200] + "…"


# --- engines --------------------------------------------------------------------------------

# The battery renders the same requests for every mutant: it sets a dict here to memoize renders
# (results and exceptions alike, keyed by the request's exact JSON); None: no memo.
RENDER_MEMO: dict | None = None


def _memo(fn, template: str, variables: dict, req: dict):
    if RENDER_MEMO is None:
        return fn(template, variables, req)
    import json

    key = (fn.__name__, template, json.dumps(variables, sort_keys=True), json.dumps(req, sort_keys=True))
    if key not in RENDER_MEMO:
        try:
            RENDER_MEMO[key] = (True, fn(template, variables, req))
        except Exception as exc:
            RENDER_MEMO[key] = (False, exc)
    ok, value = RENDER_MEMO[key]
    if not ok:
        raise value
    return value


class Memo:
    """An engine whose answers are remembered (the battery asks the same questions per mutant)."""

    def __init__(self, engine):
        self.engine = engine
        self.memo: dict = {}

    def encode(self, text: str, special: bool, add_special: bool) -> list[int]:
        key = ("e", text, special, add_special)
        if key not in self.memo:
            self.memo[key] = self.engine.encode(text, special, add_special)
        return list(self.memo[key])

    def __getattr__(self, name):  # decode_bytes, where the engine has it
        return getattr(self.engine, name)

    def decode(self, ids: list[int], skip_special: bool):
        key = ("d", tuple(ids), skip_special)
        if key not in self.memo:
            self.memo[key] = self.engine.decode(ids, skip_special)
        return self.memo[key]



def crosscheck_engine(lc, definition: Definition):
    from charter.text.engines import require

    if definition.kind == "tokenizer.json":
        from charter.text.wordpiece import WordPiece

        return WordPiece(definition)
    from charter.text.engines import ByteLevelTables

    require(lc.contract.producers.crosscheck, "producers.crosscheck")
    return ByteLevelTables(definition)


def capture_engine(lc, definition: Definition):
    from charter.text.engines import HFTokenizer, LlamaCppTokenizer, require

    require(lc.contract.producers.capture, "producers.capture")
    if definition.kind == "tokenizer.json":
        return HFTokenizer(definition)
    return LlamaCppTokenizer(definition.gguf_path)


# --- facts ----------------------------------------------------------------------------------


def check_facts(lc, cs, definition: Definition, report: _Report) -> None:
    from charter.language import STATUSES

    c = lc.contract
    t = c.tokenizer
    model = cs.contracts.get(c.model)
    if model is None or model.kind != "model":
        report(Code.REF_DANGLING, ("model",), f"refers to model {c.model!r}, but no model contract has that id")
    elif STATUSES.index(c.status.value) > STATUSES.index(model.contract.status.value):
        report(Code.SPEC_INVALID, ("status",), f"status {c.status.value} claims more than its model "
                                               f"{c.model} ({model.contract.status.value})")
    for key in COUNT_KEYS:
        if key not in c.counts:
            report(Code.TEXT_COUNT, ("counts",), f"counts.{key} is not stated")
        elif c.counts[key] != c.count_of(key):
            report.mismatch(Code.TEXT_COUNT, ("counts", key), c.counts[key], c.count_of(key), f"{key} cases: ")
    if t.model != definition.model:
        report.mismatch(Code.TEXT_TOKENIZER, ("tokenizer", "model"), t.model, definition.model)
    if t.pre != definition.pre:
        report.mismatch(Code.TEXT_TOKENIZER, ("tokenizer", "pre"), t.pre, definition.pre)
    if t.vocab.count != len(definition.tokens):
        report.mismatch(Code.TEXT_TOKENIZER, ("tokenizer", "vocab", "count"), t.vocab.count, len(definition.tokens))
    elif t.vocab.sha256 != definition.digest("tokens"):
        report.mismatch(Code.TEXT_TOKENIZER, ("tokenizer", "vocab", "sha256"), t.vocab.sha256,
                        definition.digest("tokens"))
    if (t.merges is None) != (definition.merges is None):
        report(Code.TEXT_TOKENIZER, ("tokenizer", "merges"), "the definition " +
               ("has merges the contract does not pin" if t.merges is None else "has no merges"))
    elif t.merges is not None:
        if t.merges.count != len(definition.merges):
            report.mismatch(Code.TEXT_TOKENIZER, ("tokenizer", "merges", "count"), t.merges.count,
                            len(definition.merges))
        elif t.merges.sha256 != definition.digest("merges"):
            report.mismatch(Code.TEXT_TOKENIZER, ("tokenizer", "merges", "sha256"), t.merges.sha256,
                            definition.digest("merges"))
    for key in sorted(set(t.config) | set(definition.config)):
        if key not in definition.config:
            report(Code.TEXT_TOKENIZER, ("tokenizer", "config", key), "the definition has no such fact")
        elif key not in t.config:
            report(Code.TEXT_TOKENIZER, ("tokenizer", "config", key), f"the definition's fact {key!r} is not pinned")
        elif canonical(t.config[key]) != canonical(definition.config[key]):  # exact JSON: true is not 1
            report.mismatch(Code.TEXT_TOKENIZER, ("tokenizer", "config", key), t.config[key], definition.config[key])
    if t.ids != len(definition.tokens):
        report.mismatch(Code.TEXT_VOCABULARY, ("tokenizer", "ids"), t.ids, len(definition.tokens),
                        "effective vocabulary: ")
    _check_rows(lc, cs, report)
    _check_added(c, definition, report)
    if c.chat is not None:
        template = definition.template
        if template is None:
            report(Code.TEXT_TEMPLATE, ("chat", "template_sha256"), "the definition has no chat template")
        else:
            digest = hashlib.sha256(template.encode("utf-8")).hexdigest()
            if digest != c.chat.template_sha256:
                report.mismatch(Code.TEXT_TEMPLATE, ("chat", "template_sha256"), c.chat.template_sha256, digest)
        by_content = {a["content"]: a for a in definition.added}
        for i, ctl in enumerate(c.chat.controls):
            if ctl not in by_content:
                report(Code.TEXT_TEMPLATE, ("chat", "controls", i), f"{ctl!r} is not a token of the definition")
        # The special tokens a template is given are the tokenizer's own (transformers passes them).
        for name, key in (("bos_token", "tokenizer.ggml.bos_token_id"), ("eos_token", "tokenizer.ggml.eos_token_id")):
            i = definition.config.get(key)
            if name in c.chat.variables and isinstance(i, int) and 0 <= i < len(definition.tokens):
                if c.chat.variables[name] != definition.tokens[i]:
                    report.mismatch(Code.TEXT_TEMPLATE, ("chat", "variables", name), c.chat.variables[name],
                                    definition.tokens[i], f"{key} names ")
    src = c.source.tokenizer_json
    if src is not None and src.bundle is not None:
        bundle = cs.contracts.get(src.bundle)
        entry = bundle.contract.files.get(src.member) if bundle is not None and bundle.kind == "bundle" else None
        if entry is None:
            report(Code.TEXT_SOURCE, ("source", "tokenizer_json", "bundle"),
                   f"no bundle contract {src.bundle!r} with a file {src.member!r}")
        elif entry.sha256 is not None and entry.sha256 != src.sha256:  # a companion is bound by its JSON facts
            report.mismatch(Code.TEXT_SOURCE, ("source", "tokenizer_json", "sha256"), src.sha256, entry.sha256,
                            f"the bundle's {src.member}: ")


def _check_rows(lc, cs, report: _Report) -> None:
    """The physical rows: the named tensor's dim in the artifact contract, over its model's constants."""
    lg = lc.contract.tokenizer.logits
    art = cs.contracts.get(lg.artifact)
    if art is None or art.kind != "artifact":
        report(Code.TEXT_VOCABULARY, ("tokenizer", "logits", "artifact"), f"no artifact contract {lg.artifact!r}")
        return
    model = cs.models.get(art.contract.model)
    tensor = next((x for x in art.contract.tensors if x.name == lg.tensor), None)
    if tensor is None or model is None or lg.axis >= len(tensor.shape):
        report(Code.TEXT_VOCABULARY, ("tokenizer", "logits", "tensor"),
               f"{lg.artifact} states no tensor {lg.tensor!r} with an axis {lg.axis}")
        return
    dim = tensor.shape[lg.axis]
    rows = dim if isinstance(dim, int) else model.constants.get(dim)
    if rows is None:
        from charter.contract.expr import parse

        try:
            rows = parse(dim).evaluate(model.constants)
        except CharterError:
            rows = None
    if rows != lg.rows:
        report.mismatch(Code.TEXT_VOCABULARY, ("tokenizer", "logits", "rows"), lg.rows, rows,
                        f"physical rows of {lg.tensor} axis {lg.axis}: ")
    if art.contract.model != lc.contract.model:
        report.mismatch(Code.TEXT_VOCABULARY, ("model",), lc.contract.model, art.contract.model,
                        f"the model of {lg.artifact}: ")


def _check_added(c, definition: Definition, report: _Report) -> None:
    stated = c.tokenizer.added
    actual = definition.added
    for i, (s, a) in enumerate(zip(stated, actual)):
        for name in ("id", "content", "special", "type", "flags"):
            want = getattr(s, name)
            if name in a and want != a[name]:
                report.mismatch(Code.TEXT_ADDED_TOKEN, ("tokenizer", "added", i, name), want, a[name])
                break
        else:
            continue
        return  # one shifted entry would mis-report every later one
    if len(stated) != len(actual):
        path = ("tokenizer", "added", len(actual)) if len(stated) > len(actual) else ("tokenizer", "added")
        extra = actual[len(stated)] if len(actual) > len(stated) else None
        report(Code.TEXT_ADDED_TOKEN, path, f"the definition has {len(actual)} added tokens, the contract lists "
               f"{len(stated)}" + (f" (first unlisted: id {extra['id']} {extra['content']!r})" if extra else ""))


# --- cases ----------------------------------------------------------------------------------


def encode_refusal(raw: "str | bytes") -> str | None:
    """charter's encode policy: input that is not valid UTF-8 is refused before any tokenizer sees it
    (an upstream tokenizer's own handling of such bytes is pinned by upstream cases)."""
    if isinstance(raw, str):
        return None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"TextPolicyError: the input is not valid UTF-8 (byte {exc.start}: {exc.reason})"
    return None


def decode_refusal(ids: list[int], domain: int) -> str | None:
    """charter's decode policy: an id outside [0, ids) is refused before any decoder sees it."""
    for i, x in enumerate(ids):
        if not 0 <= x < domain:
            return f"TextPolicyError: ids[{i}] = {x} is outside the vocabulary [0, {domain})"
    return None


def _decoded(case) -> bytes | None:
    if case.text is not None:
        return case.text.encode("utf-8")
    return None if case.bytes is None else bytes.fromhex(case.bytes)


def _same_decode(case, out) -> bool:
    want = _decoded(case)
    return want == (out if isinstance(out, bytes) else out.encode("utf-8"))


def _finding_matches(finding, kind: str, out) -> bool:
    if kind == "encode":
        return finding.ids == out
    if isinstance(out, bytes):
        return finding.bytes == out.hex()
    return finding.text == out


def _second(report: _Report, path: tuple, case, agrees: bool, out, kind: str, by: str, result: TextResult) -> None:
    """A second implementation's answer: agreement, a documented finding, or a TEXT_CROSSCHECK."""
    findings = [(j, f) for j, f in enumerate(case.findings) if f.by == by]
    if agrees:
        for j, _ in findings:
            report(Code.TEXT_FINDING, (*path, "findings", j), f"documented finding no longer happens: {by} agrees")
        return
    if any(_finding_matches(f, kind, out) for _, f in findings):
        result.findings += 1
        return
    field = {"encode": "ids"}.get(kind, "text" if case.text is not None else "bytes")
    report(Code.TEXT_CROSSCHECK, (*path, field), f"{by} gives {_show(out)}: not the case's value, and no "
                                                 f"finding documents it")


def check_cases(lc, definition: Definition, engine, report: _Report, result: TextResult, *, by: str,
                capture: bool = False) -> None:
    c = lc.contract
    code_e = Code.TEXT_CAPTURE if capture else Code.TEXT_ENCODE
    for i, case in enumerate(c.encode):
        path = ("encode", i)
        result.cases += not capture or case.cls == "upstream_capture"
        if case.cls == "contract_control":
            refusal = encode_refusal(case.input)
            if refusal != case.error:
                report.mismatch(Code.TEXT_ENCODE, (*path, "error"), case.error, refusal, "the encode policy: ")
            continue
        if case.error is not None:
            report(Code.TEXT_ENCODE, (*path, "error"), "an upstream encode case states ids, not a policy's refusal")
            continue
        out = _ask(report, path, engine.encode, case.input, case.special, case.add_special)
        if out is None:
            continue
        if capture:
            if out != case.ids:
                report.mismatch(code_e, (*path, "ids"), case.ids, out, "the pinned producer: ")
            continue
        result.crosschecked += 1
        _second(report, path, case, out == case.ids, out, "encode", by, result)
    for i, case in enumerate(c.decode):
        path = ("decode", i)
        result.cases += not capture or case.cls == "upstream_capture"
        refusal = decode_refusal(case.ids, c.tokenizer.ids)
        if case.cls == "contract_control":
            if refusal != case.error:
                report.mismatch(Code.TEXT_DECODE, (*path, "error"), case.error, refusal, "the decode policy: ")
            continue
        if case.error is not None:
            report(Code.TEXT_DECODE, (*path, "error"), "an upstream decode case states what the decoder gives, "
                                                        "not a policy's refusal")
            continue
        out = _ask(report, path, engine.decode, case.ids, case.skip_special)
        if out is None:
            continue
        if capture:
            if not _same_decode(case, out):
                report.mismatch(Code.TEXT_CAPTURE, (*path, "text" if case.text is not None else "bytes"),
                                _decoded(case), out, "the pinned producer: ")
            continue
        result.crosschecked += 1
        _second(report, path, case, _same_decode(case, out), out, "decode", by, result)
        decode_bytes = getattr(engine, "decode_bytes", None)
        if decode_bytes is not None:  # every decode's exact bytes, which a str decoder cannot give
            raw = _ask(report, path, decode_bytes, case.ids, case.skip_special)
            if raw is not None and raw != _decoded(case):
                report.mismatch(Code.TEXT_CROSSCHECK, (*path, "text" if case.text is not None else "bytes"),
                                _decoded(case), raw, "the byte-level tables: ")


def _ask(report: _Report, path: tuple, fn, *args):
    """An engine's answer, or None with a diagnostic: an implementation that refuses a case's input
    (an id it cannot hold, say) is a finding about the case, never a traceback."""
    try:
        return fn(*args)
    except (ValueError, TypeError, OverflowError, IndexError, KeyError, RuntimeError) as exc:
        report(Code.TEXT_CROSSCHECK, path, f"the implementation refuses the case: {type(exc).__name__}: {exc}")
        return None


def check_chat(lc, definition: Definition, engine, report: _Report, result: TextResult) -> None:
    """Every chat case: policy, render (with segments), the second renderer, and the segments' ids."""
    ch = lc.contract.chat
    if ch is None or definition.template is None:
        return
    from charter.text.engines import require

    require(ch.renderer, "chat.renderer")
    control_ids = {a["id"] for a in definition.added if a["special"]}
    for i, case in enumerate(ch.cases):
        path = ("chat", "cases", i)
        result.cases += 1
        refusal = chatmod.check_policy(case, ch.policy)
        if case.cls == "contract_control":
            if refusal != case.error:
                report.mismatch(Code.TEXT_CHAT_POLICY, (*path, "error"), case.error, refusal, "the chat policy: ")
            continue
        if refusal is not None:
            report(Code.TEXT_CHAT_POLICY, (*path, "messages"), f"an upstream chat case passes the policy: {refusal}")
            continue
        req = chatmod.request(case, ch.defaults)
        try:
            r = _memo(chatmod.render, definition.template, ch.variables, req)
        except chatmod.SegmentError as exc:
            report(Code.TEXT_SEGMENTS, (*path, "segments"), str(exc))
            continue
        if r.error is not None or case.error is not None:
            if r.error != case.error:
                report.mismatch(Code.TEXT_RENDER, (*path, "error" if case.error is not None else "rendered"),
                                case.error, r.error, "the render: ")
            else:
                _second_render(lc, definition, req, path, case, None, report, result)
            continue
        plain = _memo(chatmod.plain_render, definition.template, ch.variables, req)
        if plain != r.rendered:  # tracking must never change a byte of the output
            report(Code.TEXT_SEGMENTS, (*path, "rendered"), "the tracked render differs from the plain render")
            continue
        if r.rendered != case.rendered:
            report.mismatch(Code.TEXT_RENDER, (*path, "rendered"), case.rendered, r.rendered, "the render: ")
            continue
        stated = [(s.kind, s.text) for s in case.segments]
        if stated != r.segments:
            j = next((k for k, (a, b) in enumerate(zip(stated, r.segments)) if a != b), min(len(stated), len(r.segments)))
            report.mismatch(Code.TEXT_SEGMENTS, (*path, "segments", j) if j < len(stated) else (*path, "segments"),
                            stated[j] if j < len(stated) else None, r.segments[j] if j < len(r.segments) else None,
                            f"segment {j}: ")
            continue
        _second_render(lc, definition, req, path, case, r.rendered, report, result)
        ids, promoted = segment_ids(engine, r.segments, control_ids)
        allowed = {a["id"] for a in definition.added if a["content"] in ch.controls}
        stray = control_atoms(engine, r.segments, control_ids) - allowed
        if stray:
            report(Code.TEXT_SEGMENTS, ("chat", "controls"), f"case {case.name}: control segments resolve special "
                   f"ids {sorted(stray)} that chat.controls does not name")
        if promoted:
            report(Code.TEXT_PROMOTION, (*path, "segments"), f"DATA segments yield control ids {promoted}")
        if ids != case.ids:
            report.mismatch(Code.TEXT_CHAT_IDS, (*path, "ids"), case.ids, ids, "segmented ids: ")
        flat = sum(1 for x in engine.encode(r.rendered, True, False) if x in control_ids)
        if flat != case.flattened_controls:
            report.mismatch(Code.TEXT_CHAT_IDS, (*path, "flattened_controls"), case.flattened_controls, flat)


def segment_ids(engine, segments, control_ids: set[int]) -> tuple[list[int], list[int]]:
    """Tokenize each segment by its provenance; the control ids any DATA segment produced."""
    ids: list[int] = []
    promoted: list[int] = []
    for kind, text in segments:
        part = engine.encode(text, kind == "control", False)
        if kind == "data":
            promoted += [x for x in part if x in control_ids]
        ids += part
    return ids, promoted


def control_atoms(engine, segments, control_ids: set[int]) -> set[int]:
    """The special ids the control segments resolve."""
    return {x for kind, text in segments if kind == "control" for x in engine.encode(text, True, False)
            if x in control_ids}


def _second_render(lc, definition, req, path, case, rendered, report: _Report, result: TextResult) -> None:
    ch = lc.contract.chat
    if ch.second_renderer is None:
        return
    from charter.text.engines import require

    require(ch.second_renderer, "chat.second_renderer")
    text, error = _memo(chatmod.minijinja_render, definition.template, ch.variables, req)
    result.crosschecked += 1
    # Errors are compared as outcomes: both engines refuse, each in its own words.
    agrees = (error is not None) if rendered is None else (text == rendered)
    findings = [(j, f) for j, f in enumerate(case.findings) if f.by == "second_renderer"]
    if agrees:
        for j, _ in findings:
            report(Code.TEXT_FINDING, (*path, "findings", j), "documented finding no longer happens: the second "
                                                              "renderer agrees")
        return
    # A finding names what the second renderer gives: its rendered text, or the type of its error.
    if any((error is None and f.rendered == text) or (error is not None and f.error is not None
                                                      and error.startswith(f.error + ":")) for _, f in findings):
        result.findings += 1
        return
    report(Code.TEXT_CROSSCHECK, (*path, "rendered" if rendered is not None else "error"),
           f"the second renderer gives {_show(text if error is None else error)}, and no finding documents it")


# --- entry points -----------------------------------------------------------------------------


def _definition(lc, cs, report: _Report) -> Definition | None:
    try:
        return load_definition(lc, cs)
    except CharterError as exc:
        for d in exc.diagnostics:
            report(d.code if d.code.value.startswith("TEXT_") else Code.TEXT_SOURCE, ("source",),
                   f"{d.field}: {d.message}" if d.field else d.message)
        return None


def _built(factory, lc, definition):
    """An engine over the definition; one that cannot be built from it is a finding, not a traceback."""
    try:
        return factory(lc, definition)
    except CharterError:
        raise
    except Exception as exc:  # the library refuses the tables (a malformed merge, say)
        raise CharterError([Diagnostic(Code.TEXT_TOKENIZER, "tokenizer", f"the implementation cannot be built from "
                                       f"the definition: {type(exc).__name__}: {exc}",
                                       location=lc.doc.where(("tokenizer",)))]) from None


def verify(lc, cs, *, definition: Definition | None = None, engine=None) -> TextResult:
    """Offline: the facts against the definition, every case against the second implementation.
    (The battery passes the definition and a memoizing engine it built once.)"""
    result = TextResult(lc.id)
    report = _Report(lc)
    definition = definition or _definition(lc, cs, report)
    if definition is not None:
        check_facts(lc, cs, definition, report)
        try:
            if lc.contract.producers.crosscheck is not None:
                from charter.text.engines import require

                require(lc.contract.producers.crosscheck, "producers.crosscheck")
            engine = engine or _built(crosscheck_engine, lc, definition)
            by = "crosscheck"
            check_cases(lc, definition, engine, report, result, by=by)
            check_chat(lc, definition, engine, report, result)
        except CharterError as exc:
            report.diagnostics.extend(exc.diagnostics)
    result.diagnostics = report.diagnostics
    return result


def capture(lc, cs) -> TextResult:
    """Re-run the pinned upstream producers on every upstream case; byte for byte or TEXT_CAPTURE."""
    result = TextResult(lc.id)
    report = _Report(lc)
    definition = _definition(lc, cs, report)
    if definition is not None:
        try:
            engine = _built(capture_engine, lc, definition)
            try:
                check_cases(lc, definition, engine, report, result, by="capture", capture=True)
                capture_chat(lc, definition, engine, report, result)
            finally:
                getattr(engine, "close", lambda: None)()
        except CharterError as exc:
            report.diagnostics.extend(exc.diagnostics)
    result.diagnostics = report.diagnostics
    return result


def capture_chat(lc, definition: Definition, engine, report: _Report, result: TextResult) -> None:
    ch = lc.contract.chat
    if ch is None:
        return
    from charter.text.engines import require

    require(ch.capture, "chat.capture")
    control_ids = {a["id"] for a in definition.added if a["special"]}
    for i, case in enumerate(ch.cases):
        if case.cls != "upstream_capture":
            continue
        path = ("chat", "cases", i)
        result.cases += 1
        text, error = upstream_render(definition.template, ch, chatmod.request(case, ch.defaults))
        if (error or None) != case.error or text != case.rendered:
            report.mismatch(Code.TEXT_CAPTURE, (*path, "error" if case.error is not None else "rendered"),
                            case.error or case.rendered, error or text, "the pinned renderer: ")
            continue
        if case.segments is not None:
            ids, _ = segment_ids(engine, [(s.kind, s.text) for s in case.segments], control_ids)
            if ids != case.ids:
                report.mismatch(Code.TEXT_CAPTURE, (*path, "ids"), case.ids, ids, "the pinned tokenizer: ")


def upstream_render(template: str, ch, req: dict) -> tuple[str | None, str | None]:
    """llama-cpp-python's Jinja2ChatFormatter (the renderer llama-cpp-python users run)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    v = ch.variables
    fmt = Jinja2ChatFormatter(template=template, eos_token=v.get("eos_token", ""), bos_token=v.get("bos_token", ""),
                              add_generation_prompt=bool(req["add_generation_prompt"]))
    extra = {k: v for k, v in req.items() if k not in ("messages", "tools", "add_generation_prompt")}
    try:
        return fmt(messages=req["messages"], tools=req["tools"], **extra).prompt, None
    except Exception as exc:  # the template's own error, as a case states it
        return None, chatmod.error_text(exc)
