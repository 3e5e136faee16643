"""Input checks shared by the oracles: a clear ValueError instead of a numpy broadcast surprise."""

from __future__ import annotations

import numpy as np


def array(name: str, value: object, dtype: str, ndim: int | tuple[int, ...]) -> np.ndarray:
    """`value` as a C-order array, if it is a numpy array of exactly `dtype` and rank `ndim`."""
    if not isinstance(value, np.ndarray):
        raise ValueError(f"{name} must be a numpy array, got {type(value).__name__}")
    if value.dtype != np.dtype(dtype):
        raise ValueError(f"{name} must have dtype {dtype}, got {value.dtype}")
    ranks = (ndim,) if isinstance(ndim, int) else ndim
    if value.ndim not in ranks:
        raise ValueError(f"{name} must have rank {' or '.join(map(str, ranks))}, got shape {value.shape}")
    return np.ascontiguousarray(value) if value.ndim else value


def integer(name: str, value: object, lo: int, hi: int) -> int:
    """`value` as an int in [lo, hi]; bools and floats are refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {value}")
    return value


def no_nan(name: str, value: np.ndarray) -> None:
    if np.isnan(value).any():
        raise ValueError(f"{name} contains NaN")
