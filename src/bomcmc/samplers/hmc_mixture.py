"""A mixture of M HMC kernels, and the two-phase Bayesian-optimised sampler "bo2".

The kernel (seed 001 §3.3: "a mixture of M MCMC transition kernels ... where each kernel
uses one of the M parameters obtained in the SIR step"): the knobs hold M settings
(ε_k, L_k), k = 1..M, per chain; each transition draws k uniformly and makes one HMC
transition (`hmc.step`, seed 000 Alg. 1) with (ε_k, L_k). Each component leaves π
invariant, hence so does the mixture. M is the length of the knob arrays, fixed when the
run is built, so a new policy is a new knob *value*: never a recompilation.

The index comes from its own fold of the transition's key, fold_in(key, POLICY_STREAM); the
HMC transition gets the key unchanged. So with all M slots equal (the adaptation phase) a
transition is bit for bit `hmc.step` with those knobs.

`sampler` ("bo2", `sample(..., sampler="bo2")`): this kernel, started like AHMC (L-BFGS
towards the mode, `ahmc.init`), with random trajectory lengths L_r ~ U{1..L_k} on by
default, and the `TwoPhaseTuner` (`tuning/two_phase.py`) built from the options in
`TUNER_OPTIONS` (docs/tuning.md, "Two-phase mode (seed 001)").
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BomcmcError
from . import ahmc, hmc
from .ahmc import TunedSampler

POLICY_SIZE = 50  # M (tuning.two_phase.POLICY_SIZE; the tuner resizes to its own M)
POLICY_STREAM = 0x6D6978  # fold_in data of the key that draws the policy index ("mix")


class MixtureKnobs(NamedTuple):
    """HMC's knobs with a policy axis: named as HMC's so the bandit tuners work unchanged."""

    step_size: jax.Array  # ε_k, shape (M,)
    num_steps: jax.Array  # L_k, shape (M,) (the maximum of L_r when random_steps)
    inverse_mass_matrix: jax.Array  # diagonal M⁻¹, shape (d,), shared by the components
    random_steps: jax.Array  # bool: L_r ~ U{1..L_k} per transition


class MixtureInfo(NamedTuple):
    """`hmc.HMCInfo` (step_size: the ε_k used; n_steps: the leapfrog steps run) plus the
    chosen slot k and its L_k."""

    acceptance_rate: jax.Array
    energy: jax.Array
    energy_error: jax.Array
    diverging: jax.Array
    n_grad: jax.Array
    n_steps: jax.Array
    sq_jump: jax.Array
    esjd: jax.Array
    step_size: jax.Array
    num_steps: jax.Array  # L_k of the chosen slot
    policy_index: jax.Array  # k


def select(key: jax.Array, knobs: MixtureKnobs) -> tuple[jax.Array, hmc.HMCKnobs]:
    """k ~ U{0..M−1} from fold_in(key, POLICY_STREAM), and HMC's knobs with (ε_k, L_k)."""
    m = knobs.step_size.shape[-1]
    k = jax.random.randint(jax.random.fold_in(key, POLICY_STREAM), (), 0, m)
    return k, hmc.HMCKnobs(step_size=knobs.step_size[k], num_steps=knobs.num_steps[k],
                           inverse_mass_matrix=knobs.inverse_mass_matrix,
                           random_steps=knobs.random_steps)


def step(key: jax.Array, state: hmc.HMCState, logdensity_fn, knobs: MixtureKnobs,
         max_energy_error: float = hmc.MAX_ENERGY_ERROR) -> tuple[hmc.HMCState, MixtureInfo]:
    """One transition of the mixture: a uniform slot k, then `hmc.step` with (ε_k, L_k)."""
    k, one = select(key, knobs)
    state, info = hmc.step(key, state, logdensity_fn, one, max_energy_error)
    return state, MixtureInfo(*info, num_steps=jnp.asarray(one.num_steps, jnp.int32),
                              policy_index=k.astype(jnp.int32))


def make_knobs(dim: int, step_size: float = 0.1, steps: int = 10, random_steps: bool = True,
               inverse_mass_matrix=None) -> MixtureKnobs:
    """POLICY_SIZE slots all holding (step_size, steps), random trajectory lengths on by
    default (validated as HMC's knobs). For "bo2", step_size is where Stan's heuristic
    starts; the tuner resizes the slots to its policy_size and sets them."""
    size = POLICY_SIZE
    one = hmc.default_knobs(dim, step_size=step_size, steps=steps, random_steps=random_steps,
                            inverse_mass_matrix=inverse_mass_matrix)
    return MixtureKnobs(step_size=np.full((size,), one.step_size, one.step_size.dtype),
                        num_steps=np.full((size,), one.num_steps, one.num_steps.dtype),
                        inverse_mass_matrix=one.inverse_mass_matrix,
                        random_steps=one.random_steps)


# ---------------------------------------------------------------------------------------
# "bo2": the options and the tuner
# ---------------------------------------------------------------------------------------
TUNER_OPTIONS = ("eps_bounds", "steps_bounds", "reward", "acquisition", "bo_steps",
                 "policy_size", "candidates", "n_candidates", "temperature", "resampling",
                 "mass", "mass_windows", "eps_factors", "start")
_CHOICES = {"candidates": ("grid", "lhs"), "resampling": ("systematic", "multinomial")}
MAX_POLICY_SIZE = 100_000


def _positive_int(name, v, most=None):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 \
            or (most is not None and v > most):
        raise BomcmcError(f"{name} must be a positive integer"
                          + (f" <= {most}" if most is not None else "") + f", got {v!r}")
    return int(v)


def validate_options(options: dict) -> dict:
    """The options, checked (one-line BomcmcError) and in JSON form."""
    opts = dict(options)
    unknown = sorted(set(opts) - set(TUNER_OPTIONS))
    if unknown:
        raise BomcmcError(f"sampler 'bo2' has no option {', '.join(unknown)} "
                          f"(options: {', '.join(TUNER_OPTIONS)})")
    ours = {k: opts.pop(k) for k in ("policy_size", "candidates", "n_candidates",
                                     "temperature", "resampling") if k in opts}
    opts = ahmc.validate_options(opts)
    for k, v in ours.items():
        if v is None:
            continue
        if k in ("policy_size", "n_candidates"):
            opts[k] = _positive_int(k, v, MAX_POLICY_SIZE if k == "policy_size" else None)
        elif k == "temperature":
            ok = isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
            if not (ok and math.isfinite(float(v)) and float(v) > 0):
                raise BomcmcError(f"temperature must be a positive number, got {v!r}")
            opts[k] = float(v)
        else:
            if v not in _CHOICES[k]:
                raise BomcmcError(f"{k} must be one of {', '.join(_CHOICES[k])}, got {v!r}")
            opts[k] = v
    return opts


def make_tuner(options: dict, spec, flat, states):
    """The two-phase tuner of a run: `options` as config.json records them."""
    from ..tuning.two_phase import ACF_DRAWS, TwoPhaseTuner, default_bo_steps

    opts = validate_options(options)
    warmup = int(spec.warmup)
    if warmup < 1:
        raise BomcmcError("sampler 'bo2' builds its policy in warm-up: it needs warmup >= 1")
    # Default reward ESJD/√L, not seed 001's h(X): h(X) scores mixing per transition and ignores
    # the trajectory's cost, so for HMC it picks long trajectories; on logistic-german it gave
    # a third of ESJD's min ESS per gradient (docs/tuning.md, "Two-phase mode").
    reward = opts.setdefault("reward", "esjd")
    k = min(opts.get("bo_steps", default_bo_steps(warmup, reward)), warmup)
    if reward == "acf" and warmup // k < ahmc.ACF_MIN_DRAWS:
        raise BomcmcError(f"reward 'acf' needs BO steps of >= {ahmc.ACF_MIN_DRAWS} draws; "
                          f"warmup {warmup} with {k} BO steps gives {warmup // k} (use "
                          f"fewer bo_steps or warmup >= {ahmc.ACF_MIN_DRAWS * k}; default "
                          f"bo_steps: warmup // {ACF_DRAWS})")
    return TwoPhaseTuner(warmup=warmup, thin=spec.thin, seed=spec.seed,
                         logdensity_fn=flat.logdensity_fn,
                         start_positions=np.asarray(states.position), **opts)


class TwoPhaseSampler(TunedSampler):
    """The mixture kernel with the two-phase tuner as its default tuner."""

    __slots__ = ()
    tuner_options = TUNER_OPTIONS
    make_tuner = staticmethod(make_tuner)  # the module's make_tuner(options, spec, flat, states)


sampler = TwoPhaseSampler(name="bo2", init=ahmc.init, step=step, make_knobs=make_knobs)
