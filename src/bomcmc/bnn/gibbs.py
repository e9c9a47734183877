"""Neal's scheme for a network: the Gibbs sweep over its precisions and the curvature
estimate that sets the per-weight step sizes (Neal 1996; Choo 2000 §3.4, §4.5.1; FBM's
`net-mc.c` and `mc_app_stepsizes`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .groups import MAX_SLOPE_SQ, draw_upper, typical_sq
from .priors import INF


def gibbs_sweep(model, key, position: dict, sample_sigmas=True, sample_noise=True) -> dict:
    """One Gibbs sweep over the stored precisions given the weights: every weight group
    (when `sample_sigmas`) and the noise given the residuals (when `sample_noise`)
    (Choo 2000 §3.4; FBM `sample-sigmas` / `sample-noise`; the flags may be traced).
    One function because the sweep's three phases (auxiliaries, lower, upper levels) share
    one batch of Gamma variates drawn up front.

    In every group, as FBM's `gibbs_conn`: first τ₁ | Z, τ₀, then τ₀ | τ₁ (or τ₀ | Z); for
    t-distributed values the per-value precisions are drawn first as auxiliaries and the
    levels above are drawn given them. Each draw is exact: a Gamma conditional, or the
    log-concave upper-level conditional (`sample_log_upper`)."""
    log_tau = position.get("log_tau", {})
    if not log_tau:
        return position
    dtype = jax.tree_util.tree_leaves(position["w"])[0].dtype
    groups = [g for g in model._all_groups() if g.key0 or g.key1]
    values = model._values(position)
    k_gamma, k_lower, k_upper = jax.random.split(key, 3)
    # all standard Gamma variates of the sweep in one call
    layout, shapes, i = {}, [], 0
    for g in groups:
        for part, shp in g.gamma_shapes().items():
            layout[g.name, part] = (i, shp.shape)
            shapes.append(shp.ravel())
            i += shp.size
    std = (jax.random.loggamma(k_gamma, jnp.concatenate(shapes).astype(dtype))
           if shapes else None)

    def variates(g, part):
        if (g.name, part) not in layout:
            return None
        start, shape = layout[g.name, part]
        return std[start:start + int(np.prod(shape, dtype=int))].reshape(shape)

    new = dict(log_tau)
    aux = {g.name: g.aux_sum(values[g.name], g.precisions(new, dtype)[1],
                             variates(g, "aux")) for g in groups if g.a2 < INF}
    for phase, k in (("lower", k_lower), ("upper", k_upper)):
        pending = []
        for g in groups:
            tau0, tau1 = g.precisions(new, dtype)
            if phase == "lower" and g.key1:
                lt, abc = g.lower_update(values[g.name], tau0, aux.get(g.name),
                                         variates(g, "lower"))
                target = g.key1
            elif phase == "upper" and g.key0:
                lt, abc = g.upper_update(values[g.name], tau1, aux.get(g.name),
                                         variates(g, "upper"))
                target = g.key0
            else:
                continue
            if abc is None:
                new[target] = lt.astype(dtype)
            else:
                pending.append((g, target, abc))
        drawn = draw_upper(k, [abc for _, _, abc in pending])
        for (g, target, _), x in zip(pending, drawn):
            new[target] = x.reshape(np.shape(log_tau[target])).astype(dtype)
    out = dict(log_tau)
    for g in groups:
        flag = sample_noise if g.kind == "noise" else sample_sigmas
        for lk in (g.key0, g.key1):
            if lk:
                out[lk] = jnp.where(flag, new[lk], log_tau[lk])
    return {**position, "log_tau": out}


def neal_curvature(model, position: dict) -> dict:
    """Neal's estimate of −∂²log p/∂wᵢ² for every weight, from the precisions only
    (FBM `net-models.tex`, "Heuristic choice of stepsizes", and `mc_app_stepsizes`; Choo 2000
    §4.5.1). Output curvature: τ_noise per
    output (×(α+1)/α for t noise), ¼ for binary and softmax targets; backpropagated with
    d²L/du² = max a'(u)²·d²L/dv² and d²L/dv_i = Σⱼ σ²_{w,i} d²L/du_j; per weight:
    n·(typical v_i²)·d²L/du_j (Σ_c x_ci² for inputs), per bias n·d²L/du_j, plus the prior
    curvature. Typical hidden v² comes from a forward pass Σ typical v_i² σ²_{w,i}
    through `typical_sq`."""
    log_tau = position.get("log_tau", {})
    dtype = jax.tree_util.tree_leaves(position["w"])[0].dtype
    n = model.n_eff
    tau1 = {name: g.precisions(log_tau, dtype)[1] for name, g in model.groups.items()}
    if model.likelihood == "real":
        g = model.noise_group
        d2_out = g.prior_curvature(g.precisions(log_tau, dtype)[1])  # (n_out,)
    else:
        d2_out = jnp.full((model.n_out,), 0.25, dtype)
    n_layers = len(model.hidden)
    # backward: curvature of each hidden layer's summed inputs u
    d2_u = [None] * n_layers
    above = d2_out
    for layer in reversed(range(n_layers)):
        src = "ho" if layer == n_layers - 1 else f"hh{layer + 1}"
        d2_v = (1.0 / tau1[src]) * jnp.sum(above)  # (h_layer,)
        d2_u[layer] = MAX_SLOPE_SQ[model.activations[layer]] * d2_v
        above = d2_u[layer]
    # forward: typical squared unit values
    x_sumsq = jnp.asarray(model.x_sumsq(), dtype)
    typ = [None] * n_layers
    prev = x_sumsq / n
    for layer in range(n_layers):
        src = "ih0" if layer == 0 else f"hh{layer}"
        s2 = jnp.sum(prev / tau1[src])
        typ[layer] = typical_sq(model.activations[layer], s2)
        prev = jnp.broadcast_to(typ[layer], (model.hidden[layer],))
    out = {}
    for name, g in model.groups.items():
        prior = g.prior_curvature(tau1[name])  # (ns,)
        if name == "ih0":
            lik = x_sumsq[:, None] * d2_u[0][None, :]
        elif name.startswith("hh"):
            layer = int(name[2:])
            lik = n * typ[layer - 1] * jnp.broadcast_to(d2_u[layer], g.shape)
        elif name.startswith("bh"):
            lik = n * d2_u[int(name[2:])]
        elif name == "ho":
            lik = n * typ[-1] * jnp.broadcast_to(d2_out, g.shape)
        elif name == "io":
            lik = x_sumsq[:, None] * d2_out[None, :]
        else:  # bo
            lik = n * d2_out
        prior_term = prior[:, None] if len(g.shape) == 2 else prior[0]
        out[name] = (lik + prior_term).reshape(g.shape).astype(dtype)
    return out
