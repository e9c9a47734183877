"""A network's function space: what each draw predicts at the training inputs, and the
training data's log-likelihood.

The weights of a network are identified only up to permutations and sign flips of its hidden
units, so their R-hat and ESS say little; predictions are identified. The network
estimators judge their draws on these quantities (the "function_space" group that
`diagnostics.checks` reads) and, with `until_ess`, sample until their estimates are
precise (`driver.until`'s `watch`). For "ahmc_cv" a draw is K fold networks at once, and its
function is their mean, as its predictions pool them (Wang 2012 §4.1).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..data import jit as data_jit
from .predict import pad_draws


def outputs_fn(model):
    """`flat` (S, dim) draws of `model` -> (f (S, n, n_out), log_lik (S,)), float64, at the
    training inputs: one forward pass serves both; compiled once per shape (the data enter
    as arguments, the draws padded to a few bucket sizes)."""
    def one(p):
        position = model.unravel(p)
        f = model.apply(position["w"], model.inputs())
        return f, model.log_likelihood(position, outputs=f)

    fn = data_jit(jax.vmap(one), model.data)

    def outputs(flat):
        flat = np.asarray(flat)
        f, log_lik = (np.asarray(a, np.float64)[:len(flat)]
                      for a in fn(jnp.asarray(pad_draws(flat, len(flat)))))
        return f[:, :model.X.shape[0]], log_lik  # padding rows of the data dropped

    return outputs


def draw_outputs(model, cv, flat, outputs=None):
    """(f (S, n, n_out), log_lik (S,)) of a run's flat draws (S, run dim): for "ahmc_cv"
    (`cv` its CVModel) the means over the fold networks of each draw."""
    outputs = outputs or outputs_fn(model)
    folds = 1 if cv is None else cv.folds
    if cv is not None:
        flat = cv.fold_positions(flat).reshape(-1, model.dim)
    f, log_lik = outputs(flat)
    s = f.shape[0] // folds
    return f.reshape((s, folds) + f.shape[1:]).mean(axis=1), log_lik.reshape(s, folds).mean(1)


def dataset(model, cv, idata, flat):
    """The function-space group of a run's InferenceData `idata` whose flat draws are
    `flat` (chains·draws, run dim): f (chain, draw, case, output) and log_lik (chain, draw)."""
    import xarray as xr

    post = idata.posterior
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    f, log_lik = draw_outputs(model, cv, flat)
    coords = {"chain": post.chain.values, "draw": post.draw.values}
    return xr.Dataset({"f": (("chain", "draw", "case", "output"),
                             f.reshape((chains, draws) + f.shape[1:])),
                       "log_lik": (("chain", "draw"), log_lik.reshape(chains, draws))},
                      coords=coords)


def watch(model, cv):
    """What a run until precise reads (`driver.until.Until`'s `watch`): a chunk's positions
    (chains, n, run dim) -> (chains, n, cases · outputs + 1), f and then log_lik."""
    outputs = outputs_fn(model)

    def read(positions):
        chains, n = positions.shape[:2]
        f, log_lik = draw_outputs(model, cv, np.reshape(positions, (chains * n, -1)), outputs)
        return np.concatenate([f.reshape(chains, n, -1), log_lik.reshape(chains, n, 1)], axis=2)

    return read
