"""Load the two versions of a diff: only the files that changed, and the contracts they need.

Note [Diff loads what changed]: a diff of the whole specs/ tree must take well under a second,
and parsing and resolving every contract twice does not (the regions contracts alone resolve in
0.4 s). A file whose bytes are the same in OLD and NEW, at the same place, states the same
contracts, so it is not loaded unless a changed contract needs it: the model of a changed artifact
contract, the artifact contracts of a changed model (their checks are what a model leaf changes).
Those partners are found by a text search for top-level `id:`, `kind:` and `model:` lines; a file
where the search finds no id is loaded, so a partner is never missed, only loaded needlessly.
Changed files are loaded and validated as `charter check` loads them; models and artifact
contracts are resolved; other kinds are validated, not resolved (the diff does not classify their
leaves by checks, charter.diff.rules.Rule.LOOSEN_UNCLASSIFIED_KIND). An unchanged file that does not
load is not the diff's to report (`charter check` does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from charter.contract.load import LoadedContract, contract_from_document
from charter.diagnostics import CharterError, Diagnostic
from charter.diff.classify import Side, side_of
from charter.diff.pinned import Pinned
from charter.diff.sources import Version

_ID = re.compile(rb"^id:[ \t]*['\"]?([^'\"\s#]+)", re.M)
_KIND = re.compile(rb"^kind:[ \t]*['\"]?([^'\"\s#]+)", re.M)
_MODEL = re.compile(rb"^model:[ \t]*['\"]?([^'\"\s#]+)", re.M)


@dataclass
class _File:
    path: Path
    name: str  # relative to the root it was found under
    raw: bytes

    def peek(self, pattern: re.Pattern) -> str | None:
        found = pattern.search(self.raw)
        return found.group(1).decode("utf-8", "replace") if found else None


@dataclass
class Loaded:
    side: Side
    primary: set[str] = field(default_factory=set)  # ids of the changed files
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _files(roots: list[tuple[Path, Path]]) -> dict[str, _File]:
    """name -> file, for (given path, root) pairs; a name found twice keeps the first. Paths are
    resolved (contractset.discover resolves them)."""
    from charter.contract.contractset import discover

    out: dict[str, _File] = {}
    for given, root in roots:
        if not given.exists():
            continue
        top = root.resolve()
        for p in discover([given]):
            name = p.relative_to(top).as_posix() if p.is_relative_to(top) else p.as_posix()
            if name not in out:
                try:
                    out[name] = _File(p, name, p.read_bytes())
                except OSError:
                    out[name] = _File(p, name, b"")  # loading it reports why
    return out


def load_versions(old: Version, new: Version, pinned: Pinned) -> tuple[Loaded, Loaded]:
    """OLD and NEW, each with only its changed contracts and their partners (Note [Diff loads
    what changed])."""
    given = {v.label: _files([(Path(p), r) for p, r in zip(v.paths, v.roots)]) for v in (old, new)}
    old_files, new_files = given[old.label] if old.label in given else {}, given[new.label]
    if old.label == new.label:  # `charter diff specs specs`
        old_files = new_files
    changed = {n for n in old_files.keys() | new_files.keys()
               if n not in old_files or n not in new_files or old_files[n].raw != new_files[n].raw}
    out = []
    for version, files in ((old, old_files), (new, new_files)):
        pool = {**_pool(version), **{f.path: f for f in files.values()}}
        out.append(_load(files, changed, pool, pinned))
    return out[0], out[1]


def _pool(version: Version) -> dict[Path, _File]:
    """Every contract file of the search trees, by resolved path (the partners a change may need)."""
    found = _files([(Path(s), Path(s)) for s in version.search])
    return {f.path: f for f in found.values()}


def _load(files: dict[str, _File], changed: set[str], pool: dict[Path, _File], pinned: Pinned) -> Loaded:
    result = Loaded(Side({}, {}, {}))
    wanted = {files[n].path: files[n] for n in sorted(changed) if n in files}
    names = {files[n].path: n for n in files}
    loaded: dict[Path, LoadedContract] = {}
    todo = list(wanted.values())
    while todo:
        f = todo.pop(0)
        key = f.path
        if key in loaded:
            continue
        lc = _parse(f, result.diagnostics)
        if lc is None:
            continue
        loaded[key] = lc
        if key in wanted:
            result.primary.add(lc.id)
        todo.extend(_partners(lc, pool, loaded))
    if result.diagnostics:
        return result
    try:
        result.side = side_of(list(loaded.values()), pinned)
    except CharterError as exc:
        result.diagnostics.extend(exc.diagnostics)
        return result
    result.side.files = {lc.id: names.get(key, lc.doc.file) for key, lc in loaded.items()}
    return result


def _partners(lc: LoadedContract, pool: dict[Path, _File], loaded: dict[Path, LoadedContract]) -> list[_File]:
    """The files a changed model or artifact contract is resolved or judged with."""
    out = []
    for key, f in pool.items():
        if key in loaded:
            continue
        fid = f.peek(_ID)
        if fid is None:
            out.append(f) if lc.kind in ("model", "artifact") else None
        elif lc.kind == "artifact" and fid == lc.contract.model:
            out.append(f)
        elif lc.kind == "model" and f.peek(_KIND) == "artifact" and f.peek(_MODEL) == lc.id:
            out.append(f)
    return out


def _parse(f: _File, diagnostics: list[Diagnostic]) -> LoadedContract | None:
    from charter.contract.paths import display_path
    from charter.contract.yamlload import load_file

    try:
        doc = load_file(f.path, display_path(f.path))
        return LoadedContract(contract_from_document(doc), doc, f.path)
    except CharterError as exc:
        diagnostics.extend(exc.diagnostics)
        return None
