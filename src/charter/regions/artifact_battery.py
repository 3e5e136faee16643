"""The artifact side of the region battery: change the file so that one region fact must reject it,
and check that both layers do (Note [Region artifact battery]).

Note [Region artifact battery]: each mutant edits the tensor table of the real file's header (a
tensor renamed out of every region, renamed into another region's pattern, dropped, duplicated,
a second head table, an extra layer, a layer missing, a shape or a codec changed) and is
re-serialized with the data section unchanged (charter.mutation.gguf_ops.rebuild, as the
artifact battery does). Every mutant states two predictions, written here by hand from the
contracts and the documented order of the checks, never computed by the code under test:

  admission  the stage, code and field at which `charter admit FILE --contract REGIONS` rejects the
             file: the strict reader, then the artifact contract's stages, then the region check
             (charter.regions.commands, Note [Ownership at admission]). Because the artifact
             contract's inventory is exact, the tensors stage (or the reader) owns these facts and
             rejects first;
  regions    the code and field the region check itself gives on the same tensor table, so the
             check that runs after admission is shown to reject what it claims, not to pass by
             never seeing a bad file.

A mutant is killed when both first diagnostics match (the field by prefix, as the contract side
compares it). The unchanged file is the control: admitted, and every tensor owned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from charter.diagnostics import CharterError, Diagnostic


class TableTensor(NamedTuple):
    """One record of a mutated tensor table, as the region check reads it."""

    name: str
    shape: tuple[int, ...]
    codec: str


@dataclass(frozen=True)
class Prediction:
    stage: str  # the stage of the admit path: container ... policy, or regions
    code: str
    field: str


@dataclass(frozen=True)
class ArtifactMutant:
    name: str
    edit: Callable[[list], list]  # the header's TensorInfo list -> the mutant's
    admission: Prediction
    regions: tuple[str, str]  # (code, field prefix) of the region check on the mutant's table


@dataclass(frozen=True)
class ArtifactOutcome:
    mutant: ArtifactMutant | None  # None: the unchanged-file control
    verdict: str  # killed | survived | regression | admitted | refused
    admission: Diagnostic | None
    regions: Diagnostic | None


def _renamed(old: str, new: str) -> Callable[[list], list]:
    return lambda ts: [t._replace(name=new) if t.name == old else t for t in ts]


def _dropped(*names: str, prefix: str | None = None) -> Callable[[list], list]:
    return lambda ts: [t for t in ts if t.name not in names and not (prefix and t.name.startswith(prefix))]


def _appended(source: str, new: str) -> Callable[[list], list]:
    return lambda ts: ts + [next(t for t in ts if t.name == source)._replace(name=new)]


def _extra_layer(source: int, new: int) -> Callable[[list], list]:
    def edit(ts: list) -> list:
        copies = [t._replace(name=t.name.replace(f"blk.{source}.", f"blk.{new}.", 1))
                  for t in ts if t.name.startswith(f"blk.{source}.")]
        return ts + copies
    return edit


def _dims(name: str, dims: tuple[int, ...]) -> Callable[[list], list]:
    return lambda ts: [t._replace(dims=dims) if t.name == name else t for t in ts]


def _codec(name: str, codec: str) -> Callable[[list], list]:
    from charter.formats.ggml_types import GGML_TYPES_BY_NAME

    return lambda ts: [t._replace(ggml_type=GGML_TYPES_BY_NAME[codec]) if t.name == name else t for t in ts]


def smollm2_artifact_mutants() -> list[ArtifactMutant]:
    """Mutants of SmolLM2-135M-Instruct.Q4_1.gguf (272 tensors; layer order in the file: attn_norm,
    ffn_down, ffn_gate, ffn_up, ffn_norm, attn_k, attn_output, attn_q, attn_v; output_norm last)."""
    m, P = ArtifactMutant, Prediction
    return [
        m("a tensor renamed so no region owns it", _renamed("blk.3.attn_q.weight", "blk.3.self_q.weight"),
          P("tensors", "TENSOR_MISSING", "tensors.blk.3.attn_q.weight"), ("REGION_UNOWNED", "blk.3.self_q.weight")),
        m("a mlp tensor renamed into the attention region's pattern",
          _renamed("blk.7.ffn_norm.weight", "blk.7.attn_ffn_norm.weight"),
          P("tensors", "TENSOR_MISSING", "tensors.blk.7.ffn_norm.weight"),
          ("REGION_UNOWNED", "blk.7.attn_ffn_norm.weight")),
        m("an owned layer tensor dropped", _dropped("blk.29.ffn_down.weight"),
          P("tensors", "TENSOR_MISSING", "tensors.blk.29.ffn_down.weight"), ("REGION_UNOWNED", "blk.29.ffn_down.weight")),
        m("the final norm's tensor dropped", _dropped("output_norm.weight"),
          P("tensors", "TENSOR_MISSING", "tensors.output_norm.weight"), ("REGION_UNOWNED", "output_norm.weight")),
        m("a whole layer dropped", _dropped(prefix="blk.29."),
          P("tensors", "TENSOR_MISSING", "tensors.blk.29."), ("REGION_UNOWNED", "blk.29.")),
        m("an owned tensor duplicated under its own name", _appended("blk.0.attn_q.weight", "blk.0.attn_q.weight"),
          P("container", "CONTAINER_TENSOR_NAME", "tensors[272].name"), ("REGION_OWNERSHIP", "blk.0.attn_q.weight")),
        m("the tied table duplicated as an untied head", _appended("token_embd.weight", "output.weight"),
          P("tensors", "TENSOR_UNEXPECTED", "tensors.output.weight"), ("REGION_UNOWNED", "output.weight")),
        m("an extra layer's tensors", _extra_layer(29, 30),
          P("tensors", "TENSOR_UNEXPECTED", "tensors.blk.30.attn_norm.weight"),
          ("REGION_UNOWNED", "blk.30.attn_norm.weight")),
        m("the embedding table one row short of the logits edge",
          _dims("token_embd.weight", (576, 49151)),
          P("tokenizer", "TOKENIZER_LOGITS_ROWS", "tokenizer.logits_rows"), ("REGION_SIGNATURE", "token_embd.weight")),
        m("a K projection narrower than the kv state", _dims("blk.0.attn_k.weight", (576, 160)),
          P("tensors", "TENSOR_SHAPE", "tensors.blk.0.attn_k.weight"), ("REGION_SIGNATURE", "blk.0.attn_k.weight")),
        m("a Q4_1 weight stored as Q4_0", _codec("blk.0.ffn_up.weight", "Q4_0"),
          P("tensors", "TENSOR_CODEC", "tensors.blk.0.ffn_up.weight"), ("REGION_PRECISION", "blk.0.ffn_up.weight")),
        m("the F32 final norm stored as F16", _codec("output_norm.weight", "F16"),
          P("tensors", "TENSOR_CODEC", "tensors.output_norm.weight"), ("REGION_PRECISION", "output_norm.weight")),
    ]


ARTIFACT_MUTANTS = {"smollm2-135m-instruct-q4_1-regions": smollm2_artifact_mutants}


def _matches(d: Diagnostic | None, code: str, field: str, stage: str | None = None) -> bool:
    """The first diagnostic has `code`, a field starting with `field` and, if given, `stage`."""
    return (d is not None and d.code.value == code and d.field.startswith(field)
            and (stage is None or d.stage.value == stage))


def _admit(plan, checker, artifact: Path, blob: bytes, size: int) -> Diagnostic | None:
    """The first rejection of `charter admit ARTIFACT --contract REGIONS` for a file whose header is
    `blob` (its data section the real file's): reader, artifact stages, then the region check."""
    from charter.admission.runtime import admit_view
    from charter.admission.view import parse_view
    from charter.diagnostics import Code
    from charter.regions.commands import file_regions

    try:
        view = parse_view(blob, size, checker.FORMAT)
    except CharterError as exc:
        return exc.diagnostics[0]
    report = admit_view(view, str(artifact), checker)
    if not report.admitted:
        d = report.diagnostic
        return Diagnostic(Code(d.code), d.field, d.message, d.expected, d.actual)
    found = file_regions(plan, view.tensors)
    return found[0] if found else None


@dataclass(frozen=True)
class ArtifactBattery:
    """What every mutant of one regions contract runs against: the plan, the artifact contract's
    Python checker (as `charter admit` chooses it), the real file's header and its bytes."""

    plan: object
    checker: object
    path: Path
    header: object
    raw: bytes

    @classmethod
    def load(cls, spec: Path, artifact: Path | None = None) -> "ArtifactBattery":
        from charter.contract.contractset import load_set
        from charter.engines.choose import python_checker
        from charter.formats.gguf import read_gguf
        from charter.regions import parity

        root = spec.resolve().parent.parent  # specs/
        cs = load_set([spec], [root])
        cs.raise_if_failed()
        (plan,) = cs.regions.values()
        path = Path(artifact) if artifact is not None else parity.artifact_path(cs, plan.artifact)
        if plan.artifact not in cs.artifacts:  # as `charter admit --contract REGIONS` loads it
            cs = load_set([cs.contracts[plan.artifact].path], [root])
            cs.raise_if_failed()
        checker = python_checker(cs, plan.artifact, root.parent / "generated").module
        h = read_gguf(path)
        with open(path, "rb") as f:
            raw = f.read(h.data_offset)
        return cls(plan, checker, path, h, raw)

    def control(self) -> ArtifactOutcome:
        first = _admit(self.plan, self.checker, self.path, self.raw, self.header.file_size)
        return ArtifactOutcome(None, "admitted" if first is None else "refused", first, None)

    def run(self, mutant: ArtifactMutant) -> ArtifactOutcome:
        from charter.mutation.gguf_ops import rebuild
        from charter.regions.commands import file_regions

        tensors = mutant.edit(list(self.header.tensors))
        blob, size = rebuild(self.header, tensors=tensors)
        admitted = _admit(self.plan, self.checker, self.path, blob, size)
        found = file_regions(self.plan, [TableTensor(t.name, tuple(t.dims), t.ggml_type.name) for t in tensors])
        said = found[0] if found else None
        if admitted is None:
            return ArtifactOutcome(mutant, "survived", None, said)
        p = mutant.admission
        ok = _matches(admitted, p.code, p.field, p.stage) and _matches(said, *mutant.regions)
        return ArtifactOutcome(mutant, "killed" if ok else "regression", admitted, said)

    def mutants(self) -> list[ArtifactMutant]:
        return ARTIFACT_MUTANTS[self.plan.id]()


def has_artifact_side(spec: Path) -> bool:
    from charter.regions.battery import base_data

    return base_data(spec).get("id") in ARTIFACT_MUTANTS


def run_artifact_battery(spec: Path, artifact: Path | None = None) -> list[ArtifactOutcome]:
    """The control, then every artifact mutant of the regions contract at `spec`."""
    b = ArtifactBattery.load(spec, artifact)
    return [b.control()] + [b.run(m) for m in b.mutants()]


def report(outcomes: list[ArtifactOutcome]) -> tuple[str, bool]:
    """The table by admission code, `N/N artifact region mutations rejected`, and whether all pass."""
    lines = []
    control, mutants = outcomes[0], outcomes[1:]
    if control.verdict != "admitted":
        lines.append(f"refused: the unchanged file: {control.admission.render()}")
    for o in mutants:
        if o.verdict != "killed":
            m = o.mutant
            lines.append(f"{o.verdict}: {m.name}: expected {m.admission.code} {m.admission.field} and "
                         f"{m.regions[0]} {m.regions[1]}, got {o.admission.render() if o.admission else 'admitted'}"
                         f" / {o.regions.render() if o.regions else 'no region finding'}")
    by: dict[tuple[str, str], int] = {}
    for o in mutants:
        key = (o.mutant.admission.code, o.mutant.regions[0])
        by[key] = by.get(key, 0) + (o.verdict == "killed")
    for (code, region), n in sorted(by.items()):
        lines.append(f"  {code:<24} {region:<18} {n}")
    killed = sum(o.verdict == "killed" for o in mutants)
    lines.append(f"{killed}/{len(mutants)} artifact region mutations rejected (by `charter admit --contract` at "
                 "the owning stage, and by the region check on the same tensor table); the unchanged file "
                 + ("admitted and owned" if control.verdict == "admitted" else "REFUSED"))
    return "\n".join(lines), killed == len(mutants) and control.verdict == "admitted"


__all__ = ["ARTIFACT_MUTANTS", "ArtifactBattery", "ArtifactMutant", "has_artifact_side", "ArtifactOutcome", "Prediction", "report", "run_artifact_battery",
           "smollm2_artifact_mutants"]
