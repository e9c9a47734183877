"""Choo's 8-point data set (bnn/choo_data.py; Choo 2000 §5.1–5.2), and on it the samplers of
bnn/samplers.py: the hyperparameter marginals of Neal's Gibbs-within-HMC, of adaptive HMC
with Gibbs (GP-bandit η and L) and of NUTS with Gibbs agree by two-sample Kolmogorov–Smirnov
tests, as Choo compared his new methods with Neal's program by the histograms of log σ
(Figs 5.7–5.8). docs/bnn_choo.md has the settings, the measured p-values and the power.

Draws are made nearly independent before the KS test: every chain is thinned by one lag, the
largest ⌈n_total / ESS⌉ over the hyperparameters (ESS the smaller of ArviZ's bulk and tail
ESS), and the chains are pooled. A comparison passes when every p > 0.01 / 5 (Bonferroni
over the five hyperparameters: family-wise 1%).

What the CI version can and cannot see: ≈ 30–60 draws per sampler survive the thinning (one
hyperparameter draw costs ≈ 10⁵ gradients in every Gibbs scheme here), so KS resolves only
differences of about a posterior sd. Switching the Gibbs step off (`sample_sigmas=False`)
gives a kernel that still leaves the posterior invariant but never reaches it from the usual
start; the test fails it on every weight group (checked below). The slow version (≈ 200
draws) also fails Neal's scheme on a wrong target, a noise width of 0.2 instead of 0.1 (a
0.4-sd shift of the noise log-precision).
"""

import dataclasses
import math

import arviz as az
import numpy as np
import pytest
from scipy import stats as sps

import bomcmc
from bomcmc.bnn.choo_data import choo_model, choo_prior, load_choo8
from bomcmc.bnn.samplers import neal_sampler
from bomcmc.bnn.samplers import nuts_gibbs_sampler

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py

HYPERS = ("ih0", "bh0", "ho", "bo", "noise")


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------
def hyper_draws(result) -> dict[str, np.ndarray]:
    """{hyperparameter: (chains, draws) log τ}."""
    post = result.idata.posterior
    return {h: np.asarray(post[f"log_tau.{h}"].values) for h in HYPERS}


def joint_lag(draws: dict) -> int:
    """The thinning lag: max over the hyperparameters of ⌈chains·n / ESS⌉, with ESS the
    smaller of ArviZ's bulk and tail ESS. One lag for all, the slowest one: the marginal of a
    fast-mixing hyperparameter (bo) still depends on the slow ones (its far tail is visited
    together with large σ_u, σ_a), so its own ESS would keep draws that are not independent
    in the tails and make its KS test anti-conservative. A constant chain (ESS undefined)
    keeps one draw per chain."""
    lags = []
    for x in draws.values():
        chains, n = x.shape
        ess = min(float(az.ess(x, method="bulk")), float(az.ess(x, method="tail")))
        lags.append(n if not (math.isfinite(ess) and ess > 0) else math.ceil(x.size / ess))
    return int(min(max(lags), n))


def thinned(draws: dict) -> dict[str, np.ndarray]:
    """Each chain thinned by `joint_lag`, the chains pooled: about min ESS draws per
    hyperparameter."""
    lag = joint_lag(draws)
    return {h: x[:, lag - 1::lag].ravel() for h, x in draws.items()}


def ks_pvalues(a: dict, b: dict) -> dict[str, float]:
    """Two-sample KS p-value per hyperparameter on the thinned, pooled draws."""
    ta, tb = thinned(a), thinned(b)
    return {h: float(sps.ks_2samp(ta[h], tb[h]).pvalue) for h in a}


# ---------------------------------------------------------------------------------------
# Data and priors
# ---------------------------------------------------------------------------------------
def test_choo_data_and_priors_are_the_thesis_tables():
    X, y = load_choo8()
    assert X.shape == (8, 2) and y.shape == (8, 1)
    np.testing.assert_array_equal(X[0], [5.8964216e-01, 7.5148380e-01])
    np.testing.assert_array_equal(y[:, 0][[0, 7]], [1.9992522e+00, -1.7153228e-01])
    # eq. 5.1 plus N(0, 0.1²) noise: the residuals look like it
    f = 0.3 + 1.2 * X[:, 0] + 0.7 * (X[:, 1] - 0.2) ** 2 + 2.3 * X[:, 1] * (X[:, 0] + 0.1) ** 2
    assert np.all(np.abs(y[:, 0] - f) < 0.3) and 0.05 < np.std(y[:, 0] - f) < 0.15
    assert choo_prior(8) == ("ih 1:0.5 bh 1:0.5 ho 0.45:0.5 bo 0.8:0.5", "0.1:0.5")
    assert choo_prior(20)[0].split()[5] == "0.285:0.5"
    m = choo_model(8)
    assert m.hidden == (8,) and m.n_hyper == 5 and m.dim == 5 + 2 * 8 + 8 + 8 + 1
    omega = {k: g.omega for k, g in m.groups.items()}
    np.testing.assert_allclose([omega["ih0"], omega["bh0"], omega["ho"], omega["bo"],
                                m.noise_group.omega], [1, 1, 1 / 0.45**2, 1 / 0.8**2, 100])
    assert all(g.a0 == 0.5 for g in list(m.groups.values()) + [m.noise_group])


# ---------------------------------------------------------------------------------------
# The samplers against Neal's scheme (Choo 2000 §5.2.2)
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Size:
    chains: int
    warmup: int
    draws: int  # kept draws per chain, each the last of `thin` transitions
    thin: int
    chunk: int = 60  # one compiled buffer for every run of Neal's kernel (one executable);
    #                  = AHMC's budget // smallest L, so a super-transition fits in a chunk


# CI: ≈ 30–60 draws per hyperparameter survive the thinning (the joint lag is ≈ 1000–2000
# Neal transitions): enough to fail a sampler that does not reach the posterior, not to
# resolve shifts of a few tenths of a posterior sd (docs/bnn_choo.md, "Power").
CI = Size(chains=32, warmup=3000, draws=600, thin=5)
# slow: ≈ 200–250 draws per hyperparameter (the tail ESS of 1.5·10⁶ Neal transitions)
SLOW = Size(chains=64, warmup=6000, draws=2400, thin=10)
# Neal's scheme: Choo used η = 0.35, L = 400 (Table 5.3). Shorter random trajectories mix the
# hyperparameters faster per gradient (the Gibbs coupling of τ and w limits them, not the
# weights): η = 0.5, L ~ U{1..40} (acceptance ≈ 0.85) gave the most thinned draws per second
# of (0.35, 10), (0.5, 20), (0.7, 30), (0.5, 40).
NEAL_KNOBS = dict(step_size=0.5, steps=40, random_steps=True)
AHMC_OPTIONS = dict(eps_bounds=(0.05, 1.0), steps_bounds=(5, 30), budget=300, random_steps=True)
# the family-wise level of one comparison (5 KS tests, Bonferroni): each p > 0.01 / 5
P_MIN = 0.01 / len(HYPERS)


def run_neal(model, size: Size, seed: int, **knobs):
    return bomcmc.sample(model.posterior(), sampler=neal_sampler(model), chains=size.chains,
                         draws=size.draws, warmup=size.warmup, seed=seed, progress=False,
                         thin=size.thin, chunk_size=size.chunk, **{**NEAL_KNOBS, **knobs})


def run_ahmc_gibbs(model, size: Size, seed: int):
    from bomcmc.bnn.samplers import ahmc_gibbs_sampler

    return bomcmc.sample(model.posterior(), sampler=ahmc_gibbs_sampler(model),
                         chains=size.chains, draws=size.draws, warmup=size.warmup, seed=seed,
                         progress=False, thin=size.thin, chunk_size=size.chunk, adapt=None,
                         **AHMC_OPTIONS)


def run_nuts_gibbs(model, size: Size, seed: int, max_tree_depth: int):
    return bomcmc.sample(model.posterior(), sampler=nuts_gibbs_sampler(model),
                         chains=size.chains, draws=size.draws, warmup=size.warmup, seed=seed,
                         progress=False, thin=size.thin, chunk_size=size.chunk,
                         adapt="dual_averaging", max_tree_depth=max_tree_depth)


def check_agree(label: str, ref: dict, other: dict) -> dict:
    p = ks_pvalues(ref, other)
    print(f"\n{label}: kept {len(thinned(ref)['ih0'])} / {len(thinned(other)['ih0'])} draws, "
          "KS p " + ", ".join(f"{h} {v:.3g}" for h, v in p.items()))
    assert all(v > P_MIN for v in p.values()), (label, p)
    return p


@pytest.fixture(scope="module")
def choo8():
    return choo_model(8)


@pytest.fixture(scope="module")
def neal_ci(choo8):
    return hyper_draws(run_neal(choo8, CI, seed=1))


@pytest.mark.slow  # the suite's time (README); AHMC-Gibbs's exactness in CI: test_bnn_cv.py
def test_adaptive_hmc_gibbs_matches_neal_on_choo(choo8, neal_ci):
    """AHMC-Gibbs (GP-bandit η and L) vs Neal's scheme; and the same test fails Neal's scheme
    with the Gibbs step off (`sample_sigmas=False`: the precisions stay at their start), on
    every weight group's hyperparameter."""
    check_agree("ahmc-gibbs vs neal", neal_ci, hyper_draws(run_ahmc_gibbs(choo8, CI, seed=2)))
    off = run_neal(choo8, Size(CI.chains, 300, 60, CI.thin), seed=3, sample_sigmas=False)
    p_off = ks_pvalues(neal_ci, hyper_draws(off))
    print("\nneal, Gibbs off: KS p " + ", ".join(f"{h} {v:.3g}" for h, v in p_off.items()))
    assert all(p_off[h] < 1e-6 for h in ("ih0", "bh0", "ho", "bo")), p_off


@pytest.mark.slow
def test_choo_hyperparameters_long():
    """The long version: ≈ 200 draws per hyperparameter per sampler after thinning, NUTS-Gibbs
    included (tree depth ≤ 5), and a power check: Neal's scheme on a wrong target (the noise
    width read as 0.2 instead of 0.1, which moves the noise log-precision by about 0.4
    posterior sd) fails. About 4 CPU-minutes."""
    import time

    from bomcmc.bnn.network import BNN

    model = choo_model(8)
    t = time.perf_counter()
    neal = hyper_draws(run_neal(model, SLOW, seed=11))
    print(f"\nlong: neal {time.perf_counter() - t:.0f} s")
    check_agree("long: ahmc-gibbs vs neal", neal,
                hyper_draws(run_ahmc_gibbs(model, SLOW, seed=12)))
    check_agree("long: nuts-gibbs vs neal", neal,
                hyper_draws(run_nuts_gibbs(model, SLOW, seed=13, max_tree_depth=5)))
    X, y = load_choo8()
    wrong = BNN(X, y, hidden=(8,), prior=choo_prior(8)[0], noise="0.2:0.5")
    p = ks_pvalues(neal, hyper_draws(run_neal(wrong, SLOW, seed=14)))
    print("\nlong: neal on the wrong noise prior: KS p "
          + ", ".join(f"{h} {v:.3g}" for h, v in p.items()))
    assert min(p.values()) < P_MIN, p
