"""A PyMC model as a bomcmc Posterior, through PyMC's JAX graph.

    with pm.Model() as m:
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", 0.0, sigma, observed=y)

    post = bomcmc.from_pymc(m)
    result = bomcmc.sample(posterior=post, sampler="nuts")

The sampled coordinates are the model's value variables (`sigma_log__`, ...: the unconstrained
scale, whose log density `model.logp()` includes the Jacobians), turned into a JAX function by
`pymc.sampling.jax.get_jaxified_logp`. The InferenceData's `posterior` group holds the free
variables on their own scale and the deterministics (the graph PyMC's own JAX samplers
post-process with), `unconstrained_posterior` the value variables, `observed_data` the
observed variables and `log_likelihood` their pointwise log-likelihood. Chains start as
PyMC's do: the model's initial point jittered by uniform(−1, 1), drawn again where the log
density is not finite.
"""

from __future__ import annotations

import jax
import numpy as np

from ..errors import BomcmcError, first_line
from ..posterior import Posterior

PYMC_JITTER = 1.0  # pm.sample's "jitter+adapt_diag": the initial point plus uniform(−1, 1)



def from_pymc(model) -> Posterior:
    """The posterior of a PyMC model (a `pm.Model` with its observed data), on the
    unconstrained scale of its value variables.

    PyTensor's JAX backend sets JAX's 64-bit mode to match `pytensor.config.floatX` when it
    is imported (float64, PyTensor's default, turns it on for the whole process)."""
    try:
        import pymc as pm
        from pymc.backends.arviz import find_observations
        from pymc.sampling.jax import get_jaxified_graph, get_jaxified_logp
        from pymc.util import get_default_varnames
    except ImportError:
        raise BomcmcError("from_pymc needs PyMC: pip install 'bomcmc[pymc]'") from None
    if not isinstance(model, pm.Model):
        raise BomcmcError(f"from_pymc: expected a pymc.Model, got {type(model).__name__}")
    name = model.name or "model"
    if model.discrete_value_vars:
        names = ", ".join(v.name for v in model.discrete_value_vars)
        raise BomcmcError(f"PyMC model '{name}' has discrete free variables ({names}): "
                          "bomcmc's samplers need continuous ones (marginalize them out)")
    if not model.value_vars:
        raise BomcmcError(f"PyMC model '{name}' has no free variables to sample")
    value_names = [v.name for v in model.value_vars]
    _check_data(model, name, find_observations)
    try:
        start = model.initial_point()
        logp = get_jaxified_logp(model, negative_logp=True)  # True: +logp (PyMC's naming)
        outputs = get_default_varnames(model.unobserved_value_vars, include_transformed=False)
        constrained = get_jaxified_graph(inputs=model.value_vars, outputs=outputs)
        observed_rvs = list(model.observed_RVs)
        pointwise = (get_jaxified_graph(inputs=model.value_vars,
                                        outputs=model.logp(observed_rvs, sum=False))
                     if observed_rvs else None)
        observed = {k: np.asarray(v) for k, v in find_observations(model).items()}
    except Exception as e:  # noqa: BLE001 - a graph that does not compile is bad input
        raise BomcmcError(f"PyMC model '{name}' cannot be turned into JAX: "
                          f"{first_line(e)}") from None
    out_names = [v.name for v in outputs]
    init = {k: np.asarray(start[k]) for k in value_names}

    def args(position):
        return [position[k] for k in value_names]

    def logdensity(position):
        return logp(args(position))

    def constrain(position):
        return dict(zip(out_names, constrained(*args(position))))

    def loglik(position):
        return {rv.name: out for rv, out in zip(observed_rvs, pointwise(*args(position)))}

    def initializer(key):
        keys = jax.random.split(key, len(init))
        return {k: v + jax.random.uniform(kk, np.shape(v), minval=-PYMC_JITTER,
                                          maxval=PYMC_JITTER)
                for kk, (k, v) in zip(keys, init.items())}

    return Posterior(
        logdensity_fn=logdensity,
        init_position=init,
        name=f"pymc:{name}",
        initializer=initializer,
        description=f"PyMC model {name} (value variables: {', '.join(value_names)})",
        constrain=constrain,
        log_likelihood_fn=loglik if pointwise is not None else None,
        observed_data=observed or None,
        dims=_dims(model) or None,
        coords=dict(model.coords) or None,
    )


def _dims(model) -> dict:
    """The model's `dims=` per variable, and its value variables under their random
    variables' dims (`tau_log__` as `tau`), as PyMC's own InferenceData names them."""
    dims = {k: list(v) for k, v in model.named_vars_to_dims.items()}
    for value in model.value_vars:
        rv = model.values_to_rvs[value].name
        if rv in dims:
            dims.setdefault(value.name, dims[rv])
    return dims


def _check_data(model, name: str, find_observations) -> None:
    """A one-line BomcmcError naming the observed variable whose data hold NaN or inf, and
    the first bad row. (PyMC turns NaN in `observed=` into imputed variables with a warning;
    their masked values are not NaN here, so imputation keeps working.)"""
    from ..validation import first_bad

    try:
        observed = find_observations(model)
    except Exception:  # noqa: BLE001 - the JAX translation reports a graph that fails
        return
    for var, value in observed.items():
        where = first_bad(np.ma.filled(value, 0.0) if np.ma.isMaskedArray(value) else value)
        if where is not None:
            raise BomcmcError(f"PyMC model '{name}': observed variable '{var}' holds {where}: "
                              "drop or impute the missing or infinite values")


__all__ = ["from_pymc"]
