"""Adaptive HMC (AHMC) as a sampler: `sample(..., sampler="ahmc")`.

The HMC kernel (`kernels/hmc.py`) with a random trajectory length L_r ~ U{1..L} (Wang,
Mohamed & de Freitas 2013 §4; `ceil(rand*L)` in the authors' `hmc_iter.m`), driven by a GP
bandit that tunes the shared (ε, L) while the chains run (`tuning.gp_bandit.GPBanditTuner`;
Wang, Mohamed & de Freitas 2013 §3, Wang 2012, Alg. 3), on the paper's schedule:

- burn-in of B = `warmup` transitions: k = min(100, B) BO steps, each a super-transition of
  m = ⌊B/k⌋ transitions (the first B mod k of them one longer, so the k steps cover B exactly);
  p_i = 1 for those k steps (Wang, Mohamed & de Freitas 2013 §5, "k = 100, m = B/k"; the
  authors' `ahmc.m`);
- sampling: BO steps of m transitions go on, and each proposes new knobs with probability
  p_i = (i − k + 1)^{−1/2} (infinite, vanishing adaptation, Wang, Mohamed & de Freitas 2013
  §4).

The start is the authors' too (their `ahmc.m` starts at argmin U found by L-BFGS): each
chain's initial point is moved by at most 100 L-BFGS iterations towards the mode
(`kernels/ahmc.py`: `find_mode_counted`, the kernel's `start`, whose evaluations count in the
warm-up's gradients).

Beyond the paper (docs/tuning.md, "Adaptive HMC as a sampler" and "The batch burn-in"):

- **A batch burn-in.** The vmapped chains are split into up to 4 groups (2 chains or more
  each); in every burn-in BO step each group runs its own (ε, L) and reports its own
  reward, so one step observes up to 4 settings. The batch is chosen by GP-BUCB (Desautels,
  Krause & Burdick 2014; `batch_burn_in.gp_bucb`); a fresh GP's first batch runs Stan's
  ε₀ with L spread geometrically over the box. Sampling runs one shared setting, the
  incumbent's, as the paper. `batch=1` is the paper's burn-in.
- **An L box that grows.** L starts in {1..8} (`steps_cap`) and the cap doubles while the
  incumbent's L is in its top quarter, up to the box's own; a metric update starts the next
  epoch at twice the last epoch's best L. Long trajectories cost gradients in proportion to
  L, and on the logistic regressions the paper's burn-in spent 375k–415k gradients exploring
  L up to 100 where the 2000 draws after it cost 2–5 gradients per transition
  (docs/benchmarks.md). `steps_cap=0` searches the whole box from the start.

- **The ε box is relative** when the user gives none: [ε₀/10, 10 ε₀], ε₀ the median over
  chains of Stan's step-size heuristic (`window_adaptation.init_stepsize`) at the starting
  points. L ∈ {1..100} (the paper's logistic-regression box).
- **A learned metric** (`mass="diag"`; the default `mass="auto"` starts from the Laplace
  metric and goes dense where the correlations call for it, docs/defaults.md): positions of
  the burn-in super-transitions in the windows (10%, 25%] and (25%, 50%] of the k BO steps,
  pooled over chains, feed a Welford estimator; at the end of each window M⁻¹ ← Stan's
  regularised variance, divided by its smallest entry (scaling M⁻¹ by c is scaling ε by √c,
  so this keeps ε in the units of the identity metric and a user's box stays meaningful).
  The rewards seen so far were earned under the old metric, so the GP is reset
  (`GPBanditTuner.reset_gp`), the relative box is re-centred on the heuristic's ε₀ for the
  new metric at the chains' current positions, and the bandit restarts from the box's lower
  corner. p_i goes on counting.

The tuner is rebuilt from the options recorded in config.json (`RunSpec.tuner_options`), so
`bomcmc resume DIR` continues a run exactly.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BomcmcError
from ..kernels import hmc
from ..validation import choice, integer, pair
from .base import SAMPLING, WARMUP
from .batch_burn_in import STEPS_CAP, BatchBurnIn
from .gp_bandit import GPBanditTuner, _one_blas_thread
from .learned_metric import MASSES, LearnedMetric, needs_dense  # noqa: F401 - re-exported

BO_STEPS = 100  # k: BO steps during burn-in (Wang, Mohamed & de Freitas 2013 §5)
DEFAULT_M = 10  # transitions per BO step when there is no burn-in (m = ⌊1000/100⌋)
EPS_FACTORS = (0.1, 10.0)  # the relative ε box: [ε₀/10, 10 ε₀]
MASS_WINDOWS = (0.10, 0.25, 0.50)  # metric windows, as fractions of the k burn-in BO steps
MIN_MASS_STEPS = 10  # fewer burn-in BO steps than this: no metric adaptation
TRUST = 2.0  # after burn-in, proposals within a factor 2 of the incumbent's ε and L


# ---------------------------------------------------------------------------------------
# The tuner: GPBanditTuner + the paper's chunk lengths + the relative box + the metric
# (`learned_metric`) + the batch burn-in (`batch_burn_in`)
# ---------------------------------------------------------------------------------------
class AHMCTuner(BatchBurnIn, LearnedMetric, GPBanditTuner):
    """`GPBanditTuner` with AHMC's burn-in schedule, a relative ε box and an optional diagonal
    metric learned in burn-in, a batch of settings per burn-in step and an L box that grows
    (module docstring). History entries carry "epoch" (the number of metric updates, GP
    resets, before the chunk) and "group" (the chain group observed; 0 when one setting
    ran): a burn-in step of a batch adds one entry per group.

    Args:
        warmup, thin: the run's burn-in transitions and thinning (for the chunk lengths).
        bo_steps: k, the BO steps in burn-in (100); the schedule's k is min(k, warmup).
        mass: "auto" (learn a metric in burn-in, dense when the measured correlations call
            for it and d ≤ AUTO_DENSE_MAX_DIM, else diagonal), "diag", "dense", or
            "identity" (keep the initial).
        mass_windows: (start, end₁, end₂, …) fractions of the k burn-in BO steps.
        eps_factors: the relative box [f₁ ε₀, f₂ ε₀] when eps_bounds is None.
        batch: chain groups in burn-in, each with its own (ε, L); None: min(4, chains // 2)
            (1 below 4 chains); 1: one shared setting (the paper).
        steps_cap: the first cap on L (8), doubled while the incumbent is near it; 0 or
            None: the whole box from the start (the paper).
        logdensity_fn, start_positions: for Stan's step-size heuristic (the relative box).
        other keyword arguments: GPBanditTuner's.
    """

    name = "ahmc"

    def __init__(self, *, warmup: int, thin: int = 1, bo_steps: int = BO_STEPS,
                 mass: str = "auto", mass_windows=MASS_WINDOWS, eps_factors=EPS_FACTORS,
                 batch: int | None = None, steps_cap: int | None = STEPS_CAP,
                 logdensity_fn=None, start_positions=None, **options):
        if options.get("budget") is not None:
            raise ValueError("AHMC sets its chunk lengths from the burn-in (no budget)")
        if mass not in MASSES:
            raise ValueError(f"mass must be one of {', '.join(MASSES)}, got {mass!r}")
        warmup, thin, bo_steps = int(warmup), max(1, int(thin)), int(bo_steps)
        self.burn_steps = min(bo_steps, warmup)
        self.step_transitions = warmup // self.burn_steps if self.burn_steps else DEFAULT_M
        self.longer = warmup % self.burn_steps if self.burn_steps else 0
        self.sampling_draws = max(1, self.step_transitions // thin)
        if batch is not None and int(batch) < 1:
            raise ValueError(f"batch must be a number of chain groups >= 1, got {batch}")
        if steps_cap is not None and int(steps_cap) < 0:
            raise ValueError(f"steps_cap must be a number of leapfrog steps (0: none), got "
                             f"{steps_cap}")
        self.batch = None if batch is None else int(batch)  # None: chosen from the chains
        self.steps_cap = int(steps_cap) if steps_cap else None  # 0 or None: the whole box
        self.points: list[tuple[float, int]] | None = None  # per group, in batch burn-in
        super().__init__(k=max(self.burn_steps, 1), **options)
        if self.steps_cap is not None:
            self.steps_cap = max(self.steps_cap, math.ceil(self.steps_bounds[0]))
        self.steps_cap_start = self.steps_cap
        self.relative_box = options.get("eps_bounds") is None
        self.eps_factors = tuple(float(f) for f in eps_factors)
        self.mass = mass
        self.windows = self._windows(mass_windows) if mass != "identity" else []
        self.dense_knob = False  # whether the metric knob is (d, d); set by initial_knobs
        self.metric_kind: str | None = None  # "diag" or "dense", once a metric is learned
        self.logdensity_fn = logdensity_fn
        self.start_positions = start_positions
        self.epoch = 0
        self.welford: tuple[int, np.ndarray, np.ndarray] | None = None
        self.eps0: float | None = None
        self._heuristic_fn = None
        self.side_grads = 0  # gradients spent outside the chunks, not yet taken

    # -- the gradients the tuner spends itself ---------------------------------------------
    def count_grads(self, n: int) -> None:
        self.side_grads += int(n)

    def take_grads(self) -> int:
        """The gradient evaluations this tuner spent outside the chunks since the last call
        (Stan's step-size heuristic, the Laplace Hessian), for the driver to count in the
        warm-up's."""
        n, self.side_grads = self.side_grads, 0
        return n

    def _windows(self, fractions) -> list[int]:
        """BO step boundaries [b₀, b₁, …]: Welford takes steps b₀ < i ≤ b_last and a new
        metric is set after steps b₁, b₂, …; empty windows dropped."""
        if self.burn_steps < MIN_MASS_STEPS:
            return []
        bounds = []
        for f in fractions:
            b = int(round(float(f) * self.burn_steps))
            if not bounds or b > bounds[-1]:
                bounds.append(b)
        return bounds if len(bounds) >= 2 else []

    # -- Stan's heuristic, for the relative box -----------------------------------------
    def heuristic_step_size(self, positions, inverse_mass, step_size) -> float | None:
        """Median over chains of Stan's init_stepsize from `step_size` at `positions`."""
        if self.logdensity_fn is None:
            return None
        from ..adaptation.window_adaptation import init_stepsize

        if self._heuristic_fn is None:
            logdensity = self.logdensity_fn

            def one(key, x, eps, inv_mass):
                state = hmc.init(x, logdensity)
                return init_stepsize(key, state, logdensity, eps, inv_mass)

            self._heuristic_fn = jax.jit(jax.vmap(one, in_axes=(0, 0, None, None)))
        x = jnp.asarray(positions)
        keys = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(self.seed),
                                                   1 + self.epoch), x.shape[0])
        eps, trials = self._heuristic_fn(keys, x, jnp.asarray(step_size, x.dtype),
                                         jnp.asarray(inverse_mass, x.dtype))
        # one gradient at each start and one per trial (a leapfrog step)
        self.count_grads(int(np.sum(np.asarray(trials))) + x.shape[0])
        eps = np.asarray(eps, float)
        eps = eps[np.isfinite(eps) & (eps > 0)]
        return float(np.median(eps)) if eps.size else None

    def _recentre(self, positions, inverse_mass, step_size) -> None:
        eps0 = self.heuristic_step_size(positions, inverse_mass, step_size)
        if eps0 is not None:
            self.eps0 = eps0
            self.eps_bounds = (eps0 * self.eps_factors[0], eps0 * self.eps_factors[1])

    # -- the Tuner protocol ----------------------------------------------------------------
    def initial_knobs(self, knobs):
        knobs = self._laplace_metric(self._shape_metric(knobs))
        if self.relative_box and self.start_positions is not None:
            self._recentre(self.start_positions, np.asarray(knobs.inverse_mass_matrix)[0],
                           float(np.mean(np.asarray(knobs.step_size))))
        knobs = super().initial_knobs(knobs)
        chains = np.asarray(knobs.step_size).reshape(-1).shape[0]
        groups = self.groups(chains) if self.burn_steps > 1 else 1
        if groups > 1:
            self.set_points(self.first_batch(groups))
        return self._apply(knobs)

    def chunk_draws(self, knobs, chunk_size: int) -> int:
        """BO step j = i + 1: m (+1 for the first B mod k) transitions in burn-in, m // thin
        draws after (m = ⌊B/k⌋, as in the authors' `ahmc.m`)."""
        j = self.i + 1
        if j <= self.burn_steps:
            n = self.step_transitions + (1 if j <= self.longer else 0)
        else:
            n = self.sampling_draws
        if n > chunk_size:
            self.warn_once(f"an AHMC super-transition of {n} draws exceeds chunk_size "
                           f"{chunk_size} and is cut short: the burn-in has more BO steps "
                           "than k")
        return n

    def after_chunk(self, knobs, chunk: dict):
        # the GP's factorisations are small: a multi-threaded BLAS spinning up its threads
        # for each made them 30x slower on a loaded 2-core machine (0.8 ms against 31 ms for
        # the mean at 224 points; `gp_bandit._one_blas_thread`)
        with _one_blas_thread():
            return self._after_chunk(knobs, chunk)

    def _after_chunk(self, knobs, chunk: dict):
        phase = int(chunk.get("phase", 0))
        if phase == SAMPLING and not self.adapt_in_sampling:
            return self._apply(knobs)
        self.i += 1
        collect = (phase == WARMUP and bool(self.windows)
                   and self.windows[0] < self.i <= self.windows[-1])
        if collect:
            self._welford_add(np.asarray(chunk["positions"], np.float64))
        entries = self._observe_groups(chunk)
        for entry in entries:
            entry["epoch"] = self.epoch
            entry["incumbent"] = False
        self._grow_steps()
        if collect and self.i in self.windows[1:]:
            knobs = self._new_metric(knobs, chunk)  # no proposal: the GP starts afresh
        elif phase == WARMUP and self.i == self.burn_steps and self.gp.n_obs > 0:
            # Burn-in's exploration ends: sampling starts from the incumbent, not from a last
            # exploratory proposal nobody has tried (docs/tuning.md, "Robust defaults"), and
            # every chain runs it.
            self.points = None
            self.point = self.incumbent()
            entries[-1]["incumbent"] = True
        elif self.points:
            # burn-in's p_i is 1: every step proposes, one point per group
            self.set_points(self.propose_batch(entries[0]["p_i"], len(self.points)))
            for entry in entries:
                entry["proposed"] = True
        else:
            self.move(entries[-1])
        self.history.extend(entries)
        return self._apply(knobs)

    def search_box(self) -> tuple[np.ndarray, np.ndarray]:
        """After burn-in, proposals stay within a factor TRUST of the incumbent in ε and in L
        (inside the box): vanishing adaptation refines the setting burn-in found instead of
        spending super-transitions on settings far from it, where a step size too large for
        the posterior diverges (docs/tuning.md, "Robust defaults")."""
        lower, upper = self.lower, self.upper
        if self.i <= self.burn_steps or self.gp.n_obs == 0:
            return lower, upper
        log_eps, steps = self.incumbent()
        lo = np.array([log_eps - math.log(TRUST), steps / TRUST])
        hi = np.array([log_eps + math.log(TRUST), steps * TRUST])
        return np.maximum(lower, lo), np.minimum(upper, np.maximum(hi, lower))

    # -- the metric ------------------------------------------------------------------------
    def _new_metric(self, knobs, chunk):
        inv = self.metric()
        self.welford = None
        self.epoch += 1
        old = np.asarray(knobs.inverse_mass_matrix)
        knobs = knobs._replace(inverse_mass_matrix=np.broadcast_to(
            inv.astype(old.dtype), old.shape).copy())
        if self.relative_box:
            last = np.asarray(chunk["positions"])[:, -1]
            self._recentre(last, inv, self.step_size)
        if self.steps_cap is not None and self.gp.n_obs > 0:
            # what the last epoch learned about L carries over as the new cap: no longer
            # than twice its incumbent's (STEPS_CAP at least), growing again if need be
            self.steps_cap = max(self.steps_cap_start, 2 * self.incumbent()[1])
        self.reset_gp()
        if self.points:
            self.set_points(self.first_batch(len(self.points)))
        else:
            self.point = self.start_point(self.step_size, self.num_steps)
        return knobs

    # -- state -----------------------------------------------------------------------------
    def state_dict(self, history: bool = True) -> dict:
        state = super().state_dict(history)
        state["epoch"] = self.epoch
        state["eps0"] = self.eps0
        state["welford"] = None if self.welford is None else {
            "n": int(self.welford[0]), "mean": self.welford[1].tolist(),
            "m2": self.welford[2].tolist()}
        state["metric_kind"] = self.metric_kind
        state["dense_knob"] = self.dense_knob
        state["steps_cap"] = self.steps_cap
        state["points"] = None if self.points is None else [list(p) for p in self.points]
        return state

    def load_state_dict(self, state: dict, history: list[dict] | None = None) -> None:
        self.steps_cap = state.get("steps_cap")  # before the GP is rebuilt over the box
        points = state.get("points")
        self.points = None if points is None else [(float(a), int(b)) for a, b in points]
        super().load_state_dict(state, history)
        self.epoch = int(state.get("epoch", 0))
        self.eps0 = state.get("eps0")
        w = state.get("welford")
        self.welford = None if w is None else (int(w["n"]), np.asarray(w["mean"], float),
                                               np.asarray(w["m2"], float))
        self.metric_kind = state.get("metric_kind")
        self.dense_knob = bool(state.get("dense_knob", False))
        self.side_grads = 0  # counted in the chunks already written


# ---------------------------------------------------------------------------------------
# Building the tuner from the run's options (what config.json records)
# ---------------------------------------------------------------------------------------
TUNER_OPTIONS = ("eps_bounds", "steps_bounds", "reward", "schedule", "acquisition", "mass",
                 "bo_steps", "mass_windows", "eps_factors", "start", "adapt_in_sampling",
                 "batch", "steps_cap")
_CHOICES = {"reward": ("esjd", "ess", "acf"), "schedule": ("inverse_sqrt", "exponential", "power"),
            "acquisition": ("ucb", "ei"), "mass": MASSES,
            "start": ("corner", "center", "knobs")}
ACF_MIN_DRAWS = 26  # the "acf" reward's l_min


def validate_options(options: dict) -> dict:
    """The options, checked (one-line BomcmcError) and in JSON form."""
    opts = dict(options)
    for k in list(opts):
        if opts[k] is None and k != "eps_bounds":
            del opts[k]
    if "eps_bounds" in opts and opts["eps_bounds"] is not None:
        opts["eps_bounds"] = pair("eps_bounds", opts["eps_bounds"])
    if "steps_bounds" in opts:
        opts["steps_bounds"] = pair("steps_bounds", opts["steps_bounds"], integer=True)
    if "eps_factors" in opts:
        opts["eps_factors"] = pair("eps_factors", opts["eps_factors"])
    for k, allowed in _CHOICES.items():
        if k in opts:
            choice(k, opts[k], allowed,
                   " (a callable reward needs tuner=GPBanditTuner(reward=f))"
                   if k == "reward" and callable(opts[k]) else "")
    if "bo_steps" in opts:
        opts["bo_steps"] = integer("bo_steps", opts["bo_steps"])
    if "mass_windows" in opts:
        try:
            w = [float(f) for f in opts["mass_windows"]]
        except (TypeError, ValueError):
            raise BomcmcError("mass_windows must be fractions, got "
                              f"{opts['mass_windows']!r}") from None
        if len(w) < 2 or any(not 0 <= f <= 1 for f in w) or w != sorted(w):
            raise BomcmcError("mass_windows must be increasing fractions in [0, 1] "
                              f"(start, end, ...), got {opts['mass_windows']!r}")
        opts["mass_windows"] = w
    if "batch" in opts:
        opts["batch"] = integer("batch", opts["batch"])
    if "steps_cap" in opts:
        opts["steps_cap"] = integer("steps_cap", opts["steps_cap"], lo=0)
    if "adapt_in_sampling" in opts:
        opts["adapt_in_sampling"] = bool(opts["adapt_in_sampling"])
    return opts


def make_tuner(options: dict, spec, flat, states) -> AHMCTuner:
    """The AHMC tuner of a run: `options` as recorded in config.json, `spec` the RunSpec,
    `flat` the flat posterior, `states` the chains' initial states (for the heuristic)."""
    opts = validate_options(options)
    warmup = int(spec.warmup)
    k = min(opts.get("bo_steps", BO_STEPS), warmup)
    m = warmup // k if k else DEFAULT_M
    if opts.get("reward") == "acf" and m < ACF_MIN_DRAWS:
        raise BomcmcError(f"reward 'acf' needs super-transitions of >= {ACF_MIN_DRAWS} draws; "
                          f"this burn-in gives {m} per BO step (warmup >= "
                          f"{ACF_MIN_DRAWS * opts.get('bo_steps', BO_STEPS)} or fewer bo_steps)")
    return AHMCTuner(warmup=warmup, thin=spec.thin, seed=spec.seed,
                     logdensity_fn=flat.logdensity_fn,
                     start_positions=np.asarray(states.position), **opts)


def make_diagonal_tuner(options: dict, spec, flat, states) -> AHMCTuner:
    """`make_tuner` for a kernel that takes a diagonal metric only (`kernels/mams.py`):
    mass "auto" learns a diagonal one; "dense" is refused."""
    opts = dict(options)
    if opts.get("mass") == "dense":
        raise BomcmcError("this sampler takes a diagonal metric only: mass must be 'diag', "
                          "'auto' (diagonal here) or 'identity'")
    if opts.get("mass") in (None, "auto"):
        opts["mass"] = "diag"
    return make_tuner(opts, spec, flat, states)
