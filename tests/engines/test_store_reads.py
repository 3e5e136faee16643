"""The C++ checker asks for store regions as it asks for more header bytes (Note [Store regions] in
native/include/charter/stores.hpp): the caller answers each read of the stores stage, so no region
plan exists beside the stages, and a reader that fails voids the check instead of judging the file."""

from __future__ import annotations

import pytest

from charter.admission.view import read_view
from charter.engines import Options, cpp, python
from charter.engines.choose import python_checker
from charter.contract.contractset import load_set
from tests.conftest import ROOT

from tests.conftest import need_checker

CID = "qwen4exp-text"


@pytest.fixture(scope="module")
def qwen(native, tmp_path_factory):
    from charter.conforming.stores import build_sparse, overrides_for

    need_checker(native, CID)
    cs = load_set([ROOT / "specs" / "artifacts" / f"{CID}.yaml"], [ROOT / "specs"])
    path = tmp_path_factory.mktemp("qwen") / f"{CID}.gguf"
    build_sparse(cs.artifacts[CID], path, overrides=overrides_for(CID))
    checker = python_checker(cs, CID, ROOT / "generated").module
    view = read_view(str(path), "gguf")
    with open(path, "rb") as f:
        header = f.read(view.data_offset)
    yield path, header, view.file_size, checker
    path.unlink()


def _file_reader(path, log):
    def read_at(offset: int, length: int) -> bytes:
        log.append((offset, length))
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(length)

    return read_at


def test_one_run_answers_every_read_of_the_stage(qwen):
    path, header, size, checker = qwen
    asked = []
    assert cpp.run(CID, header, size, read_at=_file_reader(path, asked)).admitted
    assert len(asked) == len(set(asked)) >= 10  # each read asked once, in one run of the checker
    report = python.admit(path, checker)
    assert report.admitted and cpp.admit(path, CID).to_json() == report.to_json()


def test_without_a_reader_the_stage_finds_no_bytes(qwen):
    path, header, size, _ = qwen
    v = cpp.run(CID, header, size)
    assert (v.finding.stage, v.finding.code, v.finding.field) == ("stores", "STORE_GEOMETRY", "file")


def test_a_failing_reader_voids_the_check(qwen):
    path, header, size, _ = qwen

    def broken(offset: int, length: int) -> bytes:
        raise OSError(5, "Input/output error")

    with pytest.raises(OSError, match="Input/output error"):
        cpp.run(CID, header, size, read_at=broken)
    with pytest.raises(ValueError, match="read_at returned 129 bytes for a read of 128"):
        cpp.run(CID, header, size, read_at=lambda offset, length: b"\0" * (length + 1))
    with pytest.raises(TypeError):
        cpp.run(CID, header, size, read_at=lambda offset, length: length)


def test_a_short_answer_is_the_end_of_the_file(qwen):
    path, header, size, _ = qwen
    asked = []
    whole = _file_reader(path, asked)
    v = cpp.run(CID, header, size, Options(), read_at=lambda offset, length: whole(offset, length)[:-1])
    first = asked[0][0]
    assert v.finding == ("stores", "STORE_GEOMETRY", "file", first)
    assert v.diagnostic.message == f"file ended at {first + asked[0][1] - 1}, before {first + asked[0][1]}"
