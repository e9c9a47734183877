"""The experiment's vocabulary and the readers of its results, shared by its runs, figure
and tables."""

from __future__ import annotations

import math

import numpy as np

DATASETS = ("australian", "german", "heart", "pima", "ripley")
SAMPLERS = ("ahmc", "ahmc-identity", "ahmc-auto", "nuts", "numpyro-nuts")
AHMC_SAMPLERS = ("ahmc", "ahmc-identity", "ahmc-auto")
EPS_BOUNDS = (0.01, 0.2)  # Wang, Mohamed & de Freitas 2013 §5.1
STEPS_BOUNDS = (1, 100)
LABELS = {"ahmc": "AHMC (diag metric)", "ahmc-identity": "AHMC (identity, paper)",
          "ahmc-auto": "AHMC (auto metric: dense from the Laplace start)",
          "nuts": "bomcmc NUTS", "numpyro-nuts": "NumPyro NUTS"}
COLORS = {"ahmc": "tab:red", "ahmc-identity": "tab:orange", "ahmc-auto": "tab:purple",
          "nuts": "tab:blue",
          "numpyro-nuts": "tab:green"}


def runs_of(result, ds, s):
    """The runs of sampler `s` on data set `ds`, every seed."""
    return [r for r in result["runs"] if r["dataset"] == ds and r["sampler"] == s]


def finite_mean(vals):
    """Mean of the finite values, None where there are none."""
    v = [x for x in vals if x is not None and math.isfinite(x)]
    return float(np.mean(v)) if v else None


def adaptation_grads(raw: dict) -> int:
    """A run's adaptation gradients: the warm-up's, with AHMC's mode search. Runs recorded
    since the library counts the mode search in `n_grad_warmup` say so
    ("n_grad_warmup_includes_mode"); older ones carried it apart, in "n_grad_mode"."""
    if raw.get("n_grad_warmup_includes_mode"):
        return int(raw["n_grad_warmup"])
    return int(raw["n_grad_warmup"]) + int(raw.get("n_grad_mode", 0))
