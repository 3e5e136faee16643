"""Labels target: a provenance contract -> a typed Python accessor module and a C++ header.

    python/labels/<id_with_underscores>.py   load(name), require_class(name, cls), the label table
    cpp/labels/<id>.hpp                       enum class ProvenanceClass and a constexpr label table

Data flows one way: contract -> `build` (a view of ready-made literals) -> Jinja2 templates that
only loop and substitute. Output is deterministic (spec order, no timestamps), LF, one trailing
newline; `charter generate` writes it.
"""

from __future__ import annotations

import jinja2

from charter.codegen.common.render import environment, normalize
from charter.codegen.labels.build import build
from charter.contract.load import LoadedContract

__all__ = ["render"]


def _environment() -> jinja2.Environment:
    return environment("charter.codegen.labels")


def render(loaded: LoadedContract, spec_display_path: str) -> list[tuple[str, str]]:
    """(path relative to the output directory, text) of each label file of one contract."""
    view = build(loaded, spec_display_path)
    env = _environment()
    return [
        (f"cpp/labels/{loaded.contract.id}.hpp", normalize(env.get_template("labels.hpp.jinja").render(view=view))),
        (f"python/labels/{view.identifier}.py", normalize(env.get_template("labels.py.jinja").render(view=view))),
    ]
