"""The input checks, in one place: each raises a one-line `BomcmcError` naming the input.

Kernels, tuners, models, the driver and the estimators validate what users hand them with
these functions, so a message reads the same wherever the value came in.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import BomcmcError


def is_number(v) -> bool:
    """A real number (Python or NumPy), not a bool."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def is_int(v) -> bool:
    """A Python or NumPy integer, not a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def positive_number(name: str, v) -> float:
    """A positive finite number."""
    if not (is_number(v) and v > 0 and math.isfinite(v)):
        raise BomcmcError(f"{name} must be a positive finite number, got {v}")
    return float(v)


def whole_number(name: str, v) -> int:
    """A positive integer, written as an int or a whole float (an L of 10.0 is 10)."""
    if not is_number(v) or not math.isfinite(v) or int(v) != v or v < 1:
        raise BomcmcError(f"{name} must be a positive integer, got {v}")
    return int(v)


def integer(name: str, v, lo: int = 1, most: int | None = None) -> int:
    """An integer in [lo, most] (most None: no upper bound)."""
    if not is_int(v) or v < lo or (most is not None and v > most):
        kind = {1: "a positive integer", 0: "a non-negative integer"}.get(
            lo, f"an integer >= {lo}")
        raise BomcmcError(f"{name} must be {kind}"
                          + (f" <= {most}" if most is not None else "") + f", got {v!r}")
    return int(v)


def probability(name: str, v) -> float:
    """A number strictly between 0 and 1."""
    if not (is_number(v) and 0 < v < 1):
        raise BomcmcError(f"{name} must be in (0, 1), got {v}")
    return float(v)


def tree_depth(v) -> int:
    """NUTS's maximum tree depth: an integer in 1..30."""
    if not (is_number(v) and math.isfinite(v) and int(v) == v and 1 <= v <= 30):
        raise BomcmcError(f"max_tree_depth must be an integer in 1..30, got {v}")
    return int(v)


def pair(name: str, v, integer: bool = False) -> list[float]:
    """A box (lo, hi) with 0 < lo <= hi, holding an integer >= 1 when `integer`."""
    try:
        lo, hi = (float(x) for x in v)
    except (TypeError, ValueError):
        raise BomcmcError(f"{name} must be two numbers (lo, hi), got {v!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
        raise BomcmcError(f"{name} must satisfy 0 < lo <= hi, got {v!r}")
    if integer and not (1 <= math.ceil(lo) <= math.floor(hi)):
        raise BomcmcError(f"{name} must contain an integer >= 1, got {v!r}")
    return [lo, hi]


def choice(name: str, v, allowed, hint: str = "") -> None:
    """One of `allowed`."""
    if v not in allowed:
        raise BomcmcError(f"{name} must be one of {', '.join(allowed)}, got {v!r}{hint}")


def inverse_mass(dim: int, value=None, dense: bool = False) -> np.ndarray:
    """An inverse mass matrix: the identity by default (dense when asked), else a positive
    diagonal of shape (dim,) or a symmetric positive definite (dim, dim) matrix."""
    if value is None:
        return np.eye(dim) if dense else np.ones((dim,))
    inv = np.asarray(value, dtype=float)
    if dense and inv.shape == (dim,):
        inv = np.diag(inv)
    if inv.shape not in ((dim,), (dim, dim)):
        raise BomcmcError(f"inverse_mass_matrix must have shape ({dim},) or ({dim}, {dim}), "
                          f"got {inv.shape}")
    if not np.all(np.isfinite(inv)):
        raise BomcmcError("inverse_mass_matrix must be finite")
    if inv.ndim == 1 and not np.all(inv > 0):
        raise BomcmcError("a diagonal inverse_mass_matrix must be positive")
    if inv.ndim == 2 and not _is_spd(inv):
        raise BomcmcError("a dense inverse_mass_matrix must be symmetric positive definite")
    return inv


def _is_spd(a: np.ndarray) -> bool:
    if not np.allclose(a, a.T, rtol=1e-10, atol=0.0):
        return False
    try:
        np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return False
    return True


def finite_data(name: str, **arrays) -> None:
    """No NaN or inf in any data array (`name` is the model's): a one-line BomcmcError
    naming the array, how many values are not finite and the first of them (`first_bad`)."""
    for key, arr in arrays.items():
        where = first_bad(arr)
        if where is not None:
            a = np.asarray(arr, dtype=float)
            bad = int(np.size(a) - np.count_nonzero(np.isfinite(a)))
            raise BomcmcError(f"{name}: data array '{key}' has {bad} non-finite value(s), "
                              f"the first {where}")


def first_bad(arr) -> str | None:
    """Where the first NaN or inf of a numeric array lies, as "nan at row 3" (rows counted
    from 0 along the first axis; "at [3, 1]" for the full index of a 2-D or larger array;
    the value alone for a scalar), or None when every value is finite (or the array is not
    numeric)."""
    try:
        a = np.asarray(arr, dtype=float)
    except (TypeError, ValueError):
        return None
    if a.size == 0 or np.all(np.isfinite(a)):
        return None
    index = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
    value = a[index]
    if not index:
        return f"{value}"
    if len(index) == 1:
        return f"{value} at row {index[0]}"
    return f"{value} at row {index[0]} ([{', '.join(map(str, index))}])"
