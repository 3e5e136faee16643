"""A text contract -> the view its case-table templates render (every literal made here)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from charter.codegen.common.cpp import cpp_bool, cpp_int64, cpp_sv
from charter.codegen.common.header import generated_header
from charter.codegen.common.names import identifier
from charter.codegen.common.python import py_literal
from charter.contract.load import LoadedContract
from charter.text.chat import request
from charter.text.contract import TextContract

CPP_CLASS = {"upstream_capture": "CaseClass::UpstreamCapture", "contract_control": "CaseClass::ContractControl"}
CPP_KIND = {"data": "SegmentKind::Data", "control": "SegmentKind::TrustedControl"}


@dataclass(frozen=True)
class Row:
    py: str   # one Python constructor call
    cpp: str  # one C++ aggregate initializer


@dataclass(frozen=True)
class CasesView:
    py_header: str
    cpp_header: str
    identifier: str
    py_facts: tuple[tuple[str, str], ...]   # (NAME, literal)
    cpp_facts: tuple[tuple[str, str, str], ...]  # (type, kName, literal)
    id_pool: tuple[str, ...]  # C++ lines of pooled ids, one line per case
    id_pool_size: int
    segment_pool: tuple[str, ...]
    segment_pool_size: int
    added: tuple[Row, ...]
    encode: tuple[Row, ...]
    decode: tuple[Row, ...]
    chat: tuple[Row, ...]


class _Pool:
    def __init__(self):
        self.items: list[str] = []
        self.lines: list[str] = []

    def add(self, literals: list[str]) -> tuple[int, int]:
        start = len(self.items)
        self.items += literals
        if literals:
            self.lines.append(", ".join(literals) + ",")
        return start, len(literals)


def _output(case) -> bytes | None:
    if case.text is not None:
        return case.text.encode("utf-8")
    return None if case.bytes is None else bytes.fromhex(case.bytes)


def build(loaded: LoadedContract, spec_display_path: str) -> CasesView:
    c = loaded.contract
    if not isinstance(c, TextContract):
        raise TypeError(f"text case tables are generated from text contracts, not {c.kind}")
    doc = loaded.doc
    sha = hashlib.sha256(doc.source.encode("utf-8")).hexdigest()
    where = lambda path: str(doc.where(path))  # noqa: E731
    ids = _Pool()
    segments = _Pool()
    added = tuple(Row(
        py=f"AddedToken({t.id}, {py_literal(t.content)}, {t.special})",
        cpp=f"{{{cpp_int64(t.id)}, {cpp_sv(t.content)}, {cpp_bool(t.special)}}}") for t in c.tokenizer.added)
    encode = []
    for i, e in enumerate(c.encode):
        start, n = ids.add([cpp_int64(x) for x in e.ids or []])
        raw = e.input if isinstance(e.input, bytes) else e.input.encode("utf-8")
        encode.append(Row(
            py=f"EncodeCase({py_literal(e.name)}, {py_literal(e.cls)}, bytes.fromhex({raw.hex()!r}), {e.special}, "
               f"{e.add_special}, {py_literal(tuple(e.ids or ()))}, {py_literal(e.error)}, "
               f"{py_literal(where(('encode', i)))})",
            cpp=f"{{{cpp_sv(e.name)}, {CPP_CLASS[e.cls]}, {cpp_sv(raw.hex())}, {cpp_bool(e.special)}, "
                f"{cpp_bool(e.add_special)}, {cpp_bool(e.error is not None)}, {{{start}, {n}}}, "
                f"{cpp_sv(e.error or '')}, {cpp_sv(where(('encode', i)))}}}"))
    decode = []
    for i, d in enumerate(c.decode):
        start, n = ids.add([cpp_int64(x) for x in d.ids])
        out = _output(d)
        decode.append(Row(
            py=f"DecodeCase({py_literal(d.name)}, {py_literal(d.cls)}, {py_literal(tuple(d.ids))}, {d.skip_special}, "
               f"{'None' if out is None else f'bytes.fromhex({out.hex()!r})'}, {py_literal(d.error)}, "
               f"{py_literal(where(('decode', i)))})",
            cpp=f"{{{cpp_sv(d.name)}, {CPP_CLASS[d.cls]}, {{{start}, {n}}}, {cpp_bool(d.skip_special)}, "
                f"{cpp_bool(d.error is not None)}, {cpp_sv('' if out is None else out.hex())}, "
                f"{cpp_sv(d.error or '')}, {cpp_sv(where(('decode', i)))}}}"))
    chat = []
    if c.chat is not None:
        for i, case in enumerate(c.chat.cases):
            req = json.dumps(request(case, c.chat.defaults), ensure_ascii=False, sort_keys=True)
            start, n = ids.add([cpp_int64(x) for x in case.ids or []])
            segs = [(s.kind, s.text) for s in case.segments or []]
            s_start, s_n = segments.add([f"{{{CPP_KIND[k]}, {cpp_sv(t)}}}" for k, t in segs])
            chat.append(Row(
                py=f"ChatCase({py_literal(case.name)}, {py_literal(case.cls)}, {py_literal(req)}, "
                   f"{py_literal(case.rendered)}, {py_literal(tuple(segs))}, {py_literal(tuple(case.ids or ()))}, "
                   f"{py_literal(case.error)}, {py_literal(where(('chat', 'cases', i)))})",
                cpp=f"{{{cpp_sv(case.name)}, {CPP_CLASS[case.cls]}, {cpp_sv(req)}, {cpp_bool(case.error is not None)}, "
                    f"{cpp_sv(case.rendered or '')}, {{{s_start}, {s_n}}}, {{{start}, {n}}}, "
                    f"{cpp_sv(case.error or '')}, {cpp_sv(where(('chat', 'cases', i)))}}}"))
    t = c.tokenizer
    facts = [("CONTRACT_ID", c.id), ("SPEC", spec_display_path), ("SPEC_SHA256", sha), ("MODEL", t.model),
             ("PRE", t.pre), ("VOCAB_SHA256", t.vocab.sha256), ("IDS", t.ids), ("LOGITS_ROWS", t.logits.rows)]
    if c.chat is not None:
        facts.append(("TEMPLATE_SHA256", c.chat.template_sha256))
    cpp_facts = tuple(("std::int64_t", _k(n), cpp_int64(v)) if isinstance(v, int) else
                      ("std::string_view", _k(n), cpp_sv(v)) for n, v in facts)
    return CasesView(
        py_header=generated_header("#", (spec_display_path, sha)),
        cpp_header=generated_header("//", (spec_display_path, sha)),
        identifier=identifier(c.id),
        py_facts=tuple((n, py_literal(v)) for n, v in facts), cpp_facts=cpp_facts,
        id_pool=tuple(ids.lines), id_pool_size=len(ids.items),
        segment_pool=tuple(segments.lines), segment_pool_size=len(segments.items),
        added=added, encode=tuple(encode), decode=tuple(decode), chat=tuple(chat))


def _k(name: str) -> str:
    return "k" + "".join(part.capitalize() for part in name.lower().split("_"))
