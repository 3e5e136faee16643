"""Text-cases target: a text contract -> its case tables for a runtime's own tests.

    python/text/<id_with_underscores>.py   the cases as NamedTuples (standard library only)
    cpp/text/<id>.hpp                       the same tables as constexpr data (ids pooled, spans per case)

Each case carries its provenance class and the contract's `file:line:col`, so a runtime tokenizer
or renderer test that asserts upstream behaviour can refuse a contract control. Data flows one
way: contract -> `build` (ready-made literals) -> templates that only loop and substitute.
"""

from __future__ import annotations

from charter.codegen.common.render import environment, normalize
from charter.codegen.textcases.build import build
from charter.contract.load import LoadedContract

__all__ = ["render"]


def render(loaded: LoadedContract, spec_display_path: str) -> list[tuple[str, str]]:
    view = build(loaded, spec_display_path)
    env = environment("charter.codegen.textcases")
    return [
        (f"cpp/text/{loaded.contract.id}.hpp", normalize(env.get_template("cases.hpp.jinja").render(view=view))),
        (f"python/text/{view.identifier}.py", normalize(env.get_template("cases.py.jinja").render(view=view))),
    ]
