"""The `sample` command's sampler options: one flag per option name, from the schemas.

Every option of every registered sampler (`bomcmc.schemas.SAMPLERS`: its kernel's knobs and
its default tuner's options) and of the warm-up adapters (`ADAPTER_OPTIONS`) is a flag
`--name-with-hyphens`, typed by its declared kind; its help names the samplers that take it
with their defaults. Nothing here imports JAX.
"""

from __future__ import annotations

import argparse

from .. import options, schemas
from ..options import Option

_METAVARS = {options.positive_float: "X", options.nonneg_float: "X", options.probability: "P",
             options.positive_int: "N", options.nonneg_int: "N", str: "NAME"}


def sampler_options() -> dict[str, list[tuple[str, Option]]]:
    """Every option of every sampler and warm-up adapter the command line takes, by name:
    [(its owner: a sampler's name, or adapt=NAME), its declaration], in declaration order."""
    found: dict[str, list[tuple[str, Option]]] = {}
    owners = [(name, s.knobs + s.tuner) for name, s in schemas.SAMPLERS.items()]
    owners += [(f"adapt={name}", o) for name, o in schemas.ADAPTER_OPTIONS.items()]
    for owner, schema in owners:
        for o in schema:
            if o.cli:
                found.setdefault(o.name, []).append((owner, o))
    return found


def add_sampler_flags(p: argparse.ArgumentParser) -> None:
    """One flag per option name (the union over the samplers and adapters), its help naming
    the samplers that take it and their defaults; only the flags given are passed on."""
    g = p.add_argument_group("sampler options (only those given are passed; each sampler "
                             "takes those listed with it, a warm-up adapter those listed "
                             "with adapt=NAME)")
    for name, decls in sampler_options().items():
        o = decls[0][1]
        help_ = f"{o.help}; {_takers(decls)}".replace("%", "%%")
        kw: dict = dict(default=None, help=help_, dest=name)
        if o.kind is bool:
            g.add_argument(o.flag, action=argparse.BooleanOptionalAction, **kw)
            continue
        choices = [c for _, d in decls for c in d.choices] if all(d.choices for _, d in decls) \
            else None
        if choices:
            kw["choices"] = list(dict.fromkeys(choices))
        else:
            kw["metavar"] = ("LO", "HI") if o.nargs == 2 else _METAVARS.get(o.kind, "VALUE")
        if o.nargs is not None:
            kw["nargs"] = o.nargs
        g.add_argument(o.flag, type=_argument_type(o.kind), **kw)


def _takers(decls: list[tuple[str, Option]]) -> str:
    """"hmc, mams: 0.1; nuts: 1.0": the owners grouped by their default (none shown where
    the run computes it)."""
    groups: dict[str, list[str]] = {}
    for owner, o in decls:
        default = o.default
        if isinstance(default, (tuple, list)):
            default = " ".join(map(str, default))
        groups.setdefault("" if default is None else f": {default}", []).append(owner)
    return "; ".join(f"{', '.join(owners)}{d}" for d, owners in groups.items())


def _argument_type(kind):
    """The kind as an argparse type: its ValueError is the argument's one-line error."""
    def convert(text: str):
        try:
            return kind(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = kind.__name__
    return convert


def given_options(args: argparse.Namespace) -> dict:
    """The sampler options given on the command line (the flags not given are None)."""
    return {name: getattr(args, name) for name in sampler_options()
            if getattr(args, name, None) is not None}
