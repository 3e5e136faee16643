"""The shipped text contracts, loaded once per session with the contracts they reference."""

from __future__ import annotations

import pytest

from charter.contract.contractset import load_set
from tests.conftest import SPECS

MINILM = SPECS / "text" / "all-minilm-l6-v2-text.yaml"
SMOLLM2 = SPECS / "text" / "smollm2-135m-instruct-text.yaml"


def _loaded(path):
    cs = load_set([path], [SPECS])
    assert cs.ok, cs.diagnostics
    (cid,) = cs.primary
    return cs.contracts[cid], cs


@pytest.fixture(scope="session")
def minilm():
    return _loaded(MINILM)


@pytest.fixture(scope="session")
def smollm2():
    return _loaded(SMOLLM2)


@pytest.fixture(scope="session")
def smollm2_definition(smollm2):
    from charter.text.tables import load_definition

    lc, cs = smollm2
    return load_definition(lc, cs)
