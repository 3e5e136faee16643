"""Note [Vouched bundle] in charter.bundles.vouched: the second admission of an unchanged bundle
contract runs from its receipt (no YAML, no pydantic), and any changed byte it was made from sends
the admission back to the contracts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from charter.bundles import vouched
from charter.cli import main

from .conftest import CONTRACTS

RECEIPT = "the bundle's receipt vouches"


def _admit(capsys, folder, contract, *extra) -> tuple[int, str, str]:
    code = main(["admit", str(folder), "--contract", str(contract), "-v", *extra])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def frozen(minilm_folders, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["freeze", str(minilm_folders[2]), "--id", "m", "-o", str(out)]) == 0
    capsys.readouterr()
    return minilm_folders[2], out


def test_the_second_admission_runs_from_the_receipt(frozen, capsys):
    folder, out = frozen
    bundle = out / "bundles" / "m.yaml"
    first = _admit(capsys, folder, bundle)
    assert first[0] == 0 and RECEIPT not in first[2]
    second = _admit(capsys, folder, bundle)
    assert second[0] == 0 and RECEIPT in second[2] and second[1] == first[1]


def test_the_receipt_path_imports_no_contract_machinery(frozen, capsys):
    folder, out = frozen
    bundle = out / "bundles" / "m.yaml"
    assert _admit(capsys, folder, bundle)[0] == 0
    probe = ("import sys; from charter.cli import main; code = main(sys.argv[1:]); "
             "heavy = [m for m in ('pydantic', 'yaml', 'jinja2', 'numpy') if m in sys.modules]; "
             "print('HEAVY', heavy); sys.exit(code)")
    run = subprocess.run([sys.executable, "-c", probe, "admit", str(folder), "--contract", str(bundle)],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "HEAVY []" in run.stdout, run.stdout + run.stderr


@pytest.mark.parametrize("edit", ["bundle", "artifact", "model"])
def test_a_changed_contract_file_is_no_vouching(frozen, capsys, edit):
    folder, out = frozen
    bundle = out / "bundles" / "m.yaml"
    assert _admit(capsys, folder, bundle)[0] == 0
    target = {"bundle": bundle, "artifact": out / "artifacts" / "m-safetensors.yaml",
              "model": out / "models" / "m-model.yaml"}[edit]
    target.write_text(target.read_text() + "# edited\n")
    code, _, err = _admit(capsys, folder, bundle)
    assert code == 0 and RECEIPT not in err
    assert RECEIPT in _admit(capsys, folder, bundle)[2]  # the new receipt vouches for the new bytes


def test_a_changed_fact_is_checked_after_the_receipt(frozen, capsys):
    folder, out = frozen
    bundle = out / "bundles" / "m.yaml"
    assert _admit(capsys, folder, bundle)[0] == 0
    artifact = out / "artifacts" / "m-safetensors.yaml"
    text = artifact.read_text()
    assert "  - 1\n  - max_position_embeddings\n" in text
    artifact.write_text(text.replace("  - 1\n  - max_position_embeddings\n", "  - 2\n  - max_position_embeddings\n", 1))
    code, text, err = _admit(capsys, folder, bundle)
    assert code == 1 and RECEIPT not in err and "TENSOR_SHAPE" in text


def test_a_tampered_plan_is_no_vouching(frozen, capsys):
    folder, out = frozen
    bundle = out / "bundles" / "m.yaml"
    assert _admit(capsys, folder, bundle)[0] == 0
    receipt = vouched.bundle_receipt_path(bundle)
    plan = json.loads(receipt.read_text())["plan"]
    with open(plan, "ab") as f:
        f.write(b"\0")
    code, _, err = _admit(capsys, folder, bundle)
    assert code == 0 and RECEIPT not in err


def test_the_cpp_engine_is_vouched_for_once_it_ran(minilm_folders, capsys):
    folder, bundle = minilm_folders[2], CONTRACTS[2]
    vouched.bundle_receipt_path(bundle).unlink(missing_ok=True)
    assert _admit(capsys, folder, bundle)[0] == 0  # a receipt without a C++ checker
    code, _, err = _admit(capsys, folder, bundle, "--engine", "cpp")
    assert code == 0 and RECEIPT not in err and "weight files: c++" in err
    code, _, err = _admit(capsys, folder, bundle, "--engine", "cpp")
    assert code == 0 and RECEIPT in err and "weight files: c++" in err
