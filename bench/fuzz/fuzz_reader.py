"""atheris harness: hostile bytes through charter's strict reader and admission.

    python bench/fuzz/fuzz_reader.py gguf /tmp/charter-fuzz/gguf -max_total_time=600
    python bench/fuzz/fuzz_reader.py safetensors /tmp/charter-fuzz/safetensors -max_total_time=600

The first argument picks the format; the rest go to libFuzzer. The seed directory is created
(the base file and the hostile corpus of that format) when it does not exist yet.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

import common

with atheris.instrument_imports():
    from charter.admission.runtime import admit_view
    from charter.admission.view import parse_view
    from charter.diagnostics import CharterError, Stage

FMT = sys.argv.pop(1) if len(sys.argv) > 1 and sys.argv[1] in ("gguf", "safetensors") else "gguf"
CHECKER = common.checker(FMT)
BASE = None


def base_facts():
    global BASE
    if BASE is None:
        from tests.hardening import corpus

        data = corpus.base_gguf() if FMT == "gguf" else corpus.base_safetensors()
        BASE = common.facts(parse_view(data, len(data), FMT))
    return BASE


def test_one_input(data: bytes) -> None:
    try:
        view = parse_view(data, len(data), FMT)
    except CharterError as exc:
        assert len(exc.diagnostics) == 1, exc.diagnostics
        d = exc.diagnostics[0]
        assert d.stage is Stage.CONTAINER and isinstance(d.offset, int) and d.field, d
        return
    report = admit_view(view, "<fuzz>", CHECKER)
    if report.admitted:
        assert common.facts(view) == base_facts(), "admitted a file whose pinned facts differ"


def main() -> None:
    args = sys.argv
    dirs = [a for a in args[1:] if not a.startswith("-")]
    if dirs and not Path(dirs[0]).exists():
        common.write_seeds(Path(dirs[0]), FMT)
    atheris.Setup(args, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
