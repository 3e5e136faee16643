"""The canonical digest of a numpy array: what a fixture label's `sha256` pins.

A digest names an array's *value* (dtype, shape, elements), not the bytes of the file that
happens to store it, so it does not change with the container (.npz, .npy, zip layout), the
array's memory order, or the numpy version. Note [Array digest]:

    sha256( b"charter-array-v1\\x00"          17 bytes: domain tag and format version
          | dtype.encode("ascii") | b"\\x00"  canonical dtype string, NUL-terminated
          | ndim  as uint32 little-endian
          | each dim as uint64 little-endian, in order
          | elements in C (row-major) order, each little-endian, itemsize bytes )

The canonical dtype string is numpy's `dtype.str` of the little-endian form of the dtype:
`<f4`, `<i4`, `<u8`, `<c8` ...; one-byte types have no byte order and keep numpy's `|` (`|u1`,
`|i1`, `|b1`). Only bool, integer, float and complex dtypes have a digest: object arrays (which
would need pickle), strings, structured and datetime dtypes are rejected. The element bytes are
the bits as stored: -0.0 and 0.0 differ, and so do NaNs with different payloads.

The encoding is injective (the dtype string contains no NUL; ndim fixes how many dims follow; the
dims fix how many element bytes follow), so two arrays share a digest only if they are equal
in dtype, shape and every bit.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np

DOMAIN = b"charter-array-v1\x00"
_KINDS = frozenset("biufc")  # bool, signed, unsigned, float, complex


def canonical_dtype(dtype: np.dtype) -> np.dtype:
    """The little-endian form of a digestible dtype; ValueError for anything else."""
    dtype = np.dtype(dtype)
    if dtype.kind not in _KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"dtype {dtype!s} has no canonical digest (only bool, integer, float, complex)")
    return dtype.newbyteorder("<") if dtype.itemsize > 1 else dtype


def dtype_tag(dtype: np.dtype) -> str:
    """The canonical dtype string used in the digest (e.g. `<f4`, `|u1`)."""
    return canonical_dtype(dtype).str


def array_sha256(a: np.ndarray) -> str:
    """Hex sha256 of Note [Array digest]."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected a numpy array, got {type(a).__name__}")
    dtype = canonical_dtype(a.dtype)
    data = np.asarray(a, dtype=dtype, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    h = hashlib.sha256()
    h.update(DOMAIN)
    h.update(dtype.str.encode("ascii") + b"\x00")
    h.update(struct.pack("<I", data.ndim))
    for dim in data.shape:
        h.update(struct.pack("<Q", dim))
    h.update(data.reshape(-1).view(np.uint8))
    return h.hexdigest()
