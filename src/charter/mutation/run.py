"""Run a battery: every mutant of one artifact contract and its conforming artifact.

Artifact mutants are admitted by the checker generated from the unchanged contract; contract
mutants regenerate the checker in memory from the mutated contract and admit the unchanged
artifact (parsed once). Verdicts follow Note [Mutation verdicts] in charter.mutation.mutant.

With both engines, every mutant also runs the generated C++ checker, and any difference in the
first diagnostic (stage, code, field, byte offset) is an error: differential verdicts. Artifact
mutants run the C++ checker compiled into charter._native; contract mutants run the C++ checker
generated from the mutated contract, compiled beforehand with all the others into one checker
library (`prepare_cpp`, charter.engines.library).
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import gc
import itertools
import mmap
import multiprocessing
import operator
import os
import sys
import time
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, assert_never, get_args, get_origin

from pydantic import BaseModel, ValidationError

from charter import engines
from charter.admission.report import AdmissionReport
from charter.admission.runtime import PrefixRecorder, VerifiedPrefix, admit, admit_view, block_bytes_of
from charter.admission.view import ArtifactView, parse_view
from charter.codegen.driver import render_checker_text
from charter.diagnostics import CharterError, Stage
from charter.formats.accepted_strings import AcceptedStrings
from charter.formats.records import gc_paused
from charter.memo import IdMemo, changed_at, shared_ends
from charter.mutation import contract_ops, gguf_ops, locations, safetensors_ops, store_ops, value_ops
from charter.mutation.assemble import Pieces
from charter.mutation.expect import Prediction, predict
from charter.mutation.facts import UNREAD
from charter.mutation.mutant import Expect, Mutant, Outcome, Verdict, judge
from charter.contract import checks
from charter.contract.checks import Check, checks_of
from charter.contract.contractset import ContractSet
from charter.contract.load import LoadedContract, contract_from_document, refusal
from charter.contract.plan import ArtifactPlan, ModelPlan, value_of
from charter.contract.resolve import resolve_artifact, resolve_model
from charter.contract.yamlload import Document, DroppedItem


# The largest artifact the battery reads whole before its first mutant, for verified prefixes (a
# payload pass and a sha256) and the verdict cache's key (a sha256): worth it for a real file
# (SmolLM2, 98 MB: 45 s of battery to 7 s), not for a sparse fixture of 129 GB (Qwen4Exp).
WHOLE_FILE_PASS_MAX = 1 << 32


@dataclass
class Battery:
    """One contract, its model, its conforming artifact, and the unchanged checker."""

    artifact_path: Path
    loaded: LoadedContract
    model: LoadedContract
    plan: ArtifactPlan
    checks: tuple[Check, ...]
    checker: types.ModuleType
    view: ArtifactView
    raw_header: bytes
    engines: str = "python"  # "both": every mutant also runs the C++ checker (differential verdicts)
    cpp_key: str = ""  # the unchanged contract's C++ checker: its contract id in charter._native, or a library key
    cpp_keys: frozenset[str] = frozenset()  # keys of the contract mutants' C++ checkers (prepare_cpp)
    cpp_key_of: dict[int, str] = dataclasses.field(default_factory=dict)  # id(contract mutant) -> its key
    companions: dict[str, bytes | str] = dataclasses.field(default_factory=dict)  # file name -> as read, once
    model_plan: ModelPlan | None = None  # the model resolved once, for every mutant of an artifact leaf
    tensor_memo: dict = dataclasses.field(default_factory=dict)  # resolved tensor rows (resolve_artifact)
    pieces: Pieces = dataclasses.field(default_factory=Pieces)  # compiled checker pieces (assemble)
    accepted: AcceptedStrings = dataclasses.field(default_factory=AcceptedStrings)  # the header's string arrays
    prefixes: dict[int, VerifiedPrefix] | None = None  # its end -> a verified prefix (verified_prefixes)
    checker_text: str = ""  # the unchanged checker's text, as rendered for `checker`
    shared_header: bool = True  # False: value mutants run the header stages again (Note [Admitted header])
    cpp_conforming: engines.Verdict | None = None  # the C++ checker's verdict on the conforming header
    cpp_reference: object = None  # the conforming header parsed once for the C++ checkers (cpp_reference)
    cited: dict = dataclasses.field(default_factory=dict)  # (side, leaf, dropped) -> cited_locations()

    @property
    def require_status(self) -> str:
        """Admission runs with the contract's own status required, so lowering it is caught."""
        return self.plan.status

    def options(self, plan: ArtifactPlan) -> engines.Options:
        """How both engines admit the battery's artifact under `plan` (the contract or a mutant):
        with the contract's own status required, and the companion file `plan` binds."""
        return engines.Options(require_status=self.require_status, companion=companion(self, plan))


class BrokenBaseline(Exception):
    """The conforming artifact is not admitted by the unchanged contract. Every verdict would
    measure that one failure, so the battery stops before its first mutant, as Stryker's dry run
    does when the initial test run fails; `report` says why, as `charter admit` would."""

    def __init__(self, report: AdmissionReport) -> None:
        super().__init__(report.render())
        self.report = report


def load_battery(cs: ContractSet, contract_id: str, artifact_path: Path) -> Battery:
    """The battery of one contract; raises BrokenBaseline unless the unchanged checker admits the
    artifact (header stages, with the contract's own status required, as every mutant runs)."""
    loaded = cs.contracts[contract_id]
    model_plan = cs.models[cs.artifacts[contract_id].model]
    memo: dict = {}
    # resolved again with the memo the mutants' plans share, so its rows are the very objects theirs
    # are but for the rows a mutant changes (Note [Identity memo] in charter.memo)
    plan = resolve_artifact(loaded, model_plan, memo=memo)
    model = cs.contracts[plan.model]
    text = checker_text(plan)
    checker = checker_module(plan, text=text)
    accepted = AcceptedStrings()
    try:
        view, raw = _conforming_header(artifact_path, plan.format, accepted)
    except (CharterError, OSError, ValueError):  # the reader's rejection, as the unchanged checker reports it
        raise BrokenBaseline(admit(str(artifact_path), checker, require_status=plan.status)) from None
    baseline = admit_view(view, str(artifact_path), checker, require_status=plan.status)
    if not baseline.admitted:
        raise BrokenBaseline(baseline)
    return Battery(artifact_path, loaded, model, plan, checks_of(plan), checker, view, raw, checker_text=text,
                   model_plan=model_plan, tensor_memo=memo, accepted=accepted)


def _conforming_header(path: Path, fmt: str, accepted: AcceptedStrings) -> tuple[ArtifactView, bytes]:
    """The conforming file's view and its header's bytes, from one parse of the mapped file. Its
    table is the first `accepted` holds, and its view the battery's: the records, tensor infos and
    entries of a mutant's header are its own where nothing moved (Note [Finished records])."""
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        view = parse_view(mapped, len(mapped), fmt, accepted)
        raw = mapped[:view.data_offset]
        accepted.based_on(raw)
        return view, raw
    finally:
        with contextlib.suppress(BufferError):  # a live traceback holds a view; freed later
            mapped.close()


def checker_text(plan: ArtifactPlan) -> str:
    """The generated checker of `plan`, as the battery renders it in memory."""
    return render_checker_text(plan, _checker_header(plan))


def _checker_header(plan: ArtifactPlan) -> str:
    return f"# in-memory checker for {plan.id}"


def checker_module(plan: ArtifactPlan, pieces: Pieces | None = None, text: str | None = None,
                   checks: list[Check] | None = None) -> types.ModuleType:
    """The generated checker of `plan` (`text`, else rendered), executed in memory (never written to
    disk); with `pieces`, rendered and executed without what it shares with the checkers executed
    before (Note [Incremental battery] in charter.mutation.assemble), from `checks` if the caller
    has checks_of(plan) already."""
    name = f"charter_battery_{plan.id.replace('-', '_').replace('.', '_')}"
    if pieces is not None:
        return pieces.checker(plan, _checker_header(plan), name, checks)
    text = checker_text(plan) if text is None else text
    module = types.ModuleType(name)
    exec(compile(text, module.__name__, "exec"), module.__dict__)
    return module


@gc_paused()  # tens of thousands of mutants, none in a cycle: the collections cost half the time (1,000 tensors)
def all_mutants(b: Battery, only: str | None = None) -> list[Mutant]:
    out: list[Mutant] = []
    if only in (None, "artifact"):
        ops = gguf_ops if b.plan.format == "gguf" else safetensors_ops
        out.extend(ops.mutants(b.view.header, b.raw_header, b.plan))
        if b.plan.stores:
            out.extend(store_ops.mutants(b.view.header, b.raw_header, b.plan, overlay_reader(b, b.view, {})))
        out.extend(value_ops.mutants(b.view, b.raw_header, b.plan, overlay_reader(b, b.view, {})))
    if only in (None, "contract"):
        out.extend(contract_ops.mutants(b.loaded.doc.data, b.model.doc.data))
    return out


def prepare_cpp(b: Battery, mutants: list[Mutant], cache: Path, jobs: int = 2, compiled_in: bool = True,
                known: dict[int, str] | None = None) -> int:
    """Compile and load the C++ checker of every contract mutant whose checker the Python battery
    runs (its contract resolves, and a generated check changed), and, unless charter._native holds
    a current one (`compiled_in`), the unchanged contract's: how many. For `engines == "both"`;
    raises charter.engines.cpp.EngineUnavailable (charter.engines.library.LibraryError). The
    mutants' checker keys are computed in `jobs` workers, unless `known` holds them ({id(mutant):
    key}, None for none: the verdict cache's lookup worked them out), and kept for the run
    (`cpp_key_of`); a plan is resolved again here only for a checker the cached library does not hold."""
    from charter.engines import library

    todo = [m for m in mutants if m.side == "contract" and m.make is not None]
    if known is None:
        keys = in_workers(len(todo), lambda i: checker_key_of(contract_step(b, todo[i])), jobs, pack=lambda key: key)
    else:
        keys = [known.get(id(m)) for m in todo]
    b.cpp_key_of = {id(m): key for m, key in zip(todo, keys) if key is not None}
    by_key = {key: m for m, key in zip(todo, keys) if key is not None}
    plans = _Plans(b, by_key)
    if not compiled_in:
        plans.kept[library.checker_key(b.plan)] = b.plan
    if plans:
        b.cpp_keys = library.load(plans, cache, jobs)
    b.cpp_key = b.plan.id if compiled_in else library.checker_key(b.plan)
    return len(plans)


def checker_key_of(step: ContractStep) -> str | None:
    """The library key of a contract mutant's C++ checker; None when its checker never runs."""
    from charter.engines import library

    return library.checker_key(step.plan) if step.plan is not None else None


class _Plans(Mapping):
    """{checker key: plan} for charter.engines.library, each mutant's plan resolved when asked for
    (only to render a checker the cache does not hold)."""

    def __init__(self, b: Battery, by_key: dict[str, Mutant]) -> None:
        self.b, self.by_key, self.kept = b, by_key, {}

    def __getitem__(self, key: str) -> ArtifactPlan:
        if key not in self.kept:
            self.kept[key] = contract_step(self.b, self.by_key[key]).plan
        return self.kept[key]

    def __contains__(self, key) -> bool:
        return key in self.by_key or key in self.kept

    def __iter__(self):
        return iter(dict.fromkeys([*self.by_key, *self.kept]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*self.by_key, *self.kept]))


def companion(b: Battery, plan: ArtifactPlan) -> bytes | str | None:
    """The companion file a plan's `config` binds, beside the battery's artifact, as the C++ engine
    takes it (charter.engines.cpp.read_companion), read once per battery; None without `config`."""
    from charter.engines import cpp

    file = value_of(plan.config_file)
    if file is None:
        return None
    if file not in b.companions:
        b.companions[file] = cpp.read_companion(b.artifact_path, file)
    return b.companions[file]


def run_mutant(b: Battery, m: Mutant) -> Outcome:
    return run_seen(b, m).outcome


class Seen(NamedTuple):
    """A mutant's outcome; what the Python engine read of an artifact mutant's file: its view, None
    if the reader refused it, UNREAD otherwise (a contract mutant, a crash); and a contract
    mutant's C++ half still to run (CppPending), if deferred."""

    outcome: Outcome
    view: object = UNREAD
    pending: CppPending | None = None


@dataclass(frozen=True)
class CppPending:
    """A contract mutant run with both engines but its C++ checker, whose library is built once
    every mutated contract's checker key is known: that checker (`key`, run with `options`) must
    then say of the conforming header what the Python checker said (`python`); `said` is the Python
    checker's diagnostic (stage, code, field) and `enforced` the changed checks, for the outcome of
    a disagreement. The payload stage, which the C++ engine leaves to Python, ran in the Python run
    as both engines run it (payload_scans)."""

    key: str
    options: engines.Options
    python: engines.Verdict
    said: tuple
    enforced: str


def run_seen(b: Battery, m: Mutant, made: tuple | None = None, step: ContractStep | None = None,
             defer_cpp: bool = False) -> Seen:
    """The mutant's outcome and what its run leaves (Seen). `made` (the file an artifact mutant
    makes) and `step` (a contract mutant's contract_step) spare making them again when the verdict
    cache already did; `defer_cpp`: with both engines, a contract mutant's C++ half is left to
    finish_cpp."""
    if m.make is None:
        return Seen(Outcome(m, Verdict.EQUIVALENT, detail=m.equivalent or ""))
    try:
        if m.side == "artifact":
            return Seen(*_run_artifact(b, m, made or m.make()))
        return _run_contract(b, m, step, defer_cpp)
    except Exception as exc:  # a crash is a finding, not a verdict to hide
        return Seen(Outcome(m, Verdict.ERROR, detail=f"{type(exc).__name__}: {exc}"))


def finish_cpp(b: Battery, m: Mutant, outcome: Outcome, p: CppPending) -> Outcome:
    """A deferred contract mutant's outcome (CppPending), its checker library loaded (prepare_cpp)."""
    said = _cpp_header_disagreement(b, p.key, p.options, p.python)
    return Outcome(m, Verdict.ERROR, *p.said, said, p.enforced) if said else outcome


def _run_artifact(b: Battery, m: Mutant, made: tuple) -> tuple[Outcome, ArtifactView | None]:
    buf, size = made[0], made[1]
    patches = made[2] if len(made) > 2 else {}
    values = value_ops.is_value_mutant(m)
    admitted = values and header_admitted(b, buf, size)
    outcome, view, python = _python_artifact(b, m, buf, size, patches, values, admitted)
    if b.engines == "both":
        from charter.engines import cpp

        # Store mutants patch the data section: the C++ checker reads its store regions through the
        # same overlay reader the Python engine read them with (Note [Store regions]).
        read_at = overlay_reader(b, view, patches) if view is not None else None
        said = engines.disagreement(python.header_only() if values else python,
                                    _cpp_conforming(b) if admitted else
                                    cpp.run(b.cpp_key or b.plan.id, buf, size, b.options(b.plan), read_at=read_at,
                                            reference=cpp_reference(b)))
        if said:
            return Outcome(m, Verdict.ERROR, outcome.stage, outcome.code, outcome.field, detail=said), view
    return outcome, view


def _cpp_conforming(b: Battery) -> engines.Verdict:
    """The C++ checker's verdict on the conforming header, once per battery process: what it says of
    every value mutant that keeps that header (Note [Admitted header]: the same bytes, size and
    options, and no store region to read)."""
    from charter.engines import cpp

    if b.cpp_conforming is None:
        b.cpp_conforming = cpp.run(b.cpp_key or b.plan.id, b.raw_header, b.view.file_size, b.options(b.plan),
                                   read_at=overlay_reader(b, b.view, {}), reference=cpp_reference(b))
    return b.cpp_conforming


def cpp_reference(b: Battery):
    """The conforming header parsed once by the C++ reader, in each battery process: every C++ run
    over it skips the parse, and runs over mutated headers hash only the values they changed
    (Note [Reference header] in native/include/charter/reference.hpp)."""
    from charter.engines import cpp

    if b.cpp_reference is None:
        b.cpp_reference = cpp.reference(b.plan.format, b.raw_header, b.view.file_size, b.options(b.plan))
    return b.cpp_reference


def _python_artifact(b: Battery, m: Mutant, buf, size: int, patches, values: bool, admitted: bool
                     ) -> tuple[Outcome, ArtifactView | None, engines.Verdict]:
    """The Python engine's outcome, the view it read (None if the reader rejected) and its verdict;
    `values`: a value mutant, `admitted`: its header is the admitted one (header_admitted)."""
    try:
        view = b.view if admitted else parse_view(buf, size, b.plan.format, b.accepted)
    except CharterError as exc:
        d = exc.diagnostics[0]
        return (judge(m, False, d.stage.value, d.code.value, d.field, d.message), None,
                engines.Verdict.rejected(Stage.CONTAINER, d))
    report = admit_view(view, str(b.artifact_path), b.checker, require_status=b.require_status,
                        reader=overlay_reader(b, view, patches), verify_payload=values,
                        payload_reader=whole_file_reader(b, buf, view, patches) if values else None,
                        native_values=payload_scans(b),
                        verified_prefix=prefix_for(b, buf, size, patches) if values else None,
                        header_admitted=admitted)
    return _from_report(m, report), view, engines.Verdict.of_report(report)


def payload_scans(b: Battery) -> bool | str:
    """How the Python run's payload stage scans values: with both engines, by numpy and by
    charter/values.hpp, compared chunk by chunk (values.BOTH). The stage is otherwise the same
    Python code in both engines (the C++ engine leaves it to Python: charter.engines.cpp), so one
    stream gives both engines' verdicts; a difference is an error (values.ScannersDisagree)."""
    from charter.admission.values import BOTH

    return BOTH if b.engines == "both" else False


def verified_prefixes(b: Battery, mutants: list[Mutant]) -> dict[int, VerifiedPrefix]:
    """The verified prefixes (Note [Verified prefix] in charter.admission.runtime) of the
    conforming file where `mutants` start to differ from it (each value mutant's first changed
    value block, and the file's end for a contract mutant changing only the file digest), recorded
    by the unchanged checker's payload stage in one pass, if it admits the file; else none, and
    every mutant streams its whole file."""
    recorder = PrefixRecorder([*_first_blocks(b, mutants), b.view.file_size])
    report = admit_view(b.view, str(b.artifact_path), b.checker, require_status=b.require_status,
                        verify_payload=True, prefixes=recorder)
    return {} if report.diagnostic is not None else recorder.prefixes


def _first_blocks(b: Battery, mutants: list[Mutant]):
    """Where each value mutant's first patch's value block starts: a whole number of blocks from
    its tensor's start, as the payload stage may resume there."""
    block_bytes, tensors = block_bytes_of(b.plan.format), sorted(b.view.tensors, key=lambda t: t.start)
    starts = [t.start for t in tensors]
    for m in mutants:
        if value_ops.is_value_mutant(m):
            first = min(m.make()[2])
            at = bisect.bisect_right(starts, first) - 1
            if at >= 0:  # (value mutants patch tensors: a patch before them has no block to resume at)
                t = tensors[at]
                size = block_bytes(t.codec)
                yield t.start + (first - t.start) // size * size


def header_admitted(b: Battery, buf, size: int) -> bool:
    """Note [Admitted header]
    ~~~~~~~~~~~~~~~~~~~~~~~~~
    A value mutant patches tensor bytes and keeps the conforming header, and the battery starts
    only once the unchanged checker has admitted that header (load_battery: every stage but
    payload, with the contract's own status required, as every mutant runs). The stages before
    payload read the parsed header, the companion file beside the artifact and, for embedded
    stores only, the data section; and they leave nothing the payload stage reads (the `exclude`
    patterns are the tensors stage's). So for a mutant whose header bytes and file size are the
    conforming file's, in a battery without stores, parsing again and running those stages again
    would give the battery's view and pass them all: the view is reused and the stages are
    recorded as passed. The payload stage runs as before, over the mutant's bytes. With both
    engines, the C++ checker's verdict on those same header bytes, size and options is computed
    once (_cpp_conforming); the payload stage runs per mutant, scanned as both engines scan it
    (payload_scans)."""
    return b.shared_header and not b.plan.stores and size == b.view.file_size \
        and (buf is b.raw_header or buf == b.raw_header)


def prefix_for(b: Battery, buf, size: int, patches: dict[int, bytes]) -> VerifiedPrefix | None:
    """The longest verified prefix a value mutant keeps unchanged: its header is the conforming
    one and no patch starts before the prefix ends."""
    if not b.prefixes or not patches or size != b.view.file_size or buf != b.raw_header:
        return None
    ends = _prefix_ends(b.prefixes)
    at = bisect.bisect_right(ends, min(patches))
    return b.prefixes[ends[at - 1]] if at else None


_prefix_ends = IdMemo(sorted, bound=1)  # a battery's verified prefixes' ends, sorted once


def _digest_only(b: Battery, prediction: Prediction) -> VerifiedPrefix | None:
    """The prefix at the file's end for a contract mutant whose checker differs from the unchanged
    one only in the file digest it pins (Note [Verified prefix]): its payload stage compares that
    digest and nothing else differs. `prediction.changed` holds the payload check it replaced."""
    pinned = next((c for c in b.checks if isinstance(c, checks.Payload)), None)
    if not b.prefixes or pinned is None or pinned.file_sha256 is None:
        return None
    changed = [c for c in prediction.changed if c != pinned]
    if len(changed) != 1 or not isinstance(changed[0], checks.Payload) or changed[0].file_sha256 is None \
            or dataclasses.replace(changed[0], file_sha256=pinned.file_sha256, at=pinned.at) != pinned:
        return None
    return b.prefixes.get(b.view.file_size)


def whole_file_reader(b: Battery, header: bytes, view: ArtifactView, patches: dict[int, bytes]):
    """The mutant's whole file, as the payload stage streams it: its header, then its data section."""
    data = overlay_reader(b, view, patches)

    def read(offset: int, length: int) -> bytes:
        head = header[offset:offset + length] if offset < len(header) else b""
        rest = length - len(head)
        return head + (data(offset + len(head), rest) if rest else b"")

    return read


def overlay_reader(b: Battery, view: ArtifactView, patches: dict[int, bytes]):
    """Reads the mutant's data section: the conforming file's bytes, moved with the data offset (a
    re-serialized header may grow), with the mutant's byte patches laid over them."""
    shift = view.data_offset - b.view.data_offset

    def read(offset: int, length: int) -> bytes:
        start = offset - shift
        if start < b.view.data_offset:
            return b""
        with open(b.artifact_path, "rb") as f:
            data = os.pread(f.fileno(), length, start)
        out = None  # most chunks: the conforming bytes, not copied
        for at, patch in patches.items():
            lo, hi = max(at, offset), min(at + len(patch), offset + len(data))
            if lo < hi:
                out = bytearray(data) if out is None else out
                out[lo - offset:hi - offset] = patch[lo - at:hi - at]
        return data if out is None else bytes(out)

    return read


def _from_report(m: Mutant, report) -> Outcome:
    d = report.diagnostic
    if d is None:
        return judge(m, True, None, None, None)
    outcome = judge(m, False, d.stage, d.code, d.field, d.message)
    return dataclasses.replace(outcome, location=str(d.location)) if d.location is not None else outcome


@dataclass(frozen=True)
class ContractStep:
    """A contract mutant up to its checker: decided already (`outcome`: refused by the contract
    language, or no generated check changed), else its plan and the prediction its checker's run
    is judged against. Everything its verdict depends on but that run (Note [Verdict cache])."""

    outcome: Outcome | None = None
    plan: ArtifactPlan | None = None
    prediction: Prediction | None = None
    checks: list[Check] | None = None  # checks_of(plan), worked out once for the prediction and the checker


def contract_step(b: Battery, m: Mutant) -> ContractStep:
    artifact_data, model_data = m.make()
    try:
        plan = _resolve(b, artifact_data, model_data)
    except CharterError as exc:
        d = exc.diagnostics[0] if exc.diagnostics else None
        refused = dataclasses.replace(m, expect=Expect(Stage.SPEC))
        outcome = judge(refused, False, "spec", d.code.value if d else None, d.field if d else None,
                        "refused by the contract language: " + (d.render() if d else ""))
        return ContractStep(dataclasses.replace(outcome, enforced_by=f"contract loading ({d.code.value if d else '?'})"))
    after = checks_of(plan)
    prediction = predict(b.checks, after, b.view, b.require_status, b.artifact_path.parent, b.artifact_path)
    if prediction.changed:
        return ContractStep(plan=plan, prediction=prediction, checks=after)
    if m.equivalent:
        return ContractStep(Outcome(m, Verdict.EQUIVALENT, detail=m.equivalent))
    if m.target.startswith("model:"):
        return ContractStep(Outcome(m, Verdict.EQUIVALENT, detail=f"a model fact this artifact profile does not "
                                                                  f"state: no check of {b.plan.id} depends on it"))
    return ContractStep(Outcome(m, Verdict.SURVIVED, detail="no generated check changed: the generator ignores this leaf"))


def _run_contract(b: Battery, m: Mutant, step: ContractStep | None = None, defer_cpp: bool = False) -> Seen:
    step = step or contract_step(b, m)
    if step.outcome is not None:
        return Seen(step.outcome)
    plan, prediction = step.plan, step.prediction
    enforced = "; ".join(dict.fromkeys(_describe(c) for c in prediction.changed))
    checker = checker_module(plan, b.pieces, checks=step.checks)
    payload = prediction.expect is not None and prediction.expect.stage is Stage.PAYLOAD
    try:
        report = admit_view(b.view, str(b.artifact_path), checker, require_status=b.require_status,
                            verify_payload=payload, native_values=payload_scans(b),
                            verified_prefix=_digest_only(b, prediction) if payload else None)
    finally:  # its functions and its namespace hold each other: freed now, not by the next collection
        checker.__dict__.clear()
    d = report.diagnostic
    said_by = (d and d.stage, d and d.code, d and d.field)
    if b.engines == "both" and defer_cpp:
        pending = CppPending(checker_key_of(step), b.options(plan), engines.Verdict.of_report(report), said_by,
                             enforced)
        return Seen(_python_contract(b, m, prediction, report, enforced), pending=pending)
    said = _cpp_contract_disagreement(b, m, plan, report) if b.engines == "both" else None
    if said:
        return Seen(Outcome(m, Verdict.ERROR, *said_by, said, enforced))
    return Seen(_python_contract(b, m, prediction, report, enforced))


def _python_contract(b: Battery, m: Mutant, prediction: Prediction, report, enforced: str) -> Outcome:
    """A contract mutant's outcome from its Python checker's `report` against its `prediction`."""
    expect = prediction.expect
    if expect is None:
        what = ", ".join(sorted({c.method for c in prediction.changed}))
        reason = m.equivalent or f"changed checks ({what}) still hold for this artifact: a relaxation"
        if report.diagnostic is None:
            return Outcome(m, Verdict.EQUIVALENT, detail=reason, enforced_by=enforced)
        d = report.diagnostic
        return Outcome(m, Verdict.REGRESSION, d.stage, d.code, d.field, f"predicted admission; {d.message}",
                       enforced)
    outcome = _from_report(dataclasses.replace(m, expect=expect), report)
    return _cited(b, dataclasses.replace(outcome, enforced_by=enforced), report.diagnostic)


def _cited(b: Battery, outcome: Outcome, d) -> Outcome:
    """A killed contract mutant must cite the fact it changed (Note [Location oracle])."""
    if outcome.verdict is not Verdict.KILLED or d is None:
        return outcome
    m = outcome.mutant
    where = cited_locations(b, m)
    cited = str(d.location) if d.location is not None else None
    if cited in where:
        return outcome
    return dataclasses.replace(outcome, verdict=Verdict.REGRESSION,
                               detail=f"cites {cited or 'no contract location'}, not the changed fact "
                                      f"({' or '.join(sorted(where)) or 'unlocated'}); {outcome.detail}")


def cited_locations(b: Battery, m: Mutant) -> frozenset[str]:
    """The locations a diagnostic may cite after contract mutant `m` (charter.mutation.locations.
    allowed), once per leaf and operator kind: the verdict cache's key and _cited both ask, and a
    leaf that names a constant walks every string of both documents."""
    side, dropped = m.target.split(":", 1)[0], m.operator.startswith("drop")
    key = (side, m.leaf, dropped)
    if key not in b.cited:
        b.cited[key] = frozenset(locations.allowed(b.loaded.doc, b.model.doc, side, m.leaf, dropped=dropped))
    return b.cited[key]


def _cpp_contract_disagreement(b: Battery, m: Mutant, plan: ArtifactPlan, report) -> str | None:
    """What the C++ checker generated from the mutated contract says, if it differs from the Python
    report. The C++ engine never runs the payload stage (charter.engines.cpp): where Python rejects
    at payload, the C++ checker must admit the header; the payload stage itself ran as both engines
    run it (payload_scans)."""
    from charter.engines.library import checker_key

    key = b.cpp_key_of.get(id(m)) or checker_key(plan)  # prepare_cpp's, of this mutant's plan
    return _cpp_header_disagreement(b, key, b.options(plan), engines.Verdict.of_report(report))


def _cpp_header_disagreement(b: Battery, key: str, options: engines.Options, python: engines.Verdict) -> str | None:
    """How the loaded C++ checker `key` differs from the Python verdict on the conforming header
    (header stages), if it does; an error when no checker was built under `key`."""
    from charter.engines import cpp

    if key not in b.cpp_keys:
        return "no C++ checker was built for this mutated contract (prepare_cpp)"
    said = cpp.run(key, b.raw_header, b.view.file_size, options, read_at=overlay_reader(b, b.view, {}),
                   reference=cpp_reference(b))
    return engines.disagreement(python.header_only(), said)


def _describe(c: Check) -> str:
    """A short name for a generated check, as `--trace` prints it: `stage: ctx.method(subject)`."""
    return f"check_{c.stage.value}: ctx.{c.method}({_subject(c)!r})"


def _subject(c: Check) -> object:
    """The key, name or value a check is about; "table" for a check of rows."""
    match c:
        case (checks.Identity() | checks.Value() | checks.StringDigest() | checks.ArrayFact() | checks.SpecialId()
              | checks.StopId() | checks.TokenDomain()):
            return c.key
        case checks.ExpertMajorStore() | checks.PleStore():
            return c.name
        case checks.ContainerFormat():
            return c.format
        case checks.ContainerVersion():
            return c.version
        case checks.ContainerAlignment() | checks.Layout():
            return c.alignment
        case checks.ContainerHeaderAligned():
            return c.aligned
        case checks.LogitsRows():
            return c.tensor
        case checks.Config():
            return c.file
        case checks.Status():
            return c.status
        case checks.Payload():
            return c.file_sha256
        case checks.MetaTypes() | checks.MetaKeySet() | checks.Exclude() | checks.Tensors() | checks.Codecs() \
                | checks.Exclusions():
            return "table"
        case _:
            assert_never(c)


def _resolve(b: Battery, artifact_data: dict, model_data: dict) -> ArtifactPlan:
    model = _reload(b.model, model_data)
    artifact = _reload(b.loaded, artifact_data)
    if artifact.contract.model != model.id:
        from charter.diagnostics import Code, Diagnostic

        raise CharterError([Diagnostic(Code.REF_DANGLING, "model", f"no model {artifact.contract.model!r}")])
    if model is b.model:  # an artifact leaf changed: the model resolves as it did for the battery
        return resolve_artifact(artifact, b.model_plan, memo=b.tensor_memo)
    return resolve_artifact(artifact, resolve_model(model), memo=b.tensor_memo)


def _reload(original: LoadedContract, data: dict) -> LoadedContract:
    """The contract of a mutant's document. Its data shares every subtree but the changed path with
    the original (charter.mutation.contract_ops), so the original's validated models stand in for
    the shared subtrees and Pydantic validates only what changed (Note [Incremental battery])."""
    if data is original.doc.data:
        return original
    key = _one_changed(original.doc.data, data)
    doc = _document(original.doc, data, key)
    contract = _revalidated(original, doc, key)
    if contract is None:
        shared = _validated_where_shared(data, original.doc.data, original.contract)
        contract = contract_from_document(dataclasses.replace(doc, data=shared))
    return LoadedContract(contract, doc, original.path)


def mutant_document(original: Document, data) -> Document:
    """The document of a mutant's `data`: the original's locations by path, but where one item of a
    top-level list is dropped, whose later items keep their own (DroppedItem: a 1,000-row drop
    mutant then resolves, renders and compiles no row again; each row located one row up did)."""
    return _document(original, data, _one_changed(original.data, data))


def _document(original: Document, data, key: str | None) -> Document:
    """mutant_document, `key` the one top-level key `data` changed (_one_changed)."""
    locations = original.locations
    new, was = (data[key], original.data[key]) if key is not None else (None, None)
    if isinstance(new, list) and isinstance(was, list) and len(new) == len(was) - 1:
        j, _, between = shared_ends(new, was)
        if not between:  # `was` but its item j
            locations = DroppedItem(locations, (key,), j)
    return Document(data, locations, original.source, original.file)


def _one_changed(old, data) -> str | None:
    """The top-level key whose value `data` does not share with `old`, if it is the only one."""
    if not (isinstance(data, dict) and isinstance(old, dict) and data.keys() == old.keys()):
        return None
    changed = [k for k in data if data[k] is not old[k]]
    return changed[0] if len(changed) == 1 else None


def _revalidated(original: LoadedContract, doc: Document, key: str | None):
    """The contract when only top-level field `key` changed, Pydantic validating that field alone
    (_revalidated_items for a list of models, else _revalidated_field); a refusal is what validating
    the whole document says. None when more than one field changed, or for `charter` and `kind`
    (Note [Incremental battery])."""
    field = type(original.contract).model_fields.get(key) if key not in _CHECKED_FIRST else None
    if field is None or field.alias:
        return None
    (item,) = get_args(field.annotation) if get_origin(field.annotation) is list else (None,)
    if isinstance(item, type) and issubclass(item, BaseModel) and not field.metadata \
            and isinstance(doc.data[key], list):
        return _revalidated_items(original, doc, key, item)
    return _revalidated_field(original, doc, key)


def _revalidated_items(original: LoadedContract, doc: Document, key: str, item: type[BaseModel]):
    """A list of models changed (a tensor row, an exclusion): the new items are validated alone,
    the others are the original's, and the contract's own validators run over the result (each
    item's errors at its path)."""
    old, data = original.doc.data, doc.data
    new, old_items = data[key], old[key]
    if len(new) == len(old_items):  # items in their places: those not the original's found in C
        fresh = changed_at(new, old_items)
        items = list(getattr(original.contract, key))
        for j in fresh:
            items[j] = None
    else:
        items = list(map(_validated_items(original, key).get, map(id, new)))  # None: not the original's
        fresh = list(itertools.compress(itertools.count(), map(operator.is_, items, itertools.repeat(None))))
    errors = []
    for j in fresh:
        try:
            items[j] = item.model_validate(new[j])
        except ValidationError as exc:
            errors.extend(refusal(exc, doc, (key, j)).diagnostics)
    if errors:
        raise CharterError(errors)
    try:
        return type(original.contract).model_validate(original.contract.model_copy(update={key: items}))
    except ValidationError as exc:
        raise refusal(exc, doc) from None


def _revalidated_field(original: LoadedContract, doc: Document, key: str):
    """Any other field changed: validated by the contract model's own schema (Pydantic's
    validate_assignment, on a copy), the subtrees it shares with the original standing in as their
    validated models, then the model's validators over the result. The rest of the contract is not
    walked again (a whole validation runs every tensor row's validator, 1,000 at 1,000 rows, even
    for the rows it takes as they are); the other fields are valid models, so only this one's
    errors, or the model's validators', are found, as the whole validation finds them."""
    contract = original.contract.model_copy()
    try:
        return type(contract).__pydantic_validator__.validate_assignment(
            contract, key, _validated_where_shared(doc.data[key], original.doc.data[key], getattr(contract, key)))
    except ValidationError as exc:
        raise refusal(exc, doc) from None


_CHECKED_FIRST = ("charter", "kind")  # contract_from_document refuses a bad one before Pydantic reads it


def _validated_items(original: LoadedContract, key: str) -> dict[int, BaseModel]:
    """id(item of the document's list `key`) -> the model validated from it, once per contract."""
    kept = _ITEMS.get((id(original), key))
    if kept is None or kept[0] is not original:
        kept = _ITEMS[(id(original), key)] = (original, {id(o): v for o, v in zip(original.doc.data[key],
                                                                               getattr(original.contract, key))})
    return kept[1]


_ITEMS: dict[tuple[int, str], tuple[LoadedContract, dict]] = {}


def _validated_where_shared(data, original, validated):
    """`data` with each subtree it shares (by identity) with `original` replaced by the model that
    validating `original` built for it. A model instance validates as itself (Pydantic's
    revalidate_instances="never"), and validating the same data again would build an equal model, so
    the contract is the one a full validation builds; model validators of every enclosing model run."""
    if isinstance(validated, BaseModel):
        if data is original:
            return validated
        if not (isinstance(data, dict) and isinstance(original, dict)):
            return data
        names = {f.alias or name: name for name, f in type(validated).model_fields.items()}
        return {k: _validated_where_shared(v, original.get(k), getattr(validated, names[k]))
                if k in names and k in original else v for k, v in data.items()}
    if isinstance(validated, (list, tuple)) and isinstance(data, list) and isinstance(original, list) \
            and len(validated) == len(original):
        by_id = {id(o): v for o, v in zip(original, validated) if isinstance(v, BaseModel)}
        return [by_id[id(d)] if id(d) in by_id else
                _validated_where_shared(d, original[j], validated[j]) if j < len(original) else d
                for j, d in enumerate(data)]
    if isinstance(validated, dict) and isinstance(data, dict) and isinstance(original, dict):
        return {k: _validated_where_shared(v, original[k], validated[k]) if k in original and k in validated else v
                for k, v in data.items()}
    return data


# --- running many ------------------------------------------------------------------------------

_ONE: Callable[[int], object] | None = None  # the mutant runner that forked workers share
_PACK: Callable[[object], object] | None = None  # what a worker sends back of its result


_LEAD: "Lead | None" = None  # the items one task runs its own way


def _work(indices: list[int] | None) -> list[tuple[int, object]]:
    """A task's results: its items', or (None) the lead's (Lead)."""
    if indices is None:
        return _LEAD.run() or []
    return [(i, _PACK(_ONE(i))) for i in indices]


def picklable(o: Outcome) -> Outcome:
    m = o.mutant
    return dataclasses.replace(o, mutant=Mutant(m.side, m.target, m.operator, m.expect, None, m.equivalent, m.leaf))


def default_signals() -> None:
    """A worker dies quietly when the pool terminates it: the parent's handler (charter.cli turns
    SIGTERM into an exception, for its own cleanup) would print a traceback from a worker that is
    already exiting."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def run(b: Battery, mutants: list[Mutant], jobs: int = 1,
        progress: Callable[[int, int, Outcome], None] | None = None) -> list[Outcome]:
    """Outcomes in mutant order; `jobs` > 1 forks workers that share the parsed battery."""
    with frozen_heap():
        return in_phases(b, mutants, lambda i: run_mutant(b, mutants[i]), jobs, progress)


def in_phases(b: Battery, mutants: list[Mutant], one: Callable[[int], object], jobs: int = 1,
              progress: Callable | None = None, pack: Callable = picklable) -> list:
    """`in_workers` over `mutants`, with the verified prefixes (verified_prefixes) recorded on
    the way: the mutants that resume from one (resumes) run once the prefixes are recorded, in the
    process that recorded them, first of all (in_workers' Lead): with workers, the first of them
    records the prefixes (one pass over the whole file, a piece of work no other can share) and then
    runs the resuming mutants, which cost little from a prefix, while the others run the rest. A
    pass that admits nothing to resume from leaves them to run last, each streaming its file, in
    every worker."""
    chunk = neighbours(len(mutants), jobs)
    later = [i for i, m in enumerate(mutants) if resumes(m)] if b.prefixes is None else []
    if later and not passes_whole_file(b):
        prepare(b, [mutants[i] for i in later])  # no pass, no lead: each resuming mutant streams its own file
        later = []
    if not later:
        return in_workers(len(mutants), one, jobs, progress, pack, chunk)
    done = [0]

    def arrived(_: int, __: int, result) -> None:
        done[0] += 1
        if progress:
            progress(done[0], len(mutants), result)

    def lead() -> list[tuple[int, object]] | None:
        prepare(b, [mutants[i] for i in later])
        return [(i, pack(one(i))) for i in later] if b.prefixes else None

    out = in_workers(len(mutants), one, jobs, arrived, pack, chunk, Lead(later, lead))
    left = [i for i in later if out[i] is None]
    if left:
        b.prefixes = {}  # what the lead's pass found (prepare), in this process too: nothing to resume from
        for i, result in zip(left, in_workers(len(left), lambda j: one(left[j]), jobs, arrived, pack)):
            out[i] = result
    return out


def prepare(b: Battery, mutants: list[Mutant]) -> None:
    """What the process running `mutants` needs first, worked out once (in_phases: in the worker
    that runs them, while the others run the rest)."""
    if b.prefixes is None and any(map(resumes, mutants)):
        b.prefixes = verified_prefixes(b, mutants) if passes_whole_file(b) else {}


def passes_whole_file(b: Battery) -> bool:
    """Whether the battery streams its file once, for verified prefixes and the verdict cache's
    key (WHOLE_FILE_PASS_MAX)."""
    return b.view.file_size <= WHOLE_FILE_PASS_MAX


def resumes(m: Mutant) -> bool:
    """Whether `m` may run from a verified prefix (prepare): a value mutant, or the contract mutant
    of the file digest. The others can run while the prefixes are recorded (in_phases)."""
    return value_ops.is_value_mutant(m) or m.target.endswith("payload.file_sha256")


class Lead(NamedTuple):
    """Items of in_workers that one task runs before any other, its own way (`run()`: their
    (index, result) pairs, or None to leave them unrun): in_phases records the verified prefixes
    there, work that only the process that did it then holds, and runs what resumes from them."""

    items: list[int]
    run: Callable[[], list[tuple[int, object]] | None]


def in_workers(count: int, one: Callable[[int], Outcome], jobs: int = 1,
               progress: Callable[[int, int, Outcome], None] | None = None, pack: Callable = picklable,
               chunk: int = 8, lead: Lead | None = None) -> list:
    """`pack(one(i))` for i in range(count), in that order; `jobs` > 1 forks workers that share
    everything `one` closes over (a battery, its checkers, its mutants), each taking up to `chunk`
    consecutive items at a time (tasks), and report each result to `progress` as it arrives. By default
    results are outcomes without their mutant function (picklable). The items of `lead` are the
    first task's (Lead); those it leaves unrun are None."""
    global _ONE, _PACK, _LEAD
    results: list = [None] * count
    leading = set(lead.items) if lead else set()
    rest = [i for i in range(count) if i not in leading]
    work: list = [rest[t.start:t.stop] for t in tasks(len(rest), chunk, max(jobs, 1))]
    if lead:
        work.insert(0, None)  # the lead's task: the first a worker takes
    _ONE, _PACK, _LEAD = one, pack, lead
    try:
        with contextlib.ExitStack() as stack:
            if jobs <= 1:
                arriving = map(_work, work)
            else:
                # each chunk one task: the last ones short (tasks), the lead's first
                pool = stack.enter_context(multiprocessing.get_context("fork").Pool(jobs, initializer=default_signals))
                arriving = pool.imap_unordered(_work, work)
            n = 0
            for got in arriving:
                for i, result in got:
                    n += 1
                    results[i] = result
                    if progress:
                        progress(n, count, result)
    finally:
        _ONE, _PACK, _LEAD = None, None, None
    return results


def tasks(count: int, chunk: int, jobs: int) -> list[range]:
    """range(count) in consecutive tasks of `chunk` items, shorter toward the end: none longer than
    a quarter of a worker's share of what is left (guided self-scheduling), so the last tasks,
    which may end the run alone, are a few mutants each (the 1,000-tensor battery's last 112, its
    model constants at 30 ms each, kept one core busy for a second while the other waited)."""
    out, start = [], 0
    while start < count:
        n = max(1, min(chunk, (count - start) // (4 * jobs)))
        out.append(range(start, start + n))
        start += n
    return out


def neighbours(count: int, jobs: int) -> int:
    """How many consecutive mutants of an artifact battery a worker takes at a time: neighbours
    (one leaf's, one row's) share what the first of them builds in the worker's memos, so a worker
    that runs them all builds it once (the 100-tensor battery 1.63 -> 1.33 s against 8 per task,
    medians of 5 interleaved); at most 128 (tasks shortens those toward the end, where one may end
    the run alone). Not for a
    bundle battery, whose mutants cost tens of milliseconds each (26 s with 8, 28-30 s with 92)."""
    return max(8, min(128, count // (jobs * 8)))


@contextlib.contextmanager
def frozen_heap():
    """The battery (the parsed artifact, its header's strings, the contract, the mutants) lives
    for the whole run: out of the collector's sight, a full collection no longer walks it after
    every few thousand allocations, which cost each mutant time in proportion to the artifact's
    and the contract's size (gc.freeze; forked workers share the frozen pages untouched). And a
    young collection waits for 50,000 allocations, not 700: a mutant's objects (its parsed header,
    its checker's tables) are mostly freed by their reference counts by then, where at 700 the
    collector walked each header just parsed, and moved it to the older generations to walk again
    (a sixth of a 1,000-tensor battery's artifact side). No collection first: it walked the whole
    heap before any worker started (20-30 ms) to find a few dozen unreachable objects, which the
    freeze keeps until the run ends."""
    gc.freeze()
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], 50_000), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def stderr_progress(start: float | None = None) -> Callable[[int, int, Outcome], None]:
    """Progress on stderr: a line every 10% and for every failing verdict."""
    start = start or time.monotonic()
    state = {"next": 0}

    def report(done: int, total: int, outcome: Outcome) -> None:
        if not outcome.verdict.passes:
            print(f"  {outcome.verdict.value}: {outcome.mutant.id} ({outcome.detail})", file=sys.stderr)
        if done * 10 >= state["next"] * total or done == total:
            state["next"] = done * 10 // max(total, 1) + 1
            print(f"[{done}/{total}] {time.monotonic() - start:.1f}s", file=sys.stderr)

    return report
