"""Adaptive HMC's own options and their checks (`ahmc_tuner.AHMCTuner`; the bandit's are
`gp_bandit.GPBanditTuner`'s): the burn-in's k BO steps, the relative ε box, the metric's
windows and the rewards, as docs/tuning.md's options table gives them."""

from __future__ import annotations

from ..errors import BomcmcError
from ..validation import choice, integer, pair
from .learned_metric import MASSES

BO_STEPS = 100  # k: BO steps during burn-in (Wang, Mohamed & de Freitas 2013 §5)
DEFAULT_M = 10  # transitions per BO step when there is no burn-in (m = ⌊1000/100⌋)
EPS_FACTORS = (0.1, 10.0)  # the relative ε box: [ε₀/10, 10 ε₀]
MASS_WINDOWS = (0.10, 0.25, 0.50)  # metric windows, as fractions of the k burn-in BO steps
REWARDS = ("esjd", "ess", "acf")
ACF_MIN_DRAWS = 26  # the "acf" reward's l_min


def check_options(warmup, bo_steps, mass, mass_windows, eps_factors, batch, steps_cap,
                  reward) -> None:
    """AHMC's own options (one-line BomcmcError); the bandit's are `GPBanditTuner`'s."""
    choice("mass", mass, MASSES)
    choice("reward", reward, REWARDS,
           " (a callable reward needs tuner=GPBanditTuner(reward=f))" if callable(reward) else "")
    integer("bo_steps", bo_steps)
    pair("eps_factors", eps_factors)
    try:
        w = [float(f) for f in mass_windows]
    except (TypeError, ValueError):
        raise BomcmcError(f"mass_windows must be fractions, got {mass_windows!r}") from None
    if len(w) < 2 or any(not 0 <= f <= 1 for f in w) or w != sorted(w):
        raise BomcmcError("mass_windows must be increasing fractions in [0, 1] (start, end, "
                          f"...), got {mass_windows!r}")
    if batch is not None:
        integer("batch", batch)
    if steps_cap is not None:
        integer("steps_cap", steps_cap, lo=0)
    k = min(bo_steps, warmup)
    m = warmup // k if k else DEFAULT_M
    if reward == "acf" and m < ACF_MIN_DRAWS:
        raise BomcmcError(f"reward 'acf' needs BO steps of >= {ACF_MIN_DRAWS} draws; warmup "
                          f"{warmup} with {k} BO steps gives {m} (use fewer bo_steps or "
                          f"warmup >= {ACF_MIN_DRAWS * k})")


def given(options: dict) -> dict:
    """The options a user set (None: the tuner's default)."""
    return {k: v for k, v in options.items() if v is not None}
