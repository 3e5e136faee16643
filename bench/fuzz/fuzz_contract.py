"""atheris harness: hostile text through the YAML loader, the contract loader and resolution.

    python bench/fuzz/fuzz_contract.py /tmp/charter-fuzz/contract -max_total_time=600

Each input is decoded as UTF-8 (with replacement) and loaded as a contract; only CharterError
with spec-stage diagnostics may come out. The seed directory gets the shipped contracts.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import atheris

import common

with atheris.instrument_imports():
    from charter.diagnostics import CharterError, Stage
    from charter.contract.load import load_contract_text


def test_one_input(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    try:
        load_contract_text(text, "fuzz.yaml")
    except CharterError as exc:
        assert exc.diagnostics and all(d.stage is Stage.SPEC for d in exc.diagnostics), exc.diagnostics


def main() -> None:
    dirs = [a for a in sys.argv[1:] if not a.startswith("-")]
    if dirs and not Path(dirs[0]).exists():
        seeds = Path(dirs[0])
        seeds.mkdir(parents=True)
        for i, spec in enumerate(sorted((common.ROOT / "specs").rglob("*.yaml"))):
            shutil.copyfile(spec, seeds / f"{i:03d}-{spec.name}")
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
