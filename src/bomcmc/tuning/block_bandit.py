"""The GP bandit of adaptive HMC for kernels that have only (ε, L) to tune.

Wang, Mohamed & de Freitas (2013) run the same bandit with the Riemann-manifold HMC kernel
substituted (the authors' `ahmc.m`): one reward per block of m = ⌊warmup / 100⌋
transitions, in burn-in and after. `ahmc`'s tuner (`ahmc_tuner.AHMCTuner`) also learns a
mass matrix, which such a kernel does not have.
"""

from __future__ import annotations

from .gp_bandit import GPBanditTuner


class BlockBanditTuner(GPBanditTuner):
    """The GP bandit with the authors' block length for any kernel with `step_size` and
    `num_steps` knobs (no metric of its own to learn, e.g. Riemann-manifold HMC): one reward
    per block of m = ⌊warmup / bo_steps⌋ transitions (at least 1; 10 without a warm-up),
    in burn-in and after (the authors' `ahmc.m` with the RMHMC kernel substituted)."""

    name = "block_bandit"

    def __init__(self, *, warmup: int, bo_steps: int = 100, **options):
        super().__init__(**options)
        self.block = max(1, int(warmup) // max(1, int(bo_steps))) if warmup else 10

    def chunk_draws(self, knobs, chunk_size: int) -> int:
        return min(chunk_size, self.block)


def make_tuner(options: dict, spec, flat, states) -> BlockBanditTuner:
    """The block bandit of a run: `options` as config.json records them (checked by the
    tuner; None: the default)."""
    given = {k: v for k, v in options.items() if v is not None}
    return BlockBanditTuner(warmup=spec.warmup, seed=spec.seed, **given)
