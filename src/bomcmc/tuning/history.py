"""A run's bandit read back from its InferenceData: the tuner, its history, a summary."""

from __future__ import annotations

import math

import numpy as np

from .gp_bandit import GPBanditTuner, box_of_state


def tuning_from_idata(idata) -> tuple[GPBanditTuner, list[dict]] | None:
    """(tuner rebuilt from the final state, history) of a run's InferenceData `tuning` group,
    or None when the run has no GP-bandit tuning."""
    import json

    idata = getattr(idata, "idata", idata)  # a SampleResult works too
    if not hasattr(idata, "groups") or "tuning" not in idata.groups():
        return None
    group = idata.tuning
    if "tuner_state" not in group.attrs:
        return None
    state = json.loads(group.attrs["tuner_state"])
    box = box_of_state(state)
    if state.get("gp") is None or box is None or box.names != ("step_size", "num_steps"):
        return None
    history = history_from_dataset(group)
    return GPBanditTuner.from_state(state, history), history


def history_from_dataset(ds) -> list[dict]:
    """The history entries of a `tuning` group (one per BO step; NaN rewards back to None)."""
    n = ds.sizes.get("step", 0)
    # one value per BO step (the surface_* variables of a run's learned surface are not)
    cols = {k: np.asarray(ds[k].values) for k in ds.data_vars if ds[k].dims == ("step",)}
    out = []
    for j in range(n):
        h = {}
        for k, v in cols.items():
            x = v[j].item()
            if isinstance(x, float) and not math.isfinite(x):
                x = None
            h[k] = x
        out.append(h)
    return out


def summarize_tuning(idata) -> dict | None:
    """A JSON-able summary of a run's bandit (for `bomcmc summary`): BO steps, observations
    (more than BO steps where burn-in ran a batch of settings per step), proposals, the final
    and the incumbent (ε, L), the number of GP resets, the last p_i."""
    found = tuning_from_idata(idata)
    if found is None:
        return None
    tuner, history = found
    finite = [h for h in history if h.get("reward") is not None]
    # one entry per observation: a BO step of a batch burn-in observes one per chain group
    steps = {h["i"]: h for h in history}
    out = {
        "bo_steps": len(steps),
        "bo_steps_warmup": sum(1 for h in steps.values() if h.get("phase") == 0),
        "observations": len(history),
        "proposals": sum(1 for h in steps.values() if h.get("proposed")),
        "distinct_settings": len({(h["eps"], h["L"]) for h in history}),
        "final": {"step_size": tuner.step_size, "num_steps": tuner.num_steps},
        "best": tuner.best() if tuner.gp is not None and tuner.gp.n_obs else None,
        "eps_bounds": list(tuner.eps_bounds), "steps_bounds": list(tuner.steps_bounds),
        "last_p_i": history[-1]["p_i"] if history else None,
        "max_reward": max((h["reward"] for h in finite), default=None),
    }
    if history and "epoch" in history[-1]:
        out["gp_resets"] = int(history[-1]["epoch"])
    return out
