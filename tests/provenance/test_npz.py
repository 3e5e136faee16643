"""Fixture files: the deterministic writer and the bounded reader."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from charter.provenance.npz import NpzError, npy_bytes, npz_bytes, read_npz


def test_writer_is_deterministic_and_numpy_reads_it(tmp_path):
    arrays = [("b", np.arange(5, dtype=np.float32)), ("a", np.array(3, np.int64)), ("c", np.ones((2, 0), bool))]
    data = npz_bytes(arrays)
    assert data == npz_bytes(arrays)
    path = tmp_path / "x.npz"
    path.write_bytes(data)
    with np.load(path, allow_pickle=False) as z:
        assert z.files == ["b", "a", "c"]  # the given order, not sorted
        for name, a in arrays:
            assert z[name].dtype == a.dtype and np.array_equal(z[name], a)
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
        for info in zf.infolist():
            assert info.date_time == (1980, 1, 1, 0, 0, 0) and info.compress_type == zipfile.ZIP_STORED


@pytest.mark.parametrize("a", [np.array(5, np.int32), np.arange(3, dtype=">f8"), np.zeros((2, 3), np.uint8),
                               np.asfortranarray(np.ones((3, 2), np.float32))])
def test_npy_bytes_match_numpy_format_1_0(a):
    buf = io.BytesIO()
    le = a.astype(a.dtype.newbyteorder("<")) if a.dtype.itemsize > 1 else a
    np.lib.format.write_array(buf, np.asarray(le, order="C"), version=(1, 0), allow_pickle=False)
    assert npy_bytes(a) == buf.getvalue()


@settings(max_examples=40, deadline=None)
@given(st.lists(hnp.arrays(st.sampled_from(["<f4", "<i8", "|u1", "|b1"]),
                           hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)), max_size=4))
def test_round_trip(tmp_path_factory, arrays):
    named = [(f"a{i}", a) for i, a in enumerate(arrays)]
    path = tmp_path_factory.mktemp("rt") / "x.npz"
    path.write_bytes(npz_bytes(named))
    back = read_npz(path)
    assert list(back) == [n for n, _ in named]
    for n, a in named:
        assert back[n].dtype == a.dtype and back[n].shape == a.shape and back[n].tobytes() == a.tobytes()


def _zip(tmp_path, members: list[tuple[str, bytes]]):
    path = tmp_path / "bad.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members:
            zf.writestr(name, data)
    return path


def test_refuses_pickled_object_arrays(tmp_path):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(NpzError, match="digest"):
        read_npz(_zip(tmp_path, [("a.npy", buf.getvalue())]))


def test_refuses_structural_lies(tmp_path):
    good = npy_bytes(np.arange(4, dtype=np.float32))
    with pytest.raises(NpzError, match="holds"):
        read_npz(_zip(tmp_path, [("a.npy", good[:-4])]))  # header declares 16 data bytes, member has 12
    with pytest.raises(NpzError, match="twice"):
        with pytest.warns(UserWarning):
            read_npz(_zip(tmp_path, [("a.npy", good), ("a.npy", good)]))
    with pytest.raises(NpzError, match="not a .npy"):
        read_npz(_zip(tmp_path, [("a.txt", b"hello")]))
    with pytest.raises(NpzError, match="magic"):
        read_npz(_zip(tmp_path, [("a.npy", b"not an array at all")]))
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }"
    header += b" " * ((-(10 + len(header) + 1)) % 64) + b"\n"
    huge = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\0" * 16
    with pytest.raises(NpzError, match="limit"):  # refused from the header, nothing allocated
        read_npz(_zip(tmp_path, [("a.npy", huge)]))
    evil = huge.replace(b"'<f4'", b"'O'  ")
    with pytest.raises(NpzError, match="digest"):
        read_npz(_zip(tmp_path, [("a.npy", evil)]))


def test_bounds_apply_before_reading(tmp_path):
    path = tmp_path / "x.npz"
    path.write_bytes(npz_bytes([("a", np.zeros(1000, np.float64))]))
    with pytest.raises(NpzError, match="limit"):
        read_npz(path, max_array_bytes=100)
    with pytest.raises(NpzError, match="limit"):
        read_npz(path, max_file_bytes=100)
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 this is not a zip")
    with pytest.raises(NpzError, match="zip"):
        read_npz(tmp_path / "junk.npz")
    with pytest.raises(NpzError, match="cannot read"):
        read_npz(tmp_path / "absent.npz")
