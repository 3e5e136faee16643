"""contract_control generators: deliberately chosen inputs, ties and overflow cases.

A contract control is authored, not captured: its label states the rule it obeys and, when it is
random, the seed. The generators here are the rules written as code; each docstring says what
its YAML `rule` must say. Randomness comes from SplitMix64, Note [Seeded controls]:

    state_i = seed + (i + 1) * 0x9E3779B97F4A7C15                 (mod 2**64), i = 0, 1, ...
    z = state_i; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    out_i = z ^ (z >> 31)
    uniform_i = ((out_i >> 40) - 2**23) / 2**23                  float32, exactly, in [-1, 1)

Values fill arrays in C order. This is a fixed published algorithm written with numpy uint64
arithmetic, not numpy's Generator (whose streams numpy does not promise to keep), so a control is
reproducible by any numpy and by a few lines of C++.
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def splitmix64(seed: int, n: int, start: int = 0) -> np.ndarray:
    """Outputs start .. start+n-1 of the SplitMix64 stream of `seed`, as uint64[n]."""
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    i = np.arange(start + 1, start + n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + i * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def uniform(seed: int, shape: tuple[int, ...], start: int = 0) -> np.ndarray:
    """float32 values in [-1, 1) with 24 random bits each (Note [Seeded controls])."""
    n = int(np.prod(shape, dtype=np.int64))
    top = (splitmix64(seed, n, start) >> np.uint64(40)).astype(np.int64) - 2**23
    return (top.astype(np.float32) * np.float32(2.0**-23)).reshape(shape)


# --- generators: f(inputs, seed, shape) -> array ------------------------------------------------


def uniform_pm1(inputs: tuple, seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """Rule: float32 values of the label's shape, uniform in [-1, 1), SplitMix64(seed), C order."""
    return uniform(seed, shape)


def eps_1e_6(inputs: tuple, seed: None, shape: tuple[int, ...]) -> np.ndarray:
    """Rule: the float32 constant 1e-6, chosen by the fixture author (not a model fact)."""
    return np.array(1e-6, dtype=np.float32)


ROUTER_EXPERTS = 512
ROUTER_TIE_ROWS = {
    # row 1: planted tie groups; rank order is score descending, then expert index ascending
    4.0: (511, 300),
    3.0: (450, 99, 17, 2),
    2.0: (400, 256, 123, 77, 6, 5),  # straddles k = 10: 5, 6, 77, 123 are in, 256 and 400 out
}
# What a correct top-10 returns for each row of router_tie_logits (row 2 has no planted order).
ROUTER_TIE_EXPECTED = {
    0: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    1: (300, 511, 2, 17, 99, 450, 5, 6, 77, 123),
    3: (510, 511, 0, 1, 2, 3, 4, 5, 6, 7),
}


def router_tie_logits(inputs: tuple, seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """Rule: float32[4, 512] router logits.

    row 0: every expert 0.0 (all 512 tie; top-10 is experts 0..9, each weight 0.1);
    row 1: uniform_pm1(seed) background, then experts 511, 300 = 4.0; 450, 99, 17, 2 = 3.0;
           400, 256, 123, 77, 6, 5 = 2.0 (a tie across the k boundary): top-10 is
           300, 511, 2, 17, 99, 450, 5, 6, 77, 123;
    row 2: the next 512 values of the same stream only (no planted ties);
    row 3: experts 510, 511 = 0.0, every other expert e = -1000 - e: distinct logits whose float32
           probabilities all underflow to 0, so they tie at 0 and rank by index: top-10 is
           510, 511, 0..7 with weights 0.5, 0.5, 0 x 8.
    """
    if tuple(shape) != (4, ROUTER_EXPERTS):
        raise ValueError(f"router_tie_logits makes shape (4, {ROUTER_EXPERTS}), the label says {tuple(shape)}")
    out = np.zeros((4, ROUTER_EXPERTS), dtype=np.float32)
    background = uniform(seed, (2, ROUTER_EXPERTS))
    out[1] = background[0]
    for value, experts in ROUTER_TIE_ROWS.items():
        out[1, list(experts)] = np.float32(value)
    out[2] = background[1]
    out[3] = -1000.0 - np.arange(ROUTER_EXPERTS, dtype=np.float32)
    out[3, [510, 511]] = 0.0
    return out


PADDED_VALUES = (np.float32(1e30), np.finfo(np.float32).max)  # per row: what padded rows hold
WINNER_VALUE = np.float32(2.0)


def padded_logits(seed: int, valid_ids: int, rows: int, n: int = 2) -> np.ndarray:
    """The logits behind `padded_argmax_winners` (regenerated, not stored: ~1 MB per row).

    float32[n, rows]: ids [0, valid_ids - 1) hold uniform_pm1(seed) values in C order; id
    valid_ids - 1 holds 2.0, the largest valid value; every padded id >= valid_ids holds 1e30
    (row 0) or the largest finite float32 (row 1), and the last physical row of row 1 is +inf.
    """
    if not 2 <= valid_ids < rows:
        raise ValueError(f"need 2 <= valid_ids < rows, got {valid_ids} and {rows}")
    if not 1 <= n <= len(PADDED_VALUES):
        raise ValueError(f"n must be in [1, {len(PADDED_VALUES)}]")
    out = np.empty((n, rows), dtype=np.float32)
    out[:, : valid_ids - 1] = uniform(seed, (n, valid_ids - 1))
    out[:, valid_ids - 1] = WINNER_VALUE
    for r in range(n):
        out[r, valid_ids:] = PADDED_VALUES[r]
    if n > 1:
        out[1, rows - 1] = np.inf
    return out


def padded_argmax_winners(inputs: tuple, seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """Rule: int32[n], each valid_ids - 1: the answer a correct masked argmax gives on
    padded_logits(seed, valid_ids, logits_rows, n), where every padded row dominates every valid
    one (an unmasked argmax returns a padded id) and the last valid id is the largest valid value.
    Inputs: valid_ids, logits_rows (0-d integers)."""
    valid_ids, rows = (int(a) for a in inputs)
    if len(shape) != 1:
        raise ValueError(f"padded_argmax_winners makes a 1-d array, the label says {tuple(shape)}")
    logits = padded_logits(seed, valid_ids, rows, shape[0])
    valid, padded = logits[:, :valid_ids], logits[:, valid_ids:]
    # The construction's own guarantees, checked rather than assumed.
    if not ((padded.min(axis=1) > valid.max(axis=1)).all() and (np.argmax(logits, axis=1) >= valid_ids).all()
            and (valid[:, :-1].max(axis=1) < valid[:, -1]).all()):
        raise ValueError("padded_logits does not make every padded row dominant and the last valid id win")
    return np.full(shape, valid_ids - 1, dtype=np.int32)


# --- SmolLM2 prompts: the caller tensors of the regions parity fixture (smollm2-llamacpp-logits) ----

# Eight texts of different kinds and lengths (prose, code, a list, a chat turn with control tokens)
# and their token ids as the SmolLM2 GGUF's tokenizer splits them (llama.cpp 0.3.36 `tokenize`, no
# BOS, special tokens parsed), written out literally; the last is cut to 64 ids, the F1 domain's
# largest call. tests/regions/test_smollm2_parity.py re-tokenizes them when llama-cpp-python is there.
SMOLLM2_PROMPTS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ('The capital of France is Paris, and the capital of Italy is',
     (504, 3575, 282, 4649, 314, 7042, 28, 284, 260, 3575, 282, 7158, 314)),
    ('def fibonacci(n):\n    if n < 2:\n        return n\n    return',
     (1604, 3987, 46477, 24, 94, 727, 472, 585, 304, 2067, 216, 34, 42, 448, 1003, 304, 472, 1003)),
    ('Water boils at one hundred degrees Celsius at sea level, but at high altitude it boils at a',
     (12615, 36411, 418, 582, 3822, 5027, 20590, 418, 3426, 1106, 28, 564, 418, 904, 14676, 357, 36411,
      418, 253)),
    ('Once upon a time, in a small village by the sea, there lived an old fisherman who every',
     (6403, 1980, 253, 655, 28, 281, 253, 1165, 6560, 411, 260, 3426, 28, 665, 4161, 354, 1573, 43663, 617,
      897)),
    ('1, 2, 3, 4, 5, 6, 7, 8,',
     (33, 28, 216, 34, 28, 216, 35, 28, 216, 36, 28, 216, 37, 28, 216, 38, 28, 216, 39, 28, 216, 40, 28)),
    ('The quick brown fox jumps over the lazy',
     (504, 2365, 6354, 16438, 27003, 690, 260, 23790)),
    ('<|im_start|>user\nWhat is the largest planet?<|im_end|>\n<|im_start|>assistant\n',
     (1, 4093, 198, 1780, 314, 260, 3995, 3925, 47, 2, 198, 1, 520, 9531, 198)),
    ('Photosynthesis is the process by which green plants use sunlight, water and carbon dioxide to produce glucose and oxygen. It takes place mainly in the chloroplasts of leaf cells, where the green pigment chlorophyll absorbs light energy and converts it into chemical energy that the plant stores as sugar. Animals that eat the plants then use this stored energy to',
     (33580, 14870, 314, 260, 980, 411, 527, 2654, 2109, 722, 8118, 28, 913, 284, 3118, 7600, 288, 2690,
      8102, 284, 4983, 30, 657, 2933, 1379, 5630, 281, 260, 46194, 99, 282, 6695, 1960, 28, 837, 260, 2654,
      20864, 29677, 25502, 1420, 1439, 284, 18065, 357, 618, 2819, 1439, 338, 260, 1783, 7821, 347, 3982,
      30, 16319, 338, 3134, 260, 2109, 965, 722, 451, 6314)),
)


def smollm2_prompt_ids(inputs: tuple, seed: None, shape: tuple[int, ...]) -> np.ndarray:
    """Rule: the token ids of the eight SMOLLM2_PROMPTS, concatenated in order, int32."""
    return np.array([i for _, ids in SMOLLM2_PROMPTS for i in ids], dtype=np.int32)


def smollm2_prompt_lengths(inputs: tuple, seed: None, shape: tuple[int, ...]) -> np.ndarray:
    """Rule: the number of token ids of each of the eight SMOLLM2_PROMPTS, in order, int32."""
    return np.array([len(ids) for _, ids in SMOLLM2_PROMPTS], dtype=np.int32)


def smollm2_layer_sequences(inputs: tuple, seed: None, shape: tuple[int, ...]) -> np.ndarray:
    """Rule: the indices of the shortest and the longest of the SMOLLM2_PROMPTS, in that order, int32."""
    lengths = [len(ids) for _, ids in SMOLLM2_PROMPTS]
    return np.array([lengths.index(min(lengths)), lengths.index(max(lengths))], dtype=np.int32)
