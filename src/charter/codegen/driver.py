"""Contracts -> generated files, deterministically; `--check` diffs instead of writing.

Every output is a pure function of its contracts, the templates and charter's version: sorted,
no timestamps, LF, one trailing newline, written atomically and only when changed. The manifest
(generated/manifest.json) records, per output, the sha256 of each input spec, of the templates,
and of the output itself, so `charter admit` can tell a committed checker from a stale one.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import jinja2

from charter import __version__, atomic
from charter.codegen.common.header import MARK, generated_header
from charter.codegen.common.inputs import checker_inputs
from charter.codegen.common.manifest import MANIFEST, python_checker_path, sha256_text, template_hashes
from charter.codegen.common.render import environment, normalize
from charter.codegen.python.build import CheckerView, build as build_python_checker
from charter.contract.contractset import ContractSet
from charter.contract.plan import ArtifactPlan


@dataclass(frozen=True)
class Output:
    path: str  # relative to the output directory, POSIX
    text: str
    inputs: dict[str, str]  # spec display path -> sha256 of its bytes


@functools.lru_cache(maxsize=None)
def _environment(package: str) -> jinja2.Environment:
    """One environment per target package, so each template compiles once per process."""
    return environment(package)


def render_python_checker(cs: ContractSet, plan: ArtifactPlan) -> Output:
    inputs = checker_inputs(cs, plan)
    model_spec = {k: v for k, v in inputs.items() if k != plan.spec_path}
    header = generated_header("#", (plan.spec_path, plan.spec_sha256), model_spec)
    return Output(python_checker_path(plan.id), render_checker_text(plan, header), inputs)


def render_checker_text(plan: ArtifactPlan, header: str) -> str:
    """The Python checker of one plan."""
    return render_checker_view(build_python_checker(plan), header)


def render_checker_view(view: CheckerView, header: str) -> str:
    """The Python checker of one view (the mutation battery renders views of mutated plans, their
    tables hoisted: charter.mutation.assemble)."""
    return normalize(_environment("charter.codegen.python").get_template("checker.py.jinja").render(
        header=header, view=view))


def render_all(cs: ContractSet) -> list[Output]:
    """Every output of a valid contract set, sorted by path."""
    outputs = [render_python_checker(cs, cs.artifacts[i]) for i in sorted(cs.artifacts)]
    outputs.extend(_cpp_checker_outputs(cs))
    outputs.extend(_label_outputs(cs))
    outputs.extend(_kernel_outputs(cs))
    outputs.extend(_regions_outputs(cs))
    return _one_output_per_path(sorted(outputs, key=lambda o: o.path))


def _one_output_per_path(outputs: list[Output]) -> list[Output]:
    """Two outputs at one path would leave one contract without its generated code while
    `--check` said "up to date" (Note [Generated identifiers] in charter.codegen.common.names)."""
    for before, after in zip(outputs, outputs[1:]):
        if before.path == after.path:
            raise ValueError(f"{next(iter(before.inputs))} and {next(iter(after.inputs))} both generate {after.path}; "
                             "their ids must not share an identifier")
    return outputs


def _cpp_checker_outputs(cs: ContractSet) -> list[Output]:
    """The C++ checker of every artifact contract (generated/cpp/<id>.hpp; docs/native.md)."""
    from charter.codegen.cpp import render_cpp_checkers

    return [Output(path, normalize(text), inputs) for path, text, inputs in render_cpp_checkers(cs)]


def _kernel_outputs(cs: ContractSet) -> list[Output]:
    """Kernel bindings (generated/bindings/) and per-model Metal headers (generated/metal/)."""
    from charter.codegen.bindings import bindings_inputs, render_bindings
    from charter.codegen.metal import metal_inputs, render_metal

    out = []
    for render, inputs_of in ((render_bindings, bindings_inputs), (render_metal, metal_inputs)):
        inputs = inputs_of(cs)
        out.extend(Output(path, normalize(text), inputs[path]) for path, text in render(cs))
    return out


def _regions_outputs(cs: ContractSet) -> list[Output]:
    """Region tables of every regions contract (generated/python/regions/, generated/cpp/regions/)."""
    from charter.codegen import regions

    out = []
    for cid in sorted(cs.regions):
        plan = cs.regions[cid]
        for path, text in regions.render(cs, plan):
            out.append(Output(path, normalize(text), regions.inputs(cs, plan)))
    return out


def _label_outputs(cs: ContractSet) -> list[Output]:
    from charter.codegen import labels

    out = []
    for lc in cs.of_kind("provenance"):
        for path, text in labels.render(lc, lc.doc.file):
            out.append(Output(path, normalize(text), {lc.doc.file: sha256_text(lc.doc.source)}))
    from charter.codegen import textcases  # text contracts: case tables (charter.codegen.textcases)

    for lc in cs.of_kind("text"):
        for path, text in textcases.render(lc, lc.doc.file):
            out.append(Output(path, normalize(text), {lc.doc.file: sha256_text(lc.doc.source)}))
    return out


def render_manifest(outputs: list[Output]) -> str:
    manifest = {
        "charter": __version__,
        "templates": template_hashes(),
        "outputs": {o.path: {"sha256": sha256_text(o.text), "inputs": dict(sorted(o.inputs.items()))}
                    for o in outputs},
    }
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


@dataclass(frozen=True)
class Result:
    written: list[str]
    stale: list[str]  # (check mode) files that differ, are missing, or should not exist


def generate(cs: ContractSet, out_dir: Path, check: bool = False) -> Result:
    outputs = render_all(cs)
    files = {o.path: o.text for o in outputs}
    files[MANIFEST] = render_manifest(outputs)
    written, stale = [], []
    if check:
        for rel, text in sorted(files.items()):
            try:
                current = (out_dir / rel).read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                current = None
            if current != text:
                stale.append(f"{rel} ({'missing' if current is None else 'differs'})")
    else:
        changed = atomic.write_many({out_dir / rel: text.encode("utf-8") for rel, text in sorted(files.items())})
        written = sorted(p.relative_to(out_dir).as_posix() for p in changed)
    for orphan in _orphans(out_dir, set(files)):
        if check:
            stale.append(f"{orphan} (no contract generates it)")
        else:
            (out_dir / orphan).unlink()
            written.append(f"{orphan} (removed: no contract generates it)")
    return Result(written, stale)


def _orphans(out_dir: Path, expected: set[str]) -> list[str]:
    """Generated files left behind by a removed contract (only files carrying the @generated MARK)."""
    found = []
    if not out_dir.is_dir():
        return found
    for p in sorted(out_dir.rglob("*")):
        rel = p.relative_to(out_dir).as_posix()
        if p.is_file() and rel not in expected and "__pycache__" not in rel:
            with open(p, "rb") as f:
                if MARK.encode() in f.read(300):
                    found.append(rel)
    return found
