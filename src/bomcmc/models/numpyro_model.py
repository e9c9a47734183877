"""A NumPyro model as a bomcmc Posterior, through NumPyro's own machinery.

    def model(y):
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        numpyro.sample("y", dist.Normal(0.0, sigma), obs=y)

    post = bomcmc.from_numpyro(model, y)
    result = bomcmc.sample(posterior=post, sampler="nuts")

`numpyro.infer.util.initialize_model` traces the model once and gives the potential
(−log joint on the unconstrained scale, Jacobians included) and `postprocess_fn` (the
constrained sample sites and the deterministic sites). The sampler sees the unconstrained
sites; the InferenceData's `posterior` group holds what `postprocess_fn` returns,
`unconstrained_posterior` the sampled coordinates, `observed_data` the observed sites and
`log_likelihood` their pointwise log-likelihood (`numpyro.infer.util.log_likelihood`).
Chains start as NumPyro's do (`init_to_uniform`): uniform(−2, 2) on the unconstrained scale,
drawn again where the log density is not finite.
"""

from __future__ import annotations

import functools
import warnings

import jax
import numpy as np

from ..config import default_compilation_cache
from ..errors import BomcmcError, first_line
from ..posterior import INIT_RADIUS, Posterior


def model_name(model) -> str:
    """The model function's name (through `functools.partial`)."""
    while isinstance(model, functools.partial):
        model = model.func
    return getattr(model, "__name__", type(model).__name__)



def from_numpyro(model, *args, **kwargs) -> Posterior:
    """The posterior of a NumPyro model given its arguments (data), on the unconstrained scale.

    `model(*args, **kwargs)` is the model call NumPyro's `MCMC.run(key, *args, **kwargs)`
    would make. Its continuous latent sites are sampled; discrete ones are summed out by
    NumPyro's enumeration where the model allows it (that needs `funsor`).
    """
    try:
        from numpyro import handlers
        from numpyro.infer import init_to_uniform
        from numpyro.infer.util import initialize_model, log_likelihood
    except ImportError:
        raise BomcmcError("from_numpyro needs NumPyro: pip install 'bomcmc[numpyro]'") from None
    if not callable(model):
        raise BomcmcError(f"from_numpyro: the model must be a callable, got "
                          f"{type(model).__name__}")
    name = model_name(model)
    # NumPyro initialises the model op by op, a small program for each new primitive and
    # shape: with the persistent cache on first, a new process finds them there
    default_compilation_cache()
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            info = initialize_model(jax.random.PRNGKey(0), model,
                                    init_strategy=init_to_uniform(radius=INIT_RADIUS),
                                    model_args=args, model_kwargs=kwargs, dynamic_args=True)
    except Exception as e:  # noqa: BLE001 - a model that cannot be traced is bad input
        # NaN in data the model does not mask fails here: name it, without NumPyro's warnings
        # about it. Data the model masks itself (`obs_mask=`, `.mask()`) initialise, so they
        # are not refused.
        _check_data(model, name, args, kwargs)
        raise BomcmcError(f"NumPyro model '{name}' cannot be initialized: "
                          f"{first_line(e)}") from None
    for w in {(w.category, str(w.message)): w for w in said}.values():  # each once
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    init = {k: np.asarray(v) for k, v in info.param_info.z.items()}
    if not init:
        raise BomcmcError(f"NumPyro model '{name}' has no continuous latent sites to sample")
    data, arguments = _arguments_as_data(info.potential_fn, args, kwargs, init)
    observed = {k: np.asarray(site["value"]) for k, site in info.model_trace.items()
                if site["type"] == "sample" and site["is_observed"]}
    seeded = handlers.seed(model, rng_seed=0)  # for sites that draw without a value

    def logdensity(position):
        a, kw = arguments()
        return -info.potential_fn(*a, **kw)(position)

    def postprocess_fn(position):
        a, kw = arguments()
        return info.postprocess_fn(*a, **kw)(position)

    def loglik(position):
        a, kw = arguments()
        return log_likelihood(seeded, postprocess_fn(position), *a, batch_ndims=0, **kw)

    def initializer(key):
        keys = jax.random.split(key, len(init))
        return {k: jax.random.uniform(kk, np.shape(v), minval=-INIT_RADIUS,
                                      maxval=INIT_RADIUS)
                for kk, (k, v) in zip(keys, init.items())}

    sites = ", ".join(init)
    return Posterior(
        logdensity_fn=logdensity,
        init_position=init,
        name=f"numpyro:{name}",
        initializer=initializer,
        description=f"NumPyro model {name} (latent sites: {sites})",
        constrain=postprocess_fn,
        log_likelihood_fn=loglik if observed else None,
        observed_data=observed or None,
        dims=_plate_dims(info.model_trace) or None,
        data=data,
    )


def _plate_dims(trace) -> dict:
    """Each sample or deterministic site's axes named by the plates it sits in (a plate at
    dim −k names the k-th batch axis from the right, before the distribution's event axes),
    as ArviZ's `from_numpyro` names them; other axes None."""
    dims = {}
    for name, site in trace.items():
        if site["type"] not in ("sample", "deterministic") or not site["cond_indep_stack"]:
            continue
        shape = np.shape(site["value"])
        batch = len(shape) - (getattr(site.get("fn"), "event_dim", 0) or 0)
        axes = [None] * len(shape)
        for frame in site["cond_indep_stack"]:
            axis = batch + frame.dim
            if 0 <= axis < batch and shape[axis] == frame.size:
                axes[axis] = frame.name
        if any(axes):
            dims[name] = axes
    return dims


def _arguments_as_data(dynamic_potential, args, kwargs, init):
    """(Data or None, arguments): the model's numeric array arguments as a `Data`, which a
    run gives its compiled functions as inputs (a model of the same shapes on other data then
    compiles to the same program), and `arguments() -> (args, kwargs)` reading them from it
    where the model reads them. A model that needs its arrays' values while it is traced
    (Python control flow on them) keeps them as constants, as NumPyro's `initialize_model`
    does: (None, the arguments as given)."""
    from ..data import Data, with_data

    named = {f"arg{i}": a for i, a in enumerate(args) if _data_array(a)}
    named.update({f"kw:{k}": v for k, v in kwargs.items() if _data_array(v)})
    if not named:
        return None, lambda: (args, kwargs)
    data = Data(**named)

    def arguments():
        a = [data[f"arg{i}"] if f"arg{i}" in named else v for i, v in enumerate(args)]
        kw = {k: data[f"kw:{k}"] if f"kw:{k}" in named else v for k, v in kwargs.items()}
        return a, kw

    def potential(position):
        a, kw = arguments()
        return dynamic_potential(*a, **kw)(position)

    try:  # traced with the arrays as inputs, as the run's chunk will trace it
        jax.eval_shape(with_data(potential, data), data.device(), init)
    except Exception:  # noqa: BLE001 - the model reads its data's values: keep them fixed
        return None, lambda: (args, kwargs)
    return data, arguments


def _data_array(value) -> bool:
    """An argument a run gives as an input: a numeric array of at least one dimension."""
    return (isinstance(value, (np.ndarray, jax.Array)) and np.ndim(value) >= 1
            and np.dtype(value.dtype).kind in "fciub")


def _check_data(model, name: str, args, kwargs) -> None:
    """A one-line BomcmcError naming the observed site, or else the model argument, whose
    data hold NaN or inf, and the first bad row, for a model NumPyro could not initialise
    ("Cannot find valid initial parameters", which never names the data)."""
    from ..validation import first_bad

    for site, value in _observed(model, args, kwargs).items():
        where = first_bad(value)
        if where is not None:
            raise BomcmcError(f"NumPyro model '{name}': observed site '{site}' holds {where}: "
                              "drop or impute the missing or infinite values")
    for arg, value in _arguments(model, args, kwargs).items():
        where = first_bad(value) if _numeric_array(value) else None
        if where is not None:
            raise BomcmcError(f"NumPyro model '{name}': argument '{arg}' holds {where}: "
                              "drop or impute the missing or infinite values")


def _observed(model, args, kwargs) -> dict:
    """The observed sites' values of one trace of the model ({} if it cannot be traced:
    `initialize_model` then reports why)."""
    from numpyro import handlers

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace(*args, **kwargs)
    except Exception:  # noqa: BLE001 - initialize_model reports a model that fails
        return {}
    return {k: site["value"] for k, site in trace.items()
            if site["type"] == "sample" and site.get("is_observed")}


def _arguments(model, args, kwargs) -> dict:
    """The model call's arguments by parameter name ("argument 0", ... without a signature)."""
    import inspect

    try:
        return dict(inspect.signature(model).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        return {**{str(i): a for i, a in enumerate(args)}, **kwargs}


def _numeric_array(value) -> bool:
    dtype = getattr(value, "dtype", None)
    return dtype is not None and np.dtype(dtype).kind in "fc"


__all__ = ["from_numpyro"]
