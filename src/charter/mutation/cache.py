"""Verdicts of earlier battery runs, reused when nothing that decides them changed.

Note [Verdict cache]
~~~~~~~~~~~~~~~~~~~~
A cached verdict must never be wrong, so each key holds everything the verdict is a function of,
and no more than that only where the Note says why.

Every key starts from the battery's context, which both sides need:

* charter's version and the digest of its own sources (charter.mutation.digests.charter_sources:
  an editable install's code changes without its version), and the engine(s) run;
* the artifact: its whole content (value and store mutants read the data section), its path (a
  diagnostic may quote it) and the companion file its plan binds;
* the unchanged contract: the text of its generated checker (artifact mutants run it), its typed
  checks (every contract mutant's prediction compares against them), the status it requires, the
  locations of every leaf of both documents (diagnostics cite `file:line`; an inserted line
  moves every citation) and the data of both documents, in order, except each document's
  top-level `description`.

`description` is the one leaf left out: it is documentation, which no resolver, check, operator
or generated line reads (grep: only the Pydantic field names it). Leaving it out is what lets an
edit of it rerun only its own mutants; any other edit changes the documents' digest, and so
reruns everything. That is deliberate. An artifact mutant's verdict depends on the whole checker
(ordered admission stops at the first failing check, whichever it is), and a contract mutant's on
the whole mutated contract (its prediction and its checker come from resolving all of it): a key
that named only "the leaf the mutant changes" would reuse a verdict that an edit elsewhere
changed (a cross-field rule, an expression over an edited constant, a check that now fails
first).

An artifact mutant adds its id, its expected rejection and its declared equivalence. A contract
mutant adds the same, and the digests of the documents it makes (with the same one omission) and
of the values at its leaf before and after (so an edit of a `description` reruns the mutants of
that description, and only those). Duplicated ids add their occurrence index (any reordering
changes the documents' digest anyway). Crashes (verdict `error`) are never stored.

The store is one JSON file per contract under `<user cache>/charter/<version>/verdicts/`
(`$XDG_CACHE_HOME`, else `~/.cache`), written atomically after each run and bounded to three
times the battery's size (the newest entries win); deleting the directory is always safe.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from charter import __version__, atomic
from charter.mutation.digests import charter_sources, file_content, sha256
from charter.mutation.mutant import Mutant, Outcome, Verdict

_FORMAT = 1


class Tree:
    """Digests of YAML data trees, remembered per node of the original documents: a mutated
    document shares every subtree but its changed path with them (charter.mutation.contract_ops),
    so its digest costs the changed path only."""

    def __init__(self, *roots) -> None:
        self._memo: dict[int, tuple[object, bytes]] = {}
        for root in roots:
            self.digest(root, remember=True)

    def digest(self, node, top: bool = False, remember: bool = False) -> bytes:
        known = self._memo.get(id(node))
        if known is not None and known[0] is node and not top:
            return known[1]
        h = hashlib.sha256()
        if isinstance(node, dict):
            h.update(b"{")
            for k, v in node.items():
                if top and k == "description":  # Note [Verdict cache]
                    continue
                h.update(self.digest(k, remember=remember) + self.digest(v, remember=remember))
        elif isinstance(node, list):
            h.update(b"[")
            for v in node:
                h.update(self.digest(v, remember=remember))
        else:
            h.update(f"{type(node).__name__}:{node!r}".encode())
        out = h.digest()
        if remember and not top and isinstance(node, (dict, list)):
            self._memo[id(node)] = (node, out)
        return out


def _at(data, path: tuple):
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return _ABSENT
    return data


_ABSENT = object()


class VerdictCache:
    """The cache of one artifact battery (Note [Verdict cache])."""

    def __init__(self, b, folder: Path, engine: str, checker_text: str) -> None:
        from charter.contract.plan import value_of

        self.path = folder / "verdicts" / (hashlib.sha256(f"{Path(b.loaded.path).resolve()}\0{b.plan.id}".encode())
                                          .hexdigest()[:24] + ".json")
        self._b = b
        art, model = b.loaded.doc, b.model.doc
        self._tree = Tree(art.data, model.data)
        companion = value_of(b.plan.config_file)
        companion_path = b.artifact_path.parent / companion if companion else None
        pieces = [
            f"charter-verdicts-{_FORMAT}", __version__, charter_sources(), engine,
            file_content(b.artifact_path, folder), str(b.artifact_path),
            file_content(companion_path, folder) if companion_path and companion_path.is_file() else "-",
            sha256(checker_text), sha256(repr(b.checks)), b.require_status,
            sha256(repr(sorted(repr(i) for i in art.locations.items()))), art.file,
            sha256(repr(sorted(repr(i) for i in model.locations.items()))), model.file,
            self._tree.digest(art.data, top=True).hex(), self._tree.digest(model.data, top=True).hex(),
        ]
        self._context = sha256("\n".join(pieces))
        self._entries: dict[str, dict] = {}
        try:
            stored = json.loads(self.path.read_text("utf-8"))
            if stored.get("format") == _FORMAT and isinstance(stored.get("entries"), dict):
                self._entries = stored["entries"]
        except (OSError, ValueError, AttributeError):
            pass
        self._fresh: dict[str, dict] = {}

    def keys(self, mutants: list[Mutant], positions: list[int]) -> dict[int, str]:
        """The key of each mutant at `positions` that runs (declared equivalents without a
        `make` are not run, so not cached)."""
        seen: dict[str, int] = {}
        occurrence = []
        for m in mutants:
            occurrence.append(seen.get(m.id, 0))
            seen[m.id] = occurrence[-1] + 1
        out = {}
        for i in positions:
            m = mutants[i]
            if m.make is None:
                continue
            pieces = [self._context, m.side, m.id, str(occurrence[i]), repr(m.expect), repr(m.equivalent)]
            if m.side == "contract":
                pieces += self._contract_pieces(m)
            out[i] = sha256("\n".join(pieces))
        return out

    def _contract_pieces(self, m: Mutant) -> list[str]:
        art, model = m.make()
        original = (self._b.loaded if m.target.startswith("artifact:") else self._b.model).doc.data
        mutated = art if m.target.startswith("artifact:") else model
        return [self._tree.digest(art, top=True).hex(), self._tree.digest(model, top=True).hex(),
                self._value(_at(original, m.leaf)), self._value(_at(mutated, m.leaf))]

    def _value(self, node) -> str:
        return "-" if node is _ABSENT else self._tree.digest(node).hex()

    def get(self, key: str) -> Outcome | None:
        data = self._entries.get(key)
        if data is None:
            return None
        try:
            return Outcome.from_json(data)
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, key: str, outcome: Outcome) -> None:
        if outcome.verdict is not Verdict.ERROR:
            self._fresh[key] = outcome.to_json()

    def save(self, bound: int) -> None:
        """Write this run's verdicts, then the older ones, up to `bound` entries, atomically."""
        entries = dict(self._fresh)
        for k, v in self._entries.items():
            if len(entries) >= bound:
                break
            entries.setdefault(k, v)
        try:
            atomic.write_text(self.path, json.dumps({"format": _FORMAT, "entries": entries}, sort_keys=True) + "\n")
        except OSError:
            pass  # an unwritable cache makes the next run a full one, nothing worse


def run_cached(b, mutants: list[Mutant], positions: list[int], cache: VerdictCache | None, run,
               read: bool = True) -> tuple[list[Outcome], int]:
    """The outcomes of the mutants at `positions` (in that order) and how many came from `cache`
    (none unless `read`: --no-cache); `run(list_of_mutants)` runs the others
    (charter.mutation.run.run). Every fresh verdict is stored."""
    keys = cache.keys(mutants, positions) if cache is not None else {}
    reused: dict[int, Outcome] = {}
    for i, key in keys.items() if read else ():
        hit = cache.get(key)
        if hit is not None:  # the stored outcome has no leaf (Outcome.from_json): the battery's mutant's
            reused[i] = dataclasses.replace(hit, mutant=dataclasses.replace(hit.mutant, leaf=mutants[i].leaf))
    todo = [i for i in positions if i not in reused]
    ran = dict(zip(todo, run([mutants[i] for i in todo]))) if todo else {}
    if cache is not None:
        for i, o in ran.items():
            if i in keys:
                cache.put(keys[i], o)
        for i, o in reused.items():
            cache.put(keys[i], o)
        cache.save(bound=3 * max(len(mutants), 1))
    return [reused[i] if i in reused else ran[i] for i in positions], len(reused)
