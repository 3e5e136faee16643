"""What the readers share about building many small records (Note [Reader limits] in gguf.py)."""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while a header's records are built: a header holds up
    to 2**17 tensors and 2**16 pairs (a safetensors header as many JSON objects and lists), none
    in a cycle, and the collections their allocations trigger cost as much again as building them
    (0.85 s instead of 0.38 s to decode a header of 131,072 tensors). A collector the caller had
    disabled stays disabled; usable as a decorator."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
