"""Adaptive HMC (AHMC) as a sampler: `sample(..., sampler="ahmc")`.

The HMC kernel (`kernels/hmc.py`) with a random trajectory length L_r ~ U{1..L} (Wang,
Mohamed & de Freitas 2013 §4; `ceil(rand*L)` in the authors' `hmc_iter.m`), driven by a GP
bandit that tunes the shared (ε, L) while the chains run (`tuning.gp_bandit.GPBanditTuner`;
Wang, Mohamed & de Freitas 2013 §3, Wang 2012, Alg. 3), on the paper's schedule:

- burn-in of B = `warmup` transitions: k = min(100, B) BO steps, each a super-transition of
  m = ⌊B/k⌋ transitions (the first B mod k of them one longer, so the k steps cover B exactly);
  p_i = 1 for those k steps (Wang, Mohamed & de Freitas 2013 §5, "k = 100, m = B/k"; the
  authors' `ahmc.m`);
- sampling: BO steps of m transitions go on, each proposing new knobs with probability
  p_i = (i − k + 1)^{−1/2} (vanishing adaptation, Wang, Mohamed & de Freitas 2013 §4).

The start is the authors' (argmin U by L-BFGS in their `ahmc.m`): `kernels/ahmc.py`,
`find_mode_counted`, whose evaluations count in the warm-up's gradients.

Beyond the paper (docs/tuning.md, "Adaptive HMC as a sampler" and "The batch burn-in"):

- **A batch burn-in** of up to 4 chain groups, each with its own (ε, L) chosen by GP-BUCB
  (Desautels, Krause & Burdick 2014), and **an L box that grows** from {1..8}
  (`batch_burn_in`); sampling runs the incumbent on every chain. `batch=1` and
  `steps_cap=0` are the paper's burn-in.
- **The ε box is relative** when the user gives none: [ε₀/10, 10 ε₀], ε₀ the median over
  chains of Stan's step-size heuristic at the starting points (`step_heuristic`).
- **A learned metric** (`learned_metric`; `mass="auto"` starts from the Laplace metric):
  burn-in positions in the windows (10%, 25%] and (25%, 50%] of the k BO steps give Stan's
  regularised variance, normalised by its smallest entry (ε stays in the identity metric's
  units). An update resets the GP (kept by gp="sparse", Engel 2005), re-centres the
  relative box on the heuristic's ε₀ for the new metric and restarts the bandit; under
  warmup="auto", one that moves M⁻¹ by δ < 0.1 keeps the bandit as it is instead.
- **A ceiling on ε after divergences** (`divergence_ceiling`): after burn-in, ε stays at
  most `divergence_margin` (0.8) times the smallest ε that diverged under the metric.
- **A burn-in that stops when it has learned** (`settle=True`, the run's warmup="auto";
  docs/warmup.md): a metric update that barely moves M⁻¹ is the last, and burn-in ends
  once the incumbent's predicted reward holds still and no chain diverges; k steps at most.

The tuner is rebuilt from the options recorded in config.json (`RunSpec.tuner_options`), so
`bomcmc resume DIR` continues a run exactly.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import BomcmcError
from . import bandit, batch_burn_in as burn_in, divergence_ceiling as ceil
from . import learned_metric as metric, settle as settling, step_heuristic, surface
from .ahmc_options import (ACF_MIN_DRAWS, BO_STEPS, DEFAULT_M, EPS_FACTORS,  # noqa: F401
                           MASS_WINDOWS, REWARDS, check_options, given)
from .bandit import TRUST  # noqa: F401 - re-exported
from .base import SAMPLING, WARMUP
from .batch_burn_in import STEPS_CAP, BurnInState
from .gp_bandit import GPBanditTuner, one_blas_thread
from .learned_metric import MASSES, MIN_MASS_STEPS, MetricState, needs_dense  # noqa: F401

# ---------------------------------------------------------------------------------------
# The tuner: the bandit's state, the metric's (`learned_metric`) and the batch burn-in's
# (`batch_burn_in`), with the paper's chunk lengths and the relative box
# ---------------------------------------------------------------------------------------
class AHMCTuner(GPBanditTuner):
    """`GPBanditTuner` with AHMC's burn-in schedule, a relative ε box and a metric learned in
    burn-in, a batch of settings per burn-in step, an L box that grows and a ceiling on ε
    (module docstring). Its states: `bandit` (`bandit.BanditState`), `metric`
    (`learned_metric.MetricState`), `burn` (`batch_burn_in.BurnInState`), `settle`
    (`settle.SettleState`) and `ceiling` (`divergence_ceiling.CeilingState`). History entries
    carry "epoch" (the bandit's restarts, metric updates that reset the GP, before the
    chunk) and "group" (the chain group observed; 0 when one setting ran): a burn-in step
    of a batch adds one entry per group.

    Args:
        warmup, thin: the run's burn-in transitions and thinning (for the chunk lengths).
        bo_steps: k, the BO steps in burn-in (100); the schedule's k is min(k, warmup).
        mass: "auto" (a metric learned in burn-in, dense where the correlations call for
            it and d ≤ AUTO_DENSE_MAX_DIM), "diag", "dense", or "identity" (the initial).
        mass_windows: (start, end₁, end₂, …) fractions of the k burn-in BO steps.
        eps_factors: the relative box [f₁ ε₀, f₂ ε₀] when eps_bounds is None.
        batch: chain groups in burn-in, each with its own (ε, L); None: min(4, chains // 2)
            (1 below 4 chains); 1: one shared setting (the paper).
        steps_cap: the first cap on L (8), doubled while the incumbent is near it; 0 or
            None: the whole box from the start (the paper).
        reward: "esjd" (default), "ess" or "acf".
        settle: end burn-in once the metric and the incumbent have settled (`settle`;
            the run's warmup="auto"), k BO steps at most; False: always the k steps.
        divergence_margin: after burn-in ε ≤ margin × the smallest ε that diverged under
            the metric (`divergence_ceiling`, 0.8); None: no ceiling.
        logdensity_fn, start_positions: for Stan's step-size heuristic (the relative box).
        other keyword arguments: GPBanditTuner's, with search "grid" (not "direct").
    """

    name = "ahmc"

    def __init__(self, *, warmup: int, thin: int = 1, bo_steps: int = BO_STEPS,
                 mass: str = "auto", mass_windows=MASS_WINDOWS, eps_factors=EPS_FACTORS,
                 batch: int | None = None, steps_cap: int | None = STEPS_CAP,
                 reward: str = "esjd", settle: bool = False, logdensity_fn=None,
                 start_positions=None, divergence_margin: float | None = ceil.MARGIN,
                 search: str = "grid", **options):
        if options.get("budget") is not None:
            raise BomcmcError("AHMC sets its chunk lengths from the burn-in (no budget)")
        warmup, thin = int(warmup), max(1, int(thin))
        check_options(warmup, bo_steps, mass, mass_windows, eps_factors, batch, steps_cap,
                      reward)
        self.burn_steps = min(int(bo_steps), warmup)
        self.step_transitions = warmup // self.burn_steps if self.burn_steps else DEFAULT_M
        self.longer = warmup % self.burn_steps if self.burn_steps else 0
        self.sampling_draws = max(1, self.step_transitions // thin)
        self.batch = None if batch is None else int(batch)  # None: chosen from the chains
        super().__init__(k=max(self.burn_steps, 1), reward=reward, search=search, **options)
        self.steps_max = self.steps_request[1]  # the box's own bound on L
        cap = int(steps_cap) if steps_cap else None  # 0 or None: the whole box
        if cap is not None:
            cap = max(cap, math.ceil(self.steps_request[0]))
        self.steps_cap_start = cap
        self.burn = BurnInState(steps_cap=cap)
        if self.bandit.box is not None:
            self.bandit = self.bandit._replace(box=self.capped(self.bandit.box))
        self.relative_box = options.get("eps_bounds") is None
        self.eps_factors = tuple(float(f) for f in eps_factors)
        self.mass = mass
        self.windows = metric.windows(self.burn_steps, mass_windows) if mass != "identity" else []
        self.metric = MetricState()
        self.logdensity_fn = logdensity_fn
        self.start_positions = start_positions
        self._heuristic_fn = None
        self.side_grads = 0  # gradients spent outside the chunks, not yet taken
        self.settle_rule = settling.SettleRule() if settle else None
        self.settle = settling.SettleState()
        self.margin, self.ceiling = divergence_margin, ceil.CeilingState()

    # -- the states, read ------------------------------------------------------------------
    points = property(lambda self: self.burn.points)
    steps_cap = property(lambda self: self.burn.steps_cap)
    epoch = property(lambda self: self.metric.epoch)
    metric_kind = property(lambda self: self.metric.metric_kind)

    @property
    def burn_end(self) -> int:
        return settling.end_step(self.settle, self.burn_steps)

    def proposal_probability(self, i: int) -> float:
        """p_i; after an early stop at BO step s, as if burn-in had run its k steps."""
        return super().proposal_probability(i + self.burn_steps - self.burn_end)

    def burn_in_end(self) -> int | None:
        return settling.end_transitions(self.settle)

    def burn_in_report(self) -> dict | None:
        return settling.report(self.settle, self.burn_steps) if self.settle_rule else None

    def capped(self, box):
        return burn_in.capped_box(box, self.steps_max, self.burn.steps_cap)

    def set_points(self, points) -> None:
        """The groups' settings; the shared point (hence `step_size`, `num_steps` and the
        saved state's "point") stands for the first group's while a batch runs."""
        self.burn = self.burn._replace(points=tuple(points))
        self.bandit = self.bandit._replace(point=points[0])

    def take_grads(self) -> int:
        """The gradient evaluations this tuner spent outside the chunks since the last call
        (Stan's step-size heuristic, the Laplace Hessian), for the driver to count in the
        warm-up's."""
        n, self.side_grads = self.side_grads, 0
        return n

    # -- Stan's heuristic, for the relative box -----------------------------------------
    def heuristic_step_size(self, positions, inverse_mass, step_size) -> float | None:
        """Median over chains of Stan's init_stepsize from `step_size` at `positions`
        (`step_heuristic`); None without a log density."""
        if self.logdensity_fn is None:
            return None
        if self._heuristic_fn is None:
            self._heuristic_fn = step_heuristic.compile_heuristic(self.logdensity_fn)
        eps0, grads = step_heuristic.median_step_size(
            self._heuristic_fn, self.seed, self.metric.epoch, positions, inverse_mass,
            step_size)
        self.side_grads += grads
        return eps0

    def _recentre(self, positions, inverse_mass, step_size, box):
        """The box re-centred on the heuristic's ε₀ (`box` itself when it has none)."""
        eps0 = self.heuristic_step_size(positions, inverse_mass, step_size)
        if eps0 is None:
            return box
        self.burn = self.burn._replace(eps0=eps0)
        lo, hi = eps0 * self.eps_factors[0], eps0 * self.eps_factors[1]
        return box._replace(lower=(lo, box.lower[1]), upper=(hi, box.upper[1]))

    # -- the Tuner protocol ----------------------------------------------------------------
    def initial_knobs(self, knobs):
        self.metric, knobs = metric.shape_metric(self.metric, self.mass, knobs)
        self.metric, knobs, grads = metric.laplace_metric(
            self.metric, self.mass, knobs, self.logdensity_fn, self.start_positions)
        self.side_grads += grads
        box = self.bandit.box
        eps = float(np.mean(np.asarray(knobs.step_size)))
        if box is None:
            box = self.capped(bandit.KnobBox(
                ("step_size", "num_steps"), (eps / 100.0, self.steps_request[0]),
                (eps * 10.0, self.steps_request[1]), (False, True), (True, False)))
        if self.relative_box and self.start_positions is not None:
            box = self._recentre(self.start_positions,
                                 np.asarray(knobs.inverse_mass_matrix)[0], eps, box)
        self.bandit = self.bandit._replace(box=box)
        knobs = super().initial_knobs(knobs)
        chains = np.asarray(knobs.step_size).reshape(-1).shape[0]
        groups = burn_in.groups(self.batch, chains) if self.burn_steps > 1 else 1
        if groups > 1:
            self.set_points(burn_in.first_batch(self.burn, box, groups, self.start))
        return self._apply(knobs)

    def chunk_draws(self, knobs, chunk_size: int) -> int:
        """BO step j = i + 1: m (+1 for the first B mod k) transitions in burn-in, m // thin
        draws after (m = ⌊B/k⌋, as in the authors' `ahmc.m`)."""
        j = self.bandit.i + 1
        if j <= self.burn_end:
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
        # the mean at 224 points; `bandit.one_blas_thread`)
        with one_blas_thread():
            return self._after_chunk(knobs, chunk)

    def _after_chunk(self, knobs, chunk: dict):
        phase = int(chunk.get("phase", 0))
        if phase == SAMPLING and not self.adapt_in_sampling:
            return self._apply(knobs)
        i = self.bandit.i + 1
        self.bandit = self.bandit._replace(i=i)
        w = self.windows
        collect = (phase == WARMUP and bool(w) and w[0] < i <= w[-1]
                   and not settling.metric_settled(self.settle_rule, self.settle))
        if collect:
            self.metric = metric.welford_add(self.metric,
                                             np.asarray(chunk["positions"], np.float64))
        entries = self.observe_groups(chunk)
        for entry in entries:
            entry["epoch"] = self.metric.epoch
            entry["incumbent"] = False
        self.burn, self.bandit, grew = burn_in.grow_steps(self.burn, self.bandit, self.config,
                                                          self.steps_max)
        updated = collect and i in w[1:]
        # warmup="auto": the step counted and an early end decided (never at a metric update)
        ends = phase == WARMUP and (self._settled(i, chunk, updated, grew) or i == self.burn_steps)
        restarted = False
        if updated:
            knobs, restarted = self._new_metric(knobs, chunk)
        if not restarted:  # a restarted bandit proposes nothing: its GP starts afresh
            self._next_points(i, entries, ends)
        self.history.extend(entries)
        return self._apply(knobs)

    def _next_points(self, i: int, entries: list[dict], ends: bool) -> None:
        """The next setting(s): the incumbent at burn-in's end, proposals in it, moves after."""
        if ends and self.bandit.gp.n_obs > 0:
            # Burn-in's exploration ends: every chain samples from the incumbent (under the
            # ceiling), not an untried proposal (docs/tuning.md, "Robust defaults")
            self.burn = self.burn._replace(points=None)
            self.bandit = self.bandit._replace(point=ceil.safe_point(
                self.bandit.box, bandit.incumbent(self.bandit), self.ceiling, self.margin))
            entries[-1]["incumbent"] = True
        elif self.burn.points:
            # burn-in's p_i is 1: every step proposes, one point per group
            self.set_points(self.propose_batch(entries[0]["p_i"], len(self.burn.points)))
            for entry in entries:
                entry["proposed"] = True
        else:
            self.move(entries[-1])  # after burn-in: not above the ceiling, even unproposed
            margin = self.margin if i > self.burn_end else None
            self.bandit = self.bandit._replace(point=ceil.safe_point(
                self.bandit.box, self.bandit.point, self.ceiling, margin))

    def _settled(self, i: int, chunk: dict, updated: bool, grew: bool) -> bool:
        """warmup="auto": the step counted in `settle`; whether burn-in ends here."""
        if self.settle_rule is None:
            return False
        gp = self.bandit.gp
        self.settle = settling.after_step(
            self.settle_rule, self.settle, i=i, chunk=chunk, updated=updated,
            cap=self.burn_steps, windows=self.windows,
            predicted=float(np.max(gp.mean(gp.X))) if gp.n_obs else math.nan,
            growing=grew or burn_in.would_grow(self.burn, self.bandit, self.steps_max))
        return self.settle.stop is not None

    def observe_groups(self, chunk: dict) -> list[dict]:
        """One history entry per group, each observing its own chains' reward."""
        if not self.burn.points:
            entry = self.observe(chunk)
            entry["group"] = 0
            self.ceiling = ceil.observed(self.ceiling, entry[self.history_keys[0]], chunk)
            return [entry]
        chains = np.asarray(chunk["positions"]).shape[0]
        group = burn_in.group_of(chains, len(self.burn.points))
        entries = []
        for g, point in enumerate(self.burn.points):
            part = burn_in.chunk_of(chunk, np.flatnonzero(group == g))
            entry = self.observe(part, point)
            entry["group"] = g
            self.ceiling = ceil.observed(self.ceiling, entry[self.history_keys[0]], part)
            entries.append(entry)
        return entries

    def propose_batch(self, p: float, n: int) -> list[tuple]:
        """`batch_burn_in.gp_bucb`: n points for the n groups."""
        return burn_in.gp_bucb(self.bandit, self.config, p, n,
                               lambda s: bandit.trust_region(s, self.burn_end))

    def search_box(self) -> tuple[np.ndarray, np.ndarray]:
        """`bandit.trust_region` under the ε ceiling after burn-in, the whole box before."""
        margin = self.margin if self.bandit.i > self.burn_end else None
        return ceil.region(*bandit.trust_region(self.bandit, self.burn_end), self.bandit.box,
                           self.ceiling, margin)

    def _apply(self, knobs):
        """Each chain's (ε, L): its group's in batch burn-in, else the shared one."""
        if not self.burn.points:
            return super()._apply(knobs)
        return burn_in.apply_points(knobs, self.burn.points)

    # -- the metric ------------------------------------------------------------------------
    def _new_metric(self, knobs, chunk):
        """A metric update: M⁻¹ from the window. Under warmup="auto", one that barely moves
        it leaves the bandit as it is (`learned_metric.keeps_rewards`); otherwise the box is
        re-centred, the L cap carried over, the GP reset (kept when sparse) and the bandit
        restarted. Returns the knobs and whether the bandit restarted."""
        old = np.asarray(knobs.inverse_mass_matrix)
        self.metric, inv = metric.estimate(self.metric, self.mass, old[0])
        change = metric.metric_change(old[0], inv)
        # warmup="auto" only: warmup=N runs its fixed schedule, resets included
        keep = self.settle_rule is not None and metric.keeps_rewards(change)
        self.metric = metric.next_epoch(self.metric, count=not keep)
        if self.settle_rule is not None:
            self.settle = settling.new_epoch(self.settle, change, kept=keep)
        knobs = knobs._replace(inverse_mass_matrix=np.broadcast_to(
            inv.astype(old.dtype), old.shape).copy())
        if keep:
            return knobs, False
        self.ceiling = ceil.CeilingState()  # ε in the new metric's units
        box = self.bandit.box
        if self.relative_box:
            last = np.asarray(chunk["positions"])[:, -1]
            box = self._recentre(last, inv, self.step_size, box)
            self.bandit = self.bandit._replace(box=box)
        if self.burn.steps_cap is not None and self.bandit.gp.n_obs > 0:
            # what the last epoch learned about L carries over as the new cap: no longer
            # than twice its incumbent's (STEPS_CAP at least), growing again if need be
            cap = max(self.steps_cap_start, 2 * bandit.incumbent(self.bandit)[1])
            self.burn = self.burn._replace(steps_cap=cap)
            box = self.capped(box)
        restart = (self.step_size, self.num_steps)
        self.bandit = bandit.new_epoch_gp(self.bandit._replace(box=box), self.config)
        if self.burn.points:
            self.set_points(burn_in.first_batch(self.burn, box, len(self.burn.points),
                                                self.start))
        else:
            self.bandit = self.bandit._replace(point=bandit.start_point(box, self.start,
                                                                         restart))
        return knobs, True

    # -- state -----------------------------------------------------------------------------
    def state_dict(self, history: bool = True) -> dict:
        """The three states' `_asdict()` in JSON form, side by side."""
        state = {**super().state_dict(history), **metric.to_json(self.metric),
                 **burn_in.to_json(self.burn), **settling.to_json(self.settle),
                 **ceil.to_json(self.ceiling)}
        state["config"]["steps_bounds"] = list(self.steps_request)  # the box's own
        return state

    def surface(self) -> dict | None:
        """`GPBanditTuner.surface` over the whole L box (the bandit searches up to the cap)."""
        if self.bandit.gp is None:
            return None
        grid = self.bandit._replace(box=self.bandit.box._replace(
            upper=(self.bandit.box.upper[0], self.steps_max)))
        return surface.with_acquisition(surface.bandit_surface(grid), grid, self.config,
                                        self.history)

    def load_state_dict(self, state: dict, history: list[dict] | None = None) -> None:
        super().load_state_dict(state, history)
        self.burn = burn_in.from_json(state)
        self.metric = metric.from_json(state)
        self.settle = settling.from_json(state)
        self.ceiling = ceil.from_json(state)
        self.side_grads = 0  # counted in the chunks already written


# ---------------------------------------------------------------------------------------
# Building the tuner from the run's options (what config.json records)
# ---------------------------------------------------------------------------------------
def make_tuner(options: dict, spec, flat, states) -> AHMCTuner:
    """The AHMC tuner of a run: `options` as recorded in config.json (checked by the
    tuner), `spec` the RunSpec, `flat` the flat posterior, `states` the chains' initial
    states (for the heuristic)."""
    return AHMCTuner(warmup=int(spec.warmup), thin=spec.thin, seed=spec.seed,
                     settle=bool(spec.warmup_auto), logdensity_fn=flat.logdensity_fn,
                     start_positions=np.asarray(states.position), **given(options))


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
