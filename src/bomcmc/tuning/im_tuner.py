"""Tuning the Intracluster-Move sampler's θ = (γ, k) by Bayesian optimisation.

Two tuners over the box γ ∈ [γ_lo, γ_hi] × k ∈ {k_lo..k_hi} of `kernels/intracluster.py`,
whose knobs hold a policy of M settings (every move draws one uniformly):

- `IMBanditTuner`: the GP bandit of adaptive HMC (`gp_bandit.GPBanditTuner`, Wang, Mohamed &
  de Freitas 2013) over the box (γ, k) in place of (log ε, L): after every chunk the reward goes
  into the GP and, with the annealed probability p_i, θ moves to the maximiser of UCB. All
  M slots hold the one θ. It adapts in sampling too unless told not to.
- `IMBayesOptTuner`: Mahendran (2011, ch. 3-4) and Mahendran et al. (2012), "IMBayesOpt".
  Adaptation phase: the warm-up is cut into I BO steps of m moves; each step's reward goes
  into the GP and the next θ maximises Expected Improvement (ξ = 0.01) by DIRECT. Sampling
  phase: the GP is frozen and the SIR policy built once from its mean: candidates on the
  grid of every integer k × 100 evenly spaced γ, weights ∝ exp(μ/T) with T = 0.1 (the
  authors' exp(10 μ)), M settings drawn by systematic resampling (Kitagawa 1996). Every
  later move draws one of the M uniformly: a fixed mixture of IM kernels, each exact, so the
  sampling phase is an ordinary Markov chain.

The reward is h of the energy series (Mahendran 2011 §3.1.1, `rewards.energy_acf`): one
minus the mean absolute auto-correlation up to lag 100, averaged over the chunk's suffixes of
at least 26 moves and over chains. The chains share θ and pool their draws in the reward.
`reward="energy_jump"` (`rewards.energy_jump`) is the variance of the energy's jump per move
instead, which has units: the GP sees it standardised (`standardize`), the policy's T is 0.2
on that scale, and the first block, which starts from the run's initial state, gives no
reward (`burn_in_steps`; docs/spins.md, "The reward's noise against its signal").

Decisions (docs/spins.md, "Tuning"):
- GP of the authors' code: zero mean, signal variance 1, noise variance 0.1, SE-ARD length
  scales 0.1 × the box's widths; the GP sees h itself (h ≤ 1, no rescaling).
- Not the authors': through the sampler `im_bayesopt` (gamma_scale "beta", its default;
  `im_bandit` takes it too) the GP sees γ stretched around the model's β (`im_box`'s warp),
  since the IM move's acceptance falls off within a few hundredths of β, narrower than the
  length scale in linear γ; measured better on all three of Mahendran's models
  (docs/spins.md, "γ stretched around β"). The tuner classes default to the linear axis.
- Not the authors' either: the sampler `im_bayesopt`'s reward is "energy_jump", with T = 0.2
  on the standardised scale (T = 1 would be Alg. 2's), since 2026-12-02: at Mahendran's
  budget it is level with the expert on the 2D grid and below the default it replaced (h,
  T = 0.1) on all three models over five trials and held-out seeds (docs/spins.md, "The
  energy jump with a sharper policy: the default since 2026-12-02"). The classes default to h.
- First θ: the box's centre (the authors' code).
- M = 1000 settings (the authors' code draws 1000; Mahendran 2011 used M = N, the grid's
  size, which makes the policy no better resolved, only larger).
- The chain is not reset to its start after adaptation (the authors' code resets it): the
  warm-up is the burn-in, as for every other sampler here.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import BomcmcError
from . import sir_policy
from .gp import GaussianProcess
from .bandit import KnobBox, lower, to_knobs, upper
from .gp_bandit import GPBanditTuner, box_of_state
from .rewards import get_reward

# rewards with units, which the GP sees standardised (`gp.GaussianProcess`); h (≤ 1, no
# units) is seen as it is, as in the authors' code
REWARDS_WITH_UNITS = ("esjd", "energy_jump")
POLICY_SIZE = 1000  # M
TEMPERATURE = 0.1  # T of w ∝ exp(μ / T): the authors' exp(10 μ)
# T on the standardised scale: sharper than Alg. 2's T = 1 of Mahendran (2011), whose policy
# spread over settings that mix worse than the GP's peak (module docstring)
STANDARDIZED_TEMPERATURE = 0.2
MAHENDRAN_REWARD = "energy_acf"  # h: the tuner classes' reward, im_bayesopt's before 2026-12-02
SAMPLER_REWARD = "energy_jump"  # the sampler im_bayesopt's reward
N_GAMMA = 100  # γ values of the candidate grid (Mahendran 2011 §4.2.1)
BO_STEP_DRAWS = 100  # m: moves per BO step (Mahendran 2011 §4.2.1)
MAX_BO_STEPS = 100  # I (Mahendran 2011 §4.2.1)
# the GP of the authors' code for Mahendran et al. 2012
SIGNAL_VAR, NOISE_VAR, LENGTHSCALE_FACTOR = 1.0, 0.1, 0.1
_SIR_STREAM = 0x52  # numpy seed [seed, 0, _SIR_STREAM] for the resampling
WARP_WIDTH = 100.0  # `im_box`: the warp's scale s = c / WARP_WIDTH


def check_box(k_bounds, gamma_bounds) -> tuple[tuple[int, int], tuple[float, float]]:
    """((k_lo, k_hi), (γ_lo, γ_hi)) checked: integers 1 ≤ k_lo ≤ k_hi, finite 0 ≤ γ_lo ≤ γ_hi."""
    try:
        k_lo, k_hi = (float(v) for v in k_bounds)
        g_lo, g_hi = (float(v) for v in gamma_bounds)
    except (TypeError, ValueError):
        raise BomcmcError("k_bounds and gamma_bounds must be pairs of numbers") from None
    if not (math.isfinite(k_lo) and math.isfinite(k_hi) and k_lo == int(k_lo)
            and k_hi == int(k_hi) and 1 <= k_lo <= k_hi):
        raise BomcmcError(f"k_bounds must be integers 1 <= lo <= hi, got {tuple(k_bounds)}")
    if not (math.isfinite(g_hi) and 0 <= g_lo <= g_hi):
        raise BomcmcError(f"gamma_bounds must satisfy 0 <= lo <= hi < inf, got "
                          f"{tuple(gamma_bounds)}")
    return (int(k_lo), int(k_hi)), (g_lo, g_hi)


def im_box(k_bounds, gamma_bounds, warp_at: float | None = None) -> KnobBox:
    """The IM sampler's box (`check_box`): k an integer; γ linear, or with `warp_at` = c
    searched in u = sign(γ − c) log(1 + |γ − c| / (c / 100)) (`knob_box.KnobBox.warp`), which
    shrinks the GP's length scale in γ near c (on the 2D grid's box, 0.007 next to β
    against 0.27 at γ = 0)."""
    (k_lo, k_hi), (g_lo, g_hi) = check_box(k_bounds, gamma_bounds)
    warp = ()
    if warp_at is not None:
        if not (isinstance(warp_at, (int, float)) and math.isfinite(warp_at) and warp_at > 0):
            raise BomcmcError(f"the γ warp's centre must be a positive number, got {warp_at!r}")
        warp = ((float(warp_at), float(warp_at) / WARP_WIDTH), None)
    return KnobBox(("gamma", "k"), (g_lo, float(k_lo)), (g_hi, float(k_hi)), (False, True),
                   (False, False), warp)


class IMBanditTuner(GPBanditTuner):
    """The GP bandit over θ = (γ, k) of the IM sampler (module docstring): `GPBanditTuner`
    over the box `im_box`. Its options apply (reward default "energy_acf", schedule,
    acquisition "ucb", start "center", ...)."""

    name = "im_bandit"
    history_keys = ("gamma", "k")

    def __init__(self, k_bounds, gamma_bounds, reward=MAHENDRAN_REWARD, start: str = "center",
                 warp_at: float | None = None, **options):
        super().__init__(reward=reward, start=start,
                         box=im_box(k_bounds, gamma_bounds, warp_at), **options)
        self.knobs_hint = (f"{type(self).__name__} tunes the IM sampler's k and gamma; this "
                           "sampler has no such knobs")

    @property
    def gamma(self) -> float:
        return float(self.point[0])

    @property
    def k(self) -> int:
        return int(self.point[1])

    @property
    def gamma_bounds(self) -> tuple[float, float]:
        box = self.bandit.box
        return box.lower[0], box.upper[0]

    def chunk_draws(self, knobs, chunk_size: int) -> int | None:
        """m = 100 moves per chunk, the block whose h is one reward (Mahendran 2011 §4.2.1)."""
        return min(chunk_size, BO_STEP_DRAWS)


class IMBayesOptTuner(IMBanditTuner):
    """IMBayesOpt (module docstring): EI in the warm-up's BO steps, then a frozen SIR policy
    of M settings. Needs warmup ≥ 1. Holds the bandit's state and `phases`
    (`sir_policy.Phases`).

    Args:
        k_bounds, gamma_bounds: the box.
        warmup: the run's warm-up moves (the adaptation phase).
        bo_steps: I, default min(100, warmup // 100) (at least 1); each BO step has
            m = warmup // I moves (the first warmup mod I steps one more).
        policy_size: M (1000). temperature: T (0.1; 0.2 with a standardised GP). n_gamma:
            the grid's γ values (100).
        resampling: "systematic" or "multinomial".
        standardize: fit the GP to the rewards standardised by their mean and sd over the
            points tried (`gp.GaussianProcess`). Default (None): for the rewards with units
            ("esjd", "energy_jump"), not for h or a user's callable.
        burn_in_steps: the first BO steps whose reward is not observed, because their blocks
            start from the run's initial state (with "energy_jump" the relaxation's jumps
            score as the best mixing in the box). Default (None): 1 for the rewards with
            units (0 when there is one BO step), 0 for h (whose relaxing blocks score low)
            and a user's callable.
        reward_defaulted: the reward is the sampler's default, not the user's (set by the
            sampler's factory): a run saved before 2026-12-02 without its reward's name used
            h then, and resumes with it (`load_state_dict`).
        other keyword arguments: `IMBanditTuner`'s (reward, seed, xi, maxfun, ...).
    """

    name = "im_bayesopt"

    def __init__(self, k_bounds, gamma_bounds, *, warmup: int, bo_steps: int | None = None,
                 policy_size: int = POLICY_SIZE, temperature: float | None = None,
                 n_gamma: int = N_GAMMA, resampling: str = "systematic",
                 acquisition: str = "ei", signal_var: float = SIGNAL_VAR,
                 noise_var: float = NOISE_VAR, lengthscale_factor: float = LENGTHSCALE_FACTOR,
                 standardize: bool | None = None, burn_in_steps: int | None = None,
                 reward_defaulted: bool = False, **options):
        warmup = int(warmup)
        if warmup < 1:
            raise BomcmcError("IMBayesOpt adapts in warm-up: it needs warmup >= 1")
        if bo_steps is None:
            bo_steps = max(1, min(MAX_BO_STEPS, warmup // BO_STEP_DRAWS))
        for label, v in (("bo_steps", bo_steps), ("policy_size", policy_size),
                         ("n_gamma", n_gamma)):
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise BomcmcError(f"{label} must be a positive integer, got {v!r}")
        has_units = options.get("reward") in REWARDS_WITH_UNITS
        if standardize is None:
            standardize = has_units
        if not isinstance(standardize, bool):
            raise BomcmcError(f"standardize must be True or False, got {standardize!r}")
        if burn_in_steps is None:  # one step (when there are two) for the rewards with units
            burn_in_steps = 1 if has_units and min(int(bo_steps), warmup) > 1 else 0
        if (isinstance(burn_in_steps, bool) or int(burn_in_steps) != burn_in_steps
                or not 0 <= burn_in_steps < min(int(bo_steps), warmup)):
            raise BomcmcError("burn_in_steps must be an integer in [0, the BO steps = "
                              f"{min(int(bo_steps), warmup)}), got {burn_in_steps!r}")
        if standardize and options.get("gp", "full") != "full":
            raise BomcmcError("standardised rewards need the full GP (gp='full')")
        if temperature is None:
            temperature = STANDARDIZED_TEMPERATURE if standardize else TEMPERATURE
        if not (isinstance(temperature, (int, float)) and math.isfinite(temperature)
                and temperature > 0):
            raise BomcmcError(f"temperature must be a positive number, got {temperature!r}")
        if resampling not in sir_policy.RESAMPLING:
            raise BomcmcError(f"resampling must be one of {', '.join(sir_policy.RESAMPLING)}, "
                              f"got {resampling!r}")
        # p_i = i⁰ = 1: every BO step proposes; s = 1: the GP's mean is read as it is
        super().__init__(k_bounds, gamma_bounds, schedule="power", power=0.0,
                         acquisition=acquisition, adapt_in_sampling=False,
                         signal_var=signal_var, noise_var=noise_var,
                         lengthscale_factor=lengthscale_factor, rescale=None,
                         standardize=standardize, **options)
        self.burn_in_steps = int(burn_in_steps)
        reward = options.get("reward", MAHENDRAN_REWARD)
        self.reward_name = reward if isinstance(reward, str) else None  # None: a callable
        self.reward_defaulted = bool(reward_defaulted)
        self._block_reward, self.reward_fn = self.reward_fn, self._observed_reward
        self.warmup, self.bo_steps = warmup, min(int(bo_steps), warmup)
        self.policy_size, self.temperature = int(policy_size), float(temperature)
        self.n_gamma, self.resampling = int(n_gamma), resampling
        self.phases = sir_policy.Phases()

    @property
    def policy(self) -> dict | None:
        return self.phases.policy

    @property
    def transitions(self) -> int:
        return self.phases.transitions

    def _observed_reward(self, chunk: dict) -> float:
        """The block's reward, or NaN (none: the GP skips it) in the first `burn_in_steps`
        BO steps (`self.i` counts the current step from 1)."""
        return float("nan") if self.i <= self.burn_in_steps else self._block_reward(chunk)

    # -- knobs -------------------------------------------------------------------------------
    def _resize(self, knobs):
        k, g = np.asarray(knobs.k), np.asarray(knobs.gamma)
        shape = k.shape[:-1] + (self.policy_size,)
        return knobs._replace(k=np.zeros(shape, k.dtype), gamma=np.zeros(shape, g.dtype))

    @staticmethod
    def _policy_knobs(knobs, policy: dict):
        k, g = np.asarray(knobs.k), np.asarray(knobs.gamma)
        return knobs._replace(
            k=np.broadcast_to(np.asarray(policy["k"], k.dtype), k.shape).copy(),
            gamma=np.broadcast_to(np.asarray(policy["gamma"], g.dtype), g.shape).copy())

    # -- the Tuner protocol ------------------------------------------------------------------
    def initial_knobs(self, knobs):
        knobs = super().initial_knobs(self._resize(knobs))
        policy = self.phases.policy
        return self._policy_knobs(knobs, policy) if policy is not None else knobs

    def chunk_draws(self, knobs, chunk_size: int) -> int | None:
        """m (or m + 1) moves per BO step in warm-up; the driver's own lengths after."""
        if self.phases.policy is not None:
            return None
        m, extra = divmod(self.warmup, self.bo_steps)
        return min(chunk_size, m + (1 if self.i < extra else 0))

    def after_chunk(self, knobs, chunk: dict):
        self.phases, knobs = sir_policy.phase_step(
            self.phases, self.warmup, knobs, chunk, super().after_chunk, self.build_policy,
            self._policy_knobs)
        return knobs

    # -- the policy --------------------------------------------------------------------------
    def build_policy(self) -> dict:
        """Mahendran 2011, Alg. 2 on the current GP: {"gamma", "k", "weight": M each,
        "n_candidates", "ess", "n_unique", "temperature", "bo_steps"} (the caller keeps it
        in `phases`)."""
        if self.gp is None or self.gp.n_obs == 0:
            warnings.warn("IMBayesOpt: no finite reward in the adaptation phase; the policy is "
                          "uniform over the box", stacklevel=2)
        gp = self.gp if self.gp is not None else self.make_gp()
        us, ks = sir_policy.grid_candidates(self.lower, self.upper, self.n_gamma)
        mu = gp.predict(np.column_stack([us, ks.astype(float)]))[0]
        gammas = np.array([to_knobs(self.bandit.box, (u, 1))[0] for u in us])
        w = sir_policy.sir_weights(mu, self.temperature)
        rng = np.random.default_rng([self.seed, 0, _SIR_STREAM])
        idx = sir_policy.resample(w, self.policy_size, rng, self.resampling)
        return {"gamma": gammas[idx].tolist(), "k": [int(v) for v in ks[idx]],
                "weight": w[idx].tolist(), "n_candidates": int(w.size),
                "ess": float(1.0 / np.sum(w * w)),
                "n_unique": int(np.unique(idx).size), "temperature": self.temperature,
                "bo_steps": self.i}

    # -- state -------------------------------------------------------------------------------
    def state_dict(self, history: bool = True) -> dict:
        state = {**super().state_dict(history), **sir_policy.phases_to_json(self.phases)}
        state["config"].update(policy_size=self.policy_size, temperature=self.temperature,
                               n_gamma=self.n_gamma, resampling=self.resampling,
                               warmup=self.warmup, bo_steps=self.bo_steps,
                               burn_in_steps=self.burn_in_steps, reward=self.reward_name)
        return state

    def load_state_dict(self, state: dict, history: list[dict] | None = None) -> None:
        """Restore `state`, with the reward, T and burn-in the run started with, so that a run
        resumes as it began whatever the defaults are now."""
        super().load_state_dict(state, history)
        self.phases = sir_policy.phases_from_json(state)
        cfg = state.get("config") or {}
        name = cfg.get("reward", MAHENDRAN_REWARD if self.reward_defaulted else self.reward_name)
        if name is not None and name != self.reward_name:
            self._block_reward, self.reward_name = get_reward(name), name
        if "temperature" in cfg:
            self.temperature = float(cfg["temperature"])
        if cfg:  # burn_in_steps is saved since 2026-12-01; every block was observed before
            self.burn_in_steps = int(cfg.get("burn_in_steps", 0))


def surface_grid(state: dict, n_gamma: int = N_GAMMA) -> tuple[np.ndarray, np.ndarray]:
    """The grid `gp_mean_surface` evaluates on, in the GP's coordinates: n_gamma points
    evenly spaced on the γ axis (uneven in γ where it is stretched around β) and every
    integer k of the box."""
    box = box_of_state(state)
    (k_lo, k_hi), _ = check_box((box.lower[1], box.upper[1]), (box.lower[0], box.upper[0]))
    (u_lo, _), (u_hi, _) = lower(box), upper(box)  # γ's search coordinates
    return np.linspace(u_lo, u_hi, int(n_gamma)), np.arange(k_lo, k_hi + 1)


def gp_mean_surface(state: dict, n_gamma: int = N_GAMMA):
    """(γ grid, k grid, μ (n_k, n_gamma)) of a saved IM tuner state: the GP mean over the box
    (Mahendran 2011 Figs 4.3, 4.6, 4.9) on `surface_grid`, with the tried points in
    state["gp"] (in the GP's coordinates)."""
    box = box_of_state(state)
    us, ks = surface_grid(state, n_gamma)
    cfg = state.get("config") or {}
    width = np.array([us[-1] - us[0], ks[-1] - ks[0]], dtype=float)
    factor = float(cfg.get("lengthscale_factor", LENGTHSCALE_FACTOR))
    gp = GaussianProcess(np.where(width > 0, factor * width, 1.0),
                         signal_var=float(cfg.get("signal_var", SIGNAL_VAR)),
                         noise_var=float(cfg.get("noise_var", NOISE_VAR)),
                         standardize=bool(cfg.get("standardize", False)))
    gp.load_state_dict(state["gp"])
    uu, kk = np.meshgrid(us, ks)
    mu = gp.predict(np.column_stack([uu.ravel(), kk.ravel().astype(float)]))[0]
    return np.array([to_knobs(box, (u, 1))[0] for u in us]), ks, mu.reshape(kk.shape)
