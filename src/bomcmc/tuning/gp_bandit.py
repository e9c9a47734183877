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

Storage: the driver saves `state_dict(history=False)` and `chunk_history()` with every chunk,
rebuilds the history on resume (`load_state_dict`) and writes it as the InferenceData group
`tuning`, which `tuning_from_idata` and `summarize_tuning` (`tuning/history.py`) read back.

The bandit itself is data (`tuning/bandit.py`: a `BanditState` over a `KnobBox`, pure
`observe` and `propose`); `GPBanditTuner` keeps the latest state and its history and maps it
onto the knobs. `tuning/ahmc_tuner.py` adds a learned metric and a batch burn-in.
"""


from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import BomcmcError
from ..validation import choice, pair
from . import bandit, schedules
from .bandit import LENGTHSCALE_FACTOR, RESCALE, BanditConfig, KnobBox, one_blas_thread
from .base import SAMPLING, Tuner
from .gp import NOISE_VAR, SIGNAL_VAR, GaussianProcess
from .sparse_gp import ALD_THRESHOLD
from .rewards import get_reward
from .surface import bandit_surface, with_acquisition

_one_blas_thread = one_blas_thread  # the name other modules imported


def hmc_box(eps_bounds, steps_bounds) -> KnobBox:
    """HMC's box: ε ∈ eps_bounds searched on a log scale, L ∈ steps_bounds an integer."""
    return KnobBox(("step_size", "num_steps"), (float(eps_bounds[0]), float(steps_bounds[0])),
                   (float(eps_bounds[1]), float(steps_bounds[1])), (False, True), (True, False))


def box_of_state(state: dict) -> KnobBox | None:
    """The box of a saved state: its "box", or for a state saved before the box was
    recorded its "eps_bounds" / "gamma_bounds" and "steps_bounds" (L capped at "steps_cap"
    where AHMC's L box had grown only so far)."""
    if "box" in state:
        return bandit.box_from_json(state["box"])
    steps = list(state["steps_bounds"])
    if state.get("gamma_bounds") is not None:
        g = state["gamma_bounds"]
        return KnobBox(("gamma", "k"), (float(g[0]), float(steps[0])),
                       (float(g[1]), float(steps[1])), (False, True), (False, False))
    if state.get("eps_bounds") is None:
        return None
    if state.get("steps_cap"):
        steps[1] = min(steps[1], state["steps_cap"])
    return hmc_box(state["eps_bounds"], steps)


def check_options(eps_bounds, steps_bounds, budget, acquisition, start, schedule,
                  gp="full", ald_threshold=ALD_THRESHOLD, search="direct") -> None:
    """The bandit's options (one-line BomcmcError)."""
    choice("gp", gp, ("full", "sparse"))
    choice("search", search, ("direct", "grid"))
    if isinstance(ald_threshold, bool) or not isinstance(ald_threshold, (int, float)) \
            or not 0 <= ald_threshold < math.inf:
        raise BomcmcError(f"ald_threshold must be a number >= 0, got {ald_threshold!r}")
    if eps_bounds is not None:
        pair("eps_bounds", eps_bounds)
    pair("steps_bounds", steps_bounds, integer=True)
    if budget is not None and (isinstance(budget, bool) or not isinstance(
            budget, (int, float, np.integer)) or budget < 1 or int(budget) != budget):
        raise BomcmcError(f"budget must be a positive integer number of leapfrog steps, "
                          f"got {budget!r}")
    choice("acquisition", acquisition, ("ucb", "ei"))
    choice("start", start, ("corner", "center", "knobs"))
    if not callable(schedule):
        choice("schedule", schedule, ("inverse_sqrt", "exponential", "power"))


class GPBanditTuner(Tuner):
    """Tune the shared (ε, L) of HMC by a GP bandit (the `Tuner` protocol, `tuning.base`),
    or any two knobs given as a `box`.

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
        start: first γ: "corner" (lower corner, as the authors' `ahmc.m`), "center", or
            "knobs" (the user's knobs, clipped to the box).
        adapt_in_sampling: keep adapting (with probability p_i) after warm-up, as the
            paper's infinite adaptation does (default True); False: the incumbent from the
            first sampling chunk's end (that chunk runs at the warm-up's last setting).
        maxfun, polish: DIRECT's evaluation budget (200) and the L-BFGS-B polish (on).
        signal_var, noise_var, lengthscale_factor: the GP's fixed hyperparameters.
        rescale: s = rescale / max_j r_j (4, the authors' code); None: s = 1.
        gp: "full" (`gp.GaussianProcess`) or "sparse" (Engel 2005's ALD dictionary,
            `sparse_gp.SparseGaussianProcess`: bounded cost, and AHMC never resets it).
        ald_threshold: ν of the sparse GP's ALD test, in the kernel's units (1e-3).
        box: a `bandit.KnobBox` of two other knobs, in place of eps_bounds and steps_bounds.
        search: the acquisition's maximiser, "direct" (DIRECT + L-BFGS-B) or "grid"
            (`acquisition.maximize_grid`). standardize: the GP's (`bandit.BanditConfig`).
    """

    name = "gp_bandit"
    history_keys = ("eps", "L")  # the history's names of the two knobs
    knobs_hint = ("GPBanditTuner tunes HMC's step_size and num_steps; this sampler's knobs "
                  "have no num_steps (use sampler='hmc')")

    def __init__(self, eps_bounds=None, steps_bounds=(1, 100), reward="esjd",
                 reward_options: dict | None = None, schedule="inverse_sqrt", k: int = 100,
                 lam: float = 0.01, power: float = 0.5, budget: int | None = None,
                 acquisition: str = "ucb", delta: float = 0.1, xi: float = 0.01,
                 seed: int = 0, start: str = "corner", adapt_in_sampling: bool = True,
                 maxfun: int = 200, polish: bool = True, signal_var: float = SIGNAL_VAR,
                 noise_var: float = NOISE_VAR,
                 lengthscale_factor: float = LENGTHSCALE_FACTOR,
                 rescale: float | None = RESCALE, box: KnobBox | None = None,
                 gp: str = "full", ald_threshold: float = ALD_THRESHOLD,
                 search: str = "direct", standardize: bool = False):
        check_options(eps_bounds, steps_bounds, budget, acquisition, start, schedule, gp,
                      ald_threshold, search)
        try:
            self.reward_fn = get_reward(reward, **(reward_options or {}))
        except ValueError as e:
            raise BomcmcError(str(e)) from None
        self.schedule = schedules.get_schedule(schedule, k=k, lam=lam, gamma=power)
        self.budget = None if budget is None else int(budget)
        self.start = start
        self.adapt_in_sampling = bool(adapt_in_sampling)
        self.config = BanditConfig(acquisition, float(delta), float(xi), int(maxfun), bool(polish),
                                   float(signal_var), float(noise_var), float(lengthscale_factor),
                                   rescale, gp, float(ald_threshold), search, bool(standardize))
        self.steps_request = tuple(map(float, steps_bounds))  # for a box relative to ε₀
        if box is None and eps_bounds is not None:
            box = hmc_box(eps_bounds, steps_bounds)
        self.bandit = bandit.init(box, seed)
        self.history: list[dict] = []
        self._flushed = 0  # history entries already handed to the driver (chunk_history)
        self._warned = self._held = False  # _held: sampling at the incumbent, not adapting

    # -- the state, read ---------------------------------------------------------------------
    @property
    def gp(self) -> GaussianProcess | None:
        return self.bandit.gp

    @property
    def point(self) -> tuple | None:
        """The current point (log ε, L), in the box's search coordinates."""
        return self.bandit.point

    @property
    def i(self) -> int:
        return self.bandit.i

    @property
    def max_reward(self) -> float | None:
        return self.bandit.max_reward

    @property
    def seed(self) -> int:
        return self.bandit.seed

    @property
    def acquisition(self) -> str:
        return self.config.acquisition

    @property
    def lower(self) -> np.ndarray:
        return bandit.lower(self.bandit.box)

    @property
    def upper(self) -> np.ndarray:
        return bandit.upper(self.bandit.box)

    @property
    def eps_bounds(self) -> tuple[float, float] | None:
        box = self.bandit.box
        return None if box is None else (box.lower[0], box.upper[0])

    @property
    def steps_bounds(self) -> tuple[float, float]:
        """The L bounds asked for (the box's own; AHMC's bandit searches a capped box)."""
        return self.steps_request

    @property
    def step_size(self) -> float:
        """The first knob's value at the current point (ε)."""
        return bandit.to_knobs(self.bandit.box, self.bandit.point)[0]

    @property
    def num_steps(self) -> int:
        """The second knob's value at the current point (L)."""
        return int(self.bandit.point[1])

    def reset_gp(self) -> None:
        """`bandit.reset_gp`: a new GP over the current box, max_j r_j forgotten."""
        self.bandit = bandit.reset_gp(self.bandit, self.config)

    def make_gp(self) -> GaussianProcess:
        return bandit.make_gp(self.bandit.box, self.config)

    def coin(self, i: int) -> float:
        return bandit.coin(self.bandit.seed, i)

    def scale(self) -> float:
        return bandit.scale(self.bandit, self.config)

    def acquisition_fn(self, p: float, grad: bool = False):
        return bandit.acquisition_fn(self.bandit, self.config, p, grad)

    def propose(self, p: float) -> tuple:
        """The maximiser of the acquisition over `search_box` (the state is left alone)."""
        return bandit.propose(self.bandit, self.config, p, self.search_box())[1]

    def search_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Where proposals are sought: the whole box (subclasses may narrow it)."""
        return self.lower, self.upper

    def incumbent(self) -> tuple:
        return bandit.incumbent(self.bandit)

    def best(self) -> dict:
        """The incumbent's knobs ({"step_size", "num_steps"} or the box's names) and
        "mean_reward"."""
        point = self.incumbent()
        mean, _ = self.gp.predict(np.array([point], dtype=float))
        values = bandit.to_knobs(self.bandit.box, point)
        return {**dict(zip(self.bandit.box.names, values)), "mean_reward": float(mean[0])}

    # -- the Tuner protocol ------------------------------------------------------------------
    def initial_knobs(self, knobs):
        """A fresh GP and the start point; a box relative to ε₀ = the knobs' step size,
        (ε₀/100, 10 ε₀), when no eps_bounds were given."""
        box = self.bandit.box
        names = box.names if box is not None else ("step_size", "num_steps")
        if not set(names) <= set(getattr(type(knobs), "_fields", ())):
            raise BomcmcError(self.knobs_hint)
        initial = [float(np.mean(np.asarray(getattr(knobs, n)))) for n in names]
        if box is None:
            box = hmc_box((initial[0] / 100.0, initial[0] * 10.0), self.steps_request)
        state = bandit.reset_gp(self.bandit._replace(box=box), self.config)
        self.bandit = state._replace(point=bandit.start_point(box, self.start, initial))
        return self._apply(knobs)

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
            if not self._held and self.bandit.gp.n_obs > 0:  # once: the GP no longer changes
                self.bandit = self.bandit._replace(point=bandit.incumbent(self.bandit))
            self._held = True
            return self._apply(knobs)
        self.bandit = self.bandit._replace(i=self.bandit.i + 1)
        entry = self.observe(chunk)
        self.move(entry)
        self.history.append(entry)
        return self._apply(knobs)

    def proposal_probability(self, i: int) -> float:
        """p_i, the probability that BO step i proposes new knobs (the schedule, step 3)."""
        return float(self.schedule(i))

    def observe(self, chunk: dict, point: tuple | None = None) -> dict:
        """Steps 1–2 for chunk i: the reward of the chunk run at `point` (default: the
        current one), into the GP if finite (`bandit.observe`). Returns the history entry,
        with "proposed" still False."""
        point = self.bandit.point if point is None else point
        x, y = bandit.to_knobs(self.bandit.box, point)
        reward = float(self.reward_fn({**chunk, "num_steps": y, "step_size": x}))
        p = self.proposal_probability(self.bandit.i)
        self.bandit = bandit.observe(self.bandit, point, reward)
        kx, ky = self.history_keys
        return {"i": self.bandit.i, "phase": int(chunk.get("phase", 0)), kx: x, ky: y,
                "reward": reward if math.isfinite(reward) else None, "p_i": p,
                "proposed": False}

    def move(self, entry: dict) -> None:
        """Step 3: with probability p_i the maximiser of the acquisition over `search_box`;
        after a non-finite reward, the incumbent."""
        p = entry["p_i"]
        state = self.bandit
        u = bandit.coin(state.seed, state.i)
        proposed = bool(u < p and state.gp.n_obs > 0)
        if proposed:
            self.bandit, _ = bandit.propose(state, self.config, p, self.search_box())
        elif entry["reward"] is None and state.gp.n_obs > 0:
            self.bandit = state._replace(point=bandit.incumbent(state))
        entry["proposed"] = proposed

    def _apply(self, knobs):
        """The current point's knob values broadcast to every chain (and slot), keeping the
        knobs' dtypes and shapes."""
        return apply_point(knobs, self.bandit.box, self.bandit.point)

    def surface(self) -> dict | None:
        """The current GP's reward surface over the box (`bandit_surface`), with the
        acquisition at the last p_i; None before any observation."""
        return with_acquisition(bandit_surface(self.bandit), self.bandit, self.config,
                                self.history)

    # -- state -------------------------------------------------------------------------------
    def chunk_history(self) -> list[dict]:
        """The history entries added since the last call (at most one per chunk). The driver
        stores them with each chunk, and `state_dict(history=False)` beside them, so a
        chunk record stays small however long the run; it rebuilds the full history from
        the chunks (`load_state_dict(state, history)`, the InferenceData's `tuning` group)."""
        new = [dict(h) for h in self.history[self._flushed:]]
        self._flushed = len(self.history)
        return new

    def state_dict(self, history: bool = True) -> dict:
        """The bandit state's `_asdict()` in JSON form (`bandit.to_json`), the tuner's name
        and "config", the fixed hyperparameters (which `load_state_dict` does not need but
        `from_state` does); `history=False` leaves the history out (what the driver saves
        with every chunk)."""
        state = {"name": self.name, **bandit.to_json(self.bandit),
                 "config": self.config._asdict()}
        if history:
            state["history"] = [dict(h) for h in self.history]
        return state

    def load_state_dict(self, state: dict, history: list[dict] | None = None) -> None:
        """Restore `state`; the history is `history` when given (rebuilt from the chunks),
        else the state's own (a `state_dict()` with history), else empty."""
        saved = {k: v for k, v in (state.get("config") or {}).items()
                 if k in BanditConfig._fields}
        if saved:  # a state saved before the grid search was searched by DIRECT
            saved.setdefault("search", "direct")
        self.config = self.config._replace(**saved)
        box = box_of_state(state)
        point = state.get("point", state.get("gamma"))  # "gamma" in runs of bomcmc 0.1.0
        self.bandit = bandit.from_json(
            {**state, "box": None if box is None else box._asdict(), "point": point},
            self.config)
        if history is None:
            history = state.get("history", [])
        self.history = [dict(h) for h in history]
        self._flushed = len(self.history)

    @classmethod
    def from_state(cls, state: dict, history: list[dict] | None = None) -> "GPBanditTuner":
        """A tuner rebuilt from a saved state, with the GP hyperparameters and acquisition it
        recorded (for reading a finished run). The reward and the schedule are not recorded:
        this tuner is for inspection, not for continuing a run."""
        cfg = {k: v for k, v in (state.get("config") or {}).items()
               if k in BanditConfig._fields}
        tuner = cls(**cfg)
        tuner.load_state_dict(state, history)
        steps = (state.get("config") or {}).get("steps_bounds") or state.get("steps_bounds")
        if steps is None and tuner.bandit.box is not None:
            steps = (tuner.bandit.box.lower[1], tuner.bandit.box.upper[1])
        box = tuner.bandit.box
        if steps is not None and box is not None and box.names == ("step_size", "num_steps"):
            # AHMC's bandit searched L up to its cap: read the surface over the whole box
            # (the GP keeps the length scales it was fitted with)
            tuner.steps_request = tuple(map(float, steps))
            tuner.bandit = tuner.bandit._replace(box=box._replace(
                upper=(box.upper[0], max(box.upper[1], tuner.steps_request[1]))))
        return tuner


def apply_point(knobs, box: KnobBox, point):
    """The knobs with `point`'s values (`bandit.to_knobs`) in every chain (and slot) of the
    box's knobs, dtypes and shapes kept."""
    new = {}
    for name, value in zip(box.names, bandit.to_knobs(box, point)):
        old = np.asarray(getattr(knobs, name))
        new[name] = np.full(old.shape, value, old.dtype)
    return knobs._replace(**new)


