"""Built-in posteriors by name: `get(name)`, `names()`, `describe()`.

Factories are lazy, so listing the built-ins loads no data. New posteriors are added with
`register(name, factory, description)`.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Callable

from ..errors import BomcmcError
from ..posterior import Posterior
from . import gaussians, hard, logistic

_REGISTRY: dict[str, tuple[Callable[[], Posterior], str]] = {}


def register(name: str, factory: Callable[[], Posterior], description: str) -> None:
    _REGISTRY[name] = (factory, description)


def get(name: str) -> Posterior:
    m = re.fullmatch(r"gauss-iid-(\d+)", name)
    if m and name not in _REGISTRY:
        d = int(m.group(1))
        if d < 1:
            raise BomcmcError("gauss-iid-<d> needs d >= 1")
        return gaussians.gauss_iid(d)
    try:
        factory, _ = _REGISTRY[name]
    except KeyError:
        raise BomcmcError(
            f"unknown posterior '{name}' (run `bomcmc posteriors` for the list)"
        ) from None
    return factory()


def is_builtin(name: str) -> bool:
    return name in _REGISTRY or re.fullmatch(r"gauss-iid-[1-9]\d*", name) is not None


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

from . import posteriordb as _posteriordb  # noqa: E402

for _name, _factory in _posteriordb.FACTORIES.items():
    register(_name, _factory, _posteriordb.DESCRIPTIONS[_name])
