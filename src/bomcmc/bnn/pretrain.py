"""Adam pre-training of a Bayesian neural network: a MAP or maximum-likelihood start.

Ask 2022 §2.1.3 and §6.4, steps 1–3: initialise the weights, train the network with Adam
(Kingma & Ba 2015) to reach the high-probability region, then run a short burn-in before sampling,
to cut the burn-in the chain would otherwise need. The loss is minus the log posterior of the
weights with the precisions held fixed (`objective="map"`: eq. 6.23, the L²-regularised
squared error for Gaussian priors) or minus the log likelihood (`objective="ml"`: eq. 2.12).

The precisions stay where the start puts them (FBM's `net-gen fix`: every sigma at `fix`).
With `set_noise=True` a regression's stored noise precisions are then set to 1/(mean squared
residual) of the trained network, per output when there is one precision per output, so that
the first Gibbs and HMC updates see a noise level consistent with the fit.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..config import float_dtype
from ..data import jit as data_jit
from ..errors import BomcmcError


class PretrainResult(NamedTuple):
    position: dict  # the model's position pytree (numpy), ready for model.posterior(init=...)
    losses: np.ndarray  # the loss at every Adam step


def pretrain(model, key=None, *, steps: int = 1000, learning_rate: float = 1e-2,
             objective: str = "map", init: dict | None = None, fix: float = 0.5,
             init_scale: float = 0.1, set_noise: bool = True,
             chains: int | None = None) -> PretrainResult:
    """Train the weights of `model` (a `BNN`) with Adam (optax), full batch, for `steps`.

    Starts from `init` (a position pytree) or, with `key`, from weights N(0, init_scale²)
    and every sigma at `fix`. With `chains` and `key`, trains that many networks at once
    (vmapped) from different random weights, the sigmas at `fix` for all: one start per
    chain, so the result's leaves and losses get a leading chain axis (the first chain's
    start is the one `chains=None` gives)."""
    import optax

    if objective not in ("map", "ml"):
        raise BomcmcError(f"objective must be 'map' or 'ml', got '{objective}'")
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise BomcmcError(f"steps must be a positive integer, got {steps}")
    if not learning_rate > 0:
        raise BomcmcError(f"learning_rate must be positive, got {learning_rate}")
    if chains is not None and (key is None or init is not None or isinstance(chains, bool)
                               or int(chains) != chains or chains < 1):
        raise BomcmcError(f"chains needs a key (no init) and a positive integer, got {chains!r}")
    if init is not None:
        starts = [init]
    elif key is not None:
        keys = [key] + [jax.random.fold_in(key, c) for c in range(1, int(chains or 1))]
        draw = model.posterior(fix=fix, init_scale=init_scale).initializer
        starts = [draw(k) for k in keys]
    else:
        starts = [model.init_position(fix)]
    dtype = float_dtype()
    starts = [jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype), s) for s in starts]
    hyper = {k: v for k, v in starts[0].items() if k != "w"}  # the same for every start

    def loss(w):
        pos = {**hyper, "w": w}
        if objective == "ml":
            return -model.log_likelihood(pos)
        return -model.logdensity(pos)

    opt = optax.adam(learning_rate)

    def run(w):
        def body(carry, _):
            w, state = carry
            value, grad = jax.value_and_grad(loss)(w)
            updates, state = opt.update(grad, state, w)
            return (optax.apply_updates(w, updates), state), value

        (w, _), values = jax.lax.scan(body, (w, opt.init(w)), None, length=int(steps))
        return w, values

    w0 = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *[s["w"] for s in starts])
    w, losses = data_jit(jax.vmap(run), model.data)(w0)  # the data as inputs
    positions = []
    for c in range(len(starts)):
        position = {**hyper, "w": jax.tree_util.tree_map(lambda a: a[c], w)}
        if set_noise and model.noise_group is not None:
            position = _set_noise(model, position)
        positions.append(jax.tree_util.tree_map(np.asarray, position))
    if chains is None:
        return PretrainResult(positions[0], np.asarray(losses[0]))
    return PretrainResult(jax.tree_util.tree_map(lambda *a: np.stack(a), *positions),
                          np.asarray(losses))


def _set_noise(model, position: dict) -> dict:
    g = model.noise_group
    if not (g.key0 or g.key1):
        return position
    from .predict import forward

    resid = np.asarray(model.y) - forward(model, model.ravel(position)[None], model.X)[0]
    msr = np.maximum(np.mean(resid**2, axis=0), 1e-12)  # per output
    log_tau = dict(position["log_tau"])
    if g.key1:
        log_tau[g.key1] = jnp.asarray(-np.log(msr), log_tau[g.key1].dtype)
    if g.key0:
        log_tau[g.key0] = jnp.asarray(-np.log(msr.mean()), log_tau[g.key0].dtype)
    return {**position, "log_tau": log_tau}
