"""Choo's 8-point synthetic regression data and his priors (Choo 2000 §5.1–5.4).

Choo 2000, Table 5.1: 8 cases, inputs (x, y) uniform on [−1, 1]², target
z = f(x, y) + N(0, 0.1²) with f(x, y) = 0.3 + 1.2x + 0.7(y − 0.2)² + 2.3y(x + 0.1)² (eq. 5.1).
Shipped as `data/choo/choo8.csv` (columns x, y, z; PROVENANCE.md, "Choo (2000)").

Priors (Tables 5.2 and 5.6): one Gamma-distributed precision per group (FBM notation
`Width:α`, width ω^{−1/2}, Neal's shape α = 0.5 everywhere), one tanh hidden layer:

    hidden units  noise   ih (U)  bh (A)  ho (V)   bo (B)
    8             0.10    1.00    1.00    0.45     0.80
    12            0.10    1.00    1.00    0.37     0.80
    16            0.10    1.00    1.00    0.32     0.80
    20            0.10    1.00    1.00    0.285    0.80

The hidden-to-output widths are given unscaled, so they are written without FBM's `x`. They
are 0.45·√(8/H) to the printed digits (a hand-made 1/√H scaling; FBM's `x` with α = 0.5 < 2
would scale by H^{2/α} instead), which `choo_prior` uses for other numbers of hidden units.
"""

from __future__ import annotations

import math

import numpy as np

from ..datasets import data_path, read_csv

ALPHA = 0.5  # Neal's Gamma shape α for every hyperparameter (Tables 5.2, 5.6)
HO_WIDTH = {8: 0.45, 12: 0.37, 16: 0.32, 20: 0.285}  # ω_v^{−1/2} by hidden units (Table 5.6)
WIDTHS = {"ih": 1.00, "bh": 1.00, "bo": 0.80}  # ω_u^{−1/2}, ω_a^{−1/2}, ω_b^{−1/2}
NOISE_WIDTH = 0.10  # ω_δ^{−1/2}


def f_true(x, y):
    """The noiseless surface of Choo 2000, eq. 5.1."""
    return 0.3 + 1.2 * x + 0.7 * (y - 0.2) ** 2 + 2.3 * y * (x + 0.1) ** 2


def load_choo8() -> tuple[np.ndarray, np.ndarray]:
    """(X (8, 2), y (8, 1)): Choo 2000, Table 5.1, as printed."""
    _, arr = read_csv(data_path("choo", "choo8.csv"), "choo8.csv")
    return arr[:, :2].copy(), arr[:, 2:3].copy()


def choo_prior(hidden: int = 8) -> tuple[str, str]:
    """(net prior, noise prior) in FBM notation for Choo's network with `hidden` tanh units
    (Choo 2000, Tables 5.2 and 5.6), e.g. for 8:
    ("ih 1:0.5 bh 1:0.5 ho 0.45:0.5 bo 0.8:0.5", "0.1:0.5"). Numbers of hidden units outside
    Table 5.6 get the ho width 0.45·√(8/H) (rounded to 4 digits), the table's own rule."""
    from ..errors import BomcmcError

    if isinstance(hidden, bool) or not isinstance(hidden, (int, np.integer)) or hidden < 1:
        raise BomcmcError(f"hidden must be a positive integer, got {hidden!r}")
    ho = HO_WIDTH.get(int(hidden), round(HO_WIDTH[8] * math.sqrt(8 / hidden), 4))
    a = f"{ALPHA:g}"
    net = (f"ih {WIDTHS['ih']:g}:{a} bh {WIDTHS['bh']:g}:{a} ho {ho:g}:{a} "
           f"bo {WIDTHS['bo']:g}:{a}")
    return net, f"{NOISE_WIDTH:g}:{a}"


def choo_model(hidden: int = 8):
    """Choo's network on his data: `BNN(X, y, hidden=(hidden,), prior, noise)`, tanh units,
    Gaussian noise with one Gamma-distributed precision."""
    from .network import BNN

    X, y = load_choo8()
    prior, noise = choo_prior(hidden)
    return BNN(X, y, hidden=(hidden,), prior=prior, noise=noise, name=f"choo{hidden}")
