"""Samplers by name: each pairs a kernel with its default warm-up and its default tuner.

A `Sampler` is what a user picks with `sample(..., sampler=NAME)`: a `Kernel` (pure
`init`/`step`), the in-loop warm-up adapter that `adapt="auto"` chooses, and the host-side tuner
the driver builds from the options named in `tuner_options` when the user gives no `tuner=`.
Every field is explicit; the table below is the whole registry. Sampler names are spelt with
underscores; a hyphen is read as an underscore (`nuts-gibbs` is `nuts_gibbs`).

    hmc          HMC with fixed knobs (no warm-up unless adapt="window")
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
    im_bayesopt  IMBayesOpt: EI on h of the energy in warm-up, then a frozen SIR policy
    im_bandit    IM tuned by adaptive HMC's GP bandit over (γ, k), adapting forever
    kawasaki     Kawasaki dynamics (IM with k = 1, γ = 0)

and for posteriors that carry a Riemannian metric (`Posterior.meta["metric_fn"]`, the flat
vector's G(θ), a callable or a constant (D, D) or (D,) array: the logistic regressions have
the Fisher metric, `lgcp-*` a constant diagonal one), or a blocked one
(`meta["rmhmc_blocks"]`: latent and parameter blocks with their metrics, as `sv-*`):

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

from .errors import BomcmcError
from .kernels import (ahmc, blocked_rmhmc, hmc, hmc_mixture, intracluster, mams, nuts,
                      nuts_machine, rmhmc, rwm)
from .kernels.base import Kernel
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
            the keyword arguments of `sample` named in `tuner_options`; None: no tuner.
        tuner_options: those keyword arguments' names (recorded in config.json).
        adapt_hint: the end of the error that refuses an adapter beside the tuner.
        name: the name runs record; the kernel's by default.
        build: for a sampler made for one model: posterior -> the Sampler to run (its
            kernel is then None until built; `get(name, posterior)` builds it).
    """

    kernel: Kernel | None
    adapter: str | None = None
    make_tuner: TunerFactory | None = None
    tuner_options: tuple[str, ...] = ()
    adapt_hint: str = ""
    name: str = ""
    build: Callable[[Any], "Sampler"] | None = None

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

SAMPLERS: dict[str, Sampler] = {
    "hmc": Sampler(hmc.kernel),
    "nuts": Sampler(nuts.kernel, adapter="window"),  # NUTS has no usable fixed step size
    "nuts_async": Sampler(nuts_machine.kernel, adapter="window"),
    "ahmc": Sampler(ahmc.kernel, make_tuner=ahmc_tuner.make_tuner,
                    tuner_options=ahmc_tuner.TUNER_OPTIONS,
                    adapt_hint="; for a learned metric use mass='diag'"),
    "mams": Sampler(mams.kernel),
    "amams": Sampler(mams.bandit_kernel, make_tuner=ahmc_tuner.make_diagonal_tuner,
                     tuner_options=ahmc_tuner.TUNER_OPTIONS,
                     adapt_hint="; for a learned metric use mass='diag'"),
    "rwm": Sampler(rwm.kernel),  # random-walk Metropolis (a baseline; bandit via tuner=)
    "two_phase": Sampler(hmc_mixture.kernel, make_tuner=two_phase.make_tuner,
                         tuner_options=two_phase.TUNER_OPTIONS,
                         adapt_hint="; for a learned metric use mass='diag'"),
}


# ---------------------------------------------------------------------------------------
# Samplers for spin posteriors (models/spins.py), built for the posterior's model
# ---------------------------------------------------------------------------------------
IM_TUNER_OPTIONS = ("k_bounds", "gamma_bounds", "reward")
IM_BAYESOPT_OPTIONS = IM_TUNER_OPTIONS + ("bo_steps", "policy_size", "temperature")


def spin_model(posterior, sampler: str):
    """The SpinModel behind a posterior, or a one-line error naming the sampler."""
    from .models.spins import SpinModel

    model = (getattr(posterior, "meta", None) or {}).get("model")
    if not isinstance(model, SpinModel):
        name = getattr(posterior, "name", "this posterior")
        raise BomcmcError(f"sampler '{sampler}' samples spin models (ising-LxL, "
                          f"spinglass-LxLxL, rbm-digits-H, or SpinModel.posterior()); "
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
        return Sampler(intracluster.kawasaki_kernel(model), name=kind)
    kernel = intracluster.im_kernel(model, name=kind)
    if kind == "im":
        return Sampler(kernel, name=kind)
    if kind == "im_expert":
        if model.expert is None:
            raise BomcmcError(f"no expert setting is known for '{model.name}' (im_expert has "
                              "those of Mahendran 2011 for ising-60x60, spinglass-9x9x9 and "
                              "rbm-digits-H): use sampler 'im' with k and gamma")
        ks, gamma = model.expert
        return Sampler(_defaults(kernel, k=list(ks), gamma=gamma), name=kind)
    if kind == "im_unif":
        return Sampler(_fixed_policy(kernel, model), name=kind)
    if kind == "im_bandit":
        return Sampler(kernel, make_tuner=partial(_make_im_tuner, model, False), name=kind,
                       tuner_options=IM_TUNER_OPTIONS + ("acquisition", "schedule"))
    return Sampler(kernel, make_tuner=partial(_make_im_tuner, model, True), name=kind,
                   tuner_options=IM_BAYESOPT_OPTIONS)


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
    if two_phase_:
        return im_tuner.IMBayesOptTuner(k_bounds, gamma_bounds, warmup=spec.warmup,
                                        seed=spec.seed, **opts)
    return im_tuner.IMBanditTuner(k_bounds, gamma_bounds, seed=spec.seed, **opts)


for _kind in ("im", "im_expert", "im_unif", "im_bandit", "im_bayesopt", "kawasaki"):
    SAMPLERS[_kind] = Sampler(None, name=_kind, build=partial(_im_sampler, _kind))


# ---------------------------------------------------------------------------------------
# Riemann-manifold HMC, built for a posterior's metric
# ---------------------------------------------------------------------------------------
ARMHMC_OPTIONS = ("eps_bounds", "steps_bounds", "reward", "acquisition", "schedule",
                  "bo_steps", "start")


def _rmhmc_kernel(posterior, sampler: str) -> Kernel:
    """The posterior's blocked RMHMC if it has blocks, else RMHMC on its metric."""
    blocks = (getattr(posterior, "meta", None) or {}).get("rmhmc_blocks")
    if blocks is not None:
        return blocked_rmhmc.blocked_rmhmc_kernel(
            blocks["latent"], blocks["parameters"], blocks["latent_metric"],
            blocks["parameter_metric"], name=sampler)
    return rmhmc.kernel_for_metric(_metric(posterior, sampler), name=sampler)


def _metric(posterior, sampler: str):
    metric_fn = (getattr(posterior, "meta", None) or {}).get("metric_fn")
    if metric_fn is None:
        name = getattr(posterior, "name", "this posterior")
        raise BomcmcError(f"sampler '{sampler}' needs a Riemannian metric: '{name}' has none "
                          "(give it as Posterior(..., meta={'metric_fn': G}), G(θ) of the flat "
                          "vector; the logistic-*, lgcp-* and sv-* posteriors have one)")
    return metric_fn


def _rmhmc_sampler(kind: str, posterior) -> "Sampler":
    kernel = _rmhmc_kernel(posterior, kind)
    if kind == "rmhmc":
        return Sampler(kernel, name=kind)
    return Sampler(kernel, make_tuner=block_bandit.make_tuner, tuner_options=ARMHMC_OPTIONS,
                   name=kind)


for _kind in ("rmhmc", "armhmc"):
    SAMPLERS[_kind] = Sampler(None, name=_kind, build=partial(_rmhmc_sampler, _kind))


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
            raise BomcmcError(
                f"unknown sampler '{sampler}' (available: {', '.join(sorted(SAMPLERS))})"
            ) from None
    if not isinstance(sampler, Sampler):
        raise BomcmcError("sampler must be a name, a bomcmc.Sampler or a kernel")
    if sampler.build is not None:
        if posterior is None:
            raise BomcmcError(f"sampler '{sampler.name}' is built for a posterior: pass one")
        return sampler.build(posterior)
    return sampler


def names() -> list[str]:
    return sorted(SAMPLERS)


__all__ = ["DEFAULT", "SAMPLERS", "Sampler", "canonical", "get", "names"]
