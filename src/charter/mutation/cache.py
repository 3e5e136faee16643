"""Verdicts of earlier battery runs, reused when nothing that decides them changed.

Note [Verdict cache]
~~~~~~~~~~~~~~~~~~~~
A cached verdict must never be wrong, so each key holds everything the verdict is a function of.
The argument rests on ordered admission (Note [Ordered admission] in charter.admission.runtime):
a checker runs its checks stage by stage, stops at the first that fails, and each check is a
function of its own literals and the artifact, but one: `exclude` sets the patterns the
`tensors` check reads. Both generated checkers render exactly `checks_of(plan)` in that order,
plus the plan's header fields (id, model, spec path, format, status, source).

Every key starts from the battery's context: charter's version and the digest of its sources
(charter.mutation.digests.charter_sources: an editable install's code changes without its
version), with both engines also charter._native and the runtime headers; the engine(s); the
artifact's whole content, its path and the companion file its plan binds; the status admission
requires; the unchanged checker's header fields and its `exclude` check. The artifact's content is
its sha256, remembered by the file's identity (charter.mutation.digests.file_content); a file not
remembered is hashed by the pass that records the battery's verified prefixes, made then
(streamed_digest), not by a pass of its own.

* An **artifact mutant** runs the unchanged checker on a mutated file. Its key adds its id, its
  expected rejection, its declared equivalence and the bytes it makes (size, header, patches:
  the mutant generators read the plan, so an equal id is not an equal file). Which unchanged
  checks its verdict depends on rests on the baseline: the battery runs only when the checker
  admits the conforming artifact (the old contract's run and the new one's alike), and a check
  passes or fails as a function of its literals and the facts of the file it reads
  (charter.contract.checks.reads), so a check that reads no fact the mutant changes passes on
  the mutant under either contract. charter.mutation.facts parses the mutant's header with
  charter's own reader and compares its facts with the conforming file's (a file the reader
  refuses changes everything). Its verdict is then decided by the checks that read a changed
  fact, in order: those of the stages before the one that rejected it, and of that stage up to
  the last whose kind may reject with the diagnostic's code (checks.rejects_with: the checks
  after the one that failed never ran); all of them if it was admitted. A stored verdict is
  reused only if those checks (literals and locations) are the ones it was judged by: then the
  same checks run on the same bytes, in the same order, and every other check passes. The
  header stages never run the payload stage; a value mutant keeps the conforming header, so only
  the checks that read the data section (payload and stores) judge it. The facts a mutant
  changes are a function of its key, so the entry keeps them.
* A **contract mutant** resolves its mutated contract and predicts (charter.mutation.run.
  contract_step: about half its cost); that much runs for every key. Refused by the contract
  language, or with no check changed, the step is its verdict, and the key holds it. Otherwise
  its checker differs from the unchanged one only in the changed checks, and every unchanged
  check passes on the conforming artifact (the baseline), so the run's first failure is among
  the changed checks: the key holds them (literals and locations, in order), the prediction, the
  plan's header fields and the locations the verdict may cite (Note [Location oracle]); with a
  payload prediction also the unchanged payload checks (the baseline runs the header stages
  only), and all checks when `exclude` changed.

So an edit of one leaf reruns the contract mutants whose changed checks, prediction or cited
locations it changes, and the artifact mutants judged by a check it changes; an edit that moves
lines moves every later location, and reruns what cites them. Duplicated ids add their
occurrence index. Crashes (verdict `error`) are never stored.

Unchanged reruns: every key is a function of the context, both contract files (path and text),
the checker and the mutants, so the keys of a run are remembered under the digest of those
(`run_id`, the newest eight runs): a rerun of an unedited contract looks its verdicts up without
making a mutant or resolving a contract.

The store is one JSON file per contract under `<user cache>/charter/<version>/verdicts/`
(`$XDG_CACHE_HOME`, else `~/.cache`), written atomically after each run and bounded to three
times the battery's size (the newest entries win); deleting the directory is always safe.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from charter import __version__, atomic
from charter.contract import checks
from charter.diagnostics import ADMISSION_STAGES, Stage
from charter.edits import forget
from charter.memo import IdMemo
from charter.mutation import facts, run, value_ops
from charter.mutation.digests import charter_sources, edited, file_content, native_sources, sha256
from charter.mutation.mutant import Mutant, Outcome, Verdict
from charter.mutation.shared_records import shared_bytes

_FORMAT = 6
_RUNS = 8  # the runs whose keys are remembered: a few shards, an edit and its revert


def streamed_digest(b: run.Battery, mutants: Sequence[Mutant]) -> str | None:
    """The whole file's digest ("sha256:..."), from the pass that records the verified prefixes of
    `mutants` (run.prepare: made here, once, before any worker forks), if it hashed the file (the
    contract pins its digest) and admitted it; else None. A cold cache's key then costs no second
    pass over the file (a 527 MB file: 0.4 s)."""
    run.prepare(b, mutants)
    end = (b.prefixes or {}).get(b.view.file_size)
    return None if end is None or end.sha256 is None else "sha256:" + end.sha256.hexdigest()


class VerdictCache:
    """The cache of one artifact battery (Note [Verdict cache])."""

    def __init__(self, b: run.Battery, folder: Path, engine: str, mutants: Sequence[Mutant] = ()) -> None:
        """`mutants`: those this run looks up; where the file's digest is not remembered, the pass
        that records the verified prefixes they resume from gives it (streamed_digest)."""
        from charter.contract.plan import value_of

        self.path = folder / "verdicts" / (hashlib.sha256(f"{Path(b.loaded.path).resolve()}\0{b.plan.id}".encode())
                                          .hexdigest()[:24] + ".json")
        companion = value_of(b.plan.config_file)
        companion_path = b.artifact_path.parent / companion if companion else None
        self._context = sha256("\n".join([
            f"charter-verdicts-{_FORMAT}", __version__, charter_sources(), engine,
            native_sources() if engine == "both" else "-",
            file_content(b.artifact_path, folder, lambda: streamed_digest(b, mutants)), str(b.artifact_path),
            file_content(companion_path, folder) if companion_path and companion_path.is_file() else "-",
            b.require_status, _header(b.plan), repr([c for c in b.checks if isinstance(c, checks.Exclude)])]))
        self._all = _digest(b.checks)
        self._payload = _digest([c for c in b.checks if c.stage is Stage.PAYLOAD])
        # each check by the digest of its literals and locations: a tensor table's text is hashed once
        self._judging = [(_RANK[c.stage.value], _check_digest(c), checks.reads(c), _codes(c)) for c in b.checks]
        self._modulus = b.view.alignment or 1
        self._conforming = facts.facts_of(b.view, b.raw_header, self._modulus)
        self._occurrence: dict[int, int] = {}
        self._judged: dict[tuple, str] = {}  # judged_by's digests, by what they read
        self._entries: dict[str, dict] = {}
        self._runs: dict[str, list] = {}  # run id -> its keys, newest first
        try:
            stored = json.loads(self.path.read_text("utf-8"))
            if stored.get("format") == _FORMAT and isinstance(stored.get("entries"), dict):
                self._entries = stored["entries"]
                self._runs = stored.get("runs") if isinstance(stored.get("runs"), dict) else {}
        except (OSError, ValueError, AttributeError):
            pass
        self._fresh: dict[str, str] = {}  # this run's entries by key, as JSON

    def key(self, b: run.Battery, m: Mutant) -> str | None:
        """The key of a mutant that runs (declared equivalents without a `make` are not run)."""
        return self._key(b, m)[0]

    def _key(self, b: run.Battery, m: Mutant) -> tuple[str | None, tuple | None, run.ContractStep | None]:
        """The key, and what computing it made: the file of an artifact mutant, the contract_step of
        a contract mutant."""
        if m.make is None:
            return None, None, None
        pieces = [self._context, m.side, m.id, str(self._occurrence.get(id(m), 0)), repr(m.expect), repr(m.equivalent)]
        made = _made(m) if m.side == "artifact" else None
        step = run.contract_step(b, m) if made is None else None
        pieces += _file_pieces(b, made) if made is not None else self._contract_pieces(b, m, step)
        return sha256("\n".join(pieces)), made, step

    def changed(self, b: run.Battery, made: tuple, view=facts.UNREAD) -> frozenset[checks.Fact]:
        """The facts of the conforming artifact the file `made` changes (charter.mutation.facts)."""
        return facts.changed(self._conforming, b.raw_header, b.view.file_size, b.plan.format, b.accepted,
                             self._modulus, made, view)

    def _contract_pieces(self, b: run.Battery, m: Mutant, step: run.ContractStep) -> list[str]:
        if step.outcome is not None:
            return ["decided", json.dumps(step.outcome.to_json(), sort_keys=True)]
        p = step.prediction
        pieces = ["checked", _digest(p.changed), repr(p.expect), _header(step.plan),
                  repr(sorted(run.cited_locations(b, m)))]
        if p.expect is not None and p.expect.stage is Stage.PAYLOAD:
            pieces.append(self._payload)
        if any(isinstance(c, checks.Exclude) for c in p.changed):
            pieces.append(self._all)
        return pieces

    def judged_by(self, m: Mutant, changed: frozenset[checks.Fact], o: Outcome) -> str:
        """The digest of the unchanged checks an outcome depends on: none for a contract mutant
        (its key holds them); for an artifact mutant, in order, those that read a fact it
        `changed`, up to the last that may have rejected it (all if it was admitted), the payload
        stage's only for a value mutant (no other runs it)."""
        if m.side == "contract":
            return ""
        skipped = -1 if value_ops.is_value_mutant(m) else _RANK[Stage.PAYLOAD.value]
        key = (changed, skipped, o.stage, o.code)
        judged = self._judged.get(key)
        if judged is None:
            if len(self._judged) >= _JUDGED:
                self._judged.clear()
            judged = self._judged[key] = self._judged_text(changed, skipped, o)
        return judged

    def _judged_text(self, changed: frozenset[checks.Fact], skipped: int, o: Outcome) -> str:
        """judged_by, worked out: it is kept by all it reads (a battery's value mutants of one tensor
        change the same facts and are rejected alike)."""
        upto = _RANK.get(o.stage, len(_RANK)) if o.stage else len(_RANK)
        judging = [(rank, text, codes) for rank, text, reads, codes in self._judging
                   if rank <= upto and rank != skipped and facts.touches(reads, changed)]
        if o.stage is not None:  # the checks after the one that rejected it never ran
            last = [i for i, (rank, _, codes) in enumerate(judging)
                    if rank == upto and (codes is None or o.code in codes)]
            judging = judging[:last[-1] + 1] if last else judging
        return sha256("\0".join(text for _, text, _ in judging))

    def lookup(self, b: run.Battery, m: Mutant, read: bool, run_miss: bool = False, cpp: bool = False) -> Looked:
        """The mutant's key and its stored outcome if valid (and `read`); else the facts it changes
        and, if `run_miss`, its fresh outcome, run with what computing the key made; with `cpp`
        (both engines), a contract mutant's C++ half is left to run.finish_cpp, or, if it is not
        run, the C++ checker key of its plan is worked out (run.prepare_cpp)."""
        try:
            key, made, step = self._key(b, m)
            hit = self.stored(b, m, key) if read else None
            if hit is not None:
                return Looked(key, None, hit, True)
            if not run_miss:
                checker = run.checker_key_of(step) if cpp and step is not None else None
                return Looked(key, _frozen(self.changed(b, made)) if made is not None else None, None, False, checker)
            seen = run.run_seen(b, m, made, step, defer_cpp=cpp)
            ran = made is not None and seen.outcome.verdict is not Verdict.ERROR  # an error is never stored
            changed = _frozen(self.changed(b, made, seen.view)) if ran else None
            outcome = run.picklable(seen.outcome)
            # its entry made and written as JSON here, in the worker, unless the C++ half is still to run
            entry = self.entry(b, m, key, outcome, changed) if key is not None and seen.pending is None else None
            entry = json.dumps(entry) if entry is not None else None
            return Looked(key, changed, outcome, False, seen.pending and seen.pending.key, seen.pending, entry)
        finally:
            forget()  # the mutant's header compared (charter.edits): its memory serves the next one

    def stored(self, b: run.Battery, m: Mutant, key: str | None) -> Outcome | None:
        """The stored outcome of `key`, if it is valid for `m`."""
        entry = self._entries.get(key) if key is not None else None
        try:
            hit = Outcome.from_json(entry["outcome"]) if entry is not None else None
            changed = _thawed(entry["changed"]) if hit is not None else None
        except (KeyError, TypeError, ValueError):
            return None
        if hit is None or entry.get("judged_by") != self.judged_by(m, changed, hit):
            return None
        # the stored outcome has no leaf (Outcome.from_json): the battery's mutant's
        return dataclasses.replace(hit, mutant=dataclasses.replace(hit.mutant, leaf=m.leaf))

    def run_id(self, b: run.Battery, mutants: list[Mutant], positions: list[int]) -> str:
        """What every key of a run is a function of (Note [Verdict cache], "Unchanged reruns")."""
        return sha256("\n".join([self._context, b.loaded.doc.file, b.loaded.doc.source, b.model.doc.file,
                                  b.model.doc.source, sha256(b.checker_text),
                                  sha256("\n".join(mutants[i].id for i in positions))]))

    def known_keys(self, run_id: str) -> list[str | None] | None:
        keys = self._runs.get(run_id)
        return keys if isinstance(keys, list) else None

    def remember_run(self, run_id: str, keys: list[str | None]) -> None:
        self._runs = {run_id: keys, **{k: v for k, v in self._runs.items() if k != run_id}}

    def put(self, b: run.Battery, m: Mutant, key: str, outcome: Outcome, changed: list | None = None,
            entry: str | None = None) -> None:
        """Store `outcome` under `key`: its `entry` as JSON if made already, else as `entry` makes it."""
        if entry is None:
            made = self.entry(b, m, key, outcome, changed)
            entry = json.dumps(made) if made is not None else None
        if entry is not None:
            self._fresh[key] = entry

    def entry(self, b: run.Battery, m: Mutant, key: str, outcome: Outcome, changed: list | None = None
              ) -> dict | None:
        """What is stored of `outcome` under `key` (None: an error, never stored), with `changed` (as
        lookup gives it), else the stored entry's, else worked out again (the mutant is made)."""
        if outcome.verdict is Verdict.ERROR:
            return None
        if changed is None:
            changed = self._stored_changed(key)
        if changed is None:
            changed = _frozen(self.changed(b, _made(m))) if m.side == "artifact" else []
        return {"outcome": outcome.to_json(), "changed": changed,
                "judged_by": self.judged_by(m, _thawed(changed), outcome)}

    def _stored_changed(self, key: str) -> list | None:
        """The facts a stored entry says its mutant changes (a function of the key), if readable."""
        try:
            return _frozen(_thawed(self._entries[key]["changed"]))
        except (KeyError, TypeError, ValueError):
            return None

    def save(self, bound: int) -> None:
        """Write this run's verdicts, then the older ones, up to `bound` entries, atomically: the
        text json.dumps writes of them, each fresh entry as the worker that ran it wrote it (the
        main process wrote 31,000 entries for 0.4 s after the last worker of a battery ended)."""
        entries = dict(self._fresh)
        for k, v in self._entries.items():
            if len(entries) >= bound:
                break
            if k not in entries:
                entries[k] = json.dumps(v)
        runs = dict(list(self._runs.items())[:_RUNS])
        written = ", ".join(f"{json.dumps(k)}: {v}" for k, v in entries.items())
        text = f'{{"format": {_FORMAT}, "entries": {{{written}}}, "runs": {json.dumps(runs)}}}\n'
        try:
            atomic.write_text(self.path, text)
        except OSError:
            pass  # an unwritable cache makes the next run a full one, nothing worse

    def number(self, mutants: list[Mutant]) -> None:
        """Each mutant's occurrence of its id in the whole battery (a shard's keys are the whole run's)."""
        seen: dict[str, int] = {}
        for m in mutants:
            self._occurrence[id(m)] = seen.get(m.id, 0)
            seen[m.id] = self._occurrence[id(m)] + 1


def _header(plan) -> str:
    return repr((plan.id, plan.model, plan.spec_path, plan.format, plan.status, plan.source))


_RANK = {s.value: i for i, s in enumerate(ADMISSION_STAGES)}


def _codes(c: checks.Check) -> frozenset[str] | None:
    codes = checks.rejects_with(c)
    return None if codes is None else frozenset(code.value for code in codes)


def _digest(some_checks) -> str:
    """The digest of some checks, in order, from each one's (_check_digest)."""
    return sha256("\n".join(map(_check_digest, some_checks)))


def _check_text_digest(c: checks.Check) -> str:
    """sha256 of charter.contract.checks.text_of(c); a tensor table's from its rows' digests, each
    row hashed once per battery (a contract mutant's table differs from the contract's in a row,
    and hashing its whole text cost a tenth of a mutant's run at 1,000 rows)."""
    if isinstance(c, checks.Tensors):
        rows = b"".join(_ROW_DIGEST.each(c.rows))
        return hashlib.sha256(f"Tensors(at={c.at!r})\n".encode() + rows).hexdigest()
    return sha256(checks.text_of(c))


_JUDGED = 1 << 12  # judged_by's digests kept: one per changed facts and outcome

# A resolved tensor row -> the sha256 of its repr (Note [Identity memo]).
_ROW_DIGEST = IdMemo(lambda row: hashlib.sha256(repr(row).encode()).digest())
# A check -> the digest of its text: each of the contract's checks hashed once per battery, not once
# per mutant that removes it. A few kept: a mutant's checks hold its whole tensor table.
_check_digest = IdMemo(_check_text_digest, bound=64)


def _frozen(changed: frozenset) -> list:
    """Facts as JSON: sorted lists."""
    return sorted(list(f) for f in changed)


def _thawed(changed: list) -> frozenset:
    return frozenset(tuple(f) for f in changed)


def _made(m: Mutant) -> tuple:
    """The file an artifact mutant makes: its header, size and patches."""
    return m.make()


def _file_pieces(b: run.Battery, made: tuple) -> list[str]:
    """What the key holds of a made file: its size, its header as an edit of the conforming one,
    and its patches."""
    buf, size = made[0], made[1]
    patches = made[2] if len(made) > 2 else {}
    patched = (f"{at}:{sha256(bytes(patch))}" for at, patch in sorted(patches.items()))
    shared = shared_bytes(b.view.header, b.raw_header, buf) if b.plan.format == "gguf" else (0, 0)
    return [str(size), edited(b.raw_header, buf, shared), *patched]


class Looked(NamedTuple):
    """A mutant as the cache found it: its key, the facts it changes (an artifact mutant that ran,
    or is to run), its outcome (None: still to run), whether that outcome is a stored one, the C++
    checker key of a contract mutant's plan when asked for (None: its checker never runs), what
    is left of its run with both engines (run.CppPending: `outcome` is then the Python engine's),
    and the entry to store of an outcome that ran where it was looked up (VerdictCache.entry, as JSON)."""

    key: str | None
    changed: list | None
    outcome: Outcome | None
    reused: bool
    checker: str | None = None
    pending: run.CppPending | None = None
    entry: str | None = None


def run_cached(b: run.Battery, mutants: list[Mutant], positions: list[int], cache: VerdictCache | None,
               run_todo, read: bool = True, jobs: int = 1, fused: bool = False, cpp: bool = False,
               progress=None, finish=None) -> tuple[list[Outcome], int]:
    """The outcomes of the mutants at `positions` (in that order) and how many came from `cache`
    (none unless `read`: --no-cache). Keys are computed in `jobs` workers; a mutant with no valid
    stored outcome runs there too if `fused` (reusing the file or contract step its key made, and
    reporting to `progress`), else `run_todo(mutants, checkers)` runs those afterwards. With
    `cpp` (both engines), `checkers` holds the C++ checker key of each contract mutant's plan,
    {id(mutant): key}, for run_todo to prepare them first, and `finish(mutants, outcomes,
    pendings)` finishes the contract mutants that ran with their C++ half left (run.CppPending).
    Every fresh verdict is stored."""
    if cache is None:
        return run_todo([mutants[i] for i in positions], None), 0
    cache.number(mutants)
    run_id = cache.run_id(b, mutants, positions)
    known = cache.known_keys(run_id)
    remembered = read and known is not None and len(known) == len(positions)  # with --no-cache, run as found
    if remembered:
        looked = [_stored(cache, b, mutants[i], key) for i, key in zip(positions, known)]
    else:
        report = (lambda n, total, lk: lk.outcome and not lk.pending and progress(n, total, lk.outcome)) \
            if progress else None
        looking = [mutants[i] for i in positions]

        def look(j: int) -> Looked:
            return cache.lookup(b, looking[j], read, fused, cpp)

        with run.frozen_heap():  # outcomes come picklable; fused, the verified prefixes are recorded on the way
            looked = run.in_phases(b, looking, look, jobs, report, pack=lambda lk: lk) if fused else \
                run.in_workers(len(looking), look, jobs, report, pack=lambda lk: lk,
                               chunk=run.neighbours(len(looking), jobs))
    cache.remember_run(run_id, [lk.key for lk in looked])
    todo = [i for i, lk in zip(positions, looked) if lk.outcome is None]
    checkers = {id(mutants[i]): lk.checker for i, lk in zip(positions, looked) if lk.checker is not None} \
        if cpp and not remembered else None
    ran = dict(zip(todo, run_todo([mutants[i] for i in todo], checkers))) if todo else {}
    deferred = [(i, lk) for i, lk in zip(positions, looked) if lk.pending is not None]
    if deferred:
        ran.update(zip([i for i, _ in deferred], finish([mutants[i] for i, _ in deferred],
                                                        [lk.outcome for _, lk in deferred],
                                                        [lk.pending for _, lk in deferred])))
    out = []
    for i, lk in zip(positions, looked):
        outcome = lk.outcome if lk.outcome is not None and lk.pending is None else ran[i]
        if lk.key is not None:
            cache.put(b, mutants[i], lk.key, outcome, lk.changed, lk.entry)
        out.append(outcome)
    cache.save(bound=3 * max(len(mutants), 1))
    return out, sum(lk.reused for lk in looked)


def _stored(cache: VerdictCache, b: run.Battery, m: Mutant, key: str | None) -> Looked:
    hit = cache.stored(b, m, key)
    return Looked(key, None, hit, hit is not None)
