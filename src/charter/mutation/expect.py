"""Predict where a mutated contract rejects the unchanged artifact, from the checks that changed.

The generated checker's typed checks (charter.contract.checks, Note [Typed checks]) are compared
before and after the mutation. Each changed check is evaluated against the conforming artifact by the rules
of its stage (Note [Ordered admission]); the first that must fail is the expectation. No changed
check means no generated code enforces the leaf: the mutant is expected to survive, and does
unless the operator declared it equivalent.
"""

from __future__ import annotations

import bisect
import fnmatch
import functools
import hashlib
import itertools
import json
import math
import operator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import assert_never

from charter.admission.view import ArtifactView
from charter.diagnostics import Code, Finding, Location, Stage, code_for
from charter.floatbits import float_bits
from charter.formats.ggml_types import codec_bytes, row_header
from charter.language import expand, meets
from charter.mutation import oracle
from charter.mutation.mutant import Expect
from charter.contract import checks
from charter.contract.checks import Check
from charter.memo import FEW, IdMemo, changed_at



@dataclass(frozen=True)
class Prediction:
    changed: tuple[Check, ...]  # the checks whose literals changed (the generated code enforcing the leaf)
    expect: Expect | None  # None: every changed check still holds for this artifact


def _plain(value):
    """A check's values without contract locations (moving a fact is not changing it)."""
    if isinstance(value, Location):
        return "@"
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, float):  # by its bits: every NaN prints `nan` (Note [Float bits])
        return ("float", float_bits("float64", value))
    return value


def _key(c: Check) -> tuple:
    return (type(c), repr(tuple(_plain(getattr(c, f.name)) for f in fields(c))))


class _Baseline:
    """The unchanged contract's checks, keyed once per battery rather than once per mutant."""

    def __init__(self, before: tuple[Check, ...]) -> None:
        self.before = before
        self.rows = IdMemo(lambda row: repr(_plain(tuple(row))))  # a TensorFact row -> its plain form
        self.pairs = [(c, self._fresh(c)) for c in before]
        self.keys = {c: k for c, k in self.pairs if _hashable(c)}
        self.key_set = {k for _, k in self.pairs}
        self.previous = {(type(c), _store_name(c)): c for c in before}

    def key(self, c: Check) -> tuple:
        """A check equal to one of the contract's (locations included) has that check's key: the
        resolved value of a fact has the Python type of its declared type, so `==` between checks
        of one contract is `_plain` equality, NaNs aside (never equal, so keyed afresh)."""
        if isinstance(c, checks.Tensors):  # its rows are keyed each once: no need to hash the table
            return self._fresh(c)
        known = self.keys.get(c) if _hashable(c) else None
        return known if known is not None else self._fresh(c)

    def _fresh(self, c: Check) -> tuple:
        """`_key`, but a tensor table row by row, each row object once (charter.contract.checks hands
        out one TensorFact per resolved row)."""
        if isinstance(c, checks.Tensors):
            return (type(c), self.rows.each(c.rows), repr(_plain(c.at)))
        return _key(c)


def _hashable(c: Check) -> bool:
    try:
        hash(c)
    except TypeError:
        return False
    return True


_LAST: list[_Baseline] = []


def _baseline(before) -> _Baseline:
    if not _LAST or _LAST[0].before is not before:
        _LAST[:] = [_Baseline(tuple(before) if not isinstance(before, tuple) else before)]
    return _LAST[0]


def predict(before: list[Check], after: list[Check], view: ArtifactView, require_status: str | None,
            beside: Path | None = None, artifact: Path | None = None) -> Prediction:
    """Changed checks are those of `after` that `before` does not have (order-insensitive, so
    dropping one check does not make every later one look changed), plus checks `before` had that
    are gone (they enforced the leaf; losing one relaxes the checker). `beside`: the artifact's
    folder, where a contract's companion config is read; `artifact`: the file, whose bounded
    tensors a changed bound is evaluated over."""
    base = _baseline(before)
    added, removed = added_and_removed(before, after)
    excluded = next((c.patterns for c in after if isinstance(c, checks.Exclude)), ())
    for c in added:
        expect = _evaluate(c, view, require_status, excluded, base.previous.get((type(c), _store_name(c))), beside,
                           artifact)
        if expect is not None:
            return Prediction(tuple(added + removed), expect)
    return Prediction(tuple(added + removed), None)


def added_and_removed(before: list[Check], after: list[Check]) -> tuple[list[Check], list[Check]]:
    """The checks of `after` that `before` does not have, and those of `before` that are gone:
    predict's comparison, without the artifact (charter.diff classifies a contract change by it)."""
    base = _baseline(before)
    after_keys = [base.key(c) for c in after]
    new = set(after_keys)
    added = [c for c, k in zip(after, after_keys) if k not in base.key_set]
    removed = [c for c, k in base.pairs if k not in new]
    return added, removed


def _config(file: str, facts: tuple, beside: Path | None) -> Expect | None:
    """The companion config's rules (Context.config) over the JSON beside the artifact, in fact
    order; without the artifact's folder, all that can be said is that the stage rejects."""
    if beside is None:
        return Expect(Stage.METADATA)
    try:
        data = json.loads((beside / file).read_text("utf-8"))
    except (OSError, ValueError):
        return Expect.of(Code.METADATA_CONFIG, "config")
    json_types = {bool: "bool", int: "int64", float: "float64", str: "string"}
    for key, ctype, expected, _ in facts:
        node = data
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return Expect.of(Code.METADATA_MISSING, f"config.{key}")
            node = node[part]
        if json_types.get(type(node)) != ctype:
            return Expect.of(Code.METADATA_TYPE, f"config.{key}")
        if not (_same_float("float64", node, expected) if ctype == "float64" else node == expected):
            return Expect.of(Code.METADATA_VALUE, f"config.{key}")
    return None


def _same_float(ctype: str, a: float, b: float) -> bool:
    return float_bits(ctype, a) == float_bits(ctype, b)


def _evaluate(c: Check, v: ArtifactView, require_status: str | None, excluded: tuple[str, ...],
              previous: Check | None, beside: Path | None = None, artifact: Path | None = None) -> Expect | None:
    """Would this check, with these literals, reject the artifact? (stage rules, not the runtime)"""
    match c:
        case checks.ContainerFormat():
            return Expect.of(Code.CONTAINER_FORMAT, "format") if c.format != v.format else None
        case checks.ContainerVersion():
            return Expect.of(Code.CONTAINER_VERSION, "container.version") if c.version != v.version else None
        case checks.ContainerAlignment():
            return Expect.of(Code.CONTAINER_ALIGNMENT, "container.alignment") \
                if c.alignment != v.alignment else None
        case checks.ContainerHeaderAligned():
            return Expect.of(Code.CONTAINER_HEADER, "container.header_aligned") \
                if c.aligned != v.header_len_aligned else None
        case checks.Identity():
            entry = v.meta.get(c.key)
            if entry is None:
                return Expect.of(Code.IDENTITY_MISSING, f"identity.{c.key}")
            if entry.type != "string" or entry.value != c.value:
                code = Code.IDENTITY_ARCHITECTURE if c.key.endswith(".architecture") and entry.type == "string" \
                    else Code.IDENTITY_MISMATCH
                return Expect.of(code, f"identity.{c.key}")
            return None
        case checks.MetaTypes():
            for key, ctype, element, _ in c.facts:
                entry = v.meta.get(key)
                if entry is None:
                    return Expect.of(Code.METADATA_MISSING, f"metadata.{key}")
                if entry.type != ctype:
                    return Expect.of(Code.METADATA_TYPE, f"metadata.{key}")
                if element is not None and entry.element != element:
                    return Expect.of(Code.METADATA_TYPE, f"metadata.{key}.element")
            return None
        case checks.MetaKeySet():
            for key, _ in c.forbidden:
                if key in v.meta:
                    return Expect.of(Code.METADATA_FORBIDDEN, f"metadata.{key}")
            if c.extra == "reject":
                pinned = set(c.pinned)
                for key in v.meta:
                    if key not in pinned and not (v.format == "gguf" and key == "general.alignment"):
                        return Expect.of(Code.METADATA_UNEXPECTED, f"metadata.{key}")
            return None
        case checks.Value():
            stage, actual = c.stage.value, v.meta[c.key].value
            same = _same_float(c.ctype, actual, c.value) if c.ctype in ("float32", "float64") else (
                actual == c.value and type(actual) is type(c.value))
            return None if same else Expect.of(code_for(stage, Finding.VALUE), f"{stage}.{c.key}")
        case checks.StringDigest():
            stage = c.stage.value
            actual = hashlib.sha256(v.meta[c.key].value.encode("utf-8")).hexdigest()
            return None if actual == c.sha256 else Expect.of(code_for(stage, Finding.DIGEST),
                                                             f"{stage}.{c.key}.sha256")
        case checks.ArrayFact():
            stage, arr = c.stage.value, v.meta[c.key].value
            if arr.count != c.length:
                return Expect.of(code_for(stage, Finding.ARRAY_LENGTH), f"{stage}.{c.key}.length")
            if c.values is not None:
                for i, (want, got) in enumerate(zip(c.values, arr.items())):
                    if want != got or type(want) is not type(got):
                        return Expect.of(code_for(stage, Finding.VALUE), f"{stage}.{c.key}.values[{i}]")
            if c.sha256 is not None and arr.sha256() != c.sha256:
                return Expect.of(code_for(stage, Finding.ARRAY_DIGEST), f"{stage}.{c.key}.sha256")
            return None
        case checks.SpecialId():
            return None if v.meta[c.key].value == c.value else Expect.of(Code.TOKENIZER_SPECIAL_ID,
                                                                         f"tokenizer.special.{c.name}")
        case checks.StopId():
            return None if v.meta[c.key].value in c.ids else Expect.of(Code.TOKENIZER_STOP_ID,
                                                                       f"tokenizer.stop.{c.key}")
        case checks.TokenDomain():
            return None if v.meta[c.key].value.count == c.ids else Expect.of(Code.TOKENIZER_DOMAIN, "tokenizer.ids")
        case checks.LogitsRows():
            t = next((t for t in v.tensors if t.name == c.tensor), None)
            if t is None or c.axis >= len(t.shape) or t.shape[c.axis] == c.rows:
                return None
            return Expect.of(Code.TOKENIZER_LOGITS_ROWS, "tokenizer.logits_rows")
        case checks.Config():
            return _config(c.file, c.facts, beside)
        case checks.Exclude():
            return None  # takes effect through the tensors check that follows
        case checks.Tensors():
            return _tensors(c.rows, v, excluded, previous.rows if previous is not None else None)
        case checks.Codecs():
            return _codecs(c.rows, v)
        case checks.Layout():
            spans = [(t.name, t.start, t.end) for t in v.tensors]
            policy = {"sorted": c.sorted, "packed": c.packed, "trailing": c.trailing}
            if c.alignment is not None and v.tensors and v.data_offset % c.alignment:
                return Expect.of(Code.LAYOUT_DATA_OFFSET, "layout.alignment")
            return oracle.layout(spans, v.data_offset, v.file_size, c.alignment, policy)
        case checks.Exclusions():
            for name, patterns, count_key, count, _ in c.rows:
                if count_key is not None and v.meta[count_key].value != count:
                    return Expect.of(Code.POLICY_EXCLUSION, f"exclusions.{name}.source_count")
                if any(fnmatch.fnmatchcase(t.name, p) for t in v.tensors for p in patterns):
                    return Expect.of(Code.POLICY_EXCLUSION, f"exclusions.{name}")
            return None
        case checks.Status():
            if not meets(c.status, require_status):
                return Expect.of(Code.POLICY_STATUS, "status")
            return None
        case checks.ExpertMajorStore() | checks.PleStore():
            return _store(c, previous)
        case checks.Payload():
            # The conforming artifact matches the unchanged contract's digests (its baseline is admitted
            # with --verify-payload), so a payload check rejects exactly when a digest literal changed.
            before = previous if isinstance(previous, checks.Payload) else None
            if c.file_sha256 is not None and c.file_sha256 != (before and before.file_sha256):
                return Expect.of(Code.PAYLOAD_FILE_DIGEST, "payload.file_sha256")
            old = {(d.tensor, d.sha256) for d in before.tensors} if before else set()
            for d in c.tensors:
                if (d.tensor, d.sha256) not in old:
                    return Expect.of(Code.PAYLOAD_DIGEST, f"payload.tensors.{d.tensor}")
            return _bounds(c.bounds, v, artifact) if c.bounds != (before and before.bounds) else None
        case _:
            assert_never(c)


def _bounds(bounds, v: ArtifactView, artifact: Path | None) -> Expect | None:
    """The first element, in file order, outside the bound of its tensor (Note [Value bounds]),
    read from the artifact with numpy in slices of at most 1 MiB: the payload stage's finding."""
    import numpy as np

    from charter.formats.values import INTEGER_ELEMENTS

    if not bounds:
        return None
    if artifact is None:
        raise ValueError("a changed bound is predicted from the artifact's bytes: pass `artifact`")
    integers = INTEGER_ELEMENTS[v.format]
    with open(artifact, "rb") as f:
        for t in sorted(v.tensors, key=lambda t: t.start):
            rule = next((r for r in bounds if any(fnmatch.fnmatchcase(t.name, p) for p in r.patterns)), None)
            if rule is None or t.codec not in integers:
                continue
            e = integers[t.codec]
            dtype = np.dtype(f"<{e.kind[0]}{e.bytes}")
            lo = e.lo if rule.min is None else rule.min
            hi = e.hi if rule.max is None else rule.max
            n, step = (t.end - t.start) // e.bytes, (1 << 20) // e.bytes
            for first in range(0, n, step):
                f.seek(t.start + first * e.bytes)
                a = np.frombuffer(f.read(min(step, n - first) * e.bytes), dtype).astype(object)  # exact ints
                out = np.flatnonzero((a < lo) | (a > hi))
                if out.size:
                    return Expect.of(Code.PAYLOAD_BOUND, f"values.{t.name}[{first + int(out[0])}]")
    return None


def _tensors(table, v: ArtifactView, excluded: tuple[str, ...], before=None) -> Expect | None:
    """`before`: the unchanged contract's table, if any: see _changed_tensors."""
    found = _changed_tensors(table, before, v, excluded) if before is not None else _WHOLE
    if found is not _WHOLE:
        return found
    expected = functools.reduce(operator.ior, _expected.each(table), {})
    actual = _by_name(v)
    for name in expected if not expected.keys() <= actual.keys() else ():  # the set tests run in C
        if name not in actual:
            return Expect.of(Code.TENSOR_MISSING, f"tensors.{name}")
    for t in v.tensors if not actual.keys() <= expected.keys() else ():
        if t.name not in expected and not any(fnmatch.fnmatchcase(t.name, p) for p in excluded):
            return Expect.of(Code.TENSOR_UNEXPECTED, f"tensors.{t.name}")
    return _differing(expected, actual)


def _changed_tensors(table, before, v: ArtifactView, excluded: tuple[str, ...]):
    """What _tensors finds for `table` when it is `before` but for a few rows and `before` holds
    over the artifact, worked out from those rows alone (each of 5,600 mutants of a 1,000-row
    table's dims compared every name): the tensors of the other rows are there and match, and any
    other tensor of the file is one of theirs or excluded. So the first missing tensor is among the
    changed rows' new names, the first unexpected one among the names they no longer state (in file
    order), and the first that differs among their new names (two changed rows stating one name
    merge as they do in the whole table). _WHOLE when that does not hold, or a new name is also an
    unchanged row's (the whole table then says what that makes)."""
    if len(table) != len(before):
        return _WHOLE
    at = changed_at(table, before)
    if len(at) > FEW:
        return _WHOLE
    if not (_HOLDS and _HOLDS[0] is before and _HOLDS[1] is v and _HOLDS[2] == excluded):
        rows = _expected.each(before)
        stated = functools.reduce(operator.ior, rows, {})
        alone = len(stated) == sum(map(len, rows))  # no name stated by two rows
        _HOLDS[:] = [before, v, excluded, stated if alone and _tensors(before, v, excluded) is None else None]
    stated = _HOLDS[3]
    if stated is None:
        return _WHOLE
    new = functools.reduce(operator.ior, (_expected(table[i]) for i in at), {})
    old = functools.reduce(operator.ior, (_expected(before[i]) for i in at), {})
    if any(n in stated and n not in old for n in new):
        return _WHOLE
    actual = _by_name(v)
    for name in new:
        if name not in actual:
            return Expect.of(Code.TENSOR_MISSING, f"tensors.{name}")
    place = _first_place(v)
    gone = [place[n] for n in old if n not in new and not any(fnmatch.fnmatchcase(n, p) for p in excluded)]
    if gone:
        return Expect.of(Code.TENSOR_UNEXPECTED, f"tensors.{v.tensors[min(gone)].name}")
    return _differing(new, actual)


_WHOLE = object()  # _changed_tensors: the whole table must be compared
_HOLDS: list = []  # the last unchanged table, view and exclusions, and its names if it holds over them (else None)
# The view's tensor names -> where each first is, once per view.
_first_place = IdMemo(lambda v: {t.name: i for i, t in reversed(list(enumerate(v.tensors)))}, bound=1)


def _differing(expected: dict[str, tuple], actual) -> Expect | None:
    """The first expected tensor, in order, whose rank, dims or codec the artifact's differs in."""
    differing = map(operator.ne, expected.values(), map(_SHAPE_AND_CODEC, map(actual.__getitem__, expected)))
    for name in itertools.compress(expected, differing):  # the names whose tensor differs, found in C
        shape, codec = expected[name]
        t = actual[name]
        if len(t.shape) != len(shape):
            return Expect.of(Code.TENSOR_RANK, f"tensors.{name}.rank")
        for j, (want, got) in enumerate(zip(shape, t.shape)):
            if want != got:
                return Expect.of(Code.TENSOR_SHAPE, f"tensors.{name}.shape[{j}]")
        if t.codec != codec:
            return Expect.of(Code.TENSOR_CODEC, f"tensors.{name}.codec")
    return None


def _row_tensors(row: checks.TensorFact) -> dict[str, tuple]:
    """name -> (shape, codec) of every tensor a row stands for."""
    template, repeat, _role, shape, codec, _ = row
    return {name: (shape, codec) for name in expand(template, repeat)}


_SHAPE_AND_CODEC = operator.attrgetter("shape", "codec")
_expected = IdMemo(_row_tensors)  # once per row object (Note [Identity memo] in charter.memo)


# The view's tensors by name, once per view (a battery predicts every mutant over one view).
_by_name = IdMemo(lambda v: {t.name: t for t in v.tensors}, bound=1)


def _codecs(table, v: ArtifactView) -> Expect | None:
    geometry = {name: (block, nbytes, header) for name, block, nbytes, header, _ in table}
    starts = sorted(t.start for t in v.tensors)
    for t in v.tensors:
        if t.codec not in geometry:
            continue
        block, nbytes, header = geometry[t.codec]
        row = t.shape[0] if v.format == "gguf" else (t.shape[-1] if t.shape else 1)
        if block <= 0 or row % block:
            return Expect.of(Code.CODEC_BLOCK, f"codecs.{t.codec}.block")
        elements = math.prod(t.shape)
        want = codec_bytes(elements, row, block, nbytes, header)
        if want != t.end - t.start:
            if header != row_header(v.format, t.codec):
                return Expect.of(Code.CODEC_ROW_HEADER, f"codecs.{t.codec}.header")
            return Expect.of(Code.CODEC_SIZE, f"codecs.{t.codec}.bytes")
        rows = elements // row if row else 0
        following = bisect.bisect_right(starts, t.start)
        room = (starts[following] if following < len(starts) else v.file_size) - t.start
        if header and rows and want - rows * header <= room < want:  # Note [Row headers]
            return Expect.of(Code.CODEC_ROW_HEADER, f"codecs.{t.codec}.header")
    return None


def _store_name(c: Check) -> str | None:
    return c.name if isinstance(c, (checks.ExpertMajorStore, checks.PleStore)) else None


# Manifest fields each store kind states directly (the rest of the contract's fields are derived).
_STORED = {checks.ExpertMajorStore: {"version", "family", "layers", "experts", "experts_used", "codec_id", "group_size",
                                  "group_bytes", "record_alignment"},
           checks.PleStore: {"version", "family", "heads", "width", "row_alignment", "logical_rows", "rows_per_page",
                         "page_header_bytes", "codec_id", "group_size", "codec_version", "page_alignment"}}


def _store(c: checks.ExpertMajorStore | checks.PleStore, previous) -> Expect:
    """The conforming artifact states exactly the unchanged contract's store, so a changed literal
    fails at the first fact the manifest states (STORE_MANIFEST, at that field), or else in the
    geometry derived from the facts. Which derived field breaks first is the stores stage's order;
    the prediction leaves it open and the location oracle (Note [Location oracle]) holds the
    diagnostic to the store fact that changed."""
    if previous is None:
        return Expect.of(Code.STORE_MISSING)
    old = {f.field: f.value for f in previous.fields}
    for f in c.fields:
        if f.field in _STORED[type(c)] and f.value != old[f.field]:
            return Expect.of(Code.STORE_MANIFEST, f"stores.{c.name}.manifest.{f.field}")
    if isinstance(c, checks.ExpertMajorStore) and len(c.components) != len(previous.components):
        return Expect.of(Code.STORE_MANIFEST, f"stores.{c.name}.manifest.components")
    if isinstance(c, checks.PleStore):
        rows_new, rows_old = (tuple(h.value for h in s.head_rows) for s in (c, previous))
        for i in range(max(len(rows_new), len(rows_old))):
            if rows_new[i:i + 1] != rows_old[i:i + 1]:
                return Expect.of(Code.STORE_MANIFEST, f"stores.{c.name}.manifest.head_rows[{i}]")
    return Expect.of(Code.STORE_GEOMETRY)
