"""oracle.ShiftedLayout: the finding of one extent moved later equals oracle.layout's over all the
extents, for every extent of real and generated headers, every policy, alignment and move."""

from __future__ import annotations

import itertools
import random

import pytest

from charter.formats.gguf import read_gguf
from charter.mutation import oracle

POLICIES = [{"sorted": s, "packed": p, "trailing": t}
            for s, p, t in itertools.product((True, False), (True, False), ("reject", "alignment", "allow"))]


def moved_everywhere(spans, data_offset: int, file_size: int, alignment: int | None, shifts) -> int:
    """Compare every extent moved by every shift under every policy; how many findings were breaks."""
    broken = 0
    for policy in POLICIES:
        moves = oracle.ShiftedLayout(spans, data_offset, file_size, alignment, policy)
        for index, (name, start, end) in enumerate(spans):
            for shift in shifts(end - start):
                whole = spans.copy()
                whole[index] = (name, start + shift, end + shift)
                expected = oracle.layout(whole, data_offset, file_size, alignment, policy)
                assert moves.moved(index, shift) == expected, (policy, alignment, index, shift)
                broken += expected is not None
    return broken


def generated(rng: random.Random, count: int, step: int, packed: bool) -> tuple[list, int, int]:
    """Extents of `count` tensors after a data offset (some empty), packed (each at the aligned end
    of the one before) or with aligned gaps, in extent order or (some) shuffled."""
    data_offset = step * rng.randint(1, 4)
    spans, cursor = [], data_offset
    for k in range(count):
        size = rng.choice((1, step - 1, step, step + 3, 5 * step))
        start = -(-cursor // step) * step + (0 if packed else step * rng.randint(0, 2))
        spans.append((f"t{k}", start, start + size))
        cursor = start + size
    if rng.random() < 0.3:
        rng.shuffle(spans)
    return spans, data_offset, -(-cursor // step) * step + rng.choice((0, 0, step))


@pytest.mark.parametrize("seed", range(40))
def test_a_moved_extent_is_judged_as_by_the_whole_layout(seed):
    rng = random.Random(seed)
    step = rng.choice((1, 8, 32))
    spans, data_offset, file_size = generated(rng, rng.randint(1, 12), step, packed=rng.random() < 0.6)

    def shifts(size: int) -> tuple[int, ...]:  # by the alignment, a byte, past itself, past its neighbours
        return step, 1, size, size + step, 3 * size + 2 * step

    for alignment in (None, step, 2 * step):
        moved_everywhere(spans, data_offset, file_size, alignment, shifts)


def test_every_tensor_of_smollm2_moved_by_its_alignment_and_more(smollm2_path):
    h = read_gguf(smollm2_path)
    spans = [(t.name, t.start, t.end) for t in h.tensors]
    a = h.alignment
    broken = moved_everywhere(spans, h.data_offset, h.file_size, a, lambda size: (a, size, 7 * a))
    assert broken  # the moves break rules, not only the policies that allow everything
    # a header that breaks a rule itself (bytes after the last extent) is judged whole
    moved_everywhere(spans, h.data_offset, h.file_size + a, a, lambda size: (a,))
