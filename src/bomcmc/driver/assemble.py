"""The finished run as an ArviZ InferenceData, and its totals (gradients, seconds)."""

from __future__ import annotations

import json
import warnings

import numpy as np

from .._version import __version__
from ..errors import BomcmcError
from ..store import ChunkRecord
from ..tuning.base import WARMUP
from .boundary import boundaries
from .engine import Run


def assemble(run: Run, store, wall_total: float):
    import arviz as az

    spec, flat = run.spec, run.flat
    pos, lp, stats = [], [], {}
    warm = ([], [], {})  # the warm-up's positions, log densities and info, if kept
    warm_grad = samp_grad = 0
    warm_wall = samp_wall = tuner_s = 0.0
    warm_iters = 0
    history = []
    for rec in store.chunks():
        history += rec.tuner_history
        tuner_s += rec.tuner_s
        # the kernel's start (AHMC's mode search) is warm-up work, whatever the phase, and so
        # are the gradients a tuner spends itself (AHMC's heuristic and Hessian)
        warm_grad += rec.start_grads + rec.tuner_grads
        n_grad = int(rec.info["n_grad"].sum())
        if rec.phase == WARMUP:
            warm_grad += n_grad
            warm_wall += rec.wall_s
            warm_iters += rec.n_draws
            if spec.save_warmup:
                _collect(rec, *warm)
            continue
        samp_grad += n_grad
        samp_wall += rec.wall_s
        _collect(rec, pos, lp, stats)
    if not pos:
        raise BomcmcError(f"the run has no sampling draws: max_grad={spec.max_grad} was "
                          "reached during warm-up (raise max_grad or shorten the warm-up)")
    positions, sample_stats = _joined(pos, lp, stats)
    posterior = flat.split(positions)
    totals = {
        "n_grad": samp_grad,
        "n_grad_warmup": warm_grad,
        "wall_s": samp_wall,
        "wall_s_warmup": warm_wall,
        "compile_s": run.compile_s,
        "wall_s_total": wall_total,
        # the host tuner and its seconds between chunks, inside wall_s + wall_s_warmup
        "tuner": run.tuner.name,
        "tuner_s": tuner_s,
        "divergences": int(sample_stats["diverging"].sum()) if "diverging" in sample_stats else 0,
        "accept_mean": float(np.mean(sample_stats.get("acceptance_rate", np.nan))),
        "chains": spec.chains,
        "draws": int(sum(p.shape[1] for p in pos)),
        "dim": flat.dim,
        "devices": (run.mesh.size if run.mesh is not None else 1 if run.sharding is None
                    else len(run.sharding.mesh.devices.ravel())),
        "processes": run.process.size,
        "shard_data": run.spec.shard_data,
    }
    totals["warmup"] = warmup_report(run, warm_iters)
    if run.start_note:  # a kernel's start (AHMC's mode search): kept or not
        totals["start"] = run.start_note
    if run.init_spread is not None:  # some chains started near the init
        totals["init_spread"] = run.init_spread
    if run.until is not None:  # a run until precise: its target, and where it stopped
        totals["until"] = run.until.report()
    if totals["divergences"]:  # a hard boundary, which no step size removes (boundary.py)
        totals["boundary"] = boundaries(flat, positions, sample_stats.get("diverging"),
                                        spec.seed)
    attrs = {
        "inference_library": "bomcmc",
        "inference_library_version": __version__,
        "sampler": spec.sampler,
        "gibbs_within_hmc": int(run.kernel.gibbs_within),  # read by the checks and plots
        # the metric a tuner learned ("auto" resolved), read by the warnings' advice
        "metric": str(run.tuner.metric_kind or ""),
        "posterior": spec.posterior,
        "posterior_name": flat.source.name,  # a user's own posterior is "custom" in spec
        "seed": spec.seed,
        "config": json.dumps(spec.to_json(), sort_keys=True),
        "totals": json.dumps(totals, sort_keys=True),
    }
    constrained = flat.constrained(positions)
    warmup = {}
    if spec.save_warmup and warm[0]:
        warm_pos, warm_stats = _joined(*warm)
        warm_constrained = flat.constrained(warm_pos)
        warmup = dict(warmup_posterior=(warm_constrained if warm_constrained is not None
                                        else flat.split(warm_pos)),
                      warmup_sample_stats=warm_stats, save_warmup=True)
    shown = constrained if constrained is not None else posterior
    with warnings.catch_warnings():  # the arrays are (chain, draw, ...) whatever their sizes
        warnings.filterwarnings("ignore", "More chains", UserWarning)
        dims, coords = named_dims(flat.source, shown, lead=2)
        idata = az.from_dict(posterior=shown, sample_stats=sample_stats, attrs=attrs,
                             dims=dims, coords=coords, **warmup)
        if constrained is not None:
            dims, coords = named_dims(flat.source, posterior, lead=2)
            idata.add_groups(unconstrained_posterior=az.dict_to_dataset(
                posterior, library=None, dims=dims, coords=coords))
        add_model_groups(idata, flat, positions)
    idata.posterior.attrs.update(attrs)  # group attrs survive every NetCDF round trip
    surface = run.tuner.surface()
    if history or surface is not None:
        add_tuning_group(idata, history, run.tuner.state_dict(history=False), surface)
    return idata, totals


def warmup_report(run: Run, transitions: int) -> dict:
    """run.json's "warmup": the transitions run, and when and why the warm-up ended (a tuner
    that ends its burn-in when it has learned says so, `Tuner.burn_in_report`)."""
    spec = run.spec
    out = {"auto": spec.warmup_auto, "cap" if spec.warmup_auto else "requested": spec.warmup,
           "transitions": int(transitions)}
    report = run.tuner.burn_in_report() if spec.warmup_auto else None
    if report is not None:
        return {**out, **report, "transitions": int(transitions)}
    reason = (f"the sampler's own schedule: warmup='auto' runs {spec.warmup} transitions"
              if spec.warmup_auto else f"warmup={spec.warmup} given")
    return {**out, "reason": reason}


def _collect(rec: ChunkRecord, pos: list, lp: list, stats: dict) -> None:
    """Append a chunk record's draws, log densities and info fields to the lists."""
    pos.append(rec.positions)
    lp.append(rec.lp)
    for k, v in rec.info.items():
        stats.setdefault(k, []).append(v)


def _joined(pos: list, lp: list, stats: dict):
    """(positions (chains, draws, dim), sample_stats) of collected chunks."""
    sample_stats = {k: np.concatenate(v, axis=1) for k, v in stats.items()}
    sample_stats["lp"] = np.concatenate(lp, axis=1)
    if "diverging" in sample_stats:
        sample_stats["diverging"] = sample_stats["diverging"].astype(bool)
    return np.concatenate(pos, axis=1), sample_stats


def add_model_groups(idata, flat, positions: np.ndarray) -> None:
    """ArviZ's `observed_data` and `log_likelihood` groups, for a posterior that gives them
    (`from_numpyro`, `from_pymc`): the observed values, and each observed site's pointwise
    log-likelihood per chain and draw, so that `az.loo` and `az.waic` run."""
    import arviz as az

    observed = flat.source.observed_data
    if observed is not None:
        observed = {k: np.asarray(v) for k, v in observed.items()}
        dims, coords = named_dims(flat.source, observed, lead=0)
        idata.add_groups(observed_data=az.dict_to_dataset(
            observed, library=None, default_dims=[], dims=dims, coords=coords))
    loglik = flat.log_likelihood(positions)
    if loglik is not None:
        dims, coords = named_dims(flat.source, loglik, lead=2)
        idata.add_groups(log_likelihood=az.dict_to_dataset(
            loglik, library=None, dims=dims, coords=coords))


def named_dims(source, arrays: dict, lead: int) -> tuple[dict, dict]:
    """ArviZ's (dims, coords) for one group's arrays, whose first `lead` axes are chain and
    draw: the posterior's `dims` and `coords` (`Posterior.dims`) for each variable whose
    shape fits them. A variable with more named axes than it has, a dimension named twice,
    or an axis whose length differs from its dimension's labels or from another variable's
    axis of that name keeps ArviZ's default names (`theta_dim_0`)."""
    if not source.dims:
        return {}, {}
    coords = {k: list(v) for k, v in (source.coords or {}).items() if v is not None}
    sizes = {k: len(v) for k, v in coords.items()}
    out = {}
    for name, value in arrays.items():
        shape, want = np.shape(value)[lead:], list(source.dims.get(name) or [])
        while len(want) > len(shape) and want[-1] is None:
            want.pop()  # unnamed event axes the unconstrained variable lacks
        named = [(d, n) for d, n in zip(want, shape) if d is not None]
        if (not named or len(want) > len(shape) or len({d for d, _ in named}) < len(named)
                or any(sizes.get(d, n) != n for d, n in named)):
            continue
        sizes.update(named)
        out[name] = [d if d is not None else f"{name}_dim_{i}" for i, d in enumerate(want)]
    used = {d for ds in out.values() for d in ds}
    return out, {k: v for k, v in coords.items() if k in used}


def add_tuning_group(idata, history: list[dict], state: dict,
                     surface: dict | None = None) -> None:
    """The tuner's history as the InferenceData group `tuning`: one row per BO step (dim
    "step"), one variable per history key (None -> NaN; non-scalars as JSON text); the final
    state (JSON) in its attrs; and the tuner's learned surface if it has one
    (`Tuner.surface`, `_surface_vars`), so that plots need no tuner class."""
    import warnings

    import xarray as xr

    keys = list(dict.fromkeys(k for h in history for k in h))
    data = {}
    for k in keys:
        vals = [h.get(k) for h in history]
        if all(isinstance(v, bool) for v in vals):
            arr = np.asarray(vals, bool)
        elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals):
            arr = np.asarray(vals, np.int64)
        elif all(v is None or isinstance(v, (int, float, np.number)) for v in vals):
            arr = np.asarray([np.nan if v is None else float(v) for v in vals], np.float64)
        else:
            arr = np.asarray([json.dumps(v) for v in vals])
        data[k] = ("step", arr)
    ds = xr.Dataset(data, coords={"step": np.arange(len(history))},
                    attrs={"tuner": str(state.get("name", "")), "tuner_state": json.dumps(state)})
    if surface is not None:
        ds = ds.merge(_surface_vars(surface))
        ds.attrs.update(surface_names=",".join(surface["names"]),
                        surface_final=json.dumps([float(v) for v in surface["final"]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "tuning" is not an ArviZ scheme group
        idata.add_groups(tuning=ds)


def _surface_vars(surface: dict):
    """The surface's variables: GP mean and sd (and the acquisition, where the tuner gives
    it) over the grid (dims surface_y, surface_x) and the points tried with their counts (dim
    surface_tried)."""
    import xarray as xr

    grid = ("surface_y", "surface_x")
    tried = {f"surface_tried_{k}": ("surface_tried", np.asarray(surface[f"tried_{k}"]))
             for k in ("x", "y", "n")}
    on_grid = {f"surface_{k}": (grid, np.asarray(surface[k], np.float64))
               for k in ("mean", "sd", "acquisition") if k in surface}
    return xr.Dataset({**on_grid, **tried},
                      coords={"surface_x": np.asarray(surface["x"], np.float64),
                              "surface_y": np.asarray(surface["y"], np.float64)})


def tuner_history(store) -> list[dict]:
    """The full tuner history, from the entries every chunk record carries."""
    return [h for rec in store.chunks() for h in rec.tuner_history]
