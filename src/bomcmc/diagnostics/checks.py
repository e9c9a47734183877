"""Warnings for a run that went wrong: one line per problem, each naming the quantity, its
value, the threshold and what to try. What to try is written for the sampler that ran and
the interface in use (`advice.py`: options the sampler takes, as keywords, flags or
estimator parameters; `check_run`'s `context`).

The thresholds are those Stan and ArviZ use:

- divergent transitions after warm-up: any is worth a warning (Stan, whose guide to its
  runtime warnings is listed under "Stan" in docs/references.md; Betancourt 2017: a
  divergence means the integrator met curvature it cannot follow, and the draws may be
  biased);
- rank-normalised split R-hat above 1.01 on any coordinate (Vehtari et al. 2021; the bound
  Stan and ArviZ's `rhat`, Kumar et al. 2019, recommend);
- bulk or tail ESS under 100 per chain, i.e. under 100 × chains (Vehtari et al. 2021: 400
  for four chains; Stan's bound);
- NUTS trees at their maximum depth (the run's `max_tree_depth`, Stan's default 10; Hoffman &
  Gelman 2014) in more than 1 % of sampling transitions. Stan reports any such transition;
  a handful in a long run costs efficiency, not correctness, so bomcmc warns above 1 %;
- E-BFMI under 0.3 in any chain (Betancourt 2016, Betancourt 2017 §6.1; the advice of Stan
  and of ArviZ's `bfmi`, Kumar et al. 2019), from `sample_stats.energy`, whose consecutive
  differences are the energy changes of momentum resampling. Not for Neal's network
  samplers, whose recorded energy is the weights' conditional given hyperparameters that a
  Gibbs draw changes between transitions;
- mean acceptance under 0.05 or over 0.995: bomcmc's own bounds for a sampler that (almost)
  never or always accepts, whose step size is far from useful (over 0.995 with the log
  density equal at every draw: a flat density, perhaps improper);
- a chain that never moved: every draw equal to the chain's first;
- fewer than 4 draws per chain, where R-hat and ESS are not defined: only this and the
  divergences are reported;
- a run until precise that its cap stopped before its rule held.

Each message prints a value next to its bound with as many significant figures as it takes to
show on which side of the bound it lies (`wording.beside`): R-hat 1.011 prints as "1.011 > 1.01",
never as "1.01 > 1.01".

A network run is judged in function space: where its InferenceData holds the group
`function_space` (the predictions at the training inputs and the log-likelihood of the
training data, per draw; `bnn/estimator.py` writes it), R-hat, ESS and frozen coordinates are
those of that group, not of the weights, which hidden-unit permutations and sign flips leave
unidentified. A run that records `burn_in_draws` in its posterior attrs is judged on the
draws after them (`kept`).

A coordinate that is constant within every chain has no defined ESS (ArviZ reports the number
of draws for constant input, or a small number when the chains sit at different values): the
checks count it as ESS 0, and `summarize` reports NaN for it. One that holds the same value in
every chain (`constant`: with two chains or more) is fixed by construction, like the zeros above
the diagonal of a Cholesky factor, and is not judged at all.
"""

from __future__ import annotations

import contextlib
import json
import warnings

import numpy as np

from . import advice as _advice
from .advice import Context
from .stillness import constant, frozen, stuck_chains
from .wording import beside, bound_text

RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100
TREE_DEPTH_SHARE_MAX = 0.01
EBFMI_MIN = 0.3
ACCEPT_MIN = 0.05
ACCEPT_MAX = 0.995
MIN_DRAWS = 4  # per chain: split R-hat and ESS need 4 (ArviZ's are NaN below)
FIXED_POINT_SHARE_MAX = 0.05  # RMHMC: transitions whose implicit steps did not converge
FUNCTION_SPACE = "function_space"  # a network run's identified quantities (`function_space`)
BURN_IN = "burn_in_draws"  # posterior attr: the first draws a run discards (`kept`)


class SamplingWarning(UserWarning):
    """A finished run whose diagnostics say its draws should not be trusted as they are
    (divergences, R-hat, low ESS, saturated NUTS trees, low E-BFMI, extreme acceptance,
    unconverged RMHMC fixed points, chains that never moved)."""


@contextlib.contextmanager
def quiet():
    """ArviZ and numpy warn on 0/0 (constant chains, too few draws) where the result is NaN.
    ArviZ's estimators called inside take their NumPy path (`numpy_path`)."""
    with warnings.catch_warnings(), numpy_path():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@contextlib.contextmanager
def numpy_path():
    """ArviZ's estimators (ESS, R-hat, MCSE, E-BFMI) by their NumPy path instead of their
    Numba one, whose functions Numba compiles anew in every process, which takes longer than
    computing the figures. The two paths are the same estimators and differ by rounding, in
    the variances: NumPy's two-pass `var` against a one-pass sum of squares in the data's
    precision (tests/test_diagnostics_checks.py compares them)."""
    from arviz.utils import Numba

    flag = Numba.numba_flag
    Numba.numba_flag = False
    try:
        yield
    finally:
        Numba.numba_flag = flag


def convergence(idata, group: str = "posterior", mcse: bool = True) -> dict:
    """Bulk and tail ESS, MCSE of the mean (None without `mcse`: the checks do not read it)
    and rank-normalised split R-hat (None for one chain) of a group (the posterior by
    default), as Datasets: ArviZ's estimators, every coordinate at once
    (`rank_normalized`)."""
    from . import rank_normalized as rn

    ds = idata[group]
    with quiet():
        n_chains = ds.sizes.get("chain", 1)
        return {
            "ess_bulk": rn.on_dataset(ds, rn.ess_bulk),
            "ess_tail": rn.on_dataset(ds, rn.ess_tail),
            "mcse_mean": rn.on_dataset(ds, rn.mcse_mean) if mcse else None,
            "r_hat": rn.on_dataset(ds, rn.rhat) if n_chains > 1 else None,
        }


def function_space(idata):
    """A network run's quantities that are identified, whose R-hat and ESS decide its
    warnings (the group FUNCTION_SPACE: the predictions at the training inputs and the
    log-likelihood of the training data, per draw), or None. A network's weights are
    identified only up to permutations and sign flips of its hidden units (Neal 1996 §1.2),
    so their R-hat and ESS say little about the predictions."""
    return idata[FUNCTION_SPACE] if FUNCTION_SPACE in idata.groups() else None


def kept(idata, totals: dict | None = None):
    """(the draws a run kept, its totals counted on them): a run whose posterior attrs name
    BURN_IN draws (a network fit's first fraction of its budget) loses those draws in every
    group, and its divergences, draws, gradients and mean acceptance are counted again on
    the rest. Other runs come back as they are."""
    n = int(idata.posterior.attrs.get(BURN_IN, 0) or 0)
    if n <= 0:
        return idata, totals
    idata = idata.isel(draw=slice(n, None))
    for group in idata.groups():
        idata[group].attrs = {**idata[group].attrs, BURN_IN: 0, "burn_in_dropped": n}
    totals = dict(totals or {})
    ss = idata.sample_stats if "sample_stats" in idata.groups() else None
    totals["draws"] = int(idata.posterior.sizes.get("draw", 0))
    for key, stat, fn in (("divergences", "diverging", lambda v: int(np.sum(v.astype(bool)))),
                          ("n_grad", "n_grad", lambda v: int(np.sum(v))),
                          ("accept_mean", "acceptance_rate", lambda v: float(np.nanmean(v)))):
        v = _stat(ss, stat)
        if v is not None and v.size:
            totals[key] = fn(v)
    return idata, totals


def parameter_figures(idata, totals: dict | None = None) -> dict | None:
    """`convergence` of the draws the run kept (`kept`), which `check_run` and the summary
    share; None for a run judged in function space (`function_space`), whose checks compute
    the figures of its predictions instead."""
    idata, _ = kept(idata, totals)
    return None if function_space(idata) is not None else convergence(idata)


def check_run(idata, totals: dict | None = None, figures: dict | None = None,
              context: Context | None = None) -> list[str]:
    """One-line messages, one per problem the run's diagnostics show; [] for a healthy run.

    `totals` (as `sample` returns them) is used only where `sample_stats` lacks a quantity
    (divergences, mean acceptance); by default they are read from the InferenceData.
    `figures`: what `parameter_figures(idata, totals)` returned, if already computed
    (`summarize` shares them). `context`: the sampler that ran and the interface in use, for
    which each message's advice is written (`advice.Context`); by default the run's attrs
    and Python keywords."""
    ctx = context or _advice.from_run(idata.posterior.attrs, _sample_stats(idata))
    if totals is None:
        totals = json.loads(idata.posterior.attrs.get("totals", "{}"))
    idata, totals = kept(idata, totals)
    if (n := idata.posterior.sizes.get("draw", 0)) < MIN_DRAWS:  # nothing else is judged yet
        return [m for m in (_divergences(_sample_stats(idata), totals, ctx), _too_few(n, ctx))
                if m]
    judged = function_space(idata)
    if judged is not None:
        conv = convergence(idata, FUNCTION_SPACE, mcse=False)
    elif figures is not None:
        conv = figures
    else:
        conv = convergence(idata, mcse=False)
    with quiet():
        ss, post = _sample_stats(idata), idata.posterior
        ds = post if judged is None else judged
        still = frozen(ds)
        where = "" if judged is None else " of the predictions and log-likelihood"
        msgs = [
            _divergences(ss, totals, ctx),
            _rhat(conv, still, where, ctx),
            _ess(conv, still, constant(ds, still), post.sizes.get("chain", 1), where, ctx),
            _tree_depth(ss, post.attrs, ctx),
            _ebfmi(idata, ss, ctx),
            _acceptance(ss, totals, ctx),
            _fixed_points(ss, ctx),
            _stuck(post, ctx),
            _until(totals, ctx),
        ]
    return [m for m in msgs if m]


def _too_few(n_draws: int, ctx: Context | None = None) -> str:
    return (f"{n_draws} draws per chain < {MIN_DRAWS}: too few for R-hat and ESS (Vehtari et al. "
            "2021), so whether the chains converged is not judged; "
            + _advice.advise("too_few", ctx))


def _until(totals: dict, ctx: Context | None = None) -> str | None:
    """A run until precise (`driver.until`) its cap (draws or seconds) stopped first, with
    its figures, and a cap raised twice the ESS's shortfall (at least 2×; a generous cap
    costs nothing where the chains mix: the rule stops at its target)."""
    if not (u := totals.get("until")) or u["reached"]:
        return None
    b, t, s = u.get("ess_bulk", 0), u.get("ess_tail", 0), u.get("until_seconds")
    return (f"the run stopped at its cap before its rule held (bulk and tail ESS >= until_ess="
            f"{u['until_ess']:g}, R-hat <= {RHAT_MAX}): min bulk ESS {b:.0f}, tail {t:.0f}, "
            f"max R-hat {u.get('rhat', float('nan')):.3f}; " + _advice.advise(
                "until_cap", ctx, seconds=s if s and u.get("sampling_s", 0) >= s else None,
                ess_factor=max(2.0, 2.0 * u["until_ess"] / max(min(b, t), 1.0))))


def _sample_stats(idata):
    return idata.sample_stats if "sample_stats" in idata.groups() else None


def _stat(ss, name: str) -> np.ndarray | None:
    if ss is None or name not in ss.data_vars:
        return None
    return np.asarray(ss[name].values)


def _divergences(ss, totals: dict, ctx: Context | None = None) -> str | None:
    div = _stat(ss, "diverging")
    if div is not None:
        n, total = int(np.sum(div.astype(bool))), int(div.size)
    else:
        n = int(totals.get("divergences") or 0)
        total = int((totals.get("chains") or 0) * (totals.get("draws") or 0))  # draws per chain
    if n == 0:
        return None
    share = f" ({n / total:.1%} of {total} draws)" if total > 0 else ""
    head = f"{n} divergent transitions after warm-up{share} > 0 (Stan warns on any): "
    if walls := totals.get("boundary"):  # driver/boundary.py
        where = ", ".join(f"{w['name']} {w['side']} {w['draws_reach']:.3g}" for w in walls[:4])
        return head + _advice.BOUNDARY.format(where=where + (", ..." if len(walls) > 4 else ""))
    return (head + "the integrator met curvature it cannot follow and the draws may be "
            "biased; " + _advice.advise("divergences", ctx))


def _fixed_points(ss, ctx: Context | None = None) -> str | None:
    failed = _stat(ss, "fixed_point_failed")
    if failed is None or np.mean(failed) <= FIXED_POINT_SHARE_MAX:
        return None
    return (f"the generalised leapfrog's fixed-point iterations did not converge in "
            f"{beside(np.mean(failed), FIXED_POINT_SHARE_MAX, True)} of transitions > "
            f"{bound_text(FIXED_POINT_SHARE_MAX, True)}: the "
            "integrator is then neither exactly reversible nor volume-preserving and the draws "
            "may be biased; " + _advice.advise("fixed_points", ctx))


def coordinate_labels(name: str, shape: tuple, axes: list | None = None) -> list[str]:
    """"x" for a scalar, else "beta[0]", "L[1,0]", ... for each coordinate in ravel order
    (with `axes`, each axis's labels, a model's coords: "theta[A]")."""
    axes = axes or [range(n) for n in shape]
    return [name] if not shape else [f"{name}[{index_label(axes, i)}]" for i in np.ndindex(shape)]


def index_label(axes: list, index: tuple, sep: str = ",") -> str:
    """One coordinate's labels on each axis, joined: "1,0", or "Choate" from a model's coords."""
    return sep.join(str(a[j]) for a, j in zip(axes, index))


def _coords(ds, still: dict) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(the values of every coordinate of every variable, flat; whether each never moved;
    their labels)."""
    values, fixed, labels = [], [], []
    for name in ds.data_vars:
        v = np.asarray(ds[name].values, dtype=float)
        values.append(v.ravel())
        fixed.append(np.broadcast_to(still[name], v.shape).ravel())
        labels += coordinate_labels(name, v.shape, [ds[name][d].values for d in ds[name].dims])
    if not values:
        return np.zeros(0), np.zeros(0, bool), []
    return np.concatenate(values), np.concatenate(fixed), labels


def _rhat(conv: dict, still: dict, where: str = "", ctx: Context | None = None) -> str | None:
    if conv.get("r_hat") is None:
        return None
    r, fixed, labels = _coords(conv["r_hat"], still)
    # a coordinate that never moved (R-hat 0/0 or x/0) is reported by the ESS and stuck-chain
    # checks, not as an R-hat of 1e16
    bad = (r > RHAT_MAX) & ~fixed
    if not bad.any():
        return None
    worst = int(np.nanargmax(np.where(bad, r, -np.inf)))
    return (f"R-hat {beside(r[worst], RHAT_MAX)} > {bound_text(RHAT_MAX)} (rank-normalised "
            f"split R-hat; Vehtari et al. 2021) on {int(bad.sum())} of {r.size} coordinates"
            f"{where} "
            f"(worst: {labels[worst]}): the "
            "chains disagree and have not mixed; " + _advice.advise("rhat", ctx))


def _ess(conv: dict, still: dict, const: dict, n_chains: int, where: str = "",
         ctx: Context | None = None) -> str | None:
    threshold = ESS_PER_CHAIN_MIN * n_chains
    parts, n_bad, n, lowest = [], None, 0, np.inf
    for kind in ("bulk", "tail"):
        e, fixed, labels = _coords(conv[f"ess_{kind}"], still)
        e = np.where(fixed, 0.0, e)  # a coordinate that never moved: no effective draws
        low = (e < threshold) & ~_coords(conv[f"ess_{kind}"], const)[1]  # constant: not judged
        n = e.size
        n_bad = low if n_bad is None else (n_bad | low)
        if low.any():
            worst = int(np.nanargmin(np.where(low, e, np.inf)))
            lowest = min(lowest, float(e[worst]))
            parts.append(f"{kind} ESS min {beside(e[worst], threshold)} ({labels[worst]})")
    if not parts:
        return None
    return (f"{', '.join(parts)} < {threshold} (100 per chain × {n_chains} chains; Vehtari et "
            f"al. 2021) on {int(n_bad.sum())} of {n} coordinates{where}: the chains are too "
            "short or mix too slowly for reliable estimates; "
            + _advice.advise("ess", ctx, ess_factor=threshold / max(lowest, 1.0)))


def _tree_depth(ss, attrs, ctx: Context | None = None) -> str | None:
    depth = _stat(ss, "tree_depth")
    if depth is None or depth.size == 0:
        return None
    from ..kernels.nuts import DEFAULT_MAX_TREE_DEPTH

    max_depth = DEFAULT_MAX_TREE_DEPTH
    try:
        knobs = json.loads(attrs["config"]).get("knobs") or {}
        max_depth = int(knobs.get("max_tree_depth", max_depth))
    except (KeyError, TypeError, ValueError):
        pass
    share = float(np.mean(depth >= max_depth))
    if share <= TREE_DEPTH_SHARE_MAX:
        return None
    return (f"NUTS tree depth at its maximum {max_depth} in "
            f"{beside(share, TREE_DEPTH_SHARE_MAX, True)} of sampling "
            f"transitions > {bound_text(TREE_DEPTH_SHARE_MAX, True)}: trajectories were cut "
            "short before they turned; " + _advice.advise("tree_depth", ctx))


def gibbs_within_hmc(attrs) -> bool:
    """Whether a run's sampler alternates Gibbs draws of the hyperparameters with HMC or NUTS
    on the weights (Neal 1996; `Kernel.gibbs_within`), from its InferenceData's attrs. Runs
    written before bomcmc recorded it are read by the names of Neal's samplers."""
    if "gibbs_within_hmc" in attrs:
        return bool(int(attrs["gibbs_within_hmc"]))
    sampler = str(attrs.get("sampler", ""))
    return sampler.startswith("neal") or sampler.endswith("_gibbs")


def _ebfmi(idata, ss, ctx: Context | None = None) -> str | None:
    if gibbs_within_hmc(idata.posterior.attrs):
        return None  # the energy of a conditional that changes between transitions
    energy = _stat(ss, "energy")
    if energy is None or energy.ndim != 2 or energy.shape[1] < 2:
        return None
    import arviz as az

    bfmi = np.asarray(az.bfmi(idata), dtype=float)
    low = np.flatnonzero(bfmi < EBFMI_MIN)
    if low.size == 0:
        return None
    return (f"E-BFMI {beside(np.min(bfmi[low]), EBFMI_MIN)} < {bound_text(EBFMI_MIN)} "
            f"(Betancourt 2016) in chain(s) {', '.join(map(str, low))}: momentum "
            "resampling explores the energy poorly "
            "(heavy tails or a badly adapted metric); " + _advice.advise("ebfmi", ctx))


def _acceptance(ss, totals: dict, ctx: Context | None = None) -> str | None:
    acc = _stat(ss, "acceptance_rate")
    mean = float(np.nanmean(acc)) if acc is not None and acc.size else totals.get("accept_mean")
    if mean is None or not np.isfinite(mean):
        return None
    if mean < ACCEPT_MIN:
        return (f"mean acceptance {beside(mean, ACCEPT_MIN)} < {bound_text(ACCEPT_MIN)}: "
                "almost every proposal was rejected; " + _advice.advise("accept_low", ctx))
    if mean > ACCEPT_MAX and _flat(ss):  # no step is too small for a flat density
        return (f"mean acceptance {beside(mean, ACCEPT_MAX)} > {bound_text(ACCEPT_MAX)} with the "
                "log density equal at every draw: it is flat where the chains went, and a "
                "density flat without bounds is improper; give every parameter a proper prior")
    if mean > ACCEPT_MAX:
        return (f"mean acceptance {beside(mean, ACCEPT_MAX)} > {bound_text(ACCEPT_MAX)}: "
                "almost every proposal was accepted, so the step size is probably far too "
                "small and the chains crawl; " + _advice.advise("accept_high", ctx))
    return None


def _flat(ss) -> bool:
    """The log density the same at every draw of every chain (to 1e-12 of its size)."""
    lp = _stat(ss, "lp")
    if lp is None or lp.size < 2 or not np.all(np.isfinite(lp)):
        return False
    return float(np.ptp(lp)) <= 1e-12 * max(1.0, float(np.max(np.abs(lp))))


def _stuck(post, ctx: Context | None = None) -> str | None:
    stuck = stuck_chains(post)
    if not stuck:
        return None
    n = post.sizes.get("chain", 1)
    return (f"{len(stuck)} of {n} chains never moved (chain{'s' if len(stuck) > 1 else ''} "
            f"{', '.join(map(str, stuck))}: every draw equals the chain's first): the sampler "
            "rejected every proposal, or the log density is flat or not finite there; "
            + _advice.advise("stuck", ctx))
