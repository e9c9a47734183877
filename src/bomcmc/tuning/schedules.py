"""Annealing schedules p_i and the UCB exploration constant β.

p_i is both the probability that the bandit proposes new knobs after super-transition i and
the weight of the exploration term of the annealed UCB (Wang 2012 §3.3; Wang, Mohamed & de
Freitas 2013 §3 and the authors' `ahmc.m`). Every schedule → 0, so adaptation diminishes
(the condition of Roberts & Rosenthal 2007, as used by Wang, Mohamed & de Freitas 2013 §4).
i counts super-transitions from 1.
"""

from __future__ import annotations

import math
from typing import Callable


def exponential(i: int, lam: float = 0.01) -> float:
    """p_i = exp(−λ(i − 1)), λ = 0.01 (Wang 2012 §3.3, Alg. 3 line 7 and footnote 3)."""
    return math.exp(-lam * (i - 1))


def inverse_sqrt(i: int, k: int = 100) -> float:
    """p_i = (max{i − k + 1, 1})^{−1/2}: 1 for the first k steps, then ~ i^{−1/2}
    (Wang, Mohamed & de Freitas 2013 §3, k = 100 as in the authors' `ahmc.m`)."""
    return max(i - k + 1, 1) ** -0.5


def power(i: int, gamma: float = 0.5) -> float:
    """p_i = i^{−γ}, γ > 0 (Wang 2012 §3.3, the paragraph after Alg. 3)."""
    return float(i) ** -gamma


def beta(n: int, d: int = 2, delta: float = 0.1) -> float:
    """β = 2 log(n^{d/2+2} π² / (3δ)), n = GP observations so far, d = 2, δ = 0.1
    (Wang 2012 §3.1 and Wang, Mohamed & de Freitas 2013 §3, after Srinivas et al. 2010:
    β_{i+1} with n = i + 1; d and δ as in the authors' `acq.m`)."""
    return 2.0 * math.log(n ** (d / 2 + 2) * math.pi**2 / (3.0 * delta))


def get_schedule(name, k: int = 100, lam: float = 0.01,
                 gamma: float = 0.5) -> Callable[[int], float]:
    """"inverse_sqrt" (default, the ICML code), "exponential" (the thesis), "power", or a
    callable i -> p_i."""
    if callable(name):
        return name
    table = {
        "inverse_sqrt": lambda i: inverse_sqrt(i, k),
        "exponential": lambda i: exponential(i, lam),
        "power": lambda i: power(i, gamma),
    }
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"unknown schedule {name!r} (available: {', '.join(table)})") from None
