"""Every registered sampler's options, declared as typed schemas (`bomcmc.options.Option`).

A sampler takes three kinds of option, each declared once here:

- its kernel's knobs (`make_knobs(dim, **knobs)`): `KNOBS[...]`;
- the options of the warm-up adapter it may run (`ADAPTER_OPTIONS[name]`);
- the options of its default tuner (`make_tuner(options, spec, flat, states)`): `TUNERS[...]`.

`SAMPLERS` names, for every sampler of `bomcmc.registry`, its knob and tuner schemas and the
adapter `adapt="auto"` picks; the registry builds its entries from this table, and the command
line its flags and their help, without importing JAX (this module imports nothing heavy).
A default is the value a run uses when the option is not given; None where the run computes
it (the help says how). tests/test_options.py holds each default against the signature of
the function that takes the option.
"""

from __future__ import annotations

from typing import NamedTuple

from .options import (Option, Schema, nonneg_float, nonneg_int, positive_float, positive_int,
                      probability)

# ---------------------------------------------------------------------------------------
# Kernels' knobs
# ---------------------------------------------------------------------------------------
_EPS = "leapfrog step size ε"
_L = "leapfrog steps per transition L (the maximum with random_steps)"
_RANDOM = "draw the number of steps uniformly from 1..L at each transition"
_INV_MASS = ("the initial inverse metric M⁻¹: D numbers (a diagonal); the API also takes a "
             "(D, D) matrix (default: the identity)")
_DENSE = "a dense metric (default: diagonal)"


def _hmc_like(random_steps: bool, step_size=0.1, steps: int = 10) -> Schema:
    return (Option("step_size", positive_float, step_size, _EPS),
            Option("steps", positive_int, steps, _L),
            Option("random_steps", bool, random_steps, _RANDOM),
            Option("inverse_mass_matrix", positive_float, None, _INV_MASS, nargs="+"))


DENSE_MASS = Option("dense_mass", bool, False, _DENSE)
SUPPORT = Option("support", float, None,
                 "the compact set M (Wang, Mohamed & de Freitas 2013 §4): a proposal outside "
                 "the box LO ≤ x ≤ HI of the flat vector is rejected; the API also takes D "
                 "numbers per side, or a membership test x -> bool (a run with one cannot be "
                 "resumed)", nargs=2)
FIXED_POINT_STEPS = Option("fixed_point_steps", positive_int, 6,
                           "iterations of each implicit step of the generalised leapfrog")

KNOBS: dict[str, Schema] = {
    "hmc": _hmc_like(False) + (DENSE_MASS,),
    # Neal 1994: accept or reject over windows of W states at the trajectory's two ends
    "whmc": _hmc_like(False) + (DENSE_MASS, Option(
        "window", positive_int, 1, "W, the states in each of the accept and reject windows "
        "(Neal 1994; FBM's hybrid L:W; 1 is plain HMC, at most L + 1)")),
    # ε and L are the bandit's; step_size starts Stan's heuristic
    "ahmc": _hmc_like(True) + (SUPPORT,),
    "two_phase": _hmc_like(True),
    "mams": _hmc_like(True) + (DENSE_MASS._replace(help="refused: MAMS takes a diagonal "
                                                         "metric only"),),
    "nuts": (Option("step_size", positive_float, 1.0, _EPS + " (the warm-up adapts it)"),
             Option("inverse_mass_matrix", positive_float, None, _INV_MASS, nargs="+"),
             DENSE_MASS,
             Option("max_tree_depth", positive_int, 10, "maximum tree depth (Stan's max_depth)")),
    "rwm": (Option("step_size", positive_float, None, "proposal scale σ (default: 2.38/√D, Roberts, "
                                             "Gelman & Gilks 1997)"),
            Option("steps", positive_int, 1, "random-walk moves per transition"),
            Option("random_steps", bool, False, "draw the number of moves from 1..steps"),
            Option("inverse_mass_matrix", positive_float, None, _INV_MASS, nargs="+")),
    # Riemann-manifold HMC: a callable metric; a constant one (plain leapfrog); blocks
    "rmhmc": _hmc_like(True)[:3] + (FIXED_POINT_STEPS,),
    "rmhmc_constant": _hmc_like(True)[:3],
    "rmhmc_blocked": (Option("step_size", positive_float, 0.1, _EPS + " of the latent block"),
                      Option("steps", positive_int, 50, _L + " of the latent block"),
                      Option("param_step_size", positive_float, 0.5, "ε of the parameter block"),
                      Option("param_steps", positive_int, 6, "L of the parameter block"),
                      Option("random_steps", bool, True, _RANDOM),
                      FIXED_POINT_STEPS._replace(default=5)),
    # Intracluster moves on spin models (k, γ: one setting, or a policy of several)
    "im": (Option("k", positive_int, 1, "walk length(s); several make a policy drawn from per move",
                  nargs="+"),
           Option("gamma", nonneg_float, 0.0, "the walk's bias γ ≥ 0 (one, or one per k)",
                  nargs="+")),
    "im_grid": (Option("k_bounds", positive_int, None, "the k box (default: the model's)", nargs=2),
                Option("gamma_bounds", nonneg_float, None, "the γ box (default: the model's, else "
                                                    "0 to 2β)", nargs=2)),
    "none": (),
}
KNOBS["nuts_async"] = KNOBS["nuts"]
KNOBS["amams"] = KNOBS["mams"]
KNOBS["im_expert"] = tuple(o._replace(default=None, help=o.help + " (default: the model's "
                                      "expert setting, Mahendran 2011 Table 4.1)")
                           for o in KNOBS["im"])


# ---------------------------------------------------------------------------------------
# Warm-up adapters' options (bomcmc.adaptation)
# ---------------------------------------------------------------------------------------
_DA_CONSTANT = "(API only, adapt_options=: the CLI's --gamma is IM's)"
_DUAL_AVERAGING = (
    Option("target_accept", probability, 0.8, "warm-up target acceptance δ (Stan's adapt_delta)"),
    Option("gamma", positive_float, 0.05, "dual averaging's γ " + _DA_CONSTANT, cli=False),
    Option("kappa", positive_float, 0.75, "dual averaging's κ " + _DA_CONSTANT, cli=False),
    Option("t0", nonneg_float, 10.0, "dual averaging's t₀ " + _DA_CONSTANT, cli=False),
)
ADAPTER_OPTIONS: dict[str, Schema] = {
    "window": _DUAL_AVERAGING + (
        Option("init_buffer", nonneg_int, 75, "Stan's window warm-up: fast transitions first"),
        Option("term_buffer", nonneg_int, 50, "Stan's window warm-up: fast transitions last"),
        Option("base_window", nonneg_int, 25, "Stan's window warm-up: the first slow window")),
    "dual_averaging": _DUAL_AVERAGING,
}


# ---------------------------------------------------------------------------------------
# Default tuners' options (bomcmc.tuning)
# ---------------------------------------------------------------------------------------
_REWARDS = ("esjd", "ess", "acf")
EPS_BOUNDS = Option("eps_bounds", positive_float, None, "the step-size box (default: [ε₀/10, 10 ε₀] "
                                               "around Stan's heuristic ε₀)", nargs=2)
STEPS_BOUNDS = Option("steps_bounds", positive_int, (1, 100), "the trajectory-length box", nargs=2)
REWARD = Option("reward", str, "esjd", "the bandit's reward (esjd: ESJD/√L)", choices=_REWARDS)
ACQUISITION = Option("acquisition", str, "ucb", "acquisition function (ucb: annealed)",
                     choices=("ucb", "ei"))
SCHEDULE = Option("schedule", str, "inverse_sqrt", "annealing schedule p_i",
                  choices=("inverse_sqrt", "exponential", "power"))
BO_STEPS = Option("bo_steps", positive_int, 100, "BO steps in burn-in (m = warmup // K transitions each)")
START = Option("start", str, "corner", "the first setting tried",
               choices=("corner", "center", "knobs"))
MASS = Option("mass", str, "auto", "the metric learned in burn-in (auto: diagonal or dense as "
                                   "the correlations call for)",
              choices=("auto", "diag", "dense", "identity"))
MASS_WINDOWS = Option("mass_windows", nonneg_float, (0.10, 0.25, 0.50),
                      "metric windows: start, end₁, end₂, ... as fractions of the burn-in",
                      nargs="+")
EPS_FACTORS = Option("eps_factors", positive_float, (0.1, 10.0),
                     "the relative step-size box [f₁ ε₀, f₂ ε₀] when eps_bounds is not given",
                     nargs=2)
ADAPT_IN_SAMPLING = Option("adapt_in_sampling", bool, True,
                           "keep tuning after warm-up (a vanishing adaptation)")
K_BOUNDS, GAMMA_BOUNDS = KNOBS["im_grid"]
GAMMA_SCALE = Option("gamma_scale", str, "beta",
                     "the GP's γ axis: stretched around β (beta), or linear (Mahendran's)",
                     choices=("beta", "linear"))

AHMC_TUNER: Schema = (
    EPS_BOUNDS, STEPS_BOUNDS, REWARD, SCHEDULE, ACQUISITION, MASS, BO_STEPS, MASS_WINDOWS,
    EPS_FACTORS, START, ADAPT_IN_SAMPLING,
    Option("batch", positive_int, None, "burn-in: chain groups, each running its own (ε, L) every BO "
                               "step (default: min(4, chains // 2); 1: one shared setting)"),
    Option("steps_cap", nonneg_int, 8, "the L box starts at {1..C} and doubles while the best L is "
                                "near its top (0: the whole box from the start)"),
    Option("gp", str, "full", "the bandit's GP (sparse: Engel's ALD dictionary, never reset)",
           choices=("full", "sparse")),
    Option("ald_threshold", nonneg_float, 1e-3, "ν of the sparse GP's ALD test"),
    Option("search", str, "grid", "the acquisition's maximiser (grid: every L on a grid of "
                                  "log ε, then Brent; direct: DIRECT + L-BFGS-B)",
           choices=("grid", "direct")),
)
TUNERS: dict[str, Schema] = {
    "ahmc": AHMC_TUNER,
    "amams": tuple(o._replace(default="diag", choices=("auto", "diag", "identity"),
                              help="the diagonal metric learned in burn-in (auto: diag)")
                   if o.name == "mass" else o for o in AHMC_TUNER),
    "two_phase": (
        EPS_BOUNDS, STEPS_BOUNDS, REWARD, ACQUISITION._replace(default="ei"),
        BO_STEPS._replace(default=None, help="BO steps in warm-up (default: warmup // 50 "
                                              "with the acf and ess rewards, else // 10)"),
        Option("policy_size", positive_int, 50, "settings in the SIR policy"),
        Option("candidates", str, "grid", "the policy's candidate settings",
               choices=("grid", "lhs")),
        Option("n_candidates", positive_int, None, "candidate settings (default: the grid's)"),
        Option("temperature", positive_float, 0.05, "T of the SIR weights exp(μ / (T c))"),
        Option("resampling", str, "systematic", "the SIR resampling",
               choices=("systematic", "multinomial")),
        MASS._replace(default="diag"), MASS_WINDOWS, EPS_FACTORS,
        START._replace(default="center")),
    "im_bandit": (K_BOUNDS, GAMMA_BOUNDS, GAMMA_SCALE._replace(default="linear"),
                  Option("reward", str, "energy_acf", "the bandit's reward"),
                  ACQUISITION, SCHEDULE),
    "im_bayesopt": (K_BOUNDS, GAMMA_BOUNDS, GAMMA_SCALE,
                    Option("reward", str, "energy_jump", "the bandit's reward: energy_jump "
                           "(the variance of the energy's jump per move; the GP sees it "
                           "standardised) or energy_acf (h of the energy, Mahendran's)"),
                    BO_STEPS._replace(default=None, help="BO steps in warm-up (default: "
                                                         "warmup // 100, at most 100)"),
                    Option("policy_size", positive_int, 1000, "settings in the SIR policy"),
                    Option("temperature", positive_float, None, "T of the SIR weights "
                           "exp(μ / T) (default 0.2 on energy_jump's standardised scale; 0.1 with "
                           "energy_acf)"),
                    Option("standardize", bool, None, "fit the GP to the standardised rewards "
                           "(default: with energy_jump and esjd)"),
                    Option("burn_in_steps", nonneg_int, None, "first BO steps whose reward is "
                           "not observed (default: 1 with energy_jump and esjd, else 0)")),
    "armhmc": (EPS_BOUNDS._replace(help="the latent block's step-size box (default: around "
                                        "Stan's heuristic ε₀)"),
               STEPS_BOUNDS, REWARD, ACQUISITION, SCHEDULE, BO_STEPS, START),
    "none": (),
}


# ---------------------------------------------------------------------------------------
# The registry's samplers
# ---------------------------------------------------------------------------------------
class SamplerSchema(NamedTuple):
    """A sampler's options: its knobs, its default tuner's, and its default adapter."""

    knobs: Schema = ()
    tuner: Schema = ()
    adapter: str | None = None  # the adapter adapt="auto" picks
    help: str = ""


SAMPLERS: dict[str, SamplerSchema] = {
    "hmc": SamplerSchema(KNOBS["hmc"], help="HMC with fixed knobs"),
    "whmc": SamplerSchema(KNOBS["whmc"], help="HMC with Neal's accept and reject windows"),
    "nuts": SamplerSchema(KNOBS["nuts"], adapter="window", help="NUTS, Stan's window warm-up"),
    "nuts_async": SamplerSchema(KNOBS["nuts_async"], adapter="window",
                                help="NUTS run one leapfrog step per loop iteration"),
    "ahmc": SamplerSchema(KNOBS["ahmc"], TUNERS["ahmc"],
                          help="adaptive HMC: the GP bandit over (ε, L)"),
    "mams": SamplerSchema(KNOBS["mams"], help="Metropolis-adjusted microcanonical HMC"),
    "amams": SamplerSchema(KNOBS["amams"], TUNERS["amams"],
                           help="MAMS tuned by adaptive HMC's bandit"),
    "rwm": SamplerSchema(KNOBS["rwm"], help="random-walk Metropolis"),
    "two_phase": SamplerSchema(KNOBS["two_phase"], TUNERS["two_phase"],
                               help="EI in warm-up, then a frozen SIR mixture of HMC kernels"),
    "im": SamplerSchema(KNOBS["im"], help="intracluster moves with the knobs given"),
    "im_expert": SamplerSchema(KNOBS["im_expert"], help="IM at the model's expert setting"),
    "im_unif": SamplerSchema(KNOBS["im_grid"], help="IM, (k, γ) uniform over the box's grid"),
    "im_bandit": SamplerSchema(KNOBS["im"], TUNERS["im_bandit"],
                               help="IM tuned by the GP bandit over (γ, k)"),
    "im_bayesopt": SamplerSchema(KNOBS["im"], TUNERS["im_bayesopt"],
                                 help="IMBayesOpt: EI in warm-up, then a frozen SIR policy"),
    "kawasaki": SamplerSchema(KNOBS["none"], help="Kawasaki dynamics (IM with k = 1, γ = 0)"),
    # a metric's variants take fewer or other knobs: the CLI shows the union
    "rmhmc": SamplerSchema(KNOBS["rmhmc"] + KNOBS["rmhmc_blocked"][2:4],
                           help="Riemann-manifold HMC (posteriors with a metric)"),
    "armhmc": SamplerSchema(KNOBS["rmhmc"] + KNOBS["rmhmc_blocked"][2:4] + (SUPPORT,),
                            TUNERS["armhmc"],
                            help="RMHMC with (ε, L) tuned by the GP bandit"),
}


def adapter_options(adapt: str) -> Schema:
    """The options of the adapter `adapt` (a one-line error for an unknown name)."""
    from .errors import BomcmcError

    try:
        return ADAPTER_OPTIONS[adapt]
    except KeyError:
        raise BomcmcError(f"unknown warm-up adaptation '{adapt}' (available: "
                          f"{', '.join(sorted(ADAPTER_OPTIONS))})") from None


__all__ = ["ADAPTER_OPTIONS", "KNOBS", "SAMPLERS", "SamplerSchema", "TUNERS",
           "adapter_options"]
