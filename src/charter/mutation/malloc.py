"""Note [Header-sized buffers]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A battery makes, parses, compares and hashes thousands of buffers the size of its header
(SmolLM2's 1.8 MB, a 151,936-token vocabulary's 2.2 MB): each mutant's header, its string arrays,
their comparisons with the accepted ones. With glibc's default policy those allocations went to
fresh pages that the kernel faults in one 4 KiB page at a time, and back to the kernel when freed:
the 527 MB battery of bench/battery_large_file.py took 476,402 minor page faults and 0.75 ms per
2.2 MB `bytes.join` that costs 0.13 ms in a loop of its own. Serving every allocation under
16 MiB from the heap and keeping up to 64 MiB of freed heap for the next one brought that to
45,534 faults, and the battery from 2.0 to 1.4 s (MALLOC_MMAP_THRESHOLD_ and
MALLOC_TRIM_THRESHOLD_ in the environment, interleaved runs; peak RSS the same, 97 MB).

Set once per battery process, before its workers fork (they inherit it), with glibc's mallopt
through ctypes; anywhere else (another C library, another system) nothing changes. It is a
cost only: no verdict depends on where memory comes from. The price is at most 64 MiB of freed
memory kept per process.
"""

from __future__ import annotations

import sys

# glibc's <malloc.h> parameter numbers, and the values of Note [Header-sized buffers]
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD, TRIM_THRESHOLD = 16 << 20, 64 << 20


def keep_freed_buffers() -> bool:
    """Note [Header-sized buffers]: whether glibc took the policy (False elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library symbols in this process, or no mallopt in it
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
