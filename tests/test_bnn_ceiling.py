"""The network estimators' ceiling on η after divergences (`divergence_margin`, on by
default; tuning/ceiling_bandit.py): on a small network where Wang's bandit diverges in a
large share of the kept draws (seed 0), the ceiling leaves few, and over eight seeds fewer
on average (both `-m slow`: one seed's outcome depends on the CPU); the parameter reaches the tuner from the estimator and from
`bomcmc bnn fit`, and a bad value is a one-line error."""

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


@pytest.mark.slow  # one seed's divergences depend on the CPU's rounding (below)
def test_the_ceiling_leaves_few_of_the_divergences_wangs_bandit_keeps(compilation_cache):
    """Wang's box on a 4-unit network, float64, seed 0: Wang's bandit (`divergence_margin=None`)
    diverged in 29 % of the kept draws, the default ceiling in 2.0 % (2026-12-02, a Zen 3
    machine, the acquisition rounded as tuning/acquisition.py does). Wang's bandit, the variant
    without the rule, fails the first assertion. The same code with XLA's code and NumPy's BLAS
    of an older CPU (`XLA_FLAGS=--xla_cpu_max_isa=AVX OPENBLAS_CORETYPE=Sandybridge`): Wang's
    bandit 9.7 %, and this test failed; so it runs with `-m slow`, and the ceiling's rule is
    tested in the default run by tests/test_tuning_ceiling_bandit.py. Seed 0 is not typical:
    see the next test."""
    wang = _divergent_fraction(0, divergence_margin=None)
    ceiling = _divergent_fraction(0)  # the default, 0.8
    assert wang > 0.10, wang  # the setting diverges without the rule
    assert ceiling <= 0.05 and ceiling <= wang / 3, (ceiling, wang)


@pytest.mark.slow
def test_over_eight_seeds_the_ceiling_keeps_fewer_divergences():
    """Seeds 0-7, measured as above: Wang's bandit 29, 2.5, 5.8, 1.0, 28, 32, 2.7, 3.7 % of the
    kept draws (mean 13.0 %), the ceiling 2.0, 0.4, 18, 0, 11, 0, 2.1, 4.3 % (mean 4.7 %): fewer
    on average, not on every seed (seeds 2 and 7 diverge more with it)."""
    wang = np.mean([_divergent_fraction(s, divergence_margin=None) for s in range(8)])
    ceiling = np.mean([_divergent_fraction(s) for s in range(8)])
    assert ceiling <= wang / 2, (ceiling, wang)


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
