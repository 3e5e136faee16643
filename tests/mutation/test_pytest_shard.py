"""`pytest --charter-shard K/N` with the real pytest, with and without xdist: each shard's items are
the mutants charter.mutation.shard.select picks (what `charter mutate --shard K/N` runs), the shards
are disjoint and together the whole battery; a test that is not a mutant runs in every shard."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from charter.mutation.pytest_plugin import _battery, item_names
from charter.mutation.shard import Shard, select
from tests.conftest import ROOT

COUNT = 2  # shards
PLAIN = "test_plain.py::test_not_a_mutant"

# The unsharded run and the shards without xdist in one process (charter imported and the battery
# built once), then the refusal of a shard that does not exist.
RUNS = '''
import contextlib, io, json, sys
import pytest

def run(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = pytest.main(["-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-rA", *args])
    return [int(code), out.getvalue() + err.getvalue()]

runs = [run(".")] + [run(".", "--charter-shard", f"{k}/%d") for k in range(%d)]
print(json.dumps(runs + [run(".", "--charter-shard", "3/2")]))
''' % (COUNT, COUNT)


@pytest.fixture(scope="module")
def battery(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("shard")
    for kind, name in (("models", "tiny-llama.yaml"), ("artifacts", "tiny-llama-gguf.yaml")):
        (root / "specs" / kind).mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "specs" / kind / name, root / "specs" / kind)
    (root / "tiny.battery.yaml").write_text("contract: specs/artifacts/tiny-llama-gguf.yaml\nonly: artifact\n", "utf-8")
    (root / "test_plain.py").write_text("def test_not_a_mutant():\n    pass\n", "utf-8")
    return root


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["COLUMNS"] = "1000"
    return env


@pytest.fixture(scope="module")
def in_process(battery) -> list[tuple[int, str]]:
    proc = subprocess.run([sys.executable, "-c", RUNS], cwd=battery, capture_output=True, text=True,
                          timeout=300, env=_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


XDIST_SHARD = 1  # one shard under xdist (a pytest and two workers, each building the battery): the
# others are the in-process runs' shards, which the xdist run's items must equal


@pytest.fixture(scope="module")
def with_xdist(battery) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-n", "2",
                           ".", "--charter-shard", f"{XDIST_SHARD}/{COUNT}"],
                          cwd=battery, capture_output=True, text=True, timeout=300, env=_env())
    return proc.returncode, proc.stdout + proc.stderr


def passed(run: tuple[int, str]) -> list[str]:
    code, out = run
    assert code == 0, out[-3000:]
    return re.findall(r"^PASSED (\S+)", out, flags=re.M)


def expected(battery: Path, k: int) -> set[str]:
    """The node ids of the mutants select() puts in shard k, named as the plugin names them."""
    mutants = _battery(str(battery / "tiny.battery.yaml"))[1]
    names = item_names(mutants)
    return {f"tiny.battery.yaml::{names[i]}" for i in select(mutants, Shard(k, COUNT))}


def check_shards(battery: Path, whole: list[str], shards: list[list[str]]) -> None:
    assert PLAIN in whole and all(PLAIN in s for s in shards)
    mutants = [set(s) - {PLAIN} for s in shards]
    assert all(len(m) == len(s) - 1 for m, s in zip(mutants, shards))  # no item twice in one shard
    assert sum(map(len, mutants)) == len(whole) - 1 and set().union(*mutants) == set(whole) - {PLAIN}
    for k, m in enumerate(mutants):
        assert m == expected(battery, k)


def test_shards_without_xdist_partition_the_battery_as_select_does(battery, in_process):
    whole, *shards, _ = in_process
    assert len(passed(whole)) > 100
    check_shards(battery, passed(whole), [passed(s) for s in shards])
    for k, (_, out) in enumerate(shards):
        deselected = int(re.search(r"(\d+) deselected", out)[1])  # pytest's own count
        assert deselected == len(passed(whole)) - len(passed(shards[k])), out[-3000:]


def test_a_shard_under_xdist_is_the_same_items(battery, in_process, with_xdist):
    _, *shards, _ = in_process
    shards[XDIST_SHARD] = with_xdist
    check_shards(battery, passed(in_process[0]), [passed(s) for s in shards])
    assert re.search(r"created: 2/2 workers", with_xdist[1]), with_xdist[1][-3000:]


def test_a_shard_that_does_not_exist_is_a_usage_error(in_process):
    code, out = in_process[-1]
    assert code == 4 and "argument --charter-shard: expected 0 <= K < N" in out and "Traceback" not in out, out
