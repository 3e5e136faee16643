"""A writable copy of the real SmolLM2 GGUF, patched and restored by each value test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from charter.formats.gguf import read_gguf
from tests.admission.conftest import _checker_cache  # noqa: F401  (the per-session checker cache)


@pytest.fixture(scope="module")
def smollm2_copy(tmp_path_factory, smollm2_path) -> Path:
    path = tmp_path_factory.mktemp("values") / smollm2_path.name
    shutil.copyfile(smollm2_path, path)
    return path


@pytest.fixture(scope="module")
def smollm2_header(smollm2_path):
    return read_gguf(str(smollm2_path))


class Patched:
    """Bytes written at an offset of the copy, restored when the test ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.saved: list[tuple[int, bytes]] = []

    def write(self, offset: int, data: bytes) -> None:
        with open(self.path, "r+b") as f:
            f.seek(offset)
            self.saved.append((offset, f.read(len(data))))
            f.seek(offset)
            f.write(data)

    def restore(self) -> None:
        with open(self.path, "r+b") as f:
            for offset, data in reversed(self.saved):
                f.seek(offset)
                f.write(data)
        self.saved.clear()


@pytest.fixture
def patched(smollm2_copy):
    p = Patched(smollm2_copy)
    yield p
    p.restore()
