"""The F1 interpreter on the real SmolLM2 GGUF: speed, and where its logits differ from llama.cpp's.

Runs the shipped regions graph (specs/regions/smollm2-135m-instruct-q4_1.yaml) over the 8 captured
sequences (specs/provenance/smollm2-llamacpp-logits.yaml) and prints, in one process:

  1. dequantization of the whole file: gguf.quants.dequantize (the labelled step) vs charter's
     native kernels (charter._native.dequantize_q4_1 / _q8_0), and whether they agree bit for bit;
  2. the gate alone (its finiteness scan of every weight is the largest part of it) and the forward
     pass: tokens per second over the 180 positions, oracle nodes;
  3. native kernels against oracle nodes (Note [Native mode] in charter.regions.interpreter): every
     node of the 64-token pass computed again by its native kernel from the oracle's inputs (the
     largest difference and the share of bit-identical elements, per kernel); the time of each kernel
     at each shape the graph calls it with, oracle and native calls interleaved (median of rounds);
     whole forward passes (8 and 64 tokens), oracle and native interleaved; the native pass against
     llama.cpp as the contract judges it. The machine's load average is printed before and after;
  4. parity with llama.cpp, as the contract measures it, with F1 as shipped (FP32 activations) and
     with llama.cpp's rounding points emulated in the same graph through `impls` (activations of
     every quantized matmul rounded to 8-bit blocks of 32 with an fp16 scale, as ggml's
     quantize_row_q8_0/q8_1 do; K, V, the query and the softmax probabilities rounded to fp16, as
     llama.cpp's default F16 KV cache and its F16 matmuls do). If the emulated error is much
     smaller, the measured difference is llama.cpp's arithmetic, not a different graph.

    .venv/bin/python bench/regions_f1.py
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from charter.oracles import transformer
from charter.regions import parity

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "regions" / "smollm2-135m-instruct-q4_1.yaml"


def q8_blocks(x: np.ndarray) -> np.ndarray:
    """x rounded as ggml's quantize_row_q8_0 stores it: per 32 values, d = fp16(amax / 127),
    q = round(x / d) (ggml rounds x * (1/d) half away from zero), value = d * q."""
    rows, width = x.shape
    b = x.reshape(rows, width // 32, 32)
    amax = np.abs(b).max(axis=-1, keepdims=True)
    d = amax / np.float32(127.0)
    inv = np.where(d > 0, np.float32(1.0) / np.where(d > 0, d, 1), 0).astype(np.float32)
    q = np.clip(np.trunc(b * inv + np.copysign(np.float32(0.5), b)), -127, 127)
    return (d.astype(np.float16).astype(np.float32) * q).reshape(rows, width).astype(np.float32)


def f16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).astype(np.float32)


def linear_q8(x, w):
    return transformer.linear(q8_blocks(x), w)


def attention_f16(q, k, v, heads, kv_heads, head_dim):
    t = q.shape[0]
    group = heads // kv_heads
    qh = f16(q).reshape(t, heads, head_dim).transpose(1, 0, 2)
    kh = np.repeat(f16(k).reshape(t, kv_heads, head_dim).transpose(1, 0, 2), group, axis=0)
    vh = np.repeat(f16(v).reshape(t, kv_heads, head_dim).transpose(1, 0, 2), group, axis=0)
    s = np.matmul(qh, kh.transpose(0, 2, 1)) * np.float32(1.0 / math.sqrt(head_dim))
    s = np.where(np.triu(np.ones((t, t), bool), 1)[None], np.float32(-np.inf), s)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.matmul(f16(p), vh).transpose(1, 0, 2).reshape(t, heads * head_dim).astype(np.float32)


def _llama_variants(fx) -> None:
    """llama.cpp against its own capture when only its attention arithmetic changes (needs the opt-in
    capture extra): the size of the difference llama.cpp's configuration alone makes."""
    try:
        from llama_cpp import Llama
    except ImportError:
        print("\nllama.cpp variants: skipped (llama-cpp-python, the opt-in capture extra, is not installed)")
        return
    from charter.admission.locate import locate
    from charter.regions.capture import N_CTX, PINNED

    path = str(locate(PINNED, ROOT))
    ids, lengths = fx["token_ids"], fx["lengths"]
    print("\nllama.cpp against its own capture (default settings: F16 KV cache):")
    for name, kw in (("F32 KV cache, no flash attention", dict(type_k=0, type_v=0, flash_attn=False)),
                     ("flash attention on", dict(flash_attn=True)), ("1 thread instead of 2", dict(n_threads=1))):
        kw = {"n_threads": 2, **kw}
        llm = Llama(model_path=path, n_ctx=N_CTX, n_batch=N_CTX, logits_all=True, verbose=False, **kw)
        last, argmax, start = [], [], 0
        for n in (int(x) for x in lengths):
            llm.reset()
            llm.eval([int(t) for t in ids[start:start + n]])
            scores = np.array(llm.scores[:n], dtype=np.float32)
            last.append(scores[-1])
            argmax.append(scores.argmax(axis=1))
            start += n
        err = float(np.abs(np.stack(last) - fx["last_logits"]).max())
        agree = float((np.concatenate(argmax) == fx["argmax"]).mean())
        print(f"  {name}: max |logit error| {err:.4f}, top-1 agreement {agree:.4f}")


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min, {os.cpu_count()} cores)"


def _interleaved(calls: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds per call of each callable, the callables alternating within every round."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, fn in calls.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(v) for name, v in times.items()}


def native_section(plan, weights, fx, shipped) -> None:
    from charter.regions import interpreter

    try:
        impls = interpreter.native_impls(plan)
    except Exception as exc:  # the module is built by make install
        print(f"\nnative kernels unavailable: {exc}")
        return
    lengths, starts = [int(n) for n in fx["lengths"]], np.concatenate([[0], np.cumsum(fx["lengths"])[:-1]])

    def inputs(seq: int) -> dict:
        n, start = lengths[seq], int(starts[seq])
        return {"ids": np.ascontiguousarray(fx["token_ids"][start:start + n]), "positions": interpreter.positions(n)}

    longest = int(np.argmax(lengths))
    print(f"\nnative kernels vs oracle nodes ({_load()})")
    diff: dict[str, list] = {}
    samples: dict[tuple, dict] = {}  # (kernel, shapes) -> the oracle's args of its first node

    def compare(inst, node, args, result):
        native = impls[node.kernel](**args, **dict(node.attrs))
        d = diff.setdefault(node.kernel, [0, 0.0, 0, 0])
        d[0] += 1
        d[1] = max(d[1], float(np.abs(native.astype(np.float64) - result).max()) if result.size else 0.0)
        d[2] += int((native.view(np.uint32) == result.view(np.uint32)).sum())
        d[3] += result.size
        key = (node.kernel, tuple(a.shape for a in args.values()))
        samples.setdefault(key, dict(args) | dict(node.attrs))

    interpreter.run(plan, inputs(longest), weights, on_node=compare)
    print(f"  node by node over the {lengths[longest]}-token pass (the native kernel given the oracle node's inputs):")
    for kernel, (nodes, worst, same, total) in diff.items():
        print(f"    {kernel:<22} {nodes:>3} nodes  max |difference| {worst:.3g}  bit-identical {same / total:.4f}")

    print(f"  per call, oracle and native interleaved ({_load()}):")
    oracle_fns = {n.kernel: interpreter.oracle_of(n) for i in plan.instances for n in i.nodes}
    for (kernel, shapes), args in samples.items():
        rounds = 5 if kernel == "linear" and max(s[0] for s in shapes) > 10000 else 20
        t = _interleaved({"oracle": lambda: oracle_fns[kernel](**args), "native": lambda: impls[kernel](**args)},
                         rounds)
        print(f"    {kernel:<22} {' x '.join(str(list(s)) for s in shapes):<32} oracle {t['oracle'] * 1e6:9.0f} us  "
              f"native {t['native'] * 1e6:9.0f} us  native/oracle {t['native'] / t['oracle']:.2f}")

    for seq in sorted({int(np.argmin(lengths)), longest}):
        x = inputs(seq)
        t = _interleaved({"oracle": lambda: interpreter.run(plan, x, weights),
                          "native": lambda: interpreter.run(plan, x, weights, kernels="native")}, 3)
        logits_o = interpreter.run(plan, x, weights)["logits"]
        logits_n = interpreter.run(plan, x, weights, kernels="native")["logits"]
        print(f"  whole forward, {lengths[seq]} tokens (gate included, {plan.node_count} nodes): oracle {t['oracle']:.2f} s, "
              f"native {t['native']:.2f} s, native/oracle {t['native'] / t['oracle']:.2f}; logits max |native - oracle| "
              f"{float(np.abs(logits_n - logits_o).max()):.3g}, argmax equal at "
              f"{int((logits_n.argmax(1) == logits_o.argmax(1)).sum())}/{lengths[seq]} ({_load()})")
    _, native_run, _ = parity.run(SPEC, weights=weights, impls=impls)
    print(f"  native pass against llama.cpp (8 sequences): top-1 {native_run.top1_agreement:.4f}, max |logit error| "
          f"{native_run.max_abs_logit_error:.4f} (oracle pass: {shipped.top1_agreement:.4f}, "
          f"{shipped.max_abs_logit_error:.4f}); {'within' if not parity.judge(plan, native_run) else 'OUTSIDE'} "
          "the contract's tolerance")


def main() -> int:
    from charter.contract.contractset import load_set
    from charter.regions import gate, interpreter, weights as W

    cs = load_set([SPEC], [ROOT / "specs"])
    cs.raise_if_failed()
    (plan,) = cs.regions.values()
    path = parity.artifact_path(cs, plan.artifact)

    t = time.perf_counter()
    W.admit_payload(cs, plan.artifact, path)
    t_admit = time.perf_counter() - t
    t = time.perf_counter()
    weights = W.dequantized_weights(plan, path)
    t_gguf = time.perf_counter() - t
    print(f"admission with --verify-payload: {t_admit:.2f} s; dequantization of {len(weights)} tensors by "
          f"gguf.quants.dequantize: {t_gguf:.2f} s")
    try:
        import gguf

        from charter import _native

        reader = gguf.GGUFReader(str(path))
        t = time.perf_counter()
        same = True
        for tensor in reader.tensors:
            kind = tensor.tensor_type.name
            if kind == "F32":
                continue
            blocks = np.ascontiguousarray(tensor.data).reshape(-1, 20 if kind == "Q4_1" else 34)
            y = (_native.dequantize_q4_1 if kind == "Q4_1" else _native.dequantize_q8_0)(blocks)
            same &= np.array_equal(y.reshape(weights[tensor.name].array.shape).view(np.uint32),
                                   weights[tensor.name].array.view(np.uint32))
        print(f"  native kernels (charter._native): {time.perf_counter() - t:.2f} s, bit-identical to gguf: {same}")
    except ImportError as exc:
        print(f"  native kernels unavailable: {exc}")

    fx = parity.upstream(cs, plan.parity.fixture)
    seq = np.ascontiguousarray(fx["token_ids"][:int(fx["lengths"][0])])
    t = time.perf_counter()
    for _ in range(3):
        gate.check_call(plan, {"ids": seq, "positions": interpreter.positions(len(seq))}, weights)
    print(f"gate (check_call, every weight scanned finite): {(time.perf_counter() - t) / 3 * 1000:.0f} ms per call")

    _, shipped, _ = parity.run(SPEC, weights=weights)
    print("\nF1 as shipped (FP32 activations, oracle nodes):")
    print(parity.report(shipped))
    gate_s = (time.perf_counter() - t) / 3
    del gate_s

    native_section(plan, weights, fx, shipped)

    _, emulated, _ = parity.run(SPEC, weights=weights,
                                impls={"linear": linear_q8, "attention-causal-gqa": attention_f16})
    print("\nF1 with llama.cpp's rounding points emulated (Q8 activations, F16 K/V/Q/probabilities):")
    print(parity.report(emulated))
    _llama_variants(fx)
    print(f"\nsummary: max |logit error| {shipped.max_abs_logit_error:.4f} as shipped, "
          f"{emulated.max_abs_logit_error:.4f} emulated; top-1 {shipped.top1_agreement:.4f} / "
          f"{emulated.top1_agreement:.4f}; {shipped.tokens_per_second:.1f} tokens/s (oracle nodes, gate included)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
