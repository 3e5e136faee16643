"""Fixture files: a bounded .npz reader and a byte-deterministic .npz writer.

Reading: like `np.load(..., allow_pickle=False)`, but every size is bounded before it is used.
The zip directory is read by `zipfile`; each member's .npy header is parsed first, and the array
it declares must fit in what the member holds and under `max_array_bytes` before any element is
read. Object (pickled), structured, string and datetime arrays are refused, as are duplicate
member names, members that are not `<name>.npy`, and encrypted or exotically compressed members.
Every failure is a `NpzError` with a message for FIXTURE_UNREADABLE.

Writing, Note [Deterministic npz]: `np.savez` stamps each zip entry with the current time, so
two captures of the same arrays differ. `npz_bytes` writes the archive itself: entries in the
given order, each `<name>.npy` STORED (no compression, so no dependence on the zlib build),
dated 1980-01-01 00:00:00 (the zip epoch), Unix mode 0644, no extra fields, followed by the
central directory and end record. The .npy payloads are format 1.0 with numpy's header layout
(`{'descr': ..., 'fortran_order': False, 'shape': (...), }`, space-padded so the data starts at
a multiple of 64) written here, not by numpy, so a numpy upgrade cannot change the bytes. The
same arrays in the same order always give the same bytes.
"""

from __future__ import annotations

import ast
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np

from charter.provenance.digest import canonical_dtype

MAX_FILE_BYTES = 256 * 2**20
MAX_MEMBERS = 1024
MAX_ARRAY_BYTES = 128 * 2**20
MAX_HEADER_BYTES = 4096
NPY_MAGIC = b"\x93NUMPY"


class NpzError(ValueError):
    """The file is not a fixture .npz charter will read."""


# --- reading ------------------------------------------------------------------------------------


def read_npz(path: str | Path, *, max_file_bytes: int = MAX_FILE_BYTES,
             max_array_bytes: int = MAX_ARRAY_BYTES) -> dict[str, np.ndarray]:
    """Arrays of a .npz by name, in archive order; NpzError if anything is out of bounds."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise NpzError(f"cannot read {path.name}: {exc.strerror}") from None
    if size > max_file_bytes:
        raise NpzError(f"{path.name} is {size} bytes; the limit is {max_file_bytes}")
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                raise NpzError(f"{len(infos)} members; the limit is {MAX_MEMBERS}")
            out: dict[str, np.ndarray] = {}
            for info in infos:
                name = _member_name(info)
                if name in out:
                    raise NpzError(f"member {info.filename!r} appears twice")
                if info.file_size > max_array_bytes + MAX_HEADER_BYTES:
                    raise NpzError(f"member {info.filename!r} is {info.file_size} bytes uncompressed; "
                                   f"the limit is {max_array_bytes + MAX_HEADER_BYTES}")
                with zf.open(info) as f:
                    out[name] = _read_npy(f, info, max_array_bytes)
            return out
    except NpzError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError, OSError) as exc:
        raise NpzError(f"{path.name} is not a readable zip archive: {exc}") from None


def _member_name(info: zipfile.ZipInfo) -> str:
    if info.flag_bits & 0x1:
        raise NpzError(f"member {info.filename!r} is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise NpzError(f"member {info.filename!r} uses compression method {info.compress_type}")
    if not info.filename.endswith(".npy") or info.is_dir():
        raise NpzError(f"member {info.filename!r} is not a .npy array")
    return info.filename[: -len(".npy")]


def _read_npy(f, info: zipfile.ZipInfo, max_array_bytes: int) -> np.ndarray:
    where = f"member {info.filename!r}"
    head = f.read(10)
    if len(head) < 10 or head[:6] != NPY_MAGIC:
        raise NpzError(f"{where} is not a .npy array (bad magic)")
    major = head[6]
    if major == 1:
        header_len = struct.unpack("<H", head[8:10])[0]
        prefix = 10
    elif major in (2, 3):
        head += f.read(2)
        if len(head) < 12:
            raise NpzError(f"{where}: truncated .npy header")
        header_len = struct.unpack("<I", head[8:12])[0]
        prefix = 12
    else:
        raise NpzError(f"{where}: unsupported .npy format version {major}.{head[7]}")
    if header_len > MAX_HEADER_BYTES or prefix + header_len > info.file_size:
        raise NpzError(f"{where}: .npy header of {header_len} bytes does not fit")
    raw = f.read(header_len)
    if len(raw) != header_len:
        raise NpzError(f"{where}: truncated .npy header")
    dtype, fortran, shape = _parse_header(raw, where, "utf-8" if major == 3 else "latin-1")
    count = 1
    for dim in shape:
        count *= dim
    nbytes = count * dtype.itemsize
    if nbytes > max_array_bytes:
        raise NpzError(f"{where}: the array is {nbytes} bytes; the limit is {max_array_bytes}")
    remaining = info.file_size - prefix - header_len
    if nbytes != remaining:
        raise NpzError(f"{where}: the header declares {nbytes} data bytes, the member holds {remaining}")
    data = f.read(nbytes)
    if len(data) != nbytes:
        raise NpzError(f"{where}: truncated array data")
    flat = np.frombuffer(data, dtype=dtype, count=count)
    array = flat.reshape(shape, order="F" if fortran else "C")
    return np.array(array, order="C")  # an owned, writable C-order copy


def _parse_header(raw: bytes, where: str, encoding: str):
    try:
        text = raw.decode(encoding)
        header = ast.literal_eval(text)  # literals only: no names, calls or attributes
    except (UnicodeDecodeError, ValueError, SyntaxError, MemoryError, RecursionError):
        raise NpzError(f"{where}: the .npy header is not a literal dictionary") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise NpzError(f"{where}: the .npy header must have exactly descr, fortran_order and shape")
    descr, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
    if not isinstance(descr, str):
        raise NpzError(f"{where}: dtype {descr!r} is not a plain dtype (structured arrays are refused)")
    try:
        dtype = np.dtype(descr)
        canonical_dtype(dtype)
    except (TypeError, ValueError) as exc:
        raise NpzError(f"{where}: {exc}") from None
    if not isinstance(fortran, bool):
        raise NpzError(f"{where}: fortran_order must be True or False")
    if (not isinstance(shape, tuple) or len(shape) > 32
            or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**62 for d in shape)):
        raise NpzError(f"{where}: shape {shape!r} is not a tuple of non-negative dims")
    return dtype, fortran, shape


# --- writing ------------------------------------------------------------------------------------

_DOS_DATE = (0 << 9) | (1 << 5) | 1  # 1980-01-01
_DOS_TIME = 0  # 00:00:00
_VERSION = 20  # zip 2.0
_MADE_BY = (3 << 8) | _VERSION  # Unix
_EXTERNAL_ATTR = (0o100644 << 16)  # regular file, rw-r--r--


def npy_bytes(array: np.ndarray) -> bytes:
    """Format 1.0 .npy bytes of a little-endian, C-order copy of `array` (numpy's own layout)."""
    dtype = canonical_dtype(array.dtype)
    data = np.asarray(array, dtype=dtype, order="C")
    shape = repr(tuple(int(d) for d in data.shape))  # (), (3,), (2, 3): as numpy writes it
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (dtype.str, shape)
    total = len(NPY_MAGIC) + 4 + len(header) + 1
    header += " " * ((-total) % 64) + "\n"
    if len(header) > 0xFFFF:
        raise ValueError("array header too long for .npy format 1.0")
    return NPY_MAGIC + b"\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin-1") + data.tobytes()


def npz_bytes(arrays: list[tuple[str, np.ndarray]]) -> bytes:
    """Note [Deterministic npz]: the archive bytes of `arrays`, in the given order."""
    names = [n for n, _ in arrays]
    if len(set(names)) != len(names):
        raise ValueError("array names must be unique")
    body = bytearray()
    central = bytearray()
    for name, array in arrays:
        filename = f"{name}.npy".encode("utf-8")
        payload = npy_bytes(array)
        crc = zlib.crc32(payload) & 0xFFFFFFFF
        offset = len(body)
        if len(payload) >= 0xFFFFFFFF or offset >= 0xFFFFFFFF:
            raise ValueError("fixture too large for a zip without zip64")
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, _VERSION, 0, 0, _DOS_TIME, _DOS_DATE,
                            crc, len(payload), len(payload), len(filename), 0)
        body += filename + payload
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, _MADE_BY, _VERSION, 0, 0, _DOS_TIME,
                               _DOS_DATE, crc, len(payload), len(payload), len(filename), 0, 0, 0, 0,
                               _EXTERNAL_ATTR, offset)
        central += filename
    if len(arrays) > 0xFFFF or len(body) + len(central) >= 0xFFFFFFFF:
        raise ValueError("fixture too large for a zip without zip64")
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(arrays), len(arrays), len(central), len(body), 0)
    return bytes(body + central + end)
