"""pytest plugin (entry point `pytest11`): a `*.battery.yaml` file becomes one test per mutant.

A battery file names a contract (relative to the file) and optionally an artifact and a side:

    contract: ../../specs/artifacts/smollm2-135m-instruct-q4_1.yaml
    only: artifact        # optional: artifact | contract
    overrides: charter.conforming.stores:qwen4exp_overrides   # optional: facts a built fixture needs
    engines: both         # optional: every mutant also runs the generated C++ checker

Without `artifact`, the contract's pinned source is used, or else a fixture is built from the
contract (sparse, with store manifests, when the contract has embedded stores) into a temporary
directory that is removed when the session ends.

A battery file naming a provenance contract (`kind: provenance`) runs the provenance battery
(charter.mutation.provenance_run) on the contract's own fixture; `artifact` and `overrides` do
not apply.

With `engines: both`, each mutant's verdict also requires the generated C++ checker to give the
same first diagnostic (charter.mutation.run: differential verdicts); the checker library of the
contract mutants is compiled at collection, once (cached and locked across xdist workers). The
unchanged contract's checker is the one compiled into charter._native when it is current, else it
is compiled with the mutants'. A battery that asks for both engines fails to collect, never
skips, when charter._native is not built or a checker cannot be compiled.

A battery whose conforming artifact is not admitted by the unchanged contract (a broken
baseline) is one collection error that quotes the rejection as `charter admit` prints it: no
mutant becomes an item.

Test ids name the side, the field and the operator (spelled so that `--lf`, `-k` and `--deselect`
take them, Note [Mutant item names]), so `pytest -n auto` (pytest-xdist) spreads a
battery over cores and a failure says which fact is not enforced. Declared equivalences are
items too: they pass and report their reason (Note [Mutation verdicts]); nothing is skipped.

`--charter-shard K/N` keeps, of every battery file, the mutants that `charter mutate --shard K/N`
runs (charter.mutation.shard.select over the file's whole battery: a CI matrix job runs
`pytest -n 2 --charter-shard K/N`) and deselects the others; tests that are not mutants are kept.
The selection depends on the battery alone, so every xdist worker deselects the same items (xdist
prints no deselected count, for this as for `-k`).
"""

from __future__ import annotations

import atexit
import importlib
import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

from charter.diagnostics import CharterError


def pytest_addoption(parser) -> None:
    parser.getgroup("charter").addoption(
        "--charter-shard", type=_shard_arg, metavar="K/N", default=None,
        help="run shard K (from 0) of N of every battery file's mutants: the mutants `charter mutate --shard K/N` "
             "runs; the others are deselected")


def _shard_arg(text: str):
    """charter.mutation.shard.shard_arg, imported only when the option is given (the plugin loads in every
    pytest session of an environment that has charter)."""
    from charter.mutation.shard import shard_arg

    return shard_arg(text)


def pytest_collection_modifyitems(config, items) -> None:
    """--charter-shard: deselect the mutants of other shards, by charter.mutation.shard.select over each battery
    file's whole battery, so every xdist worker deselects the same items. Other tests are kept."""
    shard = config.getoption("charter_shard")
    if shard is None:
        return
    from charter.mutation.shard import select

    chosen: dict[Path, set[int]] = {}
    keep, drop = [], []
    for item in items:
        if isinstance(item, MutantItem):
            if item.path not in chosen:
                chosen[item.path] = set(select(_battery(str(item.path))[1], shard))
            (keep if item.index in chosen[item.path] else drop).append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_collect_file(parent, file_path: Path):
    if file_path.name.endswith(".battery.yaml"):
        return BatteryFile.from_parent(parent, path=file_path)
    return None


@lru_cache(maxsize=None)
def _battery(spec_file: str):
    """(battery, mutants) for one battery file, built once per process (xdist workers included)."""
    from charter.admission.locate import locate
    from charter.console import search_paths
    from charter.mutation.run import all_mutants, load_battery
    from charter.contract.contractset import load_set
    from charter.contract.yamlload import load_file

    doc = _battery_doc(load_file(spec_file))
    here = Path(spec_file).parent
    contract = str((here / doc["contract"]).resolve())
    cs = load_set([contract], search_paths([contract], None))
    cs.raise_if_failed()
    provenance = [i for i in cs.primary if cs.contracts[i].kind == "provenance"]
    if provenance:  # a fixture and its labels: charter.mutation.provenance_run
        from charter.mutation.provenance_run import battery_of

        (cid,) = provenance
        return battery_of(cs, cid, doc.get("only"))
    artifacts = [i for i in cs.primary if i in cs.artifacts]
    if len(artifacts) != 1:
        raise ValueError(f"contract {doc['contract']} is not one artifact or provenance contract")
    (cid,) = artifacts
    loaded, plan = cs.contracts[cid], cs.artifacts[cid]
    if doc.get("artifact"):
        artifact = here / doc["artifact"]
    elif loaded.contract.source is not None:
        artifact = locate(loaded.contract.source, loaded.path.parent)
    else:
        folder = Path(tempfile.mkdtemp(prefix="charter-battery-"))
        atexit.register(shutil.rmtree, folder, True)
        artifact = _built(plan, folder / f"{plan.id}.{plan.format}", doc.get("overrides"))
    battery = load_battery(cs, cid, artifact)
    mutants = all_mutants(battery, doc.get("only"))
    if doc.get("engines", "python") == "both":
        _both_engines(cs, battery, mutants)
    return battery, mutants


BATTERY_KEYS = ("contract", "artifact", "only", "overrides", "engines")


def _battery_doc(doc) -> dict:
    """The battery file's keys, checked: a mapping of BATTERY_KEYS naming a non-empty `contract` (an
    empty path would be the battery's own directory, every YAML file in it)."""
    from charter.diagnostics import Code, Diagnostic

    def fail(path: tuple, message: str) -> CharterError:
        return CharterError([Diagnostic(Code.SPEC_SCHEMA, ".".join(path), message, location=doc.where(path))])

    data = doc.data
    if not isinstance(data, dict):
        raise fail((), f"a battery file is a mapping of {', '.join(BATTERY_KEYS)}")
    for key in data:
        if key not in BATTERY_KEYS:
            raise fail((key,), f"unknown key (a battery file has {', '.join(BATTERY_KEYS)})")
    for key in ("contract", "artifact", "overrides"):
        value = data.get(key, "" if key == "contract" else None)
        if value is not None and (not isinstance(value, str) or not value):
            raise fail((key,) if key in data else (), f"`{key}` must be a non-empty string")
    for key, allowed in (("only", ("artifact", "contract")), ("engines", ("python", "both"))):
        if key in data and data[key] not in allowed:
            raise fail((key,), f"`{key}` is {' or '.join(allowed)}, not {data[key]!r}")
    return data


def _both_engines(cs, battery, mutants) -> None:
    from charter.engines.choose import cache_dir, compiled_in
    from charter.mutation.run import prepare_cpp

    prepare_cpp(battery, mutants, cache_dir() / "checkers", jobs=2, compiled_in=compiled_in(cs, battery.plan))
    battery.engines = "both"


def _built(plan, path: Path, overrides: str | None) -> Path:
    facts = None
    if overrides:
        module, _, name = overrides.partition(":")
        try:
            make = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ValueError(f"overrides {overrides!r} does not name a function (module:function): {exc}") from None
        facts = make()
    if plan.stores:
        from charter.conforming.stores import build_sparse

        return build_sparse(plan, path, overrides=facts)
    from charter.conforming import build

    return build(plan, path, overrides=facts)


class BatteryFile(pytest.File):
    def collect(self):
        from charter.conforming import FixtureError
        from charter.mutation.run import BrokenBaseline

        try:
            _, mutants = _battery(str(self.path))
        except BrokenBaseline as exc:  # one collection error, not one failing item per mutant
            raise self.CollectError(f"battery {self.path}: the unchanged contract does not admit "
                                    f"{exc.report.artifact}, so no mutant was run:\n  {exc}") from None
        except (CharterError, FixtureError, OSError, KeyError, ValueError, RuntimeError) as exc:
            # A user's mistake (a broken contract or battery file, a fixture that cannot be built, the
            # C++ engine missing: RuntimeError) is one collection error, its text alone: the same
            # string from every xdist worker, which xdist reports once (a traceback, once per worker).
            raise self.CollectError(f"cannot build battery {self.path}:\n{exc}") from None
        for index, name in enumerate(item_names(mutants)):
            yield MutantItem.from_parent(self, name=name, index=index)


def item_names(mutants) -> list[str]:
    """Every mutant's item name, in battery order; a repeated name gets `-2`, `-3` (Note [Mutant item names])."""
    seen: set[str] = set()
    out = []
    for mutant in mutants:
        name = base = item_name(mutant.id)
        n = 1
        while name in seen:
            n += 1
            name = f"{base}-{n}"
        seen.add(name)
        out.append(name)
    return out


def item_name(mutant_id: str) -> str:
    """The pytest name of a mutant: Note [Mutant item names]."""
    parts = []
    for part in mutant_id.split(":"):
        part = _SIGN.sub(r"\1", _INDEX.sub(r".\1", part).replace("->", "-to-"))
        part = _DOT.sub(".", _UNSAFE.sub(" ", part)).strip()
        if part:
            parts.append(part.replace(" ", "-"))
    return ":".join(parts)


# Note [Mutant item names]: a mutant's id (`contract:artifact:tensors[1].shape[0]:expression +1`)
# is not a pytest name. pytest reads `[` in a node id as the start of a parametrization (`--lf`,
# `--deselect` and a pasted `path::name` then match the wrong items, or none), `-k` accepts only
# letters, digits and `_ : + - . [ ] \ /`, and a space, `>` or `(` in a pasted FAILED line breaks
# the shell command. So the item's name keeps letters, digits and `_ . : + -` only: an index is a
# dotted part (`tensors.1.shape.0`), `->` is `-to-`, a sign after a space joins its word
# (`expression+1`), any other run of characters is one `-` (none at either end of a part, and no
# empty part, so never `::`); a second mutant with the same name gets `-2`, `-3`. The failure text
# still quotes the mutant's own id.
_INDEX = re.compile(r"\[(\d+)\]")
_SIGN = re.compile(r"\s+([+-])(?=\w)")
_UNSAFE = re.compile(r"[^\w.+-]+")
_DOT = re.compile(r" *\. *")


class MutantFailure(Exception):
    pass


class MutantItem(pytest.Item):
    def __init__(self, *, index: int, **kw) -> None:
        super().__init__(**kw)
        self.index = index

    def runtest(self) -> None:
        from charter.mutation import provenance_run
        from charter.mutation.run import run_mutant

        battery, mutants = _battery(str(self.path))
        run_one = provenance_run.run_mutant if isinstance(battery, provenance_run.ProvenanceBattery) else run_mutant
        outcome = run_one(battery, mutants[self.index])
        self.user_properties.append(("verdict", outcome.verdict.value))
        if outcome.detail:
            self.user_properties.append(("detail", outcome.detail))
        if not outcome.verdict.passes:
            raise MutantFailure(outcome)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, MutantFailure):
            o = excinfo.value.args[0]
            got = f"{o.stage} {o.code} {o.field}" if o.stage else "admitted"
            expect = o.mutant.expect if o.mutant.expect is not None else "admission"
            return f"{o.verdict.value}: {o.mutant.id}\n  expected: {expect}\n  got:      {got}\n  {o.detail}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, self.name
