"""Typed option schemas: what a kernel's knobs, an adapter's options and a tuner's options are.

Each piece that takes options from a user declares them once, as a tuple of `Option`s. The
registry validates a user's options against the chosen sampler's schemas, once, and the
command line generates its flags and their help from the same declarations.

    Option(name, kind, default, help, nargs=None, choices=(), cli=True)

`kind` converts and checks one value, from a number or from its text on the command line
(`str`, `bool`, or a callable such as `positive_float` below that raises `ValueError` on a bad
value); `nargs` is 2 for a (lo, hi) pair and "+" for one or more;
`cli=False` keeps an option off the command line (the API still takes it).

A run's options, once validated (`bomcmc.registry.configure`), travel as one `SamplerConfig`:
the kernel's knobs, the warm-up adapter and its options, and the default tuner's options.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

from .errors import BomcmcError


class Option(NamedTuple):
    name: str  # the Python keyword (snake_case); the CLI flag is --name-with-hyphens
    kind: Callable[[Any], Any]
    default: Any = None
    help: str = ""
    nargs: int | str | None = None  # None: one value; 2: a (lo, hi) pair; "+": one or more
    choices: tuple = ()
    cli: bool = True  # False: API only (e.g. a name another option holds on the command line)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


Schema = tuple[Option, ...]


class SamplerConfig(NamedTuple):
    """A run's sampler options, validated: what `config.json` records and the run uses.

    Args:
        knobs: the kernel's `make_knobs` keywords given by the user.
        adapt: the warm-up adapter's name ("window", "dual_averaging"), or None (none);
            "auto" (the sampler's default when there is a warm-up) until validated.
        adapter_options: its options given by the user.
        tuner_options: the options of the sampler's default tuner; None when the run has no
            default tuner (the sampler has none, or the user gave `tuner=`).
    """

    knobs: dict = {}
    adapt: str | None = None
    adapter_options: dict = {}
    tuner_options: dict | None = None


# ---------------------------------------------------------------------------------------
# Kinds: each converts one value (a number, or its text on the command line) and raises
# ValueError with the rule it breaks
# ---------------------------------------------------------------------------------------
def _number(value, convert, ok, rule: str):
    try:
        v = convert(value)
    except (TypeError, ValueError):
        raise ValueError(f"must be {rule}, got {value!r}") from None
    if not ok(v):
        raise ValueError(f"must be {rule}, got {value!r}")
    return v


def _int(value) -> int:
    if isinstance(value, str):
        return int(value, 10)
    if isinstance(value, bool) or int(value) != value:
        raise ValueError(value)
    return int(value)


def positive_float(value) -> float:
    return _number(value, float, lambda v: math.isfinite(v) and v > 0,
                   "a positive finite number")


def nonneg_float(value) -> float:
    return _number(value, float, lambda v: math.isfinite(v) and v >= 0,
                   "a non-negative finite number")


def probability(value) -> float:
    return _number(value, float, lambda v: 0.0 < v < 1.0, "a number in (0, 1)")


def positive_int(value) -> int:
    return _number(value, _int, lambda v: v >= 1, "a positive integer")


def nonneg_int(value) -> int:
    return _number(value, _int, lambda v: v >= 0, "a non-negative integer")


def names(*schemas: Schema) -> tuple[str, ...]:
    """The option names of one or more schemas, in order."""
    return tuple(o.name for s in schemas for o in s)


# `bomcmc.sample`'s own arguments, which a misspelt one lands beside the sampler's options
RUN_ARGUMENTS = ("draws", "warmup", "chains", "seed", "thin", "out", "progress", "float64",
                 "init_strategy", "init_jitter", "chunk_size", "save_warmup", "until_ess",
                 "until_seconds", "max_grad", "overwrite")
# other libraries' names for them and for options (NumPyro, PyMC, CmdStanPy), each taking the
# same value (not NumPyro's rng_key, a key where seed is an int, nor its dense_mass, a bool)
PEER_NAMES = {"num_samples": "draws", "num_warmup": "warmup", "num_chains": "chains",
              "tune": "warmup", "random_seed": "seed",
              "iter_sampling": "draws", "iter_warmup": "warmup", "thinning": "thin",
              "adapt_delta": "target_accept", "max_treedepth": "max_tree_depth",
              "num_steps": "steps"}


def did_you_mean(name: str, known) -> str | None:
    """The name meant by a misspelt `name` among `known` and `sample`'s own arguments:
    ours for another library's name, or the closest (difflib's match), or None."""
    import difflib

    names = [*known, *RUN_ARGUMENTS]
    if PEER_NAMES.get(name) in names:
        return PEER_NAMES[name]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return close[0] if close else None


def reject_unknown(given: dict, owner: str, *schemas: Schema) -> None:
    """A one-line error for every option `owner` does not take, naming the ones it does and
    the one each was perhaps meant to be."""
    known = names(*schemas)
    unknown = sorted(set(given) - set(known))
    if unknown:
        takes = ", ".join(known) if known else "no options"
        meant = {u: m for u in unknown if (m := did_you_mean(u, known))}
        hint = (" (did you mean " + (", ".join(meant.values()) if len(unknown) == 1 else
                                     ", ".join(f"{m} for {u}" for u, m in meant.items()))
                + "?)") if meant else ""
        raise BomcmcError(f"{owner} does not take {', '.join(unknown)}{hint} (it takes: "
                          f"{takes})")


__all__ = ["Option", "SamplerConfig", "Schema", "did_you_mean", "names", "nonneg_float",
           "nonneg_int", "positive_float", "positive_int", "probability", "reject_unknown"]
