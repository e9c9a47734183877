"""Wang's GP bandit with a ceiling on ε after divergences (tuning/ceiling_bandit.py, the
network estimators' tuner): after the warm-up no setting run exceeds margin × the smallest
ε that diverged, from the first sampling chunk on; without a margin it is Wang's bandit
exactly; and the ceiling survives a resume."""

from __future__ import annotations

import math
from functools import partial

import pytest

import cliff
from bomcmc.errors import BomcmcError
from bomcmc.tuning import divergence_ceiling as ceil
from bomcmc.tuning.ceiling_bandit import CeilingBanditTuner
from bomcmc.tuning.gp_bandit import GPBanditTuner
from cliff import CLIFF

CHAINS, WARM, SAMPLING = 1, 15, 60


def _tuner(cls=CeilingBanditTuner, **kw):
    """The networks' bandit: Wang's exponential schedule keeps proposing in sampling."""
    return cls(eps_bounds=(0.01, 1.0), steps_bounds=(1, 20), schedule="exponential",
               lam=0.01, seed=0, maxfun=30, polish=False, **kw)


_chunk = partial(cliff.chunk, chains=CHAINS, warm=WARM)
_run = partial(cliff.run, chains=CHAINS, warm=WARM)
_above_the_ceiling = partial(cliff.above_the_ceiling, warm=WARM)


def test_sampling_stays_below_the_smallest_diverging_step_size():
    tuner = _tuner(divergence_margin=ceil.MARGIN)
    ran, _ = _run(tuner, WARM + SAMPLING)
    assert any(e >= CLIFF for e, _ in ran[:WARM])  # the warm-up's exploration found the cliff
    assert _above_the_ceiling(ran) == []
    assert sum(e >= CLIFF for e, _ in ran[WARM:]) <= 1  # each lowers the ceiling by 0.8
    assert tuner.state_dict()["divergence_ceiling"]["eps"] == min(e for e, _ in ran
                                                                   if e >= CLIFF)


def test_without_a_margin_it_is_wangs_bandit_and_sampling_diverges():
    """The same chunks without the margin: every setting is the plain bandit's, and the
    annealed proposals go back over the cliff (the broken variant of the test above)."""
    ran, _ = _run(_tuner(), WARM + SAMPLING)
    plain, _ = _run(_tuner(GPBanditTuner), WARM + SAMPLING)
    assert ran == plain
    assert _above_the_ceiling(ran) != []
    assert sum(e >= CLIFF for e, _ in ran[WARM:]) >= 3


def test_the_first_sampling_chunk_is_under_the_ceiling():
    """The setting chosen after the warm-up's last chunk already obeys the ceiling: a bandit
    that no longer proposes (λ large) would run the first sampling chunk where the last
    warm-up chunk diverged; read off the chunk's phase alone, the ceiling would come a
    chunk late and this would fail."""
    tuner = _tuner(divergence_margin=0.5)
    tuner.schedule = lambda i: 0.0
    _, knobs = _run(tuner, WARM - 1)
    tuner.bandit = tuner.bandit._replace(point=(math.log(0.3), 4))  # the last warm-up at 0.3
    knobs = tuner.after_chunk(tuner._apply(knobs), _chunk(0.3, 4, WARM - 1))
    assert tuner.ceiling.eps == 0.3
    assert float(knobs.step_size[0]) == pytest.approx(0.5 * 0.3)
    late = _chunk(0.3, 4, WARM - 1)
    late["next_phase"] = late["phase"]
    plain = _tuner(divergence_margin=0.5)
    plain.schedule = lambda i: 0.0
    _, knobs = _run(plain, WARM - 1)
    plain.bandit = plain.bandit._replace(point=(math.log(0.3), 4))
    assert float(plain.after_chunk(plain._apply(knobs), late).step_size[0]) == \
        pytest.approx(0.3)


def test_the_warm_up_is_not_steered():
    """Divergences of the warm-up are recorded but bound no warm-up setting."""
    with_margin, _ = _run(_tuner(divergence_margin=ceil.MARGIN), WARM - 1)
    plain, _ = _run(_tuner(), WARM - 1)
    assert with_margin == plain


def test_a_resumed_tuner_keeps_its_ceiling():
    tuner = _tuner(divergence_margin=ceil.MARGIN)
    first, knobs = _run(tuner, WARM + 10)
    again = _tuner(divergence_margin=ceil.MARGIN)
    again.initial_knobs(knobs)
    again.load_state_dict(tuner.state_dict())
    assert again.ceiling == tuner.ceiling
    rest, _ = _run(tuner, 20, knobs, start=WARM + 10)
    rest_again, _ = _run(again, 20, knobs, start=WARM + 10)
    assert rest == rest_again


@pytest.mark.parametrize("margin", [0.0, 1.5, -0.2])
def test_a_margin_outside_the_unit_interval_is_an_error(margin):
    with pytest.raises(BomcmcError, match="divergence_margin"):
        _tuner(divergence_margin=margin)


def test_a_margin_is_any_real_number_in_the_unit_interval():
    """NumPy scalars are accepted, as the estimators' earlier check accepted them (a margin
    read from an array or a grid search's np.float32 is a number); bool and strings are not."""
    import numpy as np

    from bomcmc.tuning.ceiling_bandit import check_margin

    assert check_margin(np.float32(0.5)) == 0.5 and check_margin(np.float64(0.8)) == 0.8
    assert check_margin(1) == 1.0 and check_margin(None) is None
    for bad in (True, "0.8", np.float32(1.5)):
        with pytest.raises(BomcmcError, match="divergence_margin"):
            check_margin(bad)
