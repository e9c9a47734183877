"""The GP bandit as data: a state and pure functions over it (Wang, Mohamed & de Freitas 2013
§3; Wang 2012, ch. 3, Algs 2–3; constants from the authors' MATLAB code for the former).

A bandit searches a `KnobBox`: two named knobs, each with its bounds, searched on a log
scale, on a scale stretched around a point (`KnobBox.warp`) or as they are, and integer or
not, e.g. (log ε, L) for HMC or (γ, k) for the IM sampler.
A point is in search coordinates (log ε, not ε). Its `BanditState` is what changes during a
run: the GP of the observations, the current point, the schedule position i, the largest
reward max_j r_j (for the rescaling s) and the seed of the coin flips (the i-th coin is the
i-th draw of PCG64(seed), `coin`, so i is also the generator's position). The incumbent is
not stored: it is the observed point of highest posterior mean (`incumbent`).

    observe(state, point, reward) -> state        the reward into the GP, if finite
    propose(state, config, p, region) -> (state, point)   argmax of the acquisition
    reset_gp(state, config) -> state              a fresh GP over the box, max_j r_j forgotten
    refit_gp(state, config) -> state              the same observations over the box's scales
    new_epoch_gp(state, config) -> state          reset_gp (full GP) or refit_gp (sparse)

Every function returns a new state and leaves its argument alone (the GP of a new state is
a copy, `GaussianProcess.added`), so a tuner is a thin shell that keeps the latest one.
The GP is the full one (`gp.GaussianProcess`) or, with `BanditConfig.gp = "sparse"`, Engel's
ALD dictionary (`sparse_gp.SparseGaussianProcess`), whose cost stays bounded however long
the adaptation runs.
"""

from __future__ import annotations

import contextlib
import math
from typing import NamedTuple

import numpy as np

from ..knob_box import (KnobBox, box_from_json, lower, to_knobs, to_search,  # noqa: F401
                       upper)  # the box and its coordinates, re-exported
from . import schedules  # acquisition (scipy.optimize, slow to import) is imported when used
from .gp import NOISE_VAR, SIGNAL_VAR, GaussianProcess
from .sparse_gp import ALD_THRESHOLD, SparseGaussianProcess

# ℓ_d = 0.2 × range_d ("α = 0.2") and s = 4 / max reward (`update_model.m`): the authors' code
# for Wang, Mohamed & de Freitas 2013
LENGTHSCALE_FACTOR = 0.2
RESCALE = 4.0
TRUST = 2.0  # `trust_region`: proposals within a factor 2 of the incumbent's knobs


class BanditConfig(NamedTuple):
    """The bandit's fixed hyperparameters: the acquisition ("ucb", the annealed UCB of Wang,
    Mohamed & de Freitas 2013 §3, or "ei") with its δ and ξ, DIRECT's evaluation budget and
    the L-BFGS-B polish, the GP's variances and length-scale factor, the rescaling
    s = rescale / max_j r_j (None: s = 1), the GP: "full" (`gp.GaussianProcess`) or
    "sparse" (`sparse_gp.SparseGaussianProcess`, ALD threshold `ald_threshold`), and the
    search: "direct" (DIRECT + L-BFGS-B, `acquisition.maximize`) or "grid" (a vectorised
    grid over the integer values and a Brent polish, `acquisition.maximize_grid`, for a box
    with one continuous axis; DIRECT on other boxes), and whether the full GP standardises
    the rewards (`gp.GaussianProcess`)."""

    acquisition: str = "ucb"
    delta: float = 0.1
    xi: float = 0.01
    maxfun: int = 200
    polish: bool = True
    signal_var: float = SIGNAL_VAR
    noise_var: float = NOISE_VAR
    lengthscale_factor: float = LENGTHSCALE_FACTOR
    rescale: float | None = RESCALE
    gp: str = "full"
    ald_threshold: float = ALD_THRESHOLD
    search: str = "direct"
    standardize: bool = False


class BanditState(NamedTuple):
    box: KnobBox | None  # None until the tuner knows it (a box relative to the first knobs)
    gp: GaussianProcess | SparseGaussianProcess | None
    point: tuple | None  # the current point, in search coordinates
    i: int  # BO steps seen: the schedule's position and the coin generator's
    max_reward: float | None  # max_j r_j, for s (the authors' `update_model.m`)
    seed: int  # the coins' generator


# -- the box ----------------------------------------------------------------------------------
def snap(box: KnobBox, x) -> tuple:
    """A point clipped to the box, an integer axis rounded (round(γ₂), as the authors'
    `ahmc.m`); the others stay continuous."""
    lo, hi = lower(box), upper(box)
    return tuple(int(np.clip(math.floor(float(x[j]) + 0.5), lo[j], hi[j])) if box.integer[j]
                 else float(np.clip(x[j], lo[j], hi[j])) for j in range(len(box.names)))


def start_point(box: KnobBox, start: str, initial) -> tuple:
    """The first point of a fresh GP: the box's lower corner ("corner", the authors'
    `ahmc.m`), its centre ("center"), or the knobs' `initial` values ("knobs")."""
    lo, hi = lower(box), upper(box)
    if start == "corner":
        return snap(box, lo)
    if start == "center":
        return snap(box, (lo + hi) / 2)
    return snap(box, to_search(box, initial))


# -- the state --------------------------------------------------------------------------------
def make_gp(box: KnobBox, config: BanditConfig) -> GaussianProcess | SparseGaussianProcess:
    """A GP over the box: ℓ = lengthscale_factor × range per dimension (the authors' code for
    Wang, Mohamed & de Freitas 2013); a fixed dimension gets ℓ = 1. Sparse (Engel 2005) when
    config.gp is "sparse"."""
    width = upper(box) - lower(box)
    scales = np.where(width > 0, config.lengthscale_factor * width, 1.0)
    if config.gp == "sparse":
        if config.standardize:
            raise ValueError("standardised rewards need the full GP (gp='full')")
        return SparseGaussianProcess(scales, signal_var=config.signal_var,
                                     noise_var=config.noise_var,
                                     threshold=config.ald_threshold)
    return GaussianProcess(scales, signal_var=config.signal_var, noise_var=config.noise_var,
                           standardize=config.standardize)


def init(box: KnobBox | None, seed: int) -> BanditState:
    """A bandit that has seen nothing (no GP until `reset_gp`)."""
    return BanditState(box=box, gp=None, point=None, i=0, max_reward=None, seed=int(seed))


def reset_gp(state: BanditState, config: BanditConfig) -> BanditState:
    """Forget every observation (a new GP over the current box) and the rescaling max_j r_j;
    i, hence p_i, goes on. For when the rewards seen so far no longer describe the sampler,
    e.g. after a change of the mass matrix."""
    return state._replace(gp=make_gp(state.box, config), max_reward=None)


def refit_gp(state: BanditState, config: BanditConfig) -> BanditState:
    """The GP over the state's (re-centred or re-capped) box with every observation and
    max_j r_j kept: `reset_gp`'s alternative for a GP that is never reset (config.gp =
    "sparse"). Only the length scales can change, and a sparse GP then re-sparsifies its
    dictionary (`SparseGaussianProcess.copy`)."""
    if state.gp is None:
        return reset_gp(state, config)
    return state._replace(gp=state.gp.copy(lengthscales=make_gp(state.box, config).lengthscales))


def new_epoch_gp(state: BanditState, config: BanditConfig) -> BanditState:
    """The GP when the rewards seen so far were earned by another sampler (a new metric):
    the full GP is reset (`reset_gp`), the sparse one kept (`refit_gp`), so that adaptation
    that never ends forgets nothing (docs/tuning.md, "The sparse GP")."""
    return (refit_gp if config.gp == "sparse" else reset_gp)(state, config)


def observe(state: BanditState, point, reward: float) -> BanditState:
    """Step 2: a finite reward r of `point` into the GP, and max_j r_j updated; a non-finite
    one is skipped."""
    if not math.isfinite(reward):
        return state
    best = reward if state.max_reward is None else max(state.max_reward, reward)
    return state._replace(gp=state.gp.added(point, reward), max_reward=best)


def coin(seed: int, i: int) -> float:
    """u_i ~ U(0, 1): the i-th draw of PCG64(seed) (i ≥ 1), reached by an exact `advance`, so
    a resumed run draws the same u_i without storing the generator."""
    bits = np.random.PCG64(seed)
    bits.advance(i - 1)  # one 64-bit output per float64 draw
    return float(np.random.Generator(bits).random())


def incumbent(state: BanditState) -> tuple:
    """The observed point with the highest posterior mean."""
    gp = state.gp
    return snap(state.box, gp.X[int(np.argmax(gp.mean(gp.X)))])


def trust_region(state: BanditState, after: int) -> tuple[np.ndarray, np.ndarray]:
    """Where proposals are sought: the whole box up to BO step `after`, then within a factor
    TRUST of the incumbent on each axis (inside the box). Adaptive HMC's vanishing
    adaptation then refines the setting its burn-in found instead of spending
    super-transitions far from it, where a step size too large for the posterior diverges
    (docs/tuning.md, "Robust defaults")."""
    lo_box, hi_box = lower(state.box), upper(state.box)
    if state.i <= after or state.gp.n_obs == 0:
        return lo_box, hi_box
    x = np.asarray(incumbent(state), dtype=float)
    additive = [lg or wp is not None for lg, wp in zip(state.box.log, state.box.warps())]
    f = np.array([math.log(TRUST) if a else TRUST for a in additive])
    lo = np.where(additive, x - f, x / f)
    hi = np.where(additive, x + f, x * f)
    return np.maximum(lo_box, lo), np.minimum(hi_box, np.maximum(hi, lo_box))


def scale(state: BanditState, config: BanditConfig) -> float:
    """s = rescale / max_j r_j (4 / max_j r_j: the authors' `update_model.m`), 1 while no
    reward is positive or without rescaling."""
    best = state.max_reward
    if config.rescale is None or best is None or not best > 0:
        return 1.0
    return config.rescale / best


# -- the acquisition --------------------------------------------------------------------------
def _ucb_beta(state: BanditState, config: BanditConfig) -> float:
    """β of the annealed UCB after the GP's n observations (`schedules.beta`, d = 2)."""
    return schedules.beta(max(state.gp.n_obs, 1), d=2, delta=config.delta)


def _ei_threshold(state: BanditState, config: BanditConfig, s: float) -> float:
    """y* + ξ of EI on the rescaled mean: s × the highest posterior mean at an observed
    point, plus the margin ξ."""
    gp = state.gp
    return s * float(np.max(gp.mean(gp.X))) + config.xi


def acquisition_fn(state: BanditState, config: BanditConfig, p: float, grad: bool = False):
    """γ ↦ u(γ) for the state's GP and annealing weight p; with grad=True, γ ↦ (u, ∇u).

    Scalar arithmetic on the GP's one-point predictor (`GaussianProcess.point_predictor`),
    with the formulas of `acquisition`:
        UCB: u = s·μ + p·√β·σ,            ∇u = s∇μ + p√β ∇σ²/(2σ)
        EI:  u = gΦ(Z) + σφ(Z), g = sμ − y* − ξ, Z = g/σ;  ∇u = Φ(Z) s∇μ + φ(Z) ∇σ
    """
    from . import acquisition

    gp = state.gp
    s = scale(state, config)
    predict = gp.point_predictor(grad=grad)
    if config.acquisition == "ucb":
        beta = _ucb_beta(state, config)

        def value(mean, var):
            return acquisition.ucb(mean, math.sqrt(var), s, p, beta)

        def slope(mean, var):  # (∂u/∂μ, ∂u/∂σ)
            return acquisition.ucb_slope(s, p, beta)
    else:
        best = _ei_threshold(state, config, s)

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


def acquisition_batch(state: BanditState, config: BanditConfig, p: float):
    """Rows of points ↦ u at each, for `acquisition.maximize_grid`: `acquisition_fn`'s
    formulas on the GP's `predict` over all rows at once."""
    from . import acquisition

    gp = state.gp
    s = scale(state, config)
    if config.acquisition == "ucb":
        beta = _ucb_beta(state, config)

        def u(xs):
            mean, var = gp.predict(xs)
            return acquisition.ucb(mean, np.sqrt(var), s, p, beta)
    else:
        best = _ei_threshold(state, config, s)

        def u(xs):
            mean, var = gp.predict(xs)
            return acquisition.improvement_array(s * mean - best, np.sqrt(var))

    return u


def uses_grid(box: KnobBox, config: BanditConfig) -> bool:
    """Whether `propose` searches by `acquisition.maximize_grid`: config.search is "grid"
    and the box has integer axes and exactly one continuous axis."""
    return (config.search == "grid" and any(box.integer)
            and sum(not it for it in box.integer) == 1)


def propose(state: BanditState, config: BanditConfig, p: float,
            region: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[BanditState, tuple]:
    """Step 3's move: argmax u(γ) over `region` (default the box) by DIRECT + L-BFGS-B
    (analytic gradient), or by the grid and Brent polish (`uses_grid`), snapped to the box;
    the state moves there."""
    from . import acquisition

    lo, hi = region if region is not None else (lower(state.box), upper(state.box))
    with one_blas_thread():
        if uses_grid(state.box, config):
            x, _ = acquisition.maximize_grid(acquisition_batch(state, config, p),
                                             acquisition_fn(state, config, p), lo, hi,
                                             state.box.integer, polish=config.polish)
        else:
            x, _ = acquisition.maximize(acquisition_fn(state, config, p), lo, hi,
                                        maxfun=config.maxfun, polish=config.polish,
                                        value_and_grad=acquisition_fn(state, config, p,
                                                                      grad=True))
    point = snap(state.box, x)
    return state._replace(point=point), point


_BLAS = None


def one_blas_thread():
    """A context with BLAS on one thread (threadpoolctl, a scikit-learn dependency): the
    proposal's linear algebra is tiny, and a multi-threaded OpenBLAS spinning up its threads
    for each L-BFGS-B iteration made it several times slower (docs/tuning.md, "One BLAS
    thread for a proposal")."""
    global _BLAS
    if _BLAS is None:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS = ThreadpoolController()
        except Exception:  # noqa: BLE001 - optional: without it, BLAS keeps its threads
            _BLAS = False
    return _BLAS.limit(limits=1, user_api="blas") if _BLAS else contextlib.nullcontext()


# -- JSON -------------------------------------------------------------------------------------
def to_json(state: BanditState) -> dict:
    """The state's `_asdict()` in JSON form (the GP as its observations)."""
    box = state.box
    return {"box": None if box is None else {k: list(v) for k, v in box._asdict().items()},
            "gp": None if state.gp is None else state.gp.state_dict(),
            "point": None if state.point is None else list(state.point),
            "i": int(state.i), "max_reward": state.max_reward, "seed": int(state.seed)}


def from_json(d: dict, config: BanditConfig) -> BanditState:
    """`to_json`'s inverse; the GP gets the box's length scales and `config`'s variances."""
    box = box_from_json(d["box"])
    gp = None
    if d.get("gp") is not None and box is not None:
        gp = make_gp(box, config)
        gp.load_state_dict(d["gp"])
    point = d.get("point")
    if point is not None and box is not None:
        point = tuple(int(v) if it else float(v) for v, it in zip(point, box.integer))
    return BanditState(box=box, gp=gp, point=point, i=int(d["i"]),
                       max_reward=d.get("max_reward"), seed=int(d["seed"]))
