"""Adaptive HMC: the step size ε and trajectory length L tuned by a GP bandit while it runs
(seed 000 ch. 3, Algs 2–3; seed 002 §3; the authors' code as recovered in SPECS.md §A).

After every chunk (a super-transition) the tuner

  1. computes the chunk's reward r_i (default ESJD/√L per transition, `rewards.esjd`),
  2. adds ((log ε_i, L_i), r_i) to the GP (`gp.GaussianProcess`; non-finite r_i skipped),
  3. draws u ~ U(0, 1); if u < p_i (`schedules`), sets (log ε, L) to the maximiser of the
     annealed UCB  s·μ + p_i·√β·σ  (or of EI) over the box (`acquisition.maximize`),
     ε = exp(γ₁), L = round(γ₂) (SPECS §A.2–A.4).

The same (ε, L) is broadcast to every chain; the chains pool their draws in the reward.

Decisions (docs/tuning.md):
- The GP gets the L actually run (rounded), so repeats of a setting merge exactly (gp.py).
- s = 4 / max_j r_j, the largest single reward so far (1 while that is ≤ 0); the authors'
  `update_model.m` keeps s = 1 until a reward beats r_1, we use r_1 from the start.
- EI uses the same rescaled mean: EI(s·μ, σ; y* = s·max_j μ(γ_j), ξ).
- A chunk with a non-finite reward sends the chain to the incumbent (the observed γ of
  highest posterior mean) if there is one, so a setting whose reward cannot be computed is
  not run forever.
- Default box: ε ∈ [ε₀/100, 10 ε₀] for the initial step size ε₀ (the user's `step_size`,
  0.1 unless given: [10⁻³, 1]); L ∈ {1, …, 100}. First γ: the lower corner (SPECS §A.4).
- budget=None: every chunk has chunk_size draws (the authors' ICML code: m HMC iterations
  per BO step, SPECS §A.4); budget=B: B // L draws (seed 000 §3.2 super-transitions).
- The uniform of step i is drawn from numpy's PCG64 seeded with (seed, i) (counter-based),
  so the state is JSON and a resumed run draws the same numbers.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import acquisition, schedules
from .gp import NOISE_VAR, SIGNAL_VAR, GaussianProcess
from .rewards import get_reward

LENGTHSCALE_FACTOR = 0.2  # ℓ_d = 0.2 × range_d (SPECS §A.2, "α = 0.2")
RESCALE = 4.0  # s = 4 / max reward (SPECS §A.2)
SAMPLING = 1


class GPBanditTuner:
    """Tune the shared (ε, L) of HMC by a GP bandit (the `Tuner` protocol, `tuning.base`).

    Args:
        eps_bounds: (lo, hi) for ε, searched on a log scale. Default (ε₀/100, 10ε₀).
        steps_bounds: (lo, hi) for L, searched continuously and rounded. Default (1, 100).
        reward: "esjd", "ess", "acf" or a callable f(chunk) -> float (see `rewards`).
        reward_options: keyword options of a built-in reward (e.g. {"l_min": 26}).
        schedule: "inverse_sqrt" (p_i = max{i−k+1,1}^{−1/2}), "exponential"
            (exp(−λ(i−1))), "power" (i^{−power}) or a callable i -> p_i.
        k, lam, power: the schedules' constants (100, 0.01, 0.5).
        budget: leapfrog steps per super-transition (chunk length budget // L), or None
            for chunk_size draws per chunk.
        acquisition: "ucb" (annealed, SPECS §A.3) or "ei".
        delta: δ of β (0.1). xi: ξ of EI (0.01).
        seed: seeds the proposal coin flips.
        start: first γ: "corner" (lower corner, SPECS §A.4), "center", or "knobs" (the
            user's step_size and steps, clipped to the box).
        adapt_in_sampling: keep adapting (with probability p_i) after warm-up, as the
            paper's infinite adaptation does (default True).
        maxfun, polish: DIRECT's evaluation budget (200) and the L-BFGS-B polish (on).
        signal_var, noise_var, lengthscale_factor: the GP's fixed hyperparameters.
    """

    name = "gp_bandit"

    def __init__(self, eps_bounds=None, steps_bounds=(1, 100), reward="esjd",
                 reward_options: dict | None = None, schedule="inverse_sqrt", k: int = 100,
                 lam: float = 0.01, power: float = 0.5, budget: int | None = None,
                 acquisition: str = "ucb", delta: float = 0.1, xi: float = 0.01,
                 seed: int = 0, start: str = "corner", adapt_in_sampling: bool = True,
                 maxfun: int = 200, polish: bool = True, signal_var: float = SIGNAL_VAR,
                 noise_var: float = NOISE_VAR,
                 lengthscale_factor: float = LENGTHSCALE_FACTOR):
        if eps_bounds is not None and not (0 < eps_bounds[0] <= eps_bounds[1]):
            raise ValueError(f"eps_bounds must satisfy 0 < lo <= hi, got {eps_bounds}")
        if not (1 <= math.ceil(steps_bounds[0]) <= math.floor(steps_bounds[1])):
            raise ValueError(f"steps_bounds must contain an integer >= 1, got {steps_bounds}")
        if budget is not None and budget < 1:
            raise ValueError(f"budget must be a positive number of leapfrog steps, got {budget}")
        if acquisition not in ("ucb", "ei"):
            raise ValueError(f"acquisition must be 'ucb' or 'ei', got {acquisition!r}")
        if start not in ("corner", "center", "knobs"):
            raise ValueError(f"start must be 'corner', 'center' or 'knobs', got {start!r}")
        self.eps_bounds = None if eps_bounds is None else tuple(map(float, eps_bounds))
        self.steps_bounds = tuple(map(float, steps_bounds))
        self.reward_fn = get_reward(reward, **(reward_options or {}))
        self.schedule = schedules.get_schedule(schedule, k=k, lam=lam, gamma=power)
        self.budget = None if budget is None else int(budget)
        self.acquisition, self.delta, self.xi = acquisition, float(delta), float(xi)
        self.seed, self.start = int(seed), start
        self.adapt_in_sampling = bool(adapt_in_sampling)
        self.maxfun, self.polish = int(maxfun), bool(polish)
        self.gp_options = dict(signal_var=signal_var, noise_var=noise_var)
        self.lengthscale_factor = float(lengthscale_factor)
        self.gp: GaussianProcess | None = None
        self.gamma: tuple[float, int] | None = None  # (log ε, L) for the next chunk
        self.i = 0  # super-transitions seen
        self.max_reward: float | None = None  # max_j r_j, for s (SPECS §A.2)
        self.history: list[dict] = []
        self._warned = False

    # -- the search box ------------------------------------------------------------------
    @property
    def lower(self) -> np.ndarray:
        return np.array([math.log(self.eps_bounds[0]), math.ceil(self.steps_bounds[0])])

    @property
    def upper(self) -> np.ndarray:
        return np.array([math.log(self.eps_bounds[1]), math.floor(self.steps_bounds[1])])

    def _make_gp(self) -> GaussianProcess:
        """ℓ = 0.2 × range per dimension (SPECS §A.2); a fixed dimension gets ℓ = 1."""
        width = self.upper - self.lower
        scales = np.where(width > 0, self.lengthscale_factor * width, 1.0)
        return GaussianProcess(scales, **self.gp_options)

    def _snap(self, x) -> tuple[float, int]:
        """ε stays continuous (log scale), L = round(γ₂), both clipped to the box (§A.2)."""
        lo, hi = self.lower, self.upper
        log_eps = float(np.clip(x[0], lo[0], hi[0]))
        steps = int(np.clip(math.floor(float(x[1]) + 0.5), lo[1], hi[1]))
        return log_eps, steps

    @property
    def step_size(self) -> float:
        return math.exp(self.gamma[0])

    @property
    def num_steps(self) -> int:
        return self.gamma[1]

    # -- the Tuner protocol --------------------------------------------------------------
    def initial_knobs(self, knobs):
        if not all(hasattr(knobs, f) for f in ("step_size", "num_steps")):
            from ..errors import BomcmcError

            raise BomcmcError("GPBanditTuner tunes HMC's step_size and num_steps; this "
                              "sampler's knobs have no num_steps (use sampler='hmc')")
        eps0 = float(np.mean(np.asarray(knobs.step_size)))
        if self.eps_bounds is None:
            self.eps_bounds = (eps0 / 100.0, eps0 * 10.0)
        self.gp = self._make_gp()
        if self.start == "corner":
            self.gamma = self._snap(self.lower)
        elif self.start == "center":
            self.gamma = self._snap((self.lower + self.upper) / 2)
        else:
            steps0 = float(np.mean(np.asarray(knobs.num_steps)))
            self.gamma = self._snap((math.log(eps0), steps0))
        return self._apply(knobs)

    def chunk_draws(self, knobs, chunk_size: int) -> int:
        if self.budget is None:
            return chunk_size
        draws = max(1, self.budget // self.num_steps)
        if draws > chunk_size and not self._warned:
            self._warned = True
            warnings.warn(f"super-transition of {draws} draws (budget {self.budget} // L "
                          f"{self.num_steps}) exceeds chunk_size {chunk_size} and is cut "
                          "short: use chunk_size >= budget // min L", stacklevel=2)
        return draws

    def after_chunk(self, knobs, chunk: dict):
        if chunk.get("phase") == SAMPLING and not self.adapt_in_sampling:
            return self._apply(knobs)
        self.i += 1
        eps, steps = self.step_size, self.num_steps
        reward = float(self.reward_fn({**chunk, "num_steps": steps, "step_size": eps}))
        p = float(self.schedule(self.i))
        finite = math.isfinite(reward)
        if finite:
            self.gp.add(self.gamma, reward)
            self.max_reward = reward if self.max_reward is None else max(self.max_reward, reward)
        u = np.random.default_rng([self.seed, self.i]).random()
        proposed = bool(u < p and self.gp.n_obs > 0)
        if proposed:
            self.gamma = self.propose(p)
        elif not finite and self.gp.n_obs > 0:
            self.gamma = self.incumbent()
        self.history.append({"i": self.i, "phase": int(chunk.get("phase", 0)), "eps": eps,
                             "L": steps, "reward": reward if finite else None, "p_i": p,
                             "proposed": proposed})
        return self._apply(knobs)

    def _apply(self, knobs):
        """Broadcast (ε, L) to the chain axis, keeping the knobs' dtypes and shapes."""
        eps = np.asarray(knobs.step_size)
        steps = np.asarray(knobs.num_steps)
        return knobs._replace(step_size=np.full(eps.shape, self.step_size, eps.dtype),
                              num_steps=np.full(steps.shape, self.num_steps, steps.dtype))

    # -- the bandit ----------------------------------------------------------------------
    def scale(self) -> float:
        """s = 4 / max_j r_j (SPECS §A.2), 1 while no reward is positive."""
        best = self.max_reward
        return RESCALE / best if best is not None and best > 0 else 1.0

    def acquisition_fn(self, p: float):
        """γ ↦ u(γ) for the current GP and annealing weight p."""
        s = self.scale()
        if self.acquisition == "ucb":
            b = schedules.beta(max(self.gp.n_obs, 1), d=2, delta=self.delta)

            def u(x):
                mean, var = self.gp.predict(x[None, :])
                return float(acquisition.ucb(mean[0], np.sqrt(var[0]), s, p, b))
        else:
            best = s * float(np.max(self.gp.predict(self.gp.X)[0]))

            def u(x):
                mean, var = self.gp.predict(x[None, :])
                return float(acquisition.expected_improvement(s * mean[0], np.sqrt(var[0]),
                                                              best, self.xi))
        return u

    def propose(self, p: float) -> tuple[float, int]:
        """argmax_box u(γ) by DIRECT + L-BFGS-B, snapped to the box and an integer L."""
        x, _ = acquisition.maximize(self.acquisition_fn(p), self.lower, self.upper,
                                    maxfun=self.maxfun, polish=self.polish)
        return self._snap(x)

    def incumbent(self) -> tuple[float, int]:
        """The observed γ with the highest posterior mean."""
        mean, _ = self.gp.predict(self.gp.X)
        return self._snap(self.gp.X[int(np.argmax(mean))])

    def best(self) -> dict:
        """{"step_size", "num_steps", "mean_reward"} of the incumbent."""
        log_eps, steps = self.incumbent()
        mean, _ = self.gp.predict(np.array([[log_eps, steps]]))
        return {"step_size": math.exp(log_eps), "num_steps": steps, "mean_reward": float(mean[0])}

    # -- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "name": self.name, "i": self.i, "seed": self.seed, "max_reward": self.max_reward,
            "eps_bounds": None if self.eps_bounds is None else list(self.eps_bounds),
            "steps_bounds": list(self.steps_bounds),
            "gamma": None if self.gamma is None else [self.gamma[0], self.gamma[1]],
            "gp": None if self.gp is None else self.gp.state_dict(),
            "history": [dict(h) for h in self.history],
        }

    def load_state_dict(self, state: dict) -> None:
        self.i, self.seed = int(state["i"]), int(state["seed"])
        self.max_reward = state["max_reward"]
        self.eps_bounds = None if state["eps_bounds"] is None else tuple(state["eps_bounds"])
        self.steps_bounds = tuple(state["steps_bounds"])
        self.gamma = None if state["gamma"] is None else (float(state["gamma"][0]),
                                                           int(state["gamma"][1]))
        self.gp = None
        if state["gp"] is not None:
            self.gp = self._make_gp()
            self.gp.load_state_dict(state["gp"])
        self.history = [dict(h) for h in state["history"]]
