"""A synthetic posterior for the ceiling on ε after divergences (the tests of
`tuning/divergence_ceiling.py` and `tuning/ceiling_bandit.py`): super-transitions whose jumps
grow with ε·L, which diverge at ε ≥ CLIFF, so that a bandit's optimum sits at the cliff."""

from __future__ import annotations

import math

import numpy as np

from bomcmc.kernels.hmc import HMCKnobs
from bomcmc.tuning import divergence_ceiling as ceil

CLIFF = 0.2


def chunk(eps, steps, i, *, chains: int, warm: int) -> dict:
    """Super-transition i of `chains` chains at (ε, L); the first `warm` are warm-up."""
    jump = (eps * steps) ** 2 * (1.0 + 0.1 * math.sin(i))
    info = {"esjd": np.full((chains, 1), jump), "n_grad": np.full((chains, 1), steps),
            "diverging": np.full((chains, 1), eps >= CLIFF)}
    return {"phase": int(i >= warm), "next_phase": int(i + 1 >= warm),
            "positions": np.zeros((chains, 1, 2)), "info": info}


def run(tuner, steps, knobs=None, start=0, *, chains: int, warm: int):
    """`steps` BO steps from step `start`: the (ε, L) each ran with, and the next knobs."""
    if knobs is None:
        knobs = tuner.initial_knobs(HMCKnobs(
            step_size=np.full(chains, 0.1), num_steps=np.full(chains, 5, np.int32),
            inverse_mass_matrix=np.ones((chains, 2)), random_steps=np.ones(chains, bool)))
    ran = []
    for i in range(start, start + steps):
        eps, steps_ = float(knobs.step_size[0]), int(knobs.num_steps[0])
        ran.append((eps, steps_))
        knobs = tuner.after_chunk(knobs, chunk(eps, steps_, i, chains=chains, warm=warm))
    return ran, knobs


def above_the_ceiling(ran, *, warm: int) -> list[int]:
    """The sampling steps whose ε exceeds MARGIN × the smallest ε that diverged before."""
    out, smallest = [], math.inf
    for i, (eps, _) in enumerate(ran):
        if i >= warm and eps > ceil.MARGIN * smallest * (1 + 1e-9):
            out.append(i)
        if eps >= CLIFF:
            smallest = min(smallest, eps)
    return out
