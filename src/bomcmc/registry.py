"""Samplers by name: each pairs a kernel with its default warm-up and its default tuner.

A `Sampler` is what a user picks with `sample(..., sampler=NAME)`: a `Kernel` (pure
`init`/`step`), the in-loop warm-up adapter that `adapt="auto"` chooses, and the host-side tuner
the driver builds from the options in `tuner_options` when the user gives no `tuner=`. The
kernel's knobs and the tuner's options are typed schemas (`bomcmc.schemas`, which the command
line reads without importing JAX); `configure` checks a user's options against them, once, into
the run's `SamplerConfig`. Every field is explicit; the table below is the whole registry.
Sampler names are spelt with underscores; a hyphen is read as an underscore (`nuts-gibbs` is
`nuts_gibbs`).

    hmc          HMC with fixed knobs (no warm-up unless adapt="window")
    whmc         HMC with accept and reject windows of `window` states (Neal 1994; FBM's
                 `hybrid L:W`), fixed knobs
    nuts         NUTS, Stan's window warm-up
    nuts_async   the same NUTS transition run one leapfrog step per loop iteration
    ahmc         adaptive HMC: the GP bandit over (ε, L) (Wang, Mohamed & de Freitas 2013)
    two_phase    expected improvement in warm-up, then a frozen SIR mixture of HMC kernels
                 (Mahendran et al. 2012)
    mams         Metropolis-adjusted microcanonical HMC (Robnik, Cohn-Gordon & Seljak 2025),
                 BlackJAX's transition with HMC's knobs (ε in HMC's units, L, U{1..L})
    amams        MAMS with (ε, L) and a diagonal metric tuned by adaptive HMC's bandit

and, for spin posteriors at fixed magnetisation (`models/spins.py`), samplers built for the
posterior's model when a run starts (`Sampler.build`):

    im           the Intracluster-Move sampler with the knobs given (k, gamma: numbers, or
                 sequences of the settings a move draws from uniformly)
    im_expert    IM at the model's expert setting (Mahendran 2011 Table 4.1)
    im_unif      IM with (k, γ) drawn uniformly from the box's grid at every move
    im_bayesopt  IMBayesOpt: EI on the energy's jump in warm-up, then a frozen SIR policy
    im_bandit    IM tuned by adaptive HMC's GP bandit over (γ, k), adapting forever
    kawasaki     Kawasaki dynamics (IM with k = 1, γ = 0)

and for posteriors that carry a Riemannian metric (`Posterior.metric_fn`, the flat
vector's G(θ), a callable or a constant (D, D) or (D,) array: the logistic regressions have
the Fisher metric, `lgcp-*` a constant diagonal one), or a blocked one
(`Posterior.rmhmc_blocks`: latent and parameter blocks with their metrics, as `sv-*`):

    rmhmc        Riemann-manifold HMC, the generalised leapfrog (Girolami & Calderhead 2011);
                 for blocks, their Gibbs sweep (`kernels/blocked_rmhmc.py`)
    armhmc       rmhmc with (ε, L) tuned by the GP bandit (Wang, Mohamed & de Freitas 2013);
                 for blocks, the latent block's (ε, L)

Samplers built for one model (Neal's Gibbs-within-HMC and its relatives for a network) are
`Sampler` objects too, made by `bomcmc.bnn.samplers`, and passed as `sampler=`.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any, Callable

import numpy as np

from . import schemas
from .config import Latest
from .errors import BomcmcError
from .kernels import (ahmc, blocked_rmhmc, hmc, hmc_mixture, intracluster, mams, nuts,
                      nuts_machine, rmhmc, rwm, support, windowed_hmc)
from .kernels.base import Kernel
from .options import SamplerConfig, Schema, names as option_names, reject_unknown
from .tuning import ahmc_tuner, block_bandit, im_tuner, two_phase

# make_tuner(options, spec, flat, states) -> Tuner
TunerFactory = Callable[[dict, Any, Any, Any], Any]


@dataclasses.dataclass(frozen=True)
class Sampler:
    """A kernel with its defaults.

    Args:
        kernel: the transition (`bomcmc.kernels.base.Kernel`).
        adapter: the warm-up adapter `adapt="auto"` picks ("window", "dual_averaging"), or None.
        make_tuner: builds the default tuner, `make_tuner(options, spec, flat, states)`, from
            the options `tuner_options` declares; None: no tuner.
        knobs: the kernel's knobs, the keywords of its `make_knobs` (a schema); None: not
            declared (a bare kernel's), every option no other schema takes goes to
            `make_knobs`, which checks it.
        tuner_options: the default tuner's options (a schema).
        adapt_hint: the end of the error that refuses an adapter beside the tuner.
        name: the name runs record; the kernel's by default.
        build: for a sampler made for one model: posterior -> the Sampler to run (its
            kernel is then None until built; `get(name, posterior)` builds it).
    """

    kernel: Kernel | None
    adapter: str | None = None
    make_tuner: TunerFactory | None = None
    tuner_options: Schema = ()
    adapt_hint: str = ""
    name: str = ""
    build: Callable[[Any], "Sampler"] | None = None
    knobs: Schema | None = None

    def __post_init__(self):
        if not self.name and self.kernel is not None:
            object.__setattr__(self, "name", self.kernel.name)

    @property
    def tunes_itself(self) -> bool:
        return self.make_tuner is not None


# The sampler of `sample()` and `bomcmc sample` when none is named: the self-tuning sampler
# that passed the most of the correctness suite (docs/defaults.md, measured with
# experiments/suite_margins.py). No fixed-knob sampler is ever the default.
DEFAULT = "ahmc"


def _entry(kernel: Kernel | None, name: str, knobs: Schema | None = None, **fields) -> Sampler:
    """The registry's Sampler `name`: its schemas and default adapter from `schemas.SAMPLERS`
    (`knobs` replaces the declared knobs with those of the variant built for a posterior)."""
    s = schemas.SAMPLERS[name]
    return Sampler(kernel, adapter=s.adapter, knobs=s.knobs if knobs is None else knobs,
                   tuner_options=s.tuner, name=name, **fields)


_METRIC_HINT = "; for a learned metric use mass='diag'"
SAMPLERS: dict[str, Sampler] = {
    "hmc": _entry(hmc.kernel, "hmc"),
    "whmc": _entry(windowed_hmc.kernel, "whmc"),
    "nuts": _entry(nuts.kernel, "nuts"),  # Stan's window warm-up: no usable fixed step size
    "nuts_async": _entry(nuts_machine.kernel, "nuts_async"),
    "ahmc": _entry(ahmc.kernel, "ahmc", make_tuner=ahmc_tuner.make_tuner,
                   adapt_hint=_METRIC_HINT),
    "mams": _entry(mams.kernel, "mams"),
    "amams": _entry(mams.bandit_kernel, "amams", make_tuner=ahmc_tuner.make_diagonal_tuner,
                    adapt_hint=_METRIC_HINT),
    "rwm": _entry(rwm.kernel, "rwm"),  # random-walk Metropolis (a baseline; bandit via tuner=)
    "two_phase": _entry(hmc_mixture.kernel, "two_phase", make_tuner=two_phase.make_tuner,
                        adapt_hint=_METRIC_HINT),
}


# ---------------------------------------------------------------------------------------
# Samplers for spin posteriors (models/spins.py), built for the posterior's model
# ---------------------------------------------------------------------------------------
def spin_model(posterior, sampler: str):
    """The SpinModel behind a posterior (its `spin_model`), or a one-line error naming the
    sampler."""
    model = posterior.spin_model
    if model is None:
        name = getattr(posterior, "name", "this posterior")
        raise BomcmcError(f"sampler '{sampler}' samples spin models (ising-LxL, "
                          f"spinglass-LxLxL, rbm-digits-H, rbm-mnist-H, or SpinModel.posterior()); "
                          f"'{name}' is not one")
    return model


def _box(model, options: dict):
    k, g = model.box()
    box = im_tuner.check_box(options.get("k_bounds") or k, options.get("gamma_bounds") or g)
    if box[0][1] > model.k_limit:
        raise BomcmcError(f"k_bounds must lie in [1, {model.k_limit}] (min(n, N − n) for "
                          f"'{model.name}'), got {tuple(box[0])}")
    return box


def _grid_knobs(model, options: dict, n_gamma: int = im_tuner.N_GAMMA) -> tuple[list, list]:
    """Every integer k of the box × n_gamma evenly spaced γ: the uniform policy's settings."""
    (k_lo, k_hi), (g_lo, g_hi) = _box(model, options)
    kk, gg = np.meshgrid(np.arange(k_lo, k_hi + 1), np.linspace(g_lo, g_hi, n_gamma))
    return kk.ravel().tolist(), gg.ravel().tolist()


def _im_sampler(kind: str, posterior) -> "Sampler":
    model = spin_model(posterior, kind)
    if kind == "kawasaki":
        return _entry(intracluster.kawasaki_kernel(model), kind)
    kernel = intracluster.im_kernel(model, name=kind)
    if kind == "im":
        return _entry(kernel, kind)
    if kind == "im_expert":
        if model.expert is None:
            raise BomcmcError(f"no expert setting is known for '{model.name}' (im_expert has "
                              "those of Mahendran 2011 for ising-60x60, spinglass-9x9x9 and "
                              "rbm-digits-H, rbm-mnist-H): use sampler 'im' with k and gamma")
        ks, gamma = model.expert
        return _entry(_defaults(kernel, k=list(ks), gamma=gamma), kind)
    if kind == "im_unif":
        return _entry(_fixed_policy(kernel, model), kind)
    return _entry(kernel, kind, make_tuner=partial(_make_im_tuner, model, kind == "im_bayesopt"))


def _defaults(kernel: Kernel, **defaults) -> Kernel:
    """The kernel with other default knobs (the user's still win)."""
    make = kernel.make_knobs
    return kernel._replace(make_knobs=lambda d, **kw: make(d, **{**defaults, **kw}))


def _fixed_policy(kernel: Kernel, model) -> Kernel:
    """IMUnif: the knobs are the uniform grid over the box (k_bounds, gamma_bounds)."""
    make = kernel.make_knobs

    def make_knobs(d, k_bounds=None, gamma_bounds=None):
        ks, gs = _grid_knobs(model, {"k_bounds": k_bounds, "gamma_bounds": gamma_bounds})
        return make(d, k=ks, gamma=gs)

    return kernel._replace(make_knobs=make_knobs)


def _make_im_tuner(model, two_phase_: bool, options: dict, spec, flat, states):
    opts = dict(options)
    k_bounds, gamma_bounds = _box(model, opts)
    opts.pop("k_bounds", None), opts.pop("gamma_bounds", None)
    # γ searched stretched around β, where the IM move's acceptance falls off (docs/spins.md,
    # "γ stretched around β"): IMBayesOpt's default, measured; the bandit's is linear
    scale = opts.pop("gamma_scale", "beta" if two_phase_ else "linear")
    opts["warp_at"] = model.beta if scale == "beta" else None
    if two_phase_:
        defaulted = "reward" not in opts
        opts.setdefault("reward", im_tuner.SAMPLER_REWARD)
        return im_tuner.IMBayesOptTuner(k_bounds, gamma_bounds, warmup=spec.warmup,
                                        seed=spec.seed, reward_defaulted=defaulted, **opts)
    return im_tuner.IMBanditTuner(k_bounds, gamma_bounds, seed=spec.seed, **opts)


for _kind in ("im", "im_expert", "im_unif", "im_bandit", "im_bayesopt", "kawasaki"):
    SAMPLERS[_kind] = _entry(None, _kind, build=partial(_im_sampler, _kind))


# ---------------------------------------------------------------------------------------
# Riemann-manifold HMC, built for a posterior's metric
# ---------------------------------------------------------------------------------------
def _rmhmc_kernel(posterior, sampler: str) -> tuple[Kernel, Schema]:
    """The posterior's blocked RMHMC if it has blocks, else RMHMC on its metric (the
    generalised leapfrog for a callable metric, plain leapfrog for a constant one), with the
    knobs of that variant."""
    blocks = posterior.rmhmc_blocks
    if blocks is not None:
        return blocked_rmhmc.blocked_rmhmc_kernel(
            blocks.latent, blocks.parameters, blocks.latent_metric, blocks.parameter_metric,
            name=sampler), schemas.KNOBS["rmhmc_blocked"]
    metric = _metric(posterior, sampler)
    knobs = schemas.KNOBS["rmhmc" if callable(metric) else "rmhmc_constant"]
    return rmhmc.kernel_for_metric(metric, name=sampler), knobs


def _metric(posterior, sampler: str):
    metric_fn = posterior.metric_fn
    if metric_fn is None:
        name = getattr(posterior, "name", "this posterior")
        raise BomcmcError(f"sampler '{sampler}' needs a Riemannian metric: '{name}' has none "
                          "(give it as Posterior(..., metric_fn=G), G(θ) of the flat "
                          "vector; the logistic-*, lgcp-* and sv-* posteriors have one)")
    return metric_fn


def _rmhmc_sampler(kind: str, posterior) -> "Sampler":
    kernel, knobs = _rmhmc_kernel(posterior, kind)
    if kind == "rmhmc":
        return _entry(kernel, kind, knobs)
    if posterior.rmhmc_blocks is None:  # the compact set M: not for the blocked Gibbs sweep
        knobs = knobs + (schemas.SUPPORT,)
    return _entry(kernel, kind, knobs, make_tuner=block_bandit.make_tuner)


for _kind in ("rmhmc", "armhmc"):
    SAMPLERS[_kind] = _entry(None, _kind, build=partial(_rmhmc_sampler, _kind))


def canonical(name: str) -> str:
    """The registry's spelling of a sampler name: underscores, lower case."""
    return name.strip().lower().replace("-", "_")


def get(sampler: "str | Sampler | Kernel", posterior=None) -> Sampler:
    """The Sampler for a name, a Sampler (returned as it is) or a bare Kernel (no defaults);
    one made for a model is built for `posterior`."""
    if isinstance(sampler, Kernel):
        return Sampler(sampler)
    if isinstance(sampler, str):
        try:
            sampler = SAMPLERS[canonical(sampler)]
        except KeyError:
            import difflib

            close = difflib.get_close_matches(canonical(sampler), sorted(SAMPLERS), n=1)
            raise BomcmcError(f"unknown sampler '{sampler}' ("
                              + (f"did you mean '{close[0]}'? " if close else "")
                              + f"available: {', '.join(sorted(SAMPLERS))})") from None
    if not isinstance(sampler, Sampler):
        raise BomcmcError("sampler must be a name, a bomcmc.Sampler or a kernel")
    if sampler.build is not None:
        if posterior is None:
            raise BomcmcError(f"sampler '{sampler.name}' is built for a posterior: pass one")
        return _built(sampler, posterior)
    return sampler


_BUILT = Latest(8)


def _built(sampler: Sampler, posterior) -> Sampler:
    """`sampler.build(posterior)`, the same object again for the same sampler and posterior
    among the latest few, so that runs of it share their compiled program
    (`driver.engine.PROGRAMS` knows a kernel by identity). A build is a function of the
    posterior alone; both are kept alive with the entry, so their ids stay theirs."""
    return _BUILT.get_or_build((id(sampler), id(posterior)), lambda: sampler.build(posterior),
                               keep=(sampler, posterior))


def configure(sampler: Sampler, options: dict, *, warmup: int, adapt="auto",
              adapter_options: dict | None = None, tuner_given: bool = False) -> SamplerConfig:
    """A user's options for `sampler` as keywords, checked once into a SamplerConfig.

    Each option goes to the schema that declares it, in this order: the kernel's knobs, the
    default tuner's options, the warm-up adapter's options (`adapter_options` are the
    adapter's too, and win); one that none declares is a one-line error naming the options
    the sampler takes. `adapt="auto"` is the sampler's default adapter when there is a
    warm-up, "none" or None no adapter.
    """
    resolved = _resolve_adapt(sampler, adapt, warmup)
    knobs, tuner, adapter = _route(
        sampler, options, resolved, sampler.knobs,
        sampler.tuner_options if sampler.tunes_itself else (),
        schemas.adapter_options(resolved) if resolved else ())
    config = SamplerConfig(knobs, resolved, {**adapter, **(adapter_options or {})},
                           tuner if sampler.tunes_itself else None)
    return validate(sampler, config, warmup=warmup, tuner_given=tuner_given)


def validate(sampler: Sampler, config: SamplerConfig, *, warmup: int,
             tuner_given: bool = False) -> SamplerConfig:
    """`config` checked against the sampler's schemas (names; the values are checked where
    they are used: `make_knobs`, the adapter, the tuner's constructor), with its adapter
    resolved and `tuner_options` None when the run has no default tuner."""
    name = f"sampler '{sampler.name}'"
    adapt = _resolve_adapt(sampler, config.adapt, warmup)
    if sampler.knobs is not None:
        reject_unknown(config.knobs or {}, name, sampler.knobs)
    tuner = dict(config.tuner_options or {})
    if tuner and tuner_given and sampler.tunes_itself:
        raise BomcmcError(f"{', '.join(sorted(tuner))}: options of the default tuner of {name}, "
                          "which tuner= replaces (set them on your tuner)")
    if tuner and not sampler.tunes_itself:
        raise BomcmcError(f"{name} has no default tuner: it takes no tuner options "
                          f"({', '.join(sorted(tuner))})")
    reject_unknown(tuner, f"the tuner of {name}", sampler.tuner_options)
    adapter = dict(config.adapter_options or {})
    if adapter and adapt is None:
        raise BomcmcError(f"{', '.join(sorted(adapter))}: options of a warm-up adaptation, "
                          f"which this run of {name} has none of (give adapt='window')")
    if adapt is not None:
        reject_unknown(adapter, f"adaptation '{adapt}'", schemas.adapter_options(adapt))
        if sampler.tunes_itself and not tuner_given:
            raise BomcmcError(f"{name} tunes its step size itself: it cannot run with "
                              f"adapt='{adapt}' (use adapt=None{sampler.adapt_hint})")
    return SamplerConfig(knobs=dict(config.knobs or {}), adapt=adapt, adapter_options=adapter,
                         tuner_options=tuner if sampler.tunes_itself and not tuner_given
                         else None)


def with_support(sampler: Sampler, config: SamplerConfig) -> tuple[Sampler, SamplerConfig]:
    """The sampler restricted to the compact set M its `support` option names (Wang, Mohamed
    & de Freitas 2013 §4; `kernels/support.py`), and the config with the option as config.json
    records it (a box as lists, a membership test as `support.CALLABLE`). Without the option,
    both unchanged. A config.json that records a membership test cannot give it back: one
    line."""
    given = (config.knobs or {}).get("support")
    if given is None:
        return sampler, config
    if isinstance(given, str) and given == support.CALLABLE:
        raise BomcmcError("this run's support was a membership test (a Python function), "
                          "which config.json cannot record: it cannot be resumed (give "
                          "support as a box (lower, upper) for a resumable run)")
    recorded = support.parse(given)
    inside = given if callable(given) else support.box_test(*recorded)
    kernel = support.restrict(sampler.kernel, inside,
                              None if callable(given) else recorded)
    return (dataclasses.replace(sampler, kernel=kernel),
            config._replace(knobs={**config.knobs, "support": recorded}))


def _resolve_adapt(sampler: Sampler, adapt, warmup: int) -> str | None:
    if adapt == "auto":
        return sampler.adapter if warmup > 0 else None
    if adapt is None or adapt == "none":
        return None
    schemas.adapter_options(adapt)  # an unknown name: one line
    return adapt


def _route(sampler: Sampler, options: dict, adapt, knobs: Schema | None, tuner: Schema,
           adapter: Schema) -> tuple[dict, dict, dict]:
    """(knobs, tuner options, adapter options) of `options`, by the schema declaring each."""
    out: tuple[dict, dict, dict] = ({}, {}, {})
    known = [set(option_names(s)) for s in (tuner, adapter)]
    for name, value in options.items():
        if knobs is not None and name in option_names(knobs):
            out[0][name] = value
        elif name in known[0]:
            out[1][name] = value
        elif name in known[1]:
            out[2][name] = value
        elif knobs is None:  # a kernel without a schema: its make_knobs checks the rest
            out[0][name] = value
        elif adapt is None and any(name in option_names(s)
                                   for s in schemas.ADAPTER_OPTIONS.values()):
            out[2][name] = value  # validate() says the run has no adaptation
        else:
            reject_unknown({name: value}, f"sampler '{sampler.name}'", knobs, tuner, adapter)
    return out


def names() -> list[str]:
    return sorted(SAMPLERS)


__all__ = ["DEFAULT", "SAMPLERS", "Sampler", "canonical", "configure", "get", "names", "validate",
           "with_support"]
