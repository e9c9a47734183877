"""The network estimators' ceiling on η after divergences (`divergence_margin`, on by
default; tuning/ceiling_bandit.py): on a small network where Wang's bandit diverges in a
large share of the kept draws, the ceiling leaves few; the parameter reaches the tuner from
the estimator and from `bomcmc bnn fit`, and a bad value is a one-line error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bomcmc.bnn.regressor import BayesianMLPRegressor
from bomcmc.errors import BomcmcError

X = np.linspace(-1, 1, 20)[:, None]
Y = np.sin(3 * X[:, 0]) + 0.1 * np.random.default_rng(0).normal(size=20)


def _divergent_fraction(seed: int, **kw) -> float:
    est = BayesianMLPRegressor(hidden=(4,), folds=2, super_transitions=30, budget=1000,
                               eps_bounds=(0.01, 1.01), pretrain_steps=200, seed=seed,
                               progress=False, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the divergence warning is the advice tests' concern
        est.fit(X, Y)
    return float(np.mean(est.idata_.sample_stats["diverging"].values))


@pytest.mark.parametrize("seed", [0, pytest.param(2, marks=pytest.mark.slow)])
def test_the_ceiling_leaves_few_of_the_divergences_wangs_bandit_keeps(seed, compilation_cache):
    """Wang's box on a 4-unit network, float64. Measured in seeds 0-7: Wang's bandit
    (`divergence_margin=None`) diverged in 0.7-27 % of the kept draws (20 % and 16 % in
    seeds 0 and 2), the default ceiling in 0.4-3.3 % (1.0 % and 2.8 %). Wang's bandit, the
    variant without the rule, fails the first assertion."""
    wang = _divergent_fraction(seed, divergence_margin=None)
    ceiling = _divergent_fraction(seed)  # the default, 0.8
    assert wang > 0.10, wang  # the setting diverges without the rule
    assert ceiling <= 0.05 and ceiling <= wang / 3, (ceiling, wang)


@pytest.mark.parametrize("margin", [0.0, 1.5, "0.8", True])
def test_a_margin_outside_the_unit_interval_is_a_one_line_error(margin):
    with pytest.raises(BomcmcError, match=r"divergence_margin must be a number in \(0, 1\]"):
        BayesianMLPRegressor(divergence_margin=margin).fit(X, Y)


def test_the_command_line_reads_the_margin_and_none():
    from bomcmc.cli.main import build_parser

    parse = build_parser().parse_args
    base = ["bnn", "fit", "d.csv", "--target", "y", "--out", "o"]
    assert parse(base).divergence_margin == 0.8
    assert parse(base + ["--divergence-margin", "none"]).divergence_margin is None
    assert parse(base + ["--divergence-margin", "0.5"]).divergence_margin == 0.5
