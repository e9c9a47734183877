"""Host-side tuning between chunks: the GP bandit and everything it is made of.

- `base.Tuner`: the protocol (knobs in, a chunk's draws observed, knobs out).
- `gp`, `acquisition`, `schedules`, `rewards`: the pieces of the Bayesian-optimisation bandit.
- `gp_bandit.GPBanditTuner`: the bandit; `ahmc_tuner.AHMCTuner`: adaptive HMC's schedule and
  relative box, with the metric it learns (`learned_metric`) and its batch burn-in
  (`batch_burn_in`: chain groups, GP-BUCB batches, the growing L box);
  `two_phase.TwoPhaseTuner`: expected improvement in warm-up, then a frozen SIR policy
  (`sir_policy`).
"""

from __future__ import annotations

from .base import FixedTuner, Tuner

__all__ = ["FixedTuner", "Tuner"]
