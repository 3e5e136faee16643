"""
charter's native part: generated C++ admission checkers (docs/native.md)
"""

from typing import Annotated

from numpy.typing import NDArray


def contracts() -> list:
    """
    Contract ids of the C++ checkers compiled into this module (not those of loaded checker libraries).
    """

def info(contract_id: str) -> dict:
    """
    The contract, model, spec, format, status, input digests and embedded store facts of one checker.
    """

def load_library(path: str) -> list:
    """
    Load a checker library built by charter.engines.library; returns its keys (RuntimeError if it cannot be
    loaded or was built by another compiler or ABI).
    """

COMPILER: str = '12.2.0'

def admit(contract_id: str, header: object, file_size: int, require_status: str = '', max_header_bytes: int = 67108864, regions: object | None = None, companion: object | None = None, read_at: object | None = None) -> tuple:
    """
    Admit a header span (bytes-like) of a file of file_size bytes: (admitted, stage, code, field, offset, message).
    read_at: read_at(offset, length) -> bytes-like, asked for each read of a contract's embedded stores that
    regions, (absolute offset, bytes-like) pairs read up front, do not hold.
    companion: the file a contract's config binds, as read beside the artifact: bytes-like, or a str saying why it
    could not be read.
    """

def admit_detail(contract_id: str, header: object, file_size: int, require_status: str = '', max_header_bytes: int = 67108864, regions: object | None = None, companion: object | None = None, read_at: object | None = None, only: object | None = None, owned_keys: object | None = None, skip: object | None = None, reference: object | None = None) -> dict:
    """
    admit() with everything an AdmissionReport needs (expected, actual, location, needs_more).
    only, owned_keys, skip: a bundle's weight file (Note [Bundle stages]): the tensors it holds (None: all),
    metadata keys a bundle stage owns, the stages that do not run on it (lists of str).
    reference: a Reference (reference()) this header may be, or share values with (Note [Reference header]).
    """

class Reference:
    """A header parsed once, its values hashed (Note [Reference header])."""

def reference(format: str, header: object, file_size: int, max_header_bytes: int = 67108864) -> object:
    """
    The header (bytes-like, copied) parsed once for many admit_detail calls, or None if the reader rejects it.
    """

def read(format: str, header: object, file_size: int, max_header_bytes: int = 67108864) -> dict:
    """
    The strict reader alone (the container stage without a contract): its diagnostic, or a summary.
    """

def tensor_extents(format: str, header: object, file_size: int, names: object, max_header_bytes: int = 67108864) -> object:
    """
    {name: (start, end)} of the first tensor of each name the strict reader finds, or None if it rejects.
    """

def store_layouts() -> dict:
    """
    The store record layouts of the C++ runtime: name -> (size, [(field, offset, width, is_bytes)]).
    """

def ggml_types() -> list:
    """
    The ggml type table of the C++ GGUF walker: (id, name, block size, block bytes, row header).
    """

def safetensors_dtypes() -> dict:
    """The dtype table of the C++ safetensors walker: name -> bits."""

def first_bad_value(data: object, block_bytes: int, fields: object) -> object:
    """
    The first bad value of the whole blocks of `data` (charter/values.hpp): (block, field index, raw bits), or None.
    """

def first_out_of_bounds(data: object, kind: str, lo: int, hi: int) -> object:
    """
    The first element of the whole elements of `data` outside [lo, hi] (charter/values.hpp): (index, value), or None.
    """

def changed_at(objs: object, others: object) -> list:
    """
    The positions, within the shorter of two sequences, where they hold different objects (charter.memo.changed_at).
    """

JSON_MAX_DEPTH: int = 800

GGUF_MAX_HEADER_BYTES: int = 67108864

STORE_MAX_TABLE_BYTES: int = 268435456

STORE_CHUNK: int = 1048576

def attention_causal_gqa(q: Annotated[NDArray, dict(writable=False)], k: Annotated[NDArray, dict(writable=False)], v: Annotated[NDArray, dict(writable=False)], *, y: NDArray | None = None) -> object:
    """
    Causal GQA over rows 0..t for every t, float32 softmax.

    q: float32[tokens, q_width], C-contiguous, CPU (never converted)
    k: float32[tokens, kv_width], C-contiguous, CPU (never converted)
    v: float32[tokens, kv_width], C-contiguous, CPU (never converted)
    y: float32[tokens, q_width], written in place if given, else allocated; returned

    q_width = 576, kv_width = 192, heads = 9, kv_heads = 3, head_dim = 64 (smollm2-135m-instruct)
    Free dims: tokens (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.transformer:attention_causal_gqa. Contract: kernel attention-causal-gqa. The GIL is released while the kernel runs.
    """

def dequantize_q4_1(blocks: Annotated[NDArray, dict(writable=False)], *, y: NDArray | None = None) -> object:
    """
    Q4_1 blocks -> float32: y[b, j] = (qs & 15) * d + m (j < 16), (qs >> 4) * d + m (j >= 16).

    blocks: uint8[nblocks, 20], C-contiguous, CPU (never converted)
    y: float32[nblocks, 32], written in place if given, else allocated; returned
    Free dims: nblocks (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.dequant:dequantize_q4_1. Contract: kernel dequantize-q4-1. The GIL is released while the kernel runs.
    """

def dequantize_q8_0(blocks: Annotated[NDArray, dict(writable=False)], *, y: NDArray | None = None) -> object:
    """
    Q8_0 blocks -> float32: y[b, j] = qs[b, j] * d[b].

    blocks: uint8[nblocks, 34], C-contiguous, CPU (never converted)
    y: float32[nblocks, 32], written in place if given, else allocated; returned
    Free dims: nblocks (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.dequant:dequantize_q8_0. Contract: kernel dequantize-q8-0. The GIL is released while the kernel runs.
    """

def embedding_lookup(table: Annotated[NDArray, dict(writable=False)], ids: Annotated[NDArray, dict(writable=False)], *, y: NDArray | None = None) -> object:
    """
    y[t, :] = table[ids[t], :], float32.

    table: float32[logits_rows, hidden], C-contiguous, CPU (never converted)
    ids: int32[tokens], C-contiguous, CPU (never converted)
    y: float32[tokens, hidden], written in place if given, else allocated; returned

    logits_rows = 49152, hidden = 576 (smollm2-135m-instruct)
    Free dims: tokens (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.transformer:embedding_lookup. Contract: kernel embedding-lookup. The GIL is released while the kernel runs.
    """

def linear(x: Annotated[NDArray, dict(writable=False)], w: Annotated[NDArray, dict(writable=False)], *, y: NDArray | None = None) -> object:
    """
    y = x @ w.T over float32 rows.

    x: float32[tokens, n_in], C-contiguous, CPU (never converted)
    w: float32[n_out, n_in], C-contiguous, CPU (never converted)
    y: float32[tokens, n_out], written in place if given, else allocated; returned
    Free dims: tokens, n_in, n_out (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.transformer:linear. Contract: kernel linear. The GIL is released while the kernel runs.
    """

def masked_argmax(logits: Annotated[NDArray, dict(writable=False)], *, ids: NDArray | None = None) -> object:
    """
    argmax over logits[:, :valid_ids] of physically padded logits; ties go to the lowest id.

    logits: float32[tokens, logits_rows], C-contiguous, CPU (never converted)
    ids: int32[tokens], written in place if given, else allocated; returned

    logits_rows = 248320, tokenizer_ids = 248077 (qwen4exp)
    Free dims: tokens (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.logits:masked_argmax. Contract: kernel masked-argmax. The GIL is released while the kernel runs.
    """

def residual_add(a: Annotated[NDArray, dict(writable=False)], b: Annotated[NDArray, dict(writable=False)], *, y: NDArray | None = None) -> object:
    """
    y = a + b, elementwise float32.

    a: float32[tokens, hidden], C-contiguous, CPU (never converted)
    b: float32[tokens, hidden], C-contiguous, CPU (never converted)
    y: float32[tokens, hidden], written in place if given, else allocated; returned

    hidden = 576 (smollm2-135m-instruct)
    Free dims: tokens (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.transformer:residual_add. Contract: kernel residual-add. The GIL is released while the kernel runs.
    """

def rmsnorm(x: Annotated[NDArray, dict(writable=False)], w: Annotated[NDArray, dict(writable=False)], eps: float, *, y: NDArray | None = None) -> object:
    """
    y = x / sqrt(mean(x^2) + eps) * w over the last axis, float32, sum of squares left to right.

    x: float32[rows, hidden], C-contiguous, CPU (never converted)
    w: float32[hidden], C-contiguous, CPU (never converted)
    eps: float32 scalar
    y: float32[rows, hidden], written in place if given, else allocated; returned

    hidden = 576 (smollm2-135m-instruct)
    hidden = 2560 (qwen4exp)
    Free dims: rows (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.rmsnorm:rmsnorm. Contract: kernel rmsnorm. The GIL is released while the kernel runs.
    """

def rmsnorm_zero_centred(x: Annotated[NDArray, dict(writable=False)], w: Annotated[NDArray, dict(writable=False)], eps: float, *, y: NDArray | None = None) -> object:
    """
    y = x / sqrt(mean(x^2) + eps) * (1 + w) over the last axis, float32, sum of squares left to right.

    x: float32[rows, hidden], C-contiguous, CPU (never converted)
    w: float32[hidden], C-contiguous, CPU (never converted)
    eps: float32 scalar
    y: float32[rows, hidden], written in place if given, else allocated; returned

    hidden = 576 (smollm2-135m-instruct)
    hidden = 2560 (qwen4exp)
    Free dims: rows (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.rmsnorm:rmsnorm_zero_centred. Contract: kernel rmsnorm-zero-centred. The GIL is released while the kernel runs.
    """

def rope_norm(x: Annotated[NDArray, dict(writable=False)], positions: Annotated[NDArray, dict(writable=False)], *, y: NDArray | None = None) -> object:
    """
    Rotate adjacent pairs of every head of x by position-dependent angles, float32.

    x: float32[tokens, width], C-contiguous, CPU (never converted)
    positions: int32[tokens], C-contiguous, CPU (never converted)
    y: float32[tokens, width], written in place if given, else allocated; returned

    head_dim = 64, theta = 100000.0 (smollm2-135m-instruct)
    Free dims: tokens, width (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.transformer:rope_norm. Contract: kernel rope-norm. The GIL is released while the kernel runs.
    """

def router_topk(logits: Annotated[NDArray, dict(writable=False)], *, indices: NDArray | None = None, weights: NDArray | None = None) -> object:
    """
    Top-k expert routing: float32 softmax, deterministic ties (probability descending, then expert index ascending), renormalized weights in rank order.

    logits: float32[tokens, routed_experts], C-contiguous, CPU (never converted)
    indices: int32[tokens, experts_per_token], written in place if given, else allocated; returned
    weights: float32[tokens, experts_per_token], written in place if given, else allocated; returned

    routed_experts = 512, experts_per_token = 10 (qwen4exp)
    Free dims: tokens (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.router:router_topk. Contract: kernel router-topk. The GIL is released while the kernel runs.
    """

def swiglu(gate: Annotated[NDArray, dict(writable=False)], up: Annotated[NDArray, dict(writable=False)], *, y: NDArray | None = None) -> object:
    """
    y = silu(gate) * up, elementwise float32.

    gate: float32[tokens, ffn], C-contiguous, CPU (never converted)
    up: float32[tokens, ffn], C-contiguous, CPU (never converted)
    y: float32[tokens, ffn], written in place if given, else allocated; returned

    ffn = 1536 (smollm2-135m-instruct)
    Free dims: tokens (>= 0, bound by the first input that has them).

    Oracle: charter.oracles.transformer:swiglu. Contract: kernel swiglu. The GIL is released while the kernel runs.
    """
