"""Host-side tuning between chunks: the GP bandit and everything it is made of.

- `base.Tuner`: the protocol (knobs in, a chunk's draws observed, knobs out).
- `gp`, `acquisition`, `schedules`, `rewards`: the pieces of the Bayesian-optimisation bandit.
- `bandit`: the bandit as data, a `BanditState` over a named `KnobBox` with pure `observe`
  and `propose`; `gp_bandit.GPBanditTuner`: the thin tuner that keeps it;
  `ahmc_tuner.AHMCTuner`: adaptive HMC's schedule and relative box (`step_heuristic`),
  holding three states: the bandit's, the metric it learns (`learned_metric.MetricState`)
  and its batch burn-in's (`batch_burn_in.BurnInState`: chain groups, GP-BUCB batches, the
  growing L box); `two_phase.TwoPhaseTuner`: expected improvement in warm-up, then a frozen
  SIR policy (`sir_policy`, its `Phases`); `im_tuner`: the same two over the IM sampler's
  (γ, k) box.
"""

from __future__ import annotations

from .base import FixedTuner, Tuner

__all__ = ["FixedTuner", "Tuner"]
