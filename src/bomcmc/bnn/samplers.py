"""Adaptive HMC with Gibbs updates of the hyperparameters, for Bayesian neural networks.

Wang 2012 §3.2 and ch. 4 (Wang's robot-arm and Dexter runs): each transition is Neal's
(`kernels/neal_gibbs_hmc.py`: exact Gibbs draws of every precision, then HMC on the weights
with per-weight step sizes η·c^{-1/2} from Neal's curvature heuristic), and a GP bandit
(`tuning.gp_bandit.GPBanditTuner`, or `tuning.ceiling_bandit` with a ceiling on η after
divergences) tunes the shared (η, L) between super-transitions of a fixed
leapfrog budget (Wang 2012 §3.2: a super-transition of B leapfrog steps runs ⌊B/L⌋
transitions), annealed with p_i = exp(−λ(i−1)), λ = 0.01 (Wang 2012, Alg. 3 and its
footnote 3).

The bandit searches η — FBM's step-size adjustment factor — rather than a raw ε: Neal's
heuristic already sets the relative scales of the weight groups from the current precisions,
and η is what Wang's runs searched (box [0.01, 1.01] for the robot arm in Wang's thesis-era
code, `robot_arm.py`).

Reward: "cv" (default when the posterior is a `bnn.cv.CVModel`): 1 / held-out error of
the super-transition's draws (`bnn.cv.cv_reward`); "cv_logloss": 1 / held-out log loss
(classification); "esjd" otherwise; any reward name of
`tuning.rewards` or a callable.

Defaults (no bounds given): η ∈ [0.01, 1.0], L ∈ {10..500}, budget = 10 × the largest L
(a super-transition of ≥ 10 transitions), `random_steps` off (Neal's and Wang's fixed L).
"""

from __future__ import annotations

import math

from functools import partial

from ..errors import BomcmcError
from ..kernels.choo_dynamics import choo_kernel
from ..kernels.neal_gibbs_hmc import neal_kernel
from ..kernels.nuts_gibbs import nuts_gibbs_kernel
from ..options import Option, positive_float, positive_int
from ..registry import Sampler
from ..tuning.ceiling_bandit import CeilingBanditTuner
from ..validation import pair
from .cv import CVModel, cv_reward

DEFAULT_ETA_BOUNDS = (0.01, 1.0)
DEFAULT_STEPS_BOUNDS = (10, 500)
BUDGET_FACTOR = 10
LAMBDA = 0.01  # Wang 2012, footnote 3

# In these Gibbs kernels the step size is η, FBM's step-size adjustment factor: each weight
# group's step size is η·c^{-1/2}, c from Neal's curvature heuristic at the current precisions.
_ETA = ("η, the step-size adjustment factor (not ε: each weight group's step size is "
        "η·c^{-1/2}, Neal's heuristic)")
_GIBBS = (Option("sample_sigmas", bool, True, "Gibbs-draw the weight groups' precisions"),
          Option("sample_noise", bool, True, "Gibbs-draw the noise precisions"))
NEAL_KNOBS = (Option("step_size", positive_float, None, _ETA + " (default: 0.1)"),
              Option("steps", positive_int, 100, "leapfrog steps per transition L"),
              Option("random_steps", bool, False, "draw L uniformly from 1..L"),
              *_GIBBS,
              Option("eta", positive_float, None, "η by its own name (as step_size)"))
WINDOW = Option("window", positive_int, 1, "W, the states in each of the accept and reject "
                "windows (Neal 1994; FBM's hybrid L:W η)")
# Choo 2000 §5.5: η_h/η_p; 1 as in his ch. 5 (η_h = η_p); the GP bandit tunes η_p at this ratio
ETA_RATIO = Option("eta_ratio", positive_float, 1.0,
                   "r = η_h/η_p, the hyperparameters' factor over the weights' (Choo 2000 "
                   "§5.5; his ch. 5 uses 1, his §6.2.3 1/100)")
CHOO_KNOBS = tuple(o for o in NEAL_KNOBS if o not in _GIBBS) + (ETA_RATIO,)
NUTS_GIBBS_KNOBS = (Option("step_size", positive_float, 0.2, _ETA),
                    Option("max_tree_depth", positive_int, 10, "maximum tree depth"),
                    *_GIBBS)
TUNER_OPTIONS = (
    Option("eps_bounds", positive_float, DEFAULT_ETA_BOUNDS, "the η box", nargs=2),
    Option("steps_bounds", positive_int, DEFAULT_STEPS_BOUNDS, "the L box", nargs=2),
    Option("budget", positive_int, None, "leapfrog steps per super-transition (default: "
                                         f"{BUDGET_FACTOR} × the largest L)"),
    Option("reward", str, None, "the bandit's reward (default: cv for a CVModel, else esjd)"),
    Option("stuck_zero", bool, False, "the cv rewards score 0 for a super-transition in which "
           "a chain accepted, in expectation, under half a trajectory (bnn.cv.cv_reward)"),
    Option("schedule", str, "exponential", "annealing schedule p_i = exp(−λ(i−1))"),
    Option("lam", positive_float, LAMBDA, "λ of the exponential schedule"),
    Option("k", positive_int, 100, "the schedule's k"),
    Option("acquisition", str, "ucb", "acquisition function", choices=("ucb", "ei")),
    Option("start", str, "corner", "the first setting tried",
           choices=("corner", "center", "knobs")),
    Option("adapt_in_sampling", bool, True, "keep tuning after warm-up"),
    Option("divergence_margin", positive_float, None,
           "in sampling, η <= this × the smallest η that diverged (none: Wang's bandit)"),
)


def with_defaults(options: dict, cv: bool) -> dict:
    """The tuner options with this sampler's defaults filled in (the tuner checks them):
    η ∈ DEFAULT_ETA_BOUNDS, L ∈ DEFAULT_STEPS_BOUNDS, a budget of BUDGET_FACTOR × the
    largest L, the cross-validation reward for a `CVModel`, Wang's exponential schedule."""
    opts = {k: v for k, v in options.items() if v is not None}
    opts.setdefault("eps_bounds", DEFAULT_ETA_BOUNDS)
    steps = opts.setdefault("steps_bounds", DEFAULT_STEPS_BOUNDS)
    if "budget" not in opts:
        pair("steps_bounds", steps, integer=True)
        opts["budget"] = BUDGET_FACTOR * int(math.floor(steps[1]))
    opts.setdefault("reward", "cv" if cv else "esjd")
    opts.setdefault("schedule", "exponential")
    opts.setdefault("lam", LAMBDA)
    return opts


def make_tuner(options: dict, spec, flat, states, *, model) -> CeilingBanditTuner:
    """The run's GP bandit, from the options config.json records; `model` is the network
    (a `CVModel` gets the cross-validation reward by default). Without a
    `divergence_margin` the tuner is Wang's `GPBanditTuner`."""
    cv = isinstance(model, CVModel)
    opts = with_defaults(options, cv)
    stuck_zero = bool(opts.pop("stuck_zero", False))
    if opts["reward"] in ("cv", "cv_logloss"):
        if not cv:
            raise BomcmcError(f"reward '{opts['reward']}' needs a cross-validation posterior "
                              "(bomcmc.bnn.cv.CVModel(model, folds).posterior())")
        opts["reward"] = cv_reward(model, loss="error" if opts["reward"] == "cv" else "logloss",
                                   stuck_zero=stuck_zero)
    elif stuck_zero:
        raise BomcmcError("stuck_zero applies to the cross-validation rewards 'cv' and "
                          f"'cv_logloss', not to reward {opts['reward']!r}")
    return CeilingBanditTuner(seed=spec.seed, **opts)


def neal_sampler(model, name: str = "neal_gibbs", windowed: bool = False) -> Sampler:
    """Neal's Gibbs-within-HMC for a `BNN` or a `CVModel`, with fixed (η, L) (use with
    `bomcmc.sample(model.posterior(), sampler=neal_sampler(model), ...)`); `windowed`: with
    Neal's (1994) accept and reject windows of `window` states, FBM's `hybrid L:W η`."""
    return Sampler(neal_kernel(model, name=name, windowed=windowed),
                   knobs=NEAL_KNOBS + (WINDOW,) if windowed else NEAL_KNOBS)


def ahmc_gibbs_sampler(model, name: str = "ahmc_gibbs") -> Sampler:
    """Neal's transition with (η, L) tuned by the GP bandit, for a `BNN` or a `CVModel` (use
    with `bomcmc.sample(model.posterior(), sampler=ahmc_gibbs_sampler(model), ...)`; tuner
    options `eps_bounds` (η), `steps_bounds`, `budget`, `reward`, ... as keywords)."""
    return Sampler(neal_kernel(model, name=name), make_tuner=partial(make_tuner, model=model),
                   knobs=NEAL_KNOBS, tuner_options=TUNER_OPTIONS)


def nuts_gibbs_sampler(model, name: str = "nuts_gibbs") -> Sampler:
    """Gibbs draws of the precisions, then NUTS on the weights, with dual averaging of η in
    warm-up by default."""
    return Sampler(nuts_gibbs_kernel(model, name=name), adapter="dual_averaging",
                   knobs=NUTS_GIBBS_KNOBS)


def dynamical_sampler(blocks, tuned: bool = False, name: str | None = None,
                      splits: tuple[int, int] = (1, 1)) -> Sampler:
    """Choo's joint dynamics (`kernels/choo_dynamics.py`) over `blocks`, a
    `bnn.dynamical.DynamicalA` or `DynamicalB` (use with `blocks.posterior()`): fixed (η, L)
    as knobs, or with `tuned` the GP bandit over (η, L) as for `ahmc_gibbs_sampler`; η is
    η_p, and η_h = `eta_ratio`·η_p (default 1: one η for both blocks). `splits` = (k_p, k_h)
    makes each weight (hyperparameter) update k_p (k_h) leapfrog steps of v/k (Choo 2000
    §6.2.2, §6.2.4)."""
    variant = "b" if hasattr(blocks, "to_centred") else "a"
    name = name or (f"ahmc_dyn_{variant}" if tuned else f"dyn_{variant}")
    kernel = choo_kernel(blocks, name=name, splits=splits)
    if not tuned:
        return Sampler(kernel, knobs=CHOO_KNOBS)
    return Sampler(kernel, make_tuner=partial(make_tuner, model=blocks.model),
                   knobs=CHOO_KNOBS, tuner_options=TUNER_OPTIONS)
