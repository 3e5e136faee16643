"""The precision profile: how an admitted artifact's tensors become the FP32 weights a regions
graph reads, each through its codec's declared step, each labelled.

Note [Labelled dequantization]: quantized weights never enter an F1 graph implicitly. The file is
first admitted by its artifact contract with the payload stage (every byte read and digested:
what is dequantized is the pinned file), then every tensor the graph reads is produced by its
codec's step in the regions contract's `precision`:

  identity    an F32 tensor, copied as stored;
  dequantize  gguf.quants.dequantize (gguf 0.19.0, ggml's Python reference, bit-identical to the
              step's kernel contract and to charter._native on the real file: tests/native), giving
              float32 rows [ne1, ne0].

Each result is a `gate.Weight` carrying its step, its codec and its provenance statement
(class derived_metadata: computed from the bytes of an identified file), which the gate checks
against the plan; a bare array for a quantized tensor is refused (F1_QUANTIZED).
"""

from __future__ import annotations

import importlib.metadata
import math
import os
from pathlib import Path

import numpy as np

from charter.contract.contractset import ContractSet
from charter.diagnostics import CharterError, Code, Diagnostic
from charter.regions.gate import Weight
from charter.regions.plan import RegionsPlan


def admit_payload(cs: ContractSet, artifact_id: str, path: Path, generated: Path = Path("generated")) -> None:
    """The artifact contract's admission with `--verify-payload`; CharterError if rejected."""
    from charter.engines import python as engine
    from charter.engines.choose import python_checker
    from charter.engines.options import Options

    if artifact_id not in cs.artifacts:  # a set loaded for its regions contract: load the artifact's own
        from charter.contract.contractset import load_set

        own = cs.contracts[artifact_id].path
        cs = load_set([own], [own.parent.parent])
        cs.raise_if_failed()
    checker = python_checker(cs, artifact_id, generated).module
    report = engine.admit(path, checker, Options(verify_payload=True))
    if not report.admitted:
        d = report.diagnostic
        raise CharterError([Diagnostic(Code(d.code), d.field, f"artifact not admitted at {d.stage}: {d.message}")])


def dequantized_weights(plan: RegionsPlan, path: Path, *, names: list[str] | None = None) -> dict[str, Weight]:
    """Every tensor the graph reads (or `names`), through its declared step. Call admit_payload first.
    The tensor table comes from charter's own reader (gguf.GGUFReader takes seconds to build the
    views of a 49,152-token vocabulary that no weight needs); each tensor's bytes are read once."""
    import gguf
    import gguf.quants

    from charter.formats.gguf import read_gguf

    version = importlib.metadata.version("gguf")
    by_name = {t.name: t for t in read_gguf(path).tensors}
    out: dict[str, Weight] = {}
    with open(path, "rb") as f:
        for name in names if names is not None else sorted(plan.weights):
            w = plan.weights[name]
            t = by_name.get(name)
            if t is None or t.ggml_type.name != w.codec or t.dims != w.stored_shape:
                raise CharterError([Diagnostic(Code.F1_WEIGHT, f"weights.{name}",
                                               f"{path} does not hold {name} as {w.codec}{list(w.stored_shape)}")])
            raw = np.frombuffer(os.pread(f.fileno(), t.nbytes, t.data_start + t.offset), dtype=np.uint8)
            if raw.size != t.nbytes:  # read_gguf bounded every extent: the file shrank since
                raise CharterError([Diagnostic(Code.F1_WEIGHT, f"weights.{name}", f"{path} ends inside {name}")])
            source = f"artifact {plan.artifact} sha256:{plan.artifact_sha256} tensor {name}"
            if w.step == "identity":
                array = raw.view("<f4").astype(np.float32).reshape(w.shape)
                label = f"derived_metadata: {source} as stored ({w.codec})"
            elif w.step == "dequantize":
                rows = raw.reshape(-1, t.nbytes // max(1, math.prod(t.dims[1:])))
                array = np.ascontiguousarray(gguf.quants.dequantize(rows, gguf.GGMLQuantizationType(t.ggml_type.id)),
                                             dtype=np.float32).reshape(w.shape)
                label = (f"derived_metadata: {source} dequantized from {w.codec} by gguf.quants.dequantize "
                         f"(gguf {version})")
            else:
                raise CharterError([Diagnostic(Code.F1_QUANTIZED, f"weights.{name}",
                                               f"{name} ({w.codec}) has no dequantization step: it cannot enter F1")])
            out[name] = Weight(array, w.step, w.codec, label)
    return out
