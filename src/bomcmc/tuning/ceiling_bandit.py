"""Wang's GP bandit with a ceiling on the step size after divergences, for samplers whose
draws after warm-up are kept while the bandit goes on adapting (the networks' adaptive HMC;
docs/bnn.md, "Divergences and the η ceiling").

`GPBanditTuner` adapts forever with a probability p_i that decays: in the sampling phase it
still proposes now and then, and a proposal at a large step size can diverge for a whole
super-transition, whose draws are kept. This tuner records, from the run's start, the
smallest step size ε_div that diverged (`divergence_ceiling`), and in the sampling phase

  - seeks its proposals under margin × ε_div (`divergence_ceiling.region`), and
  - lowers any setting it is about to run, proposed or not, to that ceiling
    (`divergence_ceiling.safe_point`),

so that a setting that diverged is left at once and each further divergence lowers the
ceiling by at least the margin. A warm-up (the driver's `warmup`) is the paper's: its
divergences are recorded but steer nothing. The network estimators run none (their
burn-in is a share of the sampling, dropped afterwards), so there the ceiling acts from the
run's first divergence. With `divergence_margin=None` the tuner is `GPBanditTuner` exactly.
"""

from __future__ import annotations

import numbers

from ..errors import BomcmcError
from . import bandit, divergence_ceiling as ceil
from .base import SAMPLING
from .gp_bandit import GPBanditTuner


def check_margin(margin) -> float | None:
    """`divergence_margin` validated: None, or a number in (0, 1]."""
    if margin is None:
        return None
    if isinstance(margin, bool) or not isinstance(margin, numbers.Real) or not 0 < margin <= 1:
        raise BomcmcError(f"divergence_margin must be a number in (0, 1] or None, "
                          f"got {margin!r}")
    return float(margin)


class CeilingBanditTuner(GPBanditTuner):
    """`GPBanditTuner` with `divergence_margin` (None, the default: no ceiling; the network
    estimators use `divergence_ceiling.MARGIN`, 0.8):
    in the sampling phase ε ≤ margin × the smallest ε that diverged so far. Other arguments
    as `GPBanditTuner`'s."""

    name = "gp_bandit"  # the same saved state, plus the ceiling's

    def __init__(self, *args, divergence_margin: float | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.margin = check_margin(divergence_margin)
        self.ceiling = ceil.CeilingState()
        # whether the setting being chosen runs in the sampling phase: read off each chunk
        # before any choice (`after_chunk`), so it is not part of the saved state
        self._sampling = False

    def after_chunk(self, knobs, chunk: dict):
        # the setting chosen now runs in the next chunk: the first sampling chunk's too
        self._sampling = chunk.get("next_phase", chunk.get("phase")) == SAMPLING
        eps = bandit.to_knobs(self.bandit.box, self.bandit.point)[0]
        self.ceiling = ceil.observed(self.ceiling, eps, chunk)
        knobs = super().after_chunk(knobs, chunk)
        safe = ceil.safe_point(self.bandit.box, self.bandit.point, self.ceiling,
                               self.margin if self._sampling else None)
        if safe is self.bandit.point:  # unchanged: the knobs are already applied
            return knobs
        self.bandit = self.bandit._replace(point=safe)
        return self._apply(knobs)

    def search_box(self):
        """The whole box in warm-up; under the ceiling in the sampling phase."""
        lo, hi = super().search_box()
        if not self._sampling:
            return lo, hi
        return ceil.region(lo, hi, self.bandit.box, self.ceiling, self.margin)

    def state_dict(self, history: bool = True) -> dict:
        return {**super().state_dict(history), **ceil.to_json(self.ceiling)}

    def load_state_dict(self, state: dict, history: list[dict] | None = None) -> None:
        super().load_state_dict(state, history)
        self.ceiling = ceil.from_json(state)
