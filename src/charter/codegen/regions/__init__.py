"""Regions target: a verified regions plan -> region tables a runtime can include.

    python/regions/<id_with_underscores>.py   REGIONS, INSTANCES, OWNERSHIP, EDGES, NODES, the F1 gate
    cpp/regions/<id>.hpp                       the same tables as constexpr data, and the F1 gate

Data flows one way: plan -> `build` (literals, through the escapers of charter.codegen.common) ->
templates that only loop and substitute. The F1 gate is generated from the contract: whether the
graph is F1-executable and why not (charter.regions.gate.check_graph at generation time), and the
token domain, so a runtime that includes the header refuses the same calls the interpreter does.
"""

from __future__ import annotations

from charter.codegen.common.render import environment, normalize
from charter.codegen.regions.build import build

__all__ = ["render"]


def render(cs, plan) -> list[tuple[str, str]]:
    view = build(cs, plan)
    env = environment("charter.codegen.regions")
    return [
        (f"cpp/regions/{plan.id}.hpp", normalize(env.get_template("regions.hpp.jinja").render(view=view))),
        (f"python/regions/{view.identifier}.py", normalize(env.get_template("regions.py.jinja").render(view=view))),
    ]


def inputs(cs, plan) -> dict[str, str]:
    """The specs a plan's tables depend on: the regions contract, its model and artifact, and every
    kernel contract its nodes call (display path -> sha256 of the bytes)."""
    from charter.codegen.common.manifest import sha256_text

    ids = [plan.id, plan.model, plan.artifact] + sorted({n.kernel for i in plan.instances for n in i.nodes})
    return dict(sorted((cs.contracts[i].doc.file, sha256_text(cs.contracts[i].doc.source)) for i in ids))
