"""Typed option schemas: what a kernel's knobs, an adapter's options and a tuner's options are.

Each piece that takes options from a user declares them once, as a tuple of `Option`s. The
registry validates a user's options against the chosen sampler's schemas, once, and the
command line generates its flags and their help from the same declarations.

    Option(name, kind, default, help, nargs=None, choices=(), cli=True)

`kind` converts and checks one value (`float`, `int`, `str`, `bool`, or any callable that
raises `ValueError` on a bad value); `nargs` is 2 for a (lo, hi) pair and "+" for one or more;
`cli=False` keeps an option off the command line (the API still takes it).

A run's options, once validated (`bomcmc.registry.configure`), travel as one `SamplerConfig`:
the kernel's knobs, the warm-up adapter and its options, and the default tuner's options.
"""

from __future__ import annotations

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
        adapt: the warm-up adapter's name ("window", "dual_averaging"), or None.
        adapter_options: its options given by the user.
        tuner_options: the options of the sampler's default tuner; None when the run has no
            default tuner (the sampler has none, or the user gave `tuner=`).
    """

    knobs: dict = {}
    adapt: str | None = None
    adapter_options: dict = {}
    tuner_options: dict | None = None


def names(*schemas: Schema) -> tuple[str, ...]:
    """The option names of one or more schemas, in order."""
    return tuple(o.name for s in schemas for o in s)


def reject_unknown(given: dict, owner: str, *schemas: Schema) -> None:
    """A one-line error for every option `owner` does not take, naming the ones it does."""
    known = names(*schemas)
    unknown = sorted(set(given) - set(known))
    if unknown:
        takes = ", ".join(known) if known else "no options"
        raise BomcmcError(f"{owner} does not take {', '.join(unknown)} (it takes: {takes})")


__all__ = ["Option", "SamplerConfig", "Schema", "names", "reject_unknown"]
