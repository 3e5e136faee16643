"""The canonical array digest: a documented, stable byte layout (Note [Array digest])."""

from __future__ import annotations

import hashlib
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from charter.provenance.digest import DOMAIN, array_sha256, dtype_tag


def reference(dtype: str, shape: tuple[int, ...], data: bytes) -> str:
    """The layout exactly as docs/provenance.md states it."""
    h = hashlib.sha256(b"charter-array-v1\x00" + dtype.encode() + b"\x00" + struct.pack("<I", len(shape)))
    for d in shape:
        h.update(struct.pack("<Q", d))
    h.update(data)
    return h.hexdigest()


def test_layout_matches_the_documented_encoding():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert DOMAIN == b"charter-array-v1\x00"
    assert array_sha256(a) == reference("<f4", (2, 3), a.astype("<f4").tobytes())
    assert array_sha256(np.array(7, np.int64)) == reference("<i8", (), struct.pack("<q", 7))
    assert array_sha256(np.array([1, 2], np.uint8)) == reference("|u1", (2,), b"\x01\x02")


def test_known_values_are_stable():
    # Pinned literals: a numpy upgrade that changed any of these would change every fixture label.
    assert array_sha256(np.array(5, np.int32)) == "eb1e56cba60b256722b0fbe01c30c3ddad28905fe5c7cdc465ab06639b8a2c02"
    assert array_sha256(np.zeros((0, 3), np.float32)) == "679d37bf9ebfedfcec69209cd95c78cd6dc20b890c6358d39d39d98a772fef49"
    assert array_sha256(np.array([True])) == "1361b8abc5fb2f7ec78c4697636e7eb87355ae5a6828a92779a7786be4e56f3b"


def test_value_not_storage():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    assert array_sha256(a) == array_sha256(a.astype(">f8"))
    assert array_sha256(a) == array_sha256(np.asfortranarray(a))
    assert array_sha256(a) == array_sha256(a.T.copy().T)


def test_dtype_shape_and_bits_all_count():
    a = np.zeros(4, np.float32)
    assert array_sha256(a) != array_sha256(a.astype(np.int32))
    assert array_sha256(a) != array_sha256(a.reshape(2, 2))
    assert array_sha256(np.array(1, np.int32)) != array_sha256(np.array([1], np.int32))
    assert array_sha256(np.array([0.0], np.float32)) != array_sha256(np.array([-0.0], np.float32))


@pytest.mark.parametrize("bad", [np.array(["x"], dtype=object), np.array(["x"]), np.zeros(2, dtype="i4,f4"),
                                 np.array(["2020-01-01"], dtype="datetime64[D]")])
def test_undigestible_dtypes_are_refused(bad):
    with pytest.raises(ValueError):
        array_sha256(bad)


def test_dtype_tags():
    assert dtype_tag(np.dtype(">f4")) == "<f4"
    assert dtype_tag(np.dtype(np.uint8)) == "|u1"
    assert dtype_tag(np.dtype(np.bool_)) == "|b1"


_dtypes = st.sampled_from(["<f4", ">f4", "<f8", "<i4", ">i8", "|u1", "|b1", "<f2", "<c8"])


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(_dtypes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)),
       hnp.arrays(_dtypes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_equal_digest_iff_equal_value(a, b):
    same = (a.dtype.newbyteorder("<") == b.dtype.newbyteorder("<") and a.shape == b.shape
            and a.astype(a.dtype.newbyteorder("<")).tobytes() == b.astype(b.dtype.newbyteorder("<")).tobytes())
    assert (array_sha256(a) == array_sha256(b)) == same
