"""The pytest plugin on broken input: one clean collection error per battery file, naming the
contract's file:line:col, never a traceback (under xdist a traceback used to be printed once per
worker: xdist folds identical collection errors only when they are the same text)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# One pytest run with two xdist workers over the broken batteries, for every test here.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broken_batteries(tmp_path_factory) -> subprocess.CompletedProcess:
    root = tmp_path_factory.mktemp("batteries")
    specs = root / "specs"
    (specs / "models").mkdir(parents=True)
    (specs / "artifacts").mkdir(parents=True)
    shutil.copy(ROOT / "specs" / "models" / "tiny-llama.yaml", specs / "models")
    text = (ROOT / "specs" / "artifacts" / "tiny-llama-gguf.yaml").read_text("utf-8")
    (specs / "artifacts" / "codec.yaml").write_text(
        text.replace("id: tiny-llama-gguf", "id: codec").replace("codec: F32}", "codec: f32}").replace("  F32: {", "  f32: {"))
    (specs / "artifacts" / "schema.yaml").write_text(text.replace("id: tiny-llama-gguf", "id: schema\nbogus: 1"))
    (root / "codec.battery.yaml").write_text("contract: specs/artifacts/codec.yaml\n")
    (root / "schema.battery.yaml").write_text("contract: specs/artifacts/schema.yaml\n")
    (root / "nocontract.battery.yaml").write_text("only: artifact\n")
    (root / "badonly.battery.yaml").write_text("contract: specs/artifacts/codec.yaml\nonly: everything\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-q", str(root)],
                          cwd=root, capture_output=True, text=True, timeout=600, env=env)


def test_every_broken_battery_is_one_collection_error(broken_batteries):
    out = broken_batteries.stdout + broken_batteries.stderr
    assert broken_batteries.returncode == 1 and "4 errors" in out, out[-3000:]  # pytest: errors, not a crash
    assert "Traceback" not in out and "FixtureError" not in out and "plugin.py" not in out, out[-3000:]
    for name in ("codec", "schema", "nocontract", "badonly"):
        assert out.count(f"ERROR collecting {name}.battery.yaml") == 1, out[-3000:]


@pytest.mark.parametrize("name, located", [
    ("codec", "specs/artifacts/codec.yaml:97:102: SPEC_INVALID tensors[1].codec: 'f32' is not a ggml type name "
              "(did you mean F32?)"),
    ("schema", "specs/artifacts/schema.yaml:10:8: SPEC_SCHEMA bogus: unknown key"),
    ("nocontract", "nocontract.battery.yaml:1:1: SPEC_SCHEMA: `contract` must be a non-empty string"),
    ("badonly", "badonly.battery.yaml:2:7: SPEC_SCHEMA only: `only` is artifact or contract, not 'everything'"),
])
def test_the_error_names_the_file_line_and_column(broken_batteries, name, located):
    assert located in broken_batteries.stdout, broken_batteries.stdout[-3000:]
