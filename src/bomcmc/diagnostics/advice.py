"""What a warning tells its reader to try: options the sampler that ran takes, spelled for the
interface in use (a keyword of `bomcmc.sample`, a flag of `bomcmc sample`, a parameter of
the network estimators, a flag of `bomcmc bnn fit`).

Each problem has an ordered list of candidate remedies (`_CANDIDATES`), each a set of
option values computed from the run's own (a quarter of the step size it used, a higher
target acceptance than the one it had, twice its draws). A candidate is printed only if the
run's interface takes it: `Context.takes`, which the driver builds on `registry.configure`
of the sampler that ran (`driver.api.advice_context`), the estimators on their parameters;
without one, the sampler's option schemas (`bomcmc.schemas`) decide. The remedies follow
Stan's guide to its runtime warnings: a divergence calls for a smaller step (a higher
target acceptance where a warm-up adapts it), saturated trees and a low E-BFMI for a better
metric, low ESS and high R-hat for longer runs (Vehtari et al. 2021). Where no option of the
sampler fixes the problem, the advice names what does: more draws, a reparameterisation, or
another sampler that takes the same posterior (`_OTHER`: spin systems get another IM
sampler, never an HMC one).

Each remedy is printed between backticks, to be pasted as it is: `step_size=0.05` after
`sample(...`'s other arguments, `--step-size 0.05` on the `bomcmc sample` line, or in `set_params`.
"""

from __future__ import annotations

import json
import math
from typing import Callable, NamedTuple

from .. import schemas
from .spelling import BNN_FIT, CLI, spell

PYTHON, ESTIMATOR = "python", "estimator"
# the run's, not the sampler's (a run until precise's caps among them)
RUN_KEYS = ("sampler", "draws", "warmup", "chains", "adapt", "until_seconds")
# the network samplers that alternate Gibbs draws with their transition (bnn/samplers.py)
GIBBS_NETWORK = ("ahmc_cv", "ahmc_gibbs", "neal_gibbs", "nuts_gibbs", "dyn_a", "dyn_b")
SMALLER, LARGER = 0.25, 2.0  # factors of a step size advised smaller or larger
TARGET_ACCEPT_HIGH = 0.95  # Stan's advice for divergences (its default δ is 0.8)


class Context(NamedTuple):
    """What the advice is written for.

    Args:
        sampler: the sampler that ran, as its interface names it (an estimator's `sampler`).
        interface: PYTHON, CLI, ESTIMATOR or BNN_FIT.
        options: the sampler options the run was given (an estimator's parameters).
        run: the run's draws, warmup and chains (python, cli); empty for an estimator.
        adapt: the warm-up adapter that ran, or None.
        tunes_itself: whether a tuner picks the step size (the bandit's box is the knob).
        family: "continuous", "rmhmc", "spins" or "network".
        step_size: the mean step size of the draws (sample_stats), where recorded.
        metric: the metric a tuner learned ("dense", "diag"), where recorded; else "".
        takes: options -> whether the interface accepts them given with the run's own (a
            sampler switch is the key "sampler"); None: the option schemas decide.
    """

    sampler: str = ""
    interface: str = PYTHON
    options: dict = {}
    run: dict = {}
    adapt: str | None = None
    tunes_itself: bool = False
    family: str = "continuous"
    step_size: float | None = None
    metric: str = ""
    takes: Callable[[dict], bool] | None = None

    def accepts(self, remedy: dict) -> bool:
        if self.takes is not None:
            try:
                return bool(self.takes(remedy))
            except ValueError:  # a BomcmcError: the interface refuses it
                return False
        return schema_takes(self, remedy)


def family_of(sampler: str, gibbs_within: bool = False) -> str:
    """The family of a sampler name: spins (IM and Kawasaki), rmhmc, network or continuous."""
    if sampler.startswith("im") or sampler == "kawasaki":
        return "spins"
    if sampler in ("rmhmc", "armhmc"):
        return "rmhmc"
    if gibbs_within or sampler in GIBBS_NETWORK:
        return "network"
    return "continuous"


def from_run(attrs, sample_stats=None, interface: str = PYTHON,
             takes: Callable[[dict], bool] | None = None) -> Context:
    """The context of a run from its InferenceData's posterior attrs (`config`, the run
    specification; `sampler`; `gibbs_within_hmc`) and its sample_stats (the step sizes)."""
    try:
        spec = json.loads(attrs["config"])
    except (KeyError, TypeError, ValueError):
        spec = {}
    # config.json: the SamplerConfig's fields (knobs, adapt, ...) beside the run's
    sampler = str(spec.get("sampler") or attrs.get("sampler", ""))
    options = {**(spec.get("knobs") or {}), **(spec.get("tuner_options") or {}),
               **(spec.get("adapter_options") or {})}
    run = {k: spec[k] for k in ("draws", "warmup", "chains") if k in spec}
    own = schemas.SAMPLERS.get(sampler)
    return Context(
        sampler=sampler, interface=interface, options=options, run=run,
        adapt=spec.get("adapt"),
        # tuner_options None: the user gave tuner=, which replaced the default tuner
        tunes_itself=bool(own and own.tuner and spec.get("tuner_options") is not None),
        family=family_of(sampler, bool(int(attrs.get("gibbs_within_hmc", 0) or 0))),
        step_size=mean_step(sample_stats), metric=str(attrs.get("metric", "") or ""),
        takes=takes)


def mean_step(ss) -> float | None:
    """The mean positive step size of a run's sample_stats, or None where none is recorded."""
    if ss is None or "step_size" not in ss.data_vars:
        return None
    import numpy as np

    v = np.asarray(ss["step_size"].values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return float(np.mean(v)) if v.size else None


# ---------------------------------------------------------------------------------------
# Which options a sampler takes, by its schemas (when no `takes` is given)
# ---------------------------------------------------------------------------------------
def declared(sampler: str, adapt: str | None = None) -> dict:
    """name -> Option of every option `sampler` takes by its schemas (its knobs, its tuner's
    options when it tunes itself, the adapter's options when an adapter can run)."""
    s = schemas.SAMPLERS.get(sampler)
    if s is None:
        return {}
    found = {o.name: o for o in s.knobs}
    if s.tuner:
        found.update({o.name: o for o in s.tuner})
    elif adapt or s.adapter:
        found.update({o.name: o for o in schemas.ADAPTER_OPTIONS[adapt or s.adapter]})
    return found


def schema_takes(ctx: Context, remedy: dict) -> bool:
    """Whether the schemas of the sampler (or of the one `remedy` switches to) declare every
    option of `remedy` with a value their kinds and choices accept."""
    sampler = remedy.get("sampler", ctx.sampler)
    if ctx.interface in (ESTIMATOR, BNN_FIT):
        return False  # the estimators always give their own `takes`
    if sampler not in schemas.SAMPLERS:
        return set(remedy) <= set(RUN_KEYS) - {"sampler", "adapt"}
    s = schemas.SAMPLERS[sampler]
    adapt = remedy.get("adapt", ctx.adapt if sampler == ctx.sampler else given_adapt(ctx))
    if adapt is not None and s.tuner:
        return False  # a self-tuning sampler refuses a warm-up adapter
    return values_ok({**ctx.options, **remedy}, declared(sampler, adapt),
                     ctx.interface == CLI)


def given_adapt(ctx: Context) -> str | None:
    """The adapter the user named for the run (None: the sampler's own default ran)."""
    own = schemas.SAMPLERS.get(ctx.sampler)
    return ctx.adapt if own is None or ctx.adapt != own.adapter else None


def values_ok(remedy: dict, known: dict, cli: bool = False) -> bool:
    """Whether every option of `remedy` but the run's own (RUN_KEYS) is one of `known`
    (name -> Option) with a value its kind and choices accept (on the command line, one it
    has a flag for)."""
    for name, value in remedy.items():
        if name in RUN_KEYS:
            continue
        o = known.get(name)
        if o is None or (cli and not o.cli) or o.help.startswith("refused"):
            return False
        values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        if (o.nargs is None and len(values) != 1) or (o.nargs == 2 and len(values) != 2):
            return False
        try:
            for v in values:
                o.kind(v)
        except (TypeError, ValueError):
            return False
        if o.choices and any(v not in o.choices for v in values):
            return False
    return True


# ---------------------------------------------------------------------------------------
# Candidate remedies, from the run's own values
# ---------------------------------------------------------------------------------------
def _current(ctx: Context, name: str):
    """The value `name` had in the run: given, else measured (step size), else declared."""
    if name in ctx.options and ctx.options[name] is not None:
        return ctx.options[name]
    if name == "step_size" and ctx.step_size is not None:
        return ctx.step_size
    o = declared(ctx.sampler, ctx.adapt).get(name)
    return None if o is None else o.default


def _step(ctx: Context, factor: float) -> list[tuple[str, dict]]:
    """A step size `factor` times the run's: the knob itself where nothing tunes it, the
    target acceptance where a warm-up adapts it, the bandit's box where a tuner picks it."""
    out = []
    smaller = factor < 1
    if ctx.tunes_itself or ctx.interface in (ESTIMATOR, BNN_FIT) and ctx.sampler.startswith(
            ("ahmc", "dyn")):
        where = "below" if smaller else "above"
        box = _current(ctx, "eps_bounds")
        if box is not None:  # the user's box (the relative one, eps_factors, is then unused)
            lo, hi = (float(x) for x in box)
            return [(f"a step-size box {where} the one the bandit searched",
                     {"eps_bounds": (lo * factor, hi * factor)})]
        f = _current(ctx, "eps_factors")
        if f is not None:
            lo, hi = (float(x) for x in f)
            out.append((f"a step-size box {where} the one around Stan's heuristic ε₀",
                        {"eps_factors": (lo * factor, hi * factor)}))
        if ctx.step_size is not None:
            eps = ctx.step_size * factor
            out.append((f"a step-size box {where} the step sizes the bandit used",
                        {"eps_bounds": (eps / 10, eps) if smaller else (eps / 2, eps * 5)}))
        return out
    if ctx.adapt is not None:
        delta = float(_current(ctx, "target_accept") or 0.8)
        target = max(TARGET_ACCEPT_HIGH, round(1 - (1 - delta) / 2, 3)) if smaller else \
            min(0.6, delta - 0.1)
        out.append(("a " + ("smaller" if smaller else "larger") + " adapted step size",
                    {"target_accept": target}))
        return out
    eps = _current(ctx, "step_size")
    if eps is not None:
        out.append(("a " + ("smaller" if smaller else "larger") + " step size",
                    {"step_size": float(eps) * factor}))
    if smaller and "inverse_mass_matrix" in declared(ctx.sampler):
        warm = {} if ctx.run.get("warmup", 1) else {"warmup": max(ctx.run.get("draws", 500), 500)}
        out.append(("Stan's warm-up adapting a small step size",
                    {"adapt": "window", "target_accept": TARGET_ACCEPT_HIGH, **warm}))
    return out


def _longer(ctx: Context, factor: float, warmup: bool) -> list[tuple[str, dict]]:
    """A run `factor` times as long (an estimator: its leapfrog budget)."""
    factor = max(2, int(math.ceil(factor)))
    if ctx.interface in (ESTIMATOR, BNN_FIT):
        s = int(_current(ctx, "super_transitions") or 100)
        return [("a longer run", {"super_transitions": s * factor})]
    draws = int(ctx.run.get("draws") or 1000)
    remedy = {"draws": draws * factor}
    if warmup:
        remedy = {"warmup": max(int(ctx.run.get("warmup") or 0) * 2, 1000), **remedy}
    return [("a longer warm-up and more draws" if warmup else "more draws", remedy)]


def _enough(ctx: Context) -> list[tuple[str, dict]]:
    """The default length (1000 draws, 100 super-transitions), or twice the run's."""
    if ctx.interface in (ESTIMATOR, BNN_FIT):
        s = int(_current(ctx, "super_transitions") or 100)
        return [("a longer run", {"super_transitions": max(100, 2 * s)})]
    return [("more draws", {"draws": max(1000, 2 * int(ctx.run.get("draws") or 0))})]


def _cap(ctx: Context) -> list[tuple[str, dict]]:
    """A run until precise's cap raised by the warning's factor (`checks`): the draws, the
    seconds where those stopped it, or an estimator's super-transitions."""
    f = max(2, int(math.ceil(ctx.run.get("_ess_factor", 2))))
    if ctx.interface in (ESTIMATOR, BNN_FIT):
        return [("a higher cap", {"super_transitions": int(_current(ctx, "super_transitions")
                                                             or 100) * f})]
    if ctx.run.get("_seconds"):
        return [("a higher cap", {"until_seconds": float(ctx.run["_seconds"]) * f})]
    return [("a higher cap", {"draws": int(ctx.run.get("draws") or 1000) * f})]


def _other(ctx: Context, problem: str) -> list[tuple[str, dict]]:
    """Another sampler for the same posterior (`_OTHER`; a None there: none helps), never
    one of another family."""
    keys = [(ctx.family, ctx.sampler, problem), (ctx.family, ctx.sampler, None),
            (ctx.family, None, None)]
    name = next((_OTHER[k] for k in keys if k in _OTHER), None)
    if not name or name == ctx.sampler:
        return []
    return [(f"sampler {name}", {"sampler": name})]


# (family, sampler or None, problem or None) -> the sampler to suggest instead
_OTHER = {
    ("continuous", None, None): "nuts",
    ("continuous", "nuts", None): "ahmc",
    ("continuous", "nuts_async", None): "ahmc",
    ("continuous", "hmc", None): "ahmc",
    ("continuous", "amams", "ebfmi"): "ahmc",  # ahmc learns a dense metric, MAMS cannot
    ("continuous", "mams", "ebfmi"): "ahmc",
    ("rmhmc", None, None): "armhmc",
    ("rmhmc", "armhmc", None): "rmhmc",
    ("spins", None, None): "im_bandit",
    ("spins", "im_bandit", None): "im_bayesopt",
    # Neal's scheme at its fixed setting: none of the bandit's divergences, and a higher ESS
    # of the predictions at the defaults (docs/bnn.md, "When a network fit warns")
    ("network", None, None): "neal_gibbs",
    ("network", "neal_gibbs", None): None,
    ("network", "nuts", "ebfmi"): "nuts_gibbs",  # Gibbs draws of the precisions
}


def _knob(name: str, what: str, value: Callable[[Context], object]):
    def make(ctx: Context) -> list[tuple[str, dict]]:
        v = value(ctx)
        return [] if v is None else [(what, {name: v})]
    return make


def _deeper(ctx: Context):
    d = _current(ctx, "max_tree_depth")
    return None if d is None else int(d) + 2


def _more_fixed_point_steps(ctx: Context):
    n = _current(ctx, "fixed_point_steps")
    return None if n is None else int(n) * 2


def _dense(ctx: Context) -> list[tuple[str, dict]]:
    if ctx.metric == "dense":  # `mass="auto"` went dense: the advice would change nothing
        return []
    if ctx.tunes_itself or "mass" in ctx.options:
        return [("a dense metric learned in burn-in", {"mass": "dense"})]
    return [("a dense metric", {"dense_mass": True})]


def _nuts_warmup(ctx: Context):
    if ctx.interface not in (ESTIMATOR, BNN_FIT):
        return None
    return 2 * int(_current(ctx, "nuts_warmup") or 300)


def _warmup(ctx: Context) -> list[tuple[str, dict]]:
    """A longer warm-up, where one adapts the metric (Stan's window, a tuner's burn-in)."""
    if ctx.interface in (ESTIMATOR, BNN_FIT):
        return _knob("nuts_warmup", "a longer warm-up", _nuts_warmup)(ctx)
    if ctx.adapt is None and not ctx.tunes_itself:
        return []
    return [("a longer warm-up", {"warmup": max(2 * int(ctx.run.get("warmup") or 0), 1000)})]


def _shorter_walks(ctx: Context) -> list[tuple[str, dict]]:
    """IM's walks of one or two flips (Mahendran 2011: longer walks are rejected more)."""
    if ctx.family != "spins":
        return []
    out = [("shorter walks", {"k": 1}), ("shorter walks", {"k_bounds": (1, 2)})]
    return out[::-1] if ctx.tunes_itself else out


# problem -> candidates (each a function of the context), in the order they are tried
_CANDIDATES: dict[str, tuple] = {
    "divergences": (lambda c: _step(c, SMALLER), lambda c: _other(c, "divergences")),
    "rhat": (lambda c: _longer(c, 2, warmup=True), lambda c: _other(c, "rhat")),
    "ess": (lambda c: _longer(c, c.run.get("_ess_factor", 2), warmup=False),
            lambda c: _other(c, "ess")),
    "tree_depth": (_knob("max_tree_depth", "deeper trees", _deeper), _dense,
                   lambda c: _other(c, "tree_depth")),
    "ebfmi": (_dense, _warmup, lambda c: _other(c, "ebfmi")),
    "accept_low": (lambda c: _step(c, SMALLER), _shorter_walks, lambda c: _other(c, "accept")),
    "accept_high": (lambda c: _step(c, LARGER), lambda c: _other(c, "accept")),
    "stuck": (lambda c: _step(c, SMALLER), _shorter_walks, lambda c: _other(c, "stuck")),
    "fixed_points": (_knob("fixed_point_steps", "more fixed-point iterations",
                           _more_fixed_point_steps), lambda c: _step(c, SMALLER)),
    "until_cap": (_cap, lambda c: _other(c, "until_cap")),
    "too_few": (_enough,),
}

# what fixes a problem when no option does
_ELSE = {
    "divergences": "reparameterise the posterior (e.g. non-centre a hierarchical scale)",
    "rhat": "look for multimodality or a badly scaled posterior",
    "ess": "reparameterise the posterior",
    "tree_depth": "reparameterise the posterior",
    "ebfmi": "reparameterise the posterior (heavy tails)",
    "accept_low": "check the log density's scale",
    "accept_high": "check the log density's scale",
    "stuck": "check the log density at the initial point",
    "fixed_points": "reparameterise the posterior",
    "until_cap": "ask for less precision (a smaller until_ess)",
    "too_few": "run at least 4 draws per chain",
}

# divergences at a hard boundary (driver/boundary.py), which no option of a sampler removes
BOUNDARY = ("the log density is -inf or NaN just beyond the draws ({where}), a hard boundary: "
            "trajectories that cross it end there whatever the step size (rejected, so the "
            "draws stay correct, but their work is lost); sample an unconstrained transform "
            "instead (log(x - a) for x > a, logit((x - a) / (b - a)) for a < x < b, adding the "
            "transform's log-Jacobian), as NumPyro's constrained sites do")


def remedies(problem: str, ctx: Context, most: int = 2) -> list[tuple[str, dict]]:
    """The first `most` candidate remedies for `problem` the interface accepts."""
    out = []
    for candidates in _CANDIDATES[problem]:
        for what, remedy in candidates(ctx):  # none that only repeats what the run was given
            as_run = all(k in ctx.options and ctx.options[k] == v for k, v in remedy.items())
            if (len(out) < most and not as_run and ctx.accepts(remedy)
                    and remedy not in [r for _, r in out]):
                out.append((what, remedy))
    return out


def advise(problem: str, ctx: Context | None, **facts) -> str:
    """"try <what> (`<remedy>`) or ...; otherwise <what fixes it>": the advice of a warning
    about `problem` (a key of `_CANDIDATES`); `facts`: ess_factor (how many times more draws
    the ESS needs), seconds (the seconds cap that stopped a run)."""
    ctx = ctx or Context()
    if "ess_factor" in facts:
        facts = {**facts, "ess_factor": min(facts["ess_factor"], 10)}
    ctx = ctx._replace(run={**ctx.run, **{"_" + k: v for k, v in facts.items()}})
    found = remedies(problem, ctx)
    tries = [f"{what} (`{spell(remedy, ctx.interface)}`)" for what, remedy in found]
    if not tries:
        return _ELSE[problem]
    return "try " + " or ".join(tries) + f", or {_ELSE[problem]}"


__all__ = ["BNN_FIT", "CLI", "Context", "ESTIMATOR", "PYTHON", "advise", "declared",
           "family_of", "from_run", "mean_step", "remedies", "schema_takes", "spell", "values_ok"]
