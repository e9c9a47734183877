"""Two-phase Bayesian-optimised MCMC (Mahendran 2011, ch. 3; Mahendran et al. 2012): adapt,
then sample from a frozen randomised policy.

**Adaptation phase** (Mahendran 2011 §3.2, Alg. 1): the warm-up is cut into I BO steps of m
transitions each. After each, the chunk's objective z_i (default h(X), the robust
auto-correlation area of Mahendran 2011 §3.1.1, `rewards.acf_area`) goes into a GP over
(log ε, L), and the next (ε, L) maximises Expected Improvement (Mahendran 2011 §3.2, with
ξ = 0.01 from the authors' code for Mahendran et al. 2012). Every one of the M policy slots
of the mixture kernel holds that one setting, so the kernel is plain HMC.

**Sampling phase** (Mahendran 2011 §3.3, Alg. 2): when the warm-up's last transition has
run, the GP is frozen and the SIR policy is built once from its mean
(`sir_policy.build_policy`): candidates over the box, weights ∝ exp(μ/(T c)), M settings
resampled. From then on every transition draws one of the M settings uniformly
(`kernels/hmc_mixture.py`): a fixed mixture of M HMC kernels, each leaving π invariant, so
the sampling phase is an ordinary (homogeneous) Markov chain. Nothing adapts after warm-up.

The tuner is `tuning.ahmc_tuner.AHMCTuner` (itself a `GPBanditTuner`) with this phase logic on
top (`sir_policy.phase_step` over its `sir_policy.Phases`); it reuses AHMC's chunk lengths (the first warmup mod I BO steps one longer), its
relative ε box [ε₀/10, 10 ε₀] around Stan's heuristic, and its optional diagonal metric
learned in the first half of the BO steps (with GP resets). With p_i = 1 for every BO step
of the warm-up, each step proposes (the bandit's coin flip is always heads).

Decisions (docs/tuning.md, "Two-phase mode"):
- Defaults follow Mahendran 2011 §3.2 and the authors' code for Mahendran et al. 2012:
  reward "acf", EI, first setting the box's centre, GP signal variance 1, noise variance
  0.1, length scales 0.1 × the box's widths.
- I (bo_steps) defaults to min(100, warmup // m_min) with m_min = 50 draws for "acf" (its
  l_min is 26; the paper used m = 100) and "ess" (ArviZ's ESS of 10 draws is noise), and
  10 for the others.
- The GP is read in units of the best observed reward c = max_j r_j (1 while none is
  positive): EI sees μ/c (`scale`), the weights are w ∝ exp(μ / (T c)). For the "acf"
  objective (c ≈ 0.8) that is nearly Mahendran 2011's raw μ; for other rewards it makes EI's
  exploration and the policy's sharpness independent of the reward's units.
- T = 0.05, i.e. exp(20 μ/c): sharper than the exp(10 μ) of the authors' code for
  Mahendran et al. 2012 (`IM_ego.c:build_sir_policy`), because on logistic-german the wider
  policy of T = 0.1 lost ESS per gradient and T = 0.02 was no better (docs/tuning.md,
  "Two-phase mode", Temperature).
- Candidates: the grid of 100 log-ε values × every integer L (Mahendran 2011 §4.2.1; the
  authors' code, strategy 0), or a Latin hypercube; M = 50 slots (the knobs' shape, fixed
  for the whole run); systematic resampling (Kitagawa 1996, as in the authors' code) or
  multinomial.
- The chain is not reset to its start after adaptation (the authors' code resets it; the
  warm-up serves as burn-in here).
- The policy is recorded in the state ("policy": the M settings and their SIR weights), so
  it is in every later chunk record and in the InferenceData's `tuning` attrs
  (`policy_from_idata`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import BomcmcError
from ..validation import choice, integer
from . import sir_policy
from .ahmc_tuner import AHMCTuner, given

POLICY_SIZE = 50  # M: slots of the mixture kernel
MAX_POLICY_SIZE = 100_000
TEMPERATURE = 0.05  # T of w ∝ exp(μ / (T c)) (the authors' code: exp(10 μ); see the docstring)
ACF_DRAWS = 50  # default draws per BO step with the "acf" and "ess" rewards
OTHER_DRAWS = 10  # ... with any other reward (AHMC's m for a 1000-transition burn-in)
MAX_BO_STEPS = 100  # Mahendran 2011 §4.2.1: I = 100
# the GP of the authors' code for Mahendran et al. 2012 (AdaptSAW, docs/references.md)
SIGNAL_VAR, NOISE_VAR, LENGTHSCALE_FACTOR = 1.0, 0.1, 0.1
_SIR_STREAM = 0x51  # numpy seed [seed, 0, _SIR_STREAM] for the candidates and resampling


def default_bo_steps(warmup: int, reward) -> int:
    """I = min(100, warmup // m_min), at least 1: m_min = 50 draws per BO step for "acf" and
    "ess", 10 for other rewards."""
    m_min = ACF_DRAWS if reward in ("acf", "ess") else OTHER_DRAWS
    return max(1, min(MAX_BO_STEPS, int(warmup) // m_min))


def check_options(warmup, policy_size, candidates, n_candidates, temperature,
                  resampling) -> None:
    """The policy's options (one-line BomcmcError)."""
    if warmup < 1:
        raise BomcmcError("the two-phase tuner builds its policy in warm-up: it needs "
                          "warmup >= 1")
    integer("policy_size", policy_size, most=MAX_POLICY_SIZE)
    choice("candidates", candidates, sir_policy.CANDIDATES)
    if n_candidates is not None:
        integer("n_candidates", n_candidates)
    ok = isinstance(temperature, (int, float, np.number)) and not isinstance(temperature, bool)
    if not (ok and math.isfinite(float(temperature)) and float(temperature) > 0):
        raise BomcmcError(f"temperature must be a positive number, got {temperature!r}")
    choice("resampling", resampling, sir_policy.RESAMPLING)


class TwoPhaseTuner(AHMCTuner):
    """Adaptation by EI on a GP for the warm-up's BO steps, then one frozen SIR policy of M
    (ε, L) settings for the mixture kernel (module docstring). Needs knobs with a policy
    axis: `step_size` and `num_steps` of shape (chains, M) (the sampler "two_phase"). Holds
    AHMC's three states and `phases` (`sir_policy.Phases`).

    Args:
        warmup, thin: the run's warm-up transitions and thinning.
        bo_steps: I, the BO steps of the adaptation phase (default `default_bo_steps`).
        policy_size: M, the policy's slots (50).
        candidates: "grid" (n_candidates log-ε values × every integer L; default 100) or
            "lhs" (n_candidates Latin-hypercube points; default 10⁴).
        temperature: T of the SIR weights exp(μ / (T c)) (0.05).
        resampling: "systematic" (Kitagawa 1996, as the authors' code) or "multinomial".
        reward, acquisition, start: as `GPBanditTuner`'s, defaults "acf", "ei", "center".
        mass, mass_windows, eps_factors, logdensity_fn, start_positions: as `AHMCTuner`'s.
        other keyword arguments: GPBanditTuner's (eps_bounds, steps_bounds, xi, seed, ...).
    """

    name = "two_phase"

    def __init__(self, *, warmup: int, thin: int = 1, bo_steps: int | None = None,
                 policy_size: int = POLICY_SIZE, candidates: str = "grid",
                 n_candidates: int | None = None, temperature: float = TEMPERATURE,
                 resampling: str = "systematic", reward="acf", acquisition: str = "ei",
                 start: str = "center", signal_var: float = SIGNAL_VAR,
                 noise_var: float = NOISE_VAR,
                 lengthscale_factor: float = LENGTHSCALE_FACTOR, mass: str = "diag",
                 **options):
        warmup = int(warmup)
        check_options(warmup, policy_size, candidates, n_candidates, temperature, resampling)
        if options.pop("adapt_in_sampling", False):
            raise BomcmcError("the two-phase tuner never adapts in sampling (the policy is "
                              "frozen after warm-up)")
        if bo_steps is None:
            bo_steps = default_bo_steps(warmup, reward)
        # batch=1, steps_cap=0: one shared (ε, L) over the whole box, as before AHMC's batch
        # burn-in; the mixture's knobs are per component, not per chain group. rescale=1:
        # EI sees μ in units of the best reward c (`policy_scale`), the scale on which the
        # unit signal variance of Mahendran et al.'s code was set (h ≤ 1); the bandit's
        # s = 4/c belongs to its signal variance 25 and would leave EI no room to explore.
        # search="direct": EI maximised by DIRECT + L-BFGS-B, as before AHMC's grid search.
        super().__init__(warmup=warmup, thin=thin, bo_steps=bo_steps, reward=reward, mass=mass,
                         acquisition=acquisition, start=start, signal_var=signal_var,
                         noise_var=noise_var, lengthscale_factor=lengthscale_factor,
                         adapt_in_sampling=False, batch=1, steps_cap=0, rescale=1.0,
                         search="direct", **options)
        self.warmup = warmup
        self.policy_size = int(policy_size)
        self.candidates = candidates
        self.n_candidates = None if n_candidates is None else int(n_candidates)
        self.temperature = float(temperature)
        self.resampling = resampling
        self.phases = sir_policy.Phases()

    @property
    def policy(self) -> dict | None:
        return self.phases.policy

    @property
    def transitions(self) -> int:
        return self.phases.transitions

    # -- knobs -------------------------------------------------------------------------------
    def _resize(self, knobs):
        """Give step_size and num_steps M slots per chain (each chain's mean value)."""
        eps, steps = np.asarray(knobs.step_size), np.asarray(knobs.num_steps)
        if eps.ndim != 2 or steps.ndim != 2:
            raise BomcmcError("the two-phase tuner needs the mixture kernel's knobs (a policy "
                              "axis of M settings per chain): use sampler='two_phase'")
        slots = self.policy_size
        if eps.shape[1] == slots and steps.shape[1] == slots:
            return knobs
        e = np.repeat(eps.mean(axis=1, keepdims=True), slots, axis=1).astype(eps.dtype)
        s = np.repeat(np.rint(steps.mean(axis=1, keepdims=True)), slots,
                      axis=1).astype(steps.dtype)
        return knobs._replace(step_size=e, num_steps=s)

    @staticmethod
    def _policy_knobs(knobs, policy: dict):
        """The M policy settings in every chain's slots (dtypes and shapes kept)."""
        eps, steps = np.asarray(knobs.step_size), np.asarray(knobs.num_steps)
        e = np.broadcast_to(np.asarray(policy["eps"], eps.dtype), eps.shape).copy()
        s = np.broadcast_to(np.asarray(policy["L"], steps.dtype), steps.shape).copy()
        return knobs._replace(step_size=e, num_steps=s)

    # -- the Tuner protocol ------------------------------------------------------------------
    def initial_knobs(self, knobs):
        return super().initial_knobs(self._resize(knobs))

    def chunk_draws(self, knobs, chunk_size: int) -> int | None:
        """m (+1) per BO step in warm-up; the driver's own chunk lengths after."""
        if self.phases.policy is not None:
            return None
        return super().chunk_draws(knobs, chunk_size)

    def after_chunk(self, knobs, chunk: dict):
        self.phases, knobs = sir_policy.phase_step(
            self.phases, self.warmup, knobs, chunk, super().after_chunk, self.build_policy,
            self._policy_knobs)
        return knobs

    # -- the policy --------------------------------------------------------------------------
    def policy_scale(self) -> float:
        """c: the best observed reward, or 1 while none is positive."""
        best = self.max_reward
        return best if best is not None and best > 0 else 1.0

    def build_policy(self) -> dict:
        """Mahendran 2011, Alg. 2 on the current GP and box: the policy (the caller keeps
        it in `phases`)."""
        if self.gp is None or self.gp.n_obs == 0:
            warnings.warn("two-phase tuner: no finite reward in the adaptation phase; the "
                          "policy is uniform over the box", stacklevel=2)
        gp = self.gp if self.gp is not None else self.make_gp()
        rng = np.random.default_rng([self.seed, 0, _SIR_STREAM])
        c = self.policy_scale()
        policy = sir_policy.build_policy(
            lambda X: gp.predict(X)[0], self.lower, self.upper, self.policy_size, rng,
            candidates=self.candidates, n_candidates=self.n_candidates,
            temperature=self.temperature * c, method=self.resampling)
        policy.update(candidates=self.candidates, temperature=self.temperature, scale=c,
                      method=self.resampling, bo_steps=self.i)
        return policy

    # -- state -------------------------------------------------------------------------------
    def state_dict(self, history: bool = True) -> dict:
        state = {**super().state_dict(history), **sir_policy.phases_to_json(self.phases)}
        state["config"].update(policy_size=self.policy_size, candidates=self.candidates,
                               n_candidates=self.n_candidates, temperature=self.temperature,
                               resampling=self.resampling, warmup=self.warmup)
        return state

    def load_state_dict(self, state: dict, history: list[dict] | None = None) -> None:
        super().load_state_dict(state, history)
        self.phases = sir_policy.phases_from_json(state)


def policy_from_idata(idata) -> dict | None:
    """The frozen SIR policy of a two-phase run (the `tuning` group's final state), or None:
    {"eps", "L", "weight": M each, "n_candidates", "ess", "n_unique", "candidates",
    "temperature", "scale", "method", "bo_steps"}."""
    import json

    idata = getattr(idata, "idata", idata)
    if not hasattr(idata, "groups") or "tuning" not in idata.groups():
        return None
    state = json.loads(idata.tuning.attrs.get("tuner_state", "{}"))
    return state.get("policy")


# ---------------------------------------------------------------------------------------
# The options of the sampler "two_phase", and its tuner built from them
# ---------------------------------------------------------------------------------------
def make_tuner(options: dict, spec, flat, states):
    """The two-phase tuner of a run: `options` as config.json records them (checked by the
    tuner)."""
    # Default reward ESJD/√L, not Mahendran 2011's h(X): h(X) scores mixing per transition and
    # ignores the trajectory's cost, so for HMC it picks long trajectories and loses ESS per
    # gradient (measured in docs/tuning.md, "Two-phase mode").
    return TwoPhaseTuner(warmup=int(spec.warmup), thin=spec.thin, seed=spec.seed,
                         logdensity_fn=flat.logdensity_fn,
                         start_positions=np.asarray(states.position),
                         **{"reward": "esjd", **given(options)})
