"""How a warning prints a figure beside its bound: with the fewest significant figures that
still show on which side of the bound it lies ("R-hat 1.011 > 1.01", never "1.01 > 1.01")."""

from __future__ import annotations

import numpy as np


def beside(value: float, bound: float, percent: bool = False) -> str:
    """`value` with the fewest significant figures (at least 3; in per cent, decimals, at
    least 1) whose rounding lies on the same side of `bound` as the value itself, so
    "1.011 > 1.01" and "99.96 < 100" read right; `percent`: both are fractions, the value
    is printed in per cent."""
    v, b = (100 * float(value), 100 * float(bound)) if percent else (float(value), float(bound))
    if not np.isfinite(v):
        return f"{v}{'%' if percent else ''}"
    side = np.sign(v - b)
    for digits in range(1 if percent else 3, 17):
        text = f"{v:.{digits}f}" if percent else f"{v:.{digits}g}"
        if np.sign(float(text) - b) == side:
            break
    return text + ("%" if percent else "")


def bound_text(bound: float, percent: bool = False) -> str:
    """A threshold as the messages print it (`:g`, or per cent)."""
    return f"{100 * bound:g}%" if percent else f"{bound:g}"


__all__ = ["beside", "bound_text"]
