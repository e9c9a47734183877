"""The ceiling on ε after divergences (tuning/divergence_ceiling.py, held by
`ahmc_tuner.AHMCTuner`): after burn-in, no proposal and no setting run reaches
margin × the smallest ε that diverged, and the state survives a resume."""

from __future__ import annotations

import math
from functools import partial

import cliff
from bomcmc.tuning import divergence_ceiling as ceil
from bomcmc.tuning.ahmc_tuner import AHMCTuner
from cliff import CLIFF

CHAINS, BURN, SAMPLING = 4, 10, 30


def _tuner(**kw):
    return AHMCTuner(warmup=BURN, eps_bounds=(0.01, 1.0), steps_bounds=(1, 20), seed=0,
                     mass="identity", steps_cap=0, batch=1, maxfun=30, polish=False, **kw)


_chunk = partial(cliff.chunk, chains=CHAINS, warm=BURN)
_run = partial(cliff.run, chains=CHAINS, warm=BURN)
_above_the_ceiling = partial(cliff.above_the_ceiling, warm=BURN)


def test_sampling_stays_below_the_smallest_diverging_step_size():
    tuner = _tuner()
    ran, _ = _run(tuner, BURN + SAMPLING)
    assert any(e >= CLIFF for e, _ in ran[:BURN])  # burn-in's exploration found the cliff
    assert _above_the_ceiling(ran) == []
    assert sum(e >= CLIFF for e, _ in ran[BURN:]) <= 1
    assert tuner.state_dict()["divergence_ceiling"]["eps"] == min(e for e, _ in ran
                                                                   if e >= CLIFF)


def test_without_the_ceiling_sampling_diverges():
    """The same history with the rule switched off: the incumbent sits at the cliff."""
    ran, _ = _run(_tuner(divergence_margin=None), BURN + SAMPLING)
    assert _above_the_ceiling(ran) != []
    assert sum(e >= CLIFF for e, _ in ran[BURN:]) > 1


def test_a_divergence_in_sampling_lowers_the_ceiling_and_moves_the_chains():
    t = _tuner()
    _, knobs = _run(t, BURN)
    t.ceiling = ceil.CeilingState(None)  # as if burn-in had seen no divergence
    t.bandit = t.bandit._replace(point=(math.log(0.3), 4))  # and sampling ran at 0.3
    knobs = t.after_chunk(t._apply(knobs), _chunk(0.3, 4, BURN))
    assert t.ceiling.eps == 0.3
    assert float(knobs.step_size[0]) <= ceil.MARGIN * 0.3 * (1 + 1e-9)


def test_the_ceiling_is_resumed_with_the_state():
    a = _tuner()
    ran, knobs = _run(a, BURN + 5)
    state = a.state_dict(history=False)
    b = _tuner()
    b.load_state_dict(state, [dict(h) for h in a.history])
    assert b.ceiling == a.ceiling and b.ceiling.eps is not None
    assert _run(a, 10, knobs, BURN + 5)[0] == _run(b, 10, knobs, BURN + 5)[0]
