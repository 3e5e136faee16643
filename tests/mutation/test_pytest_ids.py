"""The pytest plugin's item names with the real pytest (Note [Mutant item names]): `--lf` reruns
exactly the failed mutants, a FAILED line's node id pasted back runs that mutant, `-k` takes a
whole name and `--deselect` one node id; a broken contract is one clean collection error.

The mutants are the real battery of the tiny GGUF contract; only their verdict is replaced (a
conftest fails every seventh item), so that pytest's own selection is what is tested, in a few
seconds. tests/mutation/test_pytest_plugin.py has the broken batteries under xdist (slow set)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from charter.mutation.pytest_plugin import item_name
from tests.conftest import ROOT

# Each item's verdict is replaced on the item itself: a mutant whose id pytest misreads (`[`, `->`)
# fails, and every seventh other one.
CONFTEST = '''
import pytest

from charter.mutation.pytest_plugin import MutantItem, _battery


def pytest_collection_modifyitems(items):
    for item in items:
        if isinstance(item, MutantItem):
            mutant = _battery(str(item.path))[1][item.index]
            item.runtest = fail if any(c in mutant.id for c in "[>") or item.index % 7 == 0 else lambda: None


def fail():
    pytest.fail("chosen to fail", pytrace=False)
'''

# The three runs in one process (charter imported and the battery built once): everything, then
# `--lf` with one failure deselected, then two FAILED node ids pasted back with `-k` naming one.
RUNS = '''
import contextlib, io, json, re, sys
import pytest

def run(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        pytest.main(["-p", "no:xdist", "-q", "-rf", *args])
    return out.getvalue()

first = run("--continue-on-collection-errors", "mutants", "broken")
failed = re.findall(r"^FAILED (\\S+)", first, flags=re.M)
rerun = run("--lf", "mutants", "--deselect", failed[0])
one, two = failed[1], failed[-1]
pasted = run(one, two, "-k", one.split("::")[1])
print(json.dumps([first, rerun, pasted]))
'''


@pytest.fixture(scope="module")
def batteries(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ids")
    for kind, name in (("models", "tiny-llama.yaml"), ("artifacts", "tiny-llama-gguf.yaml")):
        (root / "specs" / kind).mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "specs" / kind / name, root / "specs" / kind)
    text = (ROOT / "specs" / "artifacts" / "tiny-llama-gguf.yaml").read_text("utf-8")
    (root / "specs" / "artifacts" / "broken.yaml").write_text(
        text.replace("id: tiny-llama-gguf", "id: broken\nbogus: 1"), "utf-8")
    (root / "mutants").mkdir()
    (root / "mutants" / "conftest.py").write_text(CONFTEST, "utf-8")
    (root / "mutants" / "tiny.battery.yaml").write_text(
        "contract: ../specs/artifacts/tiny-llama-gguf.yaml\nonly: artifact\n", "utf-8")
    (root / "broken").mkdir()
    (root / "broken" / "broken.battery.yaml").write_text("contract: ../specs/artifacts/broken.yaml\n", "utf-8")
    return root


@pytest.fixture(scope="module")
def runs(batteries) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["COLUMNS"] = "1000"  # FAILED lines whole
    proc = subprocess.run([sys.executable, "-c", RUNS], cwd=batteries, capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def failures(out: str) -> list[str]:
    return re.findall(r"^FAILED (\S+)", out, flags=re.M)


def counts(out: str) -> dict[str, int]:
    last = out.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|errors?|deselected)", last)}


def test_failed_items_are_named_without_brackets(runs):
    first = runs[0]
    failed = failures(first)
    assert counts(first)["failed"] == len(failed) > 40, first[-3000:]
    assert any(re.search(r":dim\.\d", f) for f in failed) and any("-to-" in f for f in failed), failed
    assert all(re.fullmatch(r"mutants/tiny\.battery\.yaml::[\w.+-]+(:[\w.+-]+)*", f) for f in failed), failed


def test_a_broken_contract_is_one_clean_collection_error(runs):
    first = runs[0]
    assert counts(first)["error"] == 1 and first.count("ERROR collecting broken/broken.battery.yaml") == 1, first[-3000:]
    assert "specs/artifacts/broken.yaml:10:8: SPEC_SCHEMA bogus: unknown key" in first
    assert "Traceback" not in first and "pytest_plugin.py" not in first, first[-3000:]


def test_lf_reruns_exactly_the_failures_and_deselect_takes_a_node_id(runs):
    failed = failures(runs[0])
    assert counts(runs[1]) == {"failed": len(failed) - 1, "deselected": 1}, runs[1][-3000:]
    assert sorted(failures(runs[1])) == sorted(failed[1:])


def test_a_pasted_node_id_runs_that_item_and_k_takes_a_whole_name(runs):
    failed = failures(runs[0])
    one, two = failed[1], failed[-1]
    assert one.split("::")[1].lower() not in two.lower()
    assert counts(runs[2]) == {"failed": 1, "deselected": 1}, runs[2][-3000:]
    assert failures(runs[2]) == [one]


@pytest.mark.parametrize("mutant_id, name", [
    ("contract:artifact:tensors[1].shape[0]:expression +1", "contract:artifact:tensors.1.shape.0:expression+1"),
    ("artifact:tensors.blk.0.attn_q.weight:dim[1] +1", "artifact:tensors.blk.0.attn_q.weight:dim.1+1"),
    ("artifact:metadata.general.file_type:retype uint32->uint64",
     "artifact:metadata.general.file_type:retype-uint32-to-uint64"),
    ("artifact:header:re-serialize compactly (whitespace is not a fact)",
     "artifact:header:re-serialize-compactly-whitespace-is-not-a-fact"),
    ("artifact:metadata.<empty>:empty key", "artifact:metadata.empty:empty-key"),
    ("contract:model:constants.layers:-1", "contract:model:constants.layers:-1"),
    ("artifact::swap dims 0,1", "artifact:swap-dims-0-1"),
])
def test_item_names(mutant_id, name):
    assert item_name(mutant_id) == name
    assert re.fullmatch(r"[\w.+-]+(:[\w.+-]+)*", name)  # what -k and a shell take, never `::`
