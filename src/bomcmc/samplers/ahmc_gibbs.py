"""Adaptive HMC with Gibbs updates of the hyperparameters, for Bayesian neural networks.

Issue item 3(b); seed 000 §3.2 and ch. 4 (Wang's robot-arm and Dexter runs): each transition
is Neal's (`neal_gibbs_hmc`: exact Gibbs draws of every precision, then HMC on the weights with
per-weight step sizes η·c^{-1/2} from Neal's curvature heuristic), and a GP bandit
(`tuning.gp_bandit.GPBanditTuner`) tunes the shared (η, L) between super-transitions of a fixed
leapfrog budget (seed 000 §3.2: a super-transition of B leapfrog steps runs ⌊B/L⌋ transitions),
annealed with p_i = exp(−λ(i−1)), λ = 0.01 (seed 000 Alg. 3 and its footnote 3).

The bandit searches η — FBM's step-size adjustment factor — rather than a raw ε: Neal's
heuristic already sets the relative scales of the weight groups from the current precisions,
and η is what Wang's runs searched (box [0.01, 1.01] for the robot arm, SPECS §E.5).

Reward: "cv" (default when the posterior is a `models.bnn_cv.CVModel`): 1 / held-out error of
the super-transition's draws (`bnn_cv.cv_reward`); "esjd" otherwise; any reward name of
`tuning.rewards` or a callable.

Defaults (no bounds given): η ∈ [0.01, 1.0], L ∈ {10..500}, budget = 10 × the largest L
(a super-transition of ≥ 10 transitions), `random_steps` off (Neal's and Wang's fixed L).
"""

from __future__ import annotations

import math

from ..errors import BomcmcError
from ..tuning.gp_bandit import GPBanditTuner
from .ahmc import TunedSampler, _pair
from .neal_gibbs_hmc import neal_sampler

TUNER_OPTIONS = ("eps_bounds", "steps_bounds", "budget", "reward", "schedule", "lam", "k",
                 "acquisition", "start", "adapt_in_sampling")
DEFAULT_ETA_BOUNDS = (0.01, 1.0)
DEFAULT_STEPS_BOUNDS = (10, 500)
BUDGET_FACTOR = 10
LAMBDA = 0.01  # seed 000 footnote 3


def validate_options(options: dict, cv: bool) -> dict:
    """The tuner options with defaults filled in, checked (one-line BomcmcError)."""
    opts = {k: v for k, v in options.items() if v is not None}
    opts["eps_bounds"] = _pair("eps_bounds", opts.get("eps_bounds", DEFAULT_ETA_BOUNDS))
    opts["steps_bounds"] = _pair("steps_bounds", opts.get("steps_bounds", DEFAULT_STEPS_BOUNDS),
                                 integer=True)
    budget = opts.get("budget", BUDGET_FACTOR * int(math.floor(opts["steps_bounds"][1])))
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget < 1 \
            or int(budget) != budget:
        raise BomcmcError(f"budget must be a positive integer number of leapfrog steps, "
                          f"got {budget!r}")
    opts["budget"] = int(budget)
    reward = opts.get("reward", "cv" if cv else "esjd")
    if reward == "cv" and not cv:
        raise BomcmcError("reward 'cv' needs a cross-validation posterior "
                          "(bomcmc.models.bnn_cv.CVModel(model, folds).posterior())")
    opts["reward"] = reward
    opts.setdefault("schedule", "exponential")
    opts.setdefault("lam", LAMBDA)
    return opts


def make_tuner(options: dict, spec, flat, states) -> GPBanditTuner:
    """The run's GP bandit, from the options config.json records."""
    from ..models.bnn_cv import CVModel, cv_reward

    model = flat.source.meta.get("model") if flat.source.meta else None
    cv = isinstance(model, CVModel)
    opts = validate_options(options, cv)
    if opts["reward"] == "cv":
        opts["reward"] = cv_reward(model)
    return GPBanditTuner(seed=spec.seed, **opts)


class GibbsTunedSampler(TunedSampler):
    """Neal's Gibbs-within-HMC transition with the GP bandit as its default tuner."""

    __slots__ = ()
    tuner_options = TUNER_OPTIONS
    adapt_hint = ""  # no metric option: η and L only
    make_tuner = staticmethod(make_tuner)  # the module's make_tuner(options, spec, flat, states)


def ahmc_gibbs_sampler(model, name: str = "ahmc-gibbs") -> GibbsTunedSampler:
    """The adaptive sampler for a `BNN` or a `CVModel` (use with
    `bomcmc.sample(model.posterior(), sampler=ahmc_gibbs_sampler(model), adapt=None, ...)`;
    tuner options `eps_bounds` (η), `steps_bounds`, `budget`, `reward`, ... as keywords)."""
    base = neal_sampler(model, name=name)
    return GibbsTunedSampler(name=name, init=base.init, step=base.step,
                             make_knobs=base.make_knobs)
