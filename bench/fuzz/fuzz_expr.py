"""atheris harness: hostile text through the contract expression parser and evaluator.

    python bench/fuzz/fuzz_expr.py -max_total_time=600

Only CharterError with EXPR_* diagnostics may come out, for any text and any environment.
"""

from __future__ import annotations

import sys

import atheris

import common  # noqa: F401 - sets sys.path

with atheris.instrument_imports():
    from charter.diagnostics import CharterError, Stage
    from charter.contract import expr

ENV = {"a": 3, "b": 2**200, "c": 0, "x": 1.5, "y": -1, "heads": 9, "hidden": 576}


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    text = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 200))
    try:
        e = expr.parse(text)
        e.evaluate(ENV)
    except CharterError as exc:
        assert exc.diagnostics and all(d.stage is Stage.SPEC for d in exc.diagnostics), exc.diagnostics


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
