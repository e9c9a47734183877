"""Adaptive HMC: the step size ε and trajectory length L tuned by a GP bandit while it runs
(Wang 2012, ch. 3, Algs 2–3; Wang, Mohamed & de Freitas 2013 §3; constants and details from
the authors' MATLAB code for the latter, docs/references.md).

After every chunk (a super-transition) the tuner

  1. computes the chunk's reward r_i (default ESJD/√L per transition, `rewards.esjd`),
  2. adds ((log ε_i, L_i), r_i) to the GP (`gp.GaussianProcess`; non-finite r_i skipped),
  3. draws u ~ U(0, 1); if u < p_i (`schedules`), sets (log ε, L) to the maximiser of the
     annealed UCB  s·μ + p_i·√β·σ  (or of EI) over the box (`acquisition.maximize`),
     ε = exp(γ₁), L = round(γ₂) (as the authors' `ahmc.m` does: (log ε, L) searched).

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
  0.1 unless given: [10⁻³, 1]); L ∈ {1, …, 100}. First γ: the lower corner (`ahmc.m`).
- budget=None: every chunk has chunk_size draws (the authors' ICML code: m HMC iterations
  per BO step, `ahmc.m`); budget=B: B // L draws (Wang 2012 §3.2 super-transitions).
- The uniform of step i is the i-th draw of numpy's PCG64(seed), reached by an exact
  `advance` after a resume (`coin`), so the state is JSON and a resumed run draws the same
  numbers.

Storage: the driver saves `state_dict(history=False)` and this chunk's `chunk_history()`
with every chunk, rebuilds the full history on resume (`load_state_dict(state, history)`)
and writes it as the InferenceData group `tuning` at the end; `tuning_from_idata` and
`summarize_tuning` (`tuning/history.py`) read that group back. `tuning/ahmc_tuner.py` builds
on this class
(`AHMCTuner`: the paper's burn-in schedule, a relative box, a diagonal metric with GP
resets via `reset_gp`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import schedules  # acquisition (scipy.optimize, slow to import) is imported when first used
from .base import SAMPLING, Tuner
from .gp import NOISE_VAR, SIGNAL_VAR, GaussianProcess
from .rewards import get_reward

# ℓ_d = 0.2 × range_d ("α = 0.2") and s = 4 / max reward (`update_model.m`): the authors' code
# for Wang, Mohamed & de Freitas 2013
LENGTHSCALE_FACTOR = 0.2
RESCALE = 4.0


_BLAS = None


def _one_blas_thread():
    """A context with BLAS on one thread (threadpoolctl, a scikit-learn dependency): the
    proposal's linear algebra is tiny, and a multi-threaded OpenBLAS spinning up its threads
    for each L-BFGS-B iteration made it several times slower (docs/tuning.md, "One BLAS
    thread for a proposal")."""
    global _BLAS
    import contextlib

    if _BLAS is None:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS = ThreadpoolController()
        except Exception:  # noqa: BLE001 - optional: without it, BLAS keeps its threads
            _BLAS = False
    return _BLAS.limit(limits=1, user_api="blas") if _BLAS else contextlib.nullcontext()


class GPBanditTuner(Tuner):
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
        acquisition: "ucb" (annealed, Wang, Mohamed & de Freitas 2013 §3) or "ei".
        delta: δ of β (0.1). xi: ξ of EI (0.01).
        seed: seeds the proposal coin flips.
        start: first γ: "corner" (lower corner, as the authors' `ahmc.m`), "center", or "knobs" (the
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
        self.point: tuple[float, int] | None = None  # (log ε, L) for the next chunk
        self.i = 0  # super-transitions seen
        self.max_reward: float | None = None  # max_j r_j, for s (the authors' `update_model.m`)
        self.history: list[dict] = []
        self._flushed = 0  # history entries already handed to the driver (chunk_history)
        self._warned = False
        self._coin_rng, self._coin_next = None, None  # the coins' generator (`coin`)

    # -- the search box ------------------------------------------------------------------
    @property
    def lower(self) -> np.ndarray:
        return np.array([math.log(self.eps_bounds[0]), math.ceil(self.steps_bounds[0])])

    @property
    def upper(self) -> np.ndarray:
        return np.array([math.log(self.eps_bounds[1]), math.floor(self.steps_bounds[1])])

    def reset_gp(self) -> None:
        """Forget every observation (a new GP over the current box) and the rescaling
        max_j r_j; the step counter i, hence p_i, goes on. For when the rewards seen so far
        no longer describe the sampler, e.g. after a change of the mass matrix."""
        self.gp = self._make_gp()
        self.max_reward = None

    def _make_gp(self) -> GaussianProcess:
        """ℓ = 0.2 × range per dimension (the authors' code for Wang, Mohamed & de Freitas
        2013); a fixed dimension gets ℓ = 1."""
        width = self.upper - self.lower
        scales = np.where(width > 0, self.lengthscale_factor * width, 1.0)
        return GaussianProcess(scales, **self.gp_options)

    def _snap(self, x) -> tuple[float, int]:
        """ε stays continuous (log scale), L = round(γ₂), both clipped to the box (as the
        authors' `ahmc.m`)."""
        lo, hi = self.lower, self.upper
        log_eps = float(np.clip(x[0], lo[0], hi[0]))
        steps = int(np.clip(math.floor(float(x[1]) + 0.5), lo[1], hi[1]))
        return log_eps, steps

    @property
    def step_size(self) -> float:
        return math.exp(self.point[0])

    @property
    def num_steps(self) -> int:
        return self.point[1]

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
        self.point = self.start_point(eps0, float(np.mean(np.asarray(knobs.num_steps))))
        return self._apply(knobs)

    def start_point(self, eps0: float, steps0: float) -> tuple[float, int]:
        """The first γ of a (fresh) GP: the box's lower corner, its centre, or (ε₀, L₀)."""
        if self.start == "corner":
            return self._snap(self.lower)
        if self.start == "center":
            return self._snap((self.lower + self.upper) / 2)
        return self._snap((math.log(eps0), steps0))

    def chunk_draws(self, knobs, chunk_size: int) -> int:
        if self.budget is None:
            return chunk_size
        draws = max(1, self.budget // self.num_steps)
        if draws > chunk_size:
            self.warn_once(f"super-transition of {draws} draws (budget {self.budget} // L "
                           f"{self.num_steps}) exceeds chunk_size {chunk_size} and is cut "
                           "short: use chunk_size >= budget // min L")
        return draws

    def warn_once(self, message: str) -> None:
        """A warning the first time only (the driver asks for chunk lengths every chunk)."""
        if not self._warned:
            self._warned = True
            warnings.warn(message, stacklevel=3)

    def after_chunk(self, knobs, chunk: dict):
        if chunk.get("phase") == SAMPLING and not self.adapt_in_sampling:
            return self._apply(knobs)
        self.i += 1
        entry = self.observe(chunk)
        self.move(entry)
        self.history.append(entry)
        return self._apply(knobs)

    def observe(self, chunk: dict, point: tuple[float, int] | None = None) -> dict:
        """Steps 1–2 for chunk i = self.i, run at `point` (default: the current γ): its reward,
        into the GP if finite. Returns the history entry, with "proposed" still False."""
        point = self.point if point is None else point
        eps, steps = math.exp(point[0]), point[1]
        reward = float(self.reward_fn({**chunk, "num_steps": steps, "step_size": eps}))
        p = float(self.schedule(self.i))
        if math.isfinite(reward):
            self.gp.add(point, reward)
            self.max_reward = reward if self.max_reward is None else max(self.max_reward, reward)
        return {"i": self.i, "phase": int(chunk.get("phase", 0)), "eps": eps, "L": steps,
                "reward": reward if math.isfinite(reward) else None, "p_i": p,
                "proposed": False}

    def move(self, entry: dict) -> None:
        """Step 3: with probability p_i the maximiser of the acquisition; after a non-finite
        reward, the incumbent."""
        p = entry["p_i"]
        u = self.coin(self.i)
        proposed = bool(u < p and self.gp.n_obs > 0)
        if proposed:
            self.point = self.propose(p)
        elif entry["reward"] is None and self.gp.n_obs > 0:
            self.point = self.incumbent()
        entry["proposed"] = proposed

    def coin(self, i: int) -> float:
        """u_i ~ U(0, 1): the i-th draw of PCG64(seed) (i ≥ 1), from a generator kept between
        calls and rebuilt by an exact `advance` when i is not the next one (after a resume),
        so a resumed run draws the same u_i without storing the generator."""
        if self._coin_rng is None or self._coin_next != i:
            bits = np.random.PCG64(self.seed)
            bits.advance(i - 1)  # one 64-bit output per float64 draw
            self._coin_rng = np.random.Generator(bits)
        self._coin_next = i + 1
        return float(self._coin_rng.random())

    def _apply(self, knobs):
        """Broadcast (ε, L) to the chain axis, keeping the knobs' dtypes and shapes."""
        eps = np.asarray(knobs.step_size)
        steps = np.asarray(knobs.num_steps)
        return knobs._replace(step_size=np.full(eps.shape, self.step_size, eps.dtype),
                              num_steps=np.full(steps.shape, self.num_steps, steps.dtype))

    # -- the bandit ----------------------------------------------------------------------
    def scale(self) -> float:
        """s = 4 / max_j r_j (the authors' `update_model.m`), 1 while no reward is positive."""
        best = self.max_reward
        return RESCALE / best if best is not None and best > 0 else 1.0

    def acquisition_fn(self, p: float, grad: bool = False):
        """γ ↦ u(γ) for the current GP and annealing weight p; with grad=True, γ ↦ (u, ∇u).

        Scalar arithmetic on the GP's one-point predictor (`GaussianProcess.point_predictor`),
        with the formulas of `acquisition`:
            UCB: u = s·μ + p·√β·σ,            ∇u = s∇μ + p√β ∇σ²/(2σ)
            EI:  u = gΦ(Z) + σφ(Z), g = sμ − y* − ξ, Z = g/σ;  ∇u = Φ(Z) s∇μ + φ(Z) ∇σ
        """
        from . import acquisition

        s = self.scale()
        predict = self.gp.point_predictor(grad=grad)
        if self.acquisition == "ucb":
            beta = schedules.beta(max(self.gp.n_obs, 1), d=2, delta=self.delta)

            def value(mean, var):
                return acquisition.ucb(mean, math.sqrt(var), s, p, beta)

            def slope(mean, var):  # (∂u/∂μ, ∂u/∂σ)
                return acquisition.ucb_slope(s, p, beta)
        else:
            best = s * float(np.max(self.gp.mean(self.gp.X))) + self.xi  # y* + ξ

            def value(mean, var):
                return acquisition.improvement(s * mean - best, math.sqrt(var))

            def slope(mean, var):
                return acquisition.improvement_slope(s * mean - best, math.sqrt(var), s)

        if not grad:
            def u(x):
                return value(*predict(np.asarray(x, dtype=float)))

            return u

        def u_and_grad(x):
            mean, var, dmean, dvar = predict(np.asarray(x, dtype=float))
            du_dmean, du_dsd = slope(mean, var)
            sd = math.sqrt(var)
            dsd = dvar / (2.0 * sd) if sd > 0.0 else np.zeros_like(dvar)
            return value(mean, var), du_dmean * dmean + du_dsd * dsd

        return u_and_grad

    def propose(self, p: float) -> tuple[float, int]:
        """argmax u(γ) over the search region (`search_box`) by DIRECT + L-BFGS-B (analytic
        gradient), snapped to the box and an integer L."""
        from . import acquisition

        lower, upper = self.search_box()
        with _one_blas_thread():
            x, _ = acquisition.maximize(self.acquisition_fn(p), lower, upper,
                                        maxfun=self.maxfun, polish=self.polish,
                                        value_and_grad=self.acquisition_fn(p, grad=True))
        return self._snap(x)

    def search_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Where proposals are sought: the whole box (subclasses may narrow it)."""
        return self.lower, self.upper

    def incumbent(self) -> tuple[float, int]:
        """The observed γ with the highest posterior mean."""
        return self._snap(self.gp.X[int(np.argmax(self.gp.mean(self.gp.X)))])

    def best(self) -> dict:
        """{"step_size", "num_steps", "mean_reward"} of the incumbent."""
        log_eps, steps = self.incumbent()
        mean, _ = self.gp.predict(np.array([[log_eps, steps]]))
        return {"step_size": math.exp(log_eps), "num_steps": steps, "mean_reward": float(mean[0])}

    # -- state ---------------------------------------------------------------------------
    def chunk_history(self) -> list[dict]:
        """The history entries added since the last call (at most one per chunk). The driver
        stores them with each chunk, and `state_dict(history=False)` beside them, so a
        chunk record stays small however long the run; it rebuilds the full history from
        the chunks (`load_state_dict(state, history)`, the InferenceData's `tuning` group)."""
        new = [dict(h) for h in self.history[self._flushed:]]
        self._flushed = len(self.history)
        return new

    def state_dict(self, history: bool = True) -> dict:
        """JSON-able state. `history=False` leaves the history out (what the driver saves
        with every chunk); "config" records the fixed hyperparameters, which
        `load_state_dict` does not need but `from_state` (plots) does."""
        state = {
            "name": self.name, "i": self.i, "seed": self.seed, "max_reward": self.max_reward,
            "eps_bounds": None if self.eps_bounds is None else list(self.eps_bounds),
            "steps_bounds": list(self.steps_bounds),
            "point": None if self.point is None else [self.point[0], self.point[1]],
            "gp": None if self.gp is None else self.gp.state_dict(),
            "config": {**self.gp_options, "lengthscale_factor": self.lengthscale_factor,
                       "acquisition": self.acquisition, "delta": self.delta, "xi": self.xi},
        }
        if history:
            state["history"] = [dict(h) for h in self.history]
        return state

    def load_state_dict(self, state: dict, history: list[dict] | None = None) -> None:
        """Restore `state`; the history is `history` when given (rebuilt from the chunks),
        else the state's own (a `state_dict()` with history), else empty."""
        self.i, self.seed = int(state["i"]), int(state["seed"])
        self._coin_rng = self._coin_next = None
        self.max_reward = state["max_reward"]
        self.eps_bounds = None if state["eps_bounds"] is None else tuple(state["eps_bounds"])
        self.steps_bounds = tuple(state["steps_bounds"])
        point = state.get("point", state.get("gamma"))  # "gamma" in runs of bomcmc 0.1.0
        self.point = None if point is None else (float(point[0]), int(point[1]))
        self.gp = None
        if state["gp"] is not None:
            self.gp = self._make_gp()
            self.gp.load_state_dict(state["gp"])
        if history is None:
            history = state.get("history", [])
        self.history = [dict(h) for h in history]
        self._flushed = len(self.history)

    @classmethod
    def from_state(cls, state: dict, history: list[dict] | None = None) -> "GPBanditTuner":
        """A tuner rebuilt from a saved state, with the GP hyperparameters and acquisition it
        recorded (for reading a finished run: `bomcmc.diagnostics.plots.plot_reward_surface`). The
        reward and the schedule are not recorded: this tuner is for inspection, not for
        continuing a run."""
        cfg = dict(state.get("config") or {})
        opts = {k: cfg[k] for k in ("signal_var", "noise_var", "lengthscale_factor",
                                    "acquisition", "delta", "xi") if k in cfg}
        steps = list(state["steps_bounds"])
        if state.get("steps_cap"):  # AHMC's grown L box: the GP's length scales are its
            steps[1] = min(steps[1], state["steps_cap"])
        tuner = cls(eps_bounds=state["eps_bounds"], steps_bounds=steps, **opts)
        tuner.load_state_dict(state, history)
        return tuner

