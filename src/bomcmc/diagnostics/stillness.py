"""Coordinates and chains that never moved.

A coordinate `frozen` in every chain has no defined ESS (the checks count it as ESS 0); one
that is also `constant` across chains is fixed by construction and not judged; a chain whose
every draw equals its first is stuck (`stuck_chains`). NaN counts as equal to NaN.
"""

from __future__ import annotations

import numpy as np


def frozen(posterior) -> dict[str, np.ndarray]:
    """Per variable, a boolean array over its coordinates: True where every chain stays at its
    first draw (NaN counts as equal to NaN); all False with fewer than two draws."""
    out = {}
    for name in posterior.data_vars:
        x = np.asarray(posterior[name].values, dtype=float)  # (chain, draw, ...)
        first = x[:, :1]
        same = (x == first) | (np.isnan(x) & np.isnan(first))
        out[name] = same.all(axis=(0, 1)) & (x.shape[1] >= 2)
    return out


def constant(posterior, still: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per variable, True where a coordinate `frozen` in every chain (`still`) holds the same
    value in all of them, with at least two chains: a quantity fixed by construction, whose
    ESS and R-hat say nothing of mixing. Chains stuck at different values are not constant.
    One chain cannot tell the two apart: then nothing is constant."""
    out = {}
    for name, fixed in still.items():
        x = np.asarray(posterior[name].values, dtype=float)[:, :1]  # (chain, 1, ...)
        first = x[:1]
        same = (x == first) | (np.isnan(x) & np.isnan(first))
        out[name] = fixed & same.all(axis=(0, 1)) & (x.shape[0] >= 2)
    return out


def stuck_chains(posterior) -> list[int]:
    """Indices of the chains whose every draw equals their first (all variables)."""
    if posterior.sizes.get("draw", 0) < 2:
        return []
    n_chains = posterior.sizes.get("chain", 1)
    moved = np.zeros(n_chains, bool)
    for name in posterior.data_vars:
        x = np.asarray(posterior[name].values, dtype=float).reshape(
            n_chains, posterior.sizes["draw"], -1)
        first = x[:, :1]
        differ = (x != first) & ~(np.isnan(x) & np.isnan(first))
        moved |= differ.any(axis=(1, 2))
    return [int(c) for c in np.flatnonzero(~moved)]
