"""The F1 parity run: the interpreter's logits on the real SmolLM2 GGUF against llama.cpp's
(Note [What the parity measures]).

Note [What the parity measures]: for every sequence of the upstream fixture (the regions
contract's `parity.fixture`, verified offline first and its arrays required to be labelled
upstream_capture), the F1 interpreter runs the whole forward pass over the weights dequantized by
their labelled step, from empty state, and is compared with llama.cpp on the same file:

  top-1 agreement      the fraction of all positions (every sequence, every position) whose argmax
                       equals llama.cpp's;
  max |logit error|    the largest absolute difference over the full last-position logits of every
                       sequence (49,152 values each), and, reported beside it, over the largest
                       logit of every position.

The contract declares the least agreement and the largest error it accepts; outside them is
F1_PARITY. The two computations are not the same arithmetic: llama.cpp quantizes the activations
of every Q4_1 and Q8_0 matmul to 8 bits (Q8_1 / Q8_0 blocks of 32) and sums in its own order,
F1 multiplies dequantized FP32 weights by FP32 activations. The tolerance is about that
difference, measured, not derived (docs/regions.md).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from charter.contract.contractset import ContractSet, load_set
from charter.contract.models import ProvenanceClass
from charter.diagnostics import CharterError, Code, Diagnostic
from charter.regions import interpreter, weights as weights_mod
from charter.regions.plan import RegionsPlan


@dataclass(frozen=True)
class SequenceResult:
    length: int
    agree: int  # positions whose argmax equals upstream's
    max_abs_last: float  # over the full last-position logits
    max_abs_top: float  # over the largest logit of every position
    ours_last: int
    upstream_last: int
    seconds: float


@dataclass(frozen=True)
class LayerResult:
    sequence: int
    layer: int
    cosine: float  # of the residual stream after the layer, last position, against upstream's
    relative: float  # max |difference| / max |upstream|


@dataclass(frozen=True)
class ParityResult:
    sequences: tuple[SequenceResult, ...]
    dequantize_seconds: float
    layers: tuple[LayerResult, ...] = ()

    @property
    def positions(self) -> int:
        return sum(s.length for s in self.sequences)

    @property
    def top1_agreement(self) -> float:
        return sum(s.agree for s in self.sequences) / self.positions

    @property
    def max_abs_logit_error(self) -> float:
        return max(s.max_abs_last for s in self.sequences)

    @property
    def tokens_per_second(self) -> float:
        return self.positions / sum(s.seconds for s in self.sequences)


def upstream(cs: ContractSet, fixture_id: str) -> dict[str, np.ndarray]:
    """The fixture's arrays, after `charter fixtures verify` passes on it; the compared arrays must
    be labelled upstream_capture (a control or an oracle output cannot stand in for upstream)."""
    from charter.provenance.npz import read_npz
    from charter.provenance.verify import fixture_path, verify

    loaded = cs.contracts[fixture_id]
    result = verify(loaded, cs)
    if result.diagnostics:
        raise CharterError(result.diagnostics)
    labels = {a.name: a for a in loaded.contract.arrays}
    for name in ("last_logits", "argmax", "max_logit"):
        if labels[name].cls is not ProvenanceClass.UPSTREAM_CAPTURE:
            raise CharterError([Diagnostic(Code.FIXTURE_CLASS, name, f"{name} must be an upstream_capture to "
                                           "stand for upstream", location=loaded.doc.where(("arrays",)))])
    return read_npz(fixture_path(loaded))


def artifact_path(cs: ContractSet, artifact_id: str) -> Path:
    from charter.admission.locate import locate

    lc = cs.contracts[artifact_id]
    s = lc.contract.source
    from charter.contract.paths import PinnedSource

    return locate(PinnedSource(s.package, s.path, s.sha256, s.size), lc.path.parent)


def run(spec: Path, *, sequences: list[int] | None = None, weights: dict | None = None,
        impls: dict | None = None) -> tuple[RegionsPlan, ParityResult, dict]:
    cs = load_set([spec], [spec.parent.parent])
    cs.raise_if_failed()
    (plan,) = cs.regions.values()
    if plan.parity is None:
        raise CharterError([Diagnostic(Code.F1_PARITY, "parity", f"{plan.id} states no parity")])
    fx = upstream(cs, plan.parity.fixture)
    path = artifact_path(cs, plan.artifact)
    t0 = time.perf_counter()
    if weights is None:
        weights_mod.admit_payload(cs, plan.artifact, path)
        weights = weights_mod.dequantized_weights(plan, path)
    dequant = time.perf_counter() - t0
    ids, lengths = fx["token_ids"], fx["lengths"]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    out, layers = [], []
    layer_seqs = [int(x) for x in fx["layer_sequences"]] if "layer_out" in fx else []
    for s in (sequences if sequences is not None else range(len(lengths))):
        n, a = int(lengths[s]), int(starts[s])
        seq = np.ascontiguousarray(ids[a:a + n])
        hidden: dict[int, np.ndarray] = {}

        def after_layer(inst, node, args, result):
            if inst.layer is not None and inst.produces and node.outputs[0].name in inst.produces:
                hidden[inst.layer] = result[-1]  # the last write of the residual stream in the layer wins

        t = time.perf_counter()
        logits = interpreter.run(plan, {"ids": seq, "positions": interpreter.positions(n)}, weights,
                                 impls=impls, on_node=after_layer if s in layer_seqs else None)["logits"]
        seconds = time.perf_counter() - t
        if s in layer_seqs:
            up = fx["layer_out"][layer_seqs.index(s)]
            for layer in range(up.shape[0]):
                ours, theirs = hidden[layer].astype(np.float64), up[layer].astype(np.float64)
                cosine = float(ours @ theirs / (np.linalg.norm(ours) * np.linalg.norm(theirs)))
                layers.append(LayerResult(s, layer, cosine, float(np.abs(ours - theirs).max() / np.abs(theirs).max())))
        ours = logits.argmax(axis=1)
        out.append(SequenceResult(
            n, int((ours == fx["argmax"][a:a + n]).sum()),
            float(np.abs(logits[-1] - fx["last_logits"][s]).max()),
            float(np.abs(logits.max(axis=1) - fx["max_logit"][a:a + n]).max()),
            int(ours[-1]), int(fx["argmax"][a + n - 1]), seconds))
    return plan, ParityResult(tuple(out), dequant, tuple(layers)), weights


def judge(plan: RegionsPlan, result: ParityResult) -> list[Diagnostic]:
    p = plan.parity
    found = []
    if result.top1_agreement < p.top1_agreement_min:
        found.append(Diagnostic(Code.F1_PARITY, "parity.top1_agreement_min",
                                f"top-1 agreement {result.top1_agreement:.4f} is below {p.top1_agreement_min}",
                                str(p.top1_agreement_min), f"{result.top1_agreement:.4f}", location=p.at))
    if result.max_abs_logit_error > p.max_abs_logit_error:
        found.append(Diagnostic(Code.F1_PARITY, "parity.max_abs_logit_error",
                                f"max |logit error| {result.max_abs_logit_error:.4f} exceeds {p.max_abs_logit_error}",
                                str(p.max_abs_logit_error), f"{result.max_abs_logit_error:.4f}", location=p.at))
    if result.layers and p.layer_cosine_min is not None:
        worst = min(result.layers, key=lambda r: r.cosine)
        if worst.cosine < p.layer_cosine_min:
            found.append(Diagnostic(Code.F1_PARITY, "parity.layer_cosine_min",
                                    f"layer {worst.layer} of sequence {worst.sequence}: cosine {worst.cosine:.6f} is "
                                    f"below {p.layer_cosine_min}", str(p.layer_cosine_min), f"{worst.cosine:.6f}",
                                    location=p.at))
    if result.layers and p.layer_relative_error_max is not None:
        worst = max(result.layers, key=lambda r: r.relative)
        if worst.relative > p.layer_relative_error_max:
            found.append(Diagnostic(Code.F1_PARITY, "parity.layer_relative_error_max",
                                    f"layer {worst.layer} of sequence {worst.sequence}: relative error "
                                    f"{worst.relative:.2e} exceeds {p.layer_relative_error_max}",
                                    str(p.layer_relative_error_max), f"{worst.relative:.2e}", location=p.at))
    return found


def report(result: ParityResult) -> str:
    lines = ["seq  tokens  top-1 agree  max|err| last  max|err| top  last ours/upstream  s"]
    for i, s in enumerate(result.sequences):
        lines.append(f"{i:>3}  {s.length:>6}  {s.agree:>5}/{s.length:<5}  {s.max_abs_last:>13.4f}  "
                     f"{s.max_abs_top:>12.4f}  {s.ours_last:>8}/{s.upstream_last:<8}  {s.seconds:.2f}")
    for s in sorted({r.sequence for r in result.layers}):
        rows = [r for r in result.layers if r.sequence == s]
        lines.append(f"seq {s} per layer (last position): cosine min {min(r.cosine for r in rows):.6f}, relative "
                     f"error max {max(r.relative for r in rows):.2e} (layer "
                     f"{max(rows, key=lambda r: r.relative).layer}); layer 0: {rows[0].relative:.2e}")
    lines.append(f"top-1 agreement {result.top1_agreement:.4f} over {result.positions} positions; "
                 f"max |logit error| {result.max_abs_logit_error:.4f} (last positions); "
                 f"{result.tokens_per_second:.1f} tokens/s; dequantization {result.dequantize_seconds:.1f} s")
    return "\n".join(lines)


def main() -> int:
    import sys

    spec = Path(sys.argv[1] if len(sys.argv) > 1 else "specs/regions/smollm2-135m-instruct-q4_1.yaml")
    try:
        plan, result, _ = run(spec)
    except CharterError as exc:
        for d in exc.diagnostics:
            print(d.render(), file=sys.stderr)
        return 1
    print(report(result))
    problems = judge(plan, result)
    for d in problems:
        print(d.render())
    print("parity: within the contract's tolerance" if not problems else "parity: REJECTED")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
