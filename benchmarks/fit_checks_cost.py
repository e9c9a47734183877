"""Where a network fit's time goes besides sampling (issue 32; docs/bnn.md, "What a fit
costs"): one `BayesianMLPRegressor()` fit at the defaults on the first diabetes fold (294
standardised cases), then, timed apart on its result, the parts of the fit's checks: the
function-space group (the predictions and log-likelihood of every draw), and the bulk
and tail ESS of that group's kept draws (`diagnostics.checks.convergence`, ArviZ's estimators
vectorised over coordinates by `diagnostics.rank_normalized`).

    python benchmarks/fit_checks_cost.py
"""

from __future__ import annotations

import json
import time
import warnings


def main() -> dict:
    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import StandardScaler

    from bomcmc import BayesianMLPRegressor
    from bomcmc.diagnostics import checks

    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        reg = BayesianMLPRegressor(progress=False).fit(X[:294], y[:294])
        out = {"fit_s": time.perf_counter() - t, "sampling_s": reg.result_.totals["wall_s"]}
        idata = reg.result_.idata
        t = time.perf_counter()
        reg._function_space(idata)
        out["function_space_s"] = time.perf_counter() - t
        kept, _ = checks.kept(idata, reg.result_.totals)
        t = time.perf_counter()
        checks.convergence(kept, checks.FUNCTION_SPACE, mcse=False)
        out["ess_s"] = time.perf_counter() - t
    out["kept_draws"] = int(kept.posterior.sizes["draw"])
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
