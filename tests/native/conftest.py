"""Fixtures for the C++ admission tests: the built module, the batteries, the shipped contracts.

`charter._native` is built by `pip install` from the committed generated/cpp/ headers. Tests that
need a checker skip, saying why, when the module or that contract's checker is not compiled in.
CHARTER_NATIVE_MODULE=/path/to/_native.so runs them against another build of the module.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMOLLM2 = "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"
TINY_ST = "specs/artifacts/tiny-llama-safetensors.yaml"
TINY_GGUF = "specs/artifacts/tiny-llama-gguf.yaml"


def load_battery_for(spec: str, tmp: Path):
    """(contract id, Battery) with the contract's pinned artifact, or one built from the contract."""
    from charter.admission.locate import locate
    from charter.diagnostics import CharterError
    from charter.conforming import build
    from charter.mutation.run import load_battery
    from charter.contract.contractset import load_set

    cs = load_set([ROOT / spec], [ROOT / "specs"])
    (cid,) = [i for i in cs.primary if i in cs.artifacts]
    plan, loaded = cs.artifacts[cid], cs.contracts[cid]
    if loaded.contract.source is not None:
        try:
            artifact = locate(loaded.contract.source, loaded.path.parent)
        except CharterError as exc:  # make install installs every pinned checkpoint
            pytest.fail(f"the artifact {cid} pins is not installed: {exc} (make install)")
    else:
        artifact = build(plan, tmp / f"{cid}.{plan.format}")
    return cid, load_battery(cs, cid, Path(artifact))


@pytest.fixture(scope="session", params=["host", pytest.param("standalone", marks=pytest.mark.slow)])
def kernels(request):
    """The kernels as charter._native hosts them (built by pip from the committed bindings), and, in
    the slow set, the standalone build from freshly rendered bindings (a CMake and nanobind build:
    about a minute on two cores, cold)."""
    if request.param == "host":
        return importlib.import_module("charter._native")
    from charter.codegen.bindings import standalone

    return standalone.kernels_module(Path(__file__).resolve().parents[2])
