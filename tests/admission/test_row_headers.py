"""Codecs with a per-row header (Note [Row headers] in charter.formats.ggml_types): GGUF files of
ik_llama.cpp's row-header types, written here byte by byte (gguf-py's writer does not know the
types), are read with the fork's sizes, frozen with `codecs.X.header`, and admitted by both
engines; a file that sizes one tensor by its blocks alone (what gguf-py's writer did,
ik_llama.cpp#2443) and a contract with a wrong header are rejected at the codec stage."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from charter.mutation import report

from charter.cli import main
from charter.formats.ggml_types import GGML_TYPES, GGML_TYPES_BY_NAME
from charter.formats.gguf import read_gguf
from tests.admission.conftest import admit, assert_admitted, assert_rejected
from tests.frozen import freeze

# ik_llama.cpp at 8337e4cd: ggml.h (ids), ggml-common.h (sizeof block_*), ggml.c (blck_size, row_meta_size)
FORK = {
    "IQ1_BN": (134, 64, 13, 2), "IQ2_BN": (135, 64, 16, 4), "IQ4_KS": (144, 256, 136, 4),
    "IQ2_KS": (145, 256, 70, 2), "IQ4_KSS": (146, 256, 128, 4), "IQ5_KS": (152, 256, 168, 4),
    "IQ2_KT": (153, 256, 68, 4), "IQ3_KT": (154, 256, 100, 4), "IQ4_KT": (155, 256, 128, 4),
    "IQ3_KS": (156, 256, 102, 2), "IQ2_KL": (157, 256, 86, 2), "IQ1_KT": (158, 256, 56, 4),
}
NE0, ROWS, ALIGN = 512, 16, 32


def _string(s: str) -> bytes:
    raw = s.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(path: Path, tensors: list[tuple[str, int, int]]) -> None:
    """A GGUF v3 file with `general.architecture = llama` and tensors (name, type id, bytes
    reserved) of dims [NE0, ROWS], packed in order at 32-byte alignment; the data is 0x11s."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 1)
    out += _string("general.architecture") + struct.pack("<I", 8) + _string("llama")
    offset = 0
    for name, type_id, reserved in tensors:
        out += _string(name) + struct.pack("<IQQIQ", 2, NE0, ROWS, type_id, offset)
        offset += -(-reserved // ALIGN) * ALIGN
    out += bytes(-len(out) % ALIGN)
    path.write_bytes(out + b"\x11" * offset)


def _rows(codec: str, header: bool = True) -> int:
    """Bytes of one row: ggml_row_size, or the blocks alone."""
    t = GGML_TYPES_BY_NAME[codec]
    return (t.row_header if header else 0) + NE0 // t.block_size * t.block_bytes


def _layout(short: str | None = None) -> list[tuple[str, int, int]]:
    """Every fork type, then an F32 tensor, so every fork tensor has a next extent."""
    rows = [(f"{c.lower()}.weight", GGML_TYPES_BY_NAME[c].id, ROWS * _rows(c, c != short)) for c in FORK]
    return rows + [("last.weight", 0, ROWS * NE0 * 4)]


def _edited(tmp_path: Path, contract: Path, old: str, new: str) -> Path:
    """A copy of the frozen contracts with one edit of the artifact contract."""
    shutil.copytree(contract.parents[1], tmp_path / "specs")
    edited = tmp_path / "specs" / "artifacts" / contract.name
    text = contract.read_text("utf-8")
    assert text.count(old) == 1
    edited.write_text(text.replace(old, new), "utf-8")
    return edited


@pytest.fixture(autouse=True)
def _checkers_at_o0(monkeypatch):
    """The C++ checkers these files compile run at -O0: the verdict matters here, not the speed
    (an -O2 compile of the value scanner costs over 10 s; tests/values/test_bounds.py and the
    other `--engine cpp` admissions compile theirs at -O2, as charter admit does)."""
    from charter.engines import library

    monkeypatch.setattr(library, "OPTIMIZED", library.FLAGS)


@pytest.fixture(scope="module")
def fork_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rowheaders")
    path = folder / "fork.gguf"
    write_gguf(path, _layout())
    return path, freeze(path, folder / "specs", "fork")


def test_the_table_holds_the_forks_facts():
    assert {t.name: (t.id, t.block_size, t.block_bytes, t.row_header) for t in GGML_TYPES.values()
            if t.row_header} == FORK


def test_the_reader_sizes_rows_with_their_header(fork_file):
    path, _ = fork_file
    sizes = {t.name: t.nbytes for t in read_gguf(path).tensors}
    assert all(sizes[f"{c.lower()}.weight"] == ROWS * _rows(c) for c in FORK)


def test_freeze_states_the_header(fork_file):
    _, contract = fork_file
    text = contract.read_text("utf-8")
    assert "  IQ4_KSS:\n    block: 256\n    bytes: 128\n    header: 4\n" in text
    assert "  F32:\n    block: 1\n    bytes: 4\n  IQ1_BN:" in text


@pytest.mark.parametrize("engine", ("python", "cpp"))
def test_a_fork_file_is_admitted(capsys, fork_file, engine):
    path, contract = fork_file
    assert_admitted(admit(capsys, path, str(contract), "--verify-payload", "--engine", engine))


@pytest.mark.parametrize("engine", ("python", "cpp"))
def test_a_tensor_a_header_short_is_rejected_at_the_codec_stage(capsys, tmp_path, fork_file, engine):
    """IQ4_KSS reserved by its blocks alone: its extent overlaps the next one by ROWS * 4 bytes,
    which the codec stage names (not LAYOUT_OVERLAP)."""
    _, contract = fork_file
    short = tmp_path / "short.gguf"
    write_gguf(short, _layout(short="IQ4_KSS"))
    d = assert_rejected(admit(capsys, short, str(contract), "--engine", engine), "codec", "CODEC_ROW_HEADER",
                        "codecs.IQ4_KSS.header", root=contract.parents[2], fact="IQ4_KSS")
    assert (d["expected"], d["actual"]) == ("260 bytes per row", "256 bytes per row")
    assert d["message"].startswith("iq4_kss.weight: 16 rows of 260 bytes (a 4-byte header and 2 blocks of 128)")


@pytest.mark.parametrize("header,engine", [("0", "python"), ("2", "python"),
                                           pytest.param("0", "cpp", marks=pytest.mark.slow)])  # a compile: 10 s
def test_a_wrong_header_in_the_contract_is_rejected(capsys, tmp_path, fork_file, engine, header):
    path, contract = fork_file
    edited = _edited(tmp_path, contract, "    bytes: 128\n    header: 4\n  IQ4_KT",
                     f"    bytes: 128\n    header: {header}\n  IQ4_KT")
    d = assert_rejected(admit(capsys, path, str(edited), "--engine", engine), "codec", "CODEC_ROW_HEADER",
                        "codecs.IQ4_KSS.header", root=tmp_path, fact="IQ4_KSS")
    assert (d["expected"], d["actual"]) == (header, "4")


def test_a_value_policy_over_a_fork_type_is_refused_by_name(capsys, tmp_path, fork_file):
    """No value rule is known for the fork's types (Note [Value rules]): refused, never skipped."""
    _, contract = fork_file
    edited = _edited(tmp_path, contract, "\npayload:", "\nvalues:\n  default: finite\npayload:")
    assert main(["check", "--search", str(tmp_path / "specs"), str(edited)]) == 2
    assert "IQ4_KSS" in capsys.readouterr().out


def _battery(fork_file, tmp_path, engine: str) -> dict:
    path, contract = fork_file
    out = tmp_path / "battery.json"
    code = main(["mutate", "--contract", str(contract), "--artifact", str(path), "--engine", engine, "-j", "1", "-q",
                 "--json", str(out)])
    outcomes, _ = report.from_json(out.read_text())
    assert code == 0 and report.summary(outcomes)["passed"], report.summary(outcomes)
    return {o.mutant.id: o.to_json() for o in outcomes}


def test_the_battery_makes_every_tensor_a_header_short(capsys, tmp_path, fork_file):
    """Every row-header tensor but the last is rejected at the codec stage when sized by its blocks
    alone; every stated header, and the default 0 of F32, is a contract leaf the codec stage owns."""
    outcomes = _battery(fork_file, tmp_path, "python")
    for codec in FORK:
        o = outcomes[f"artifact:tensors.{codec.lower()}.weight:a row header short"]
        assert (o["verdict"], o["code"], o["field"]) == ("killed", "CODEC_ROW_HEADER", f"codecs.{codec}.header"), o
        for op in ("+1", "-1", "zero"):
            o = outcomes[f"contract:artifact:codecs.{codec}.header:{op}"]
            assert (o["verdict"], o["code"], o["field"]) == ("killed", "CODEC_ROW_HEADER", f"codecs.{codec}.header")
    o = outcomes["contract:artifact:codecs.F32.header:add header 1"]
    assert (o["verdict"], o["code"], o["field"]) == ("killed", "CODEC_ROW_HEADER", "codecs.F32.header"), o


@pytest.mark.slow
def test_both_engines_agree_on_the_battery(capsys, tmp_path, fork_file):
    _battery(fork_file, tmp_path, "both")
