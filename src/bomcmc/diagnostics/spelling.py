"""A remedy in its interface's own words: keywords of `bomcmc.sample` and of the network
estimators (`step_size=0.05, adapt='window'`), flags of `bomcmc sample` and `bomcmc bnn fit`
(`--step-size 0.05 --adapt window`)."""

from __future__ import annotations

CLI, BNN_FIT = "cli", "bnn fit"  # the interfaces spelled as flags (`advice` names them all)


def _number(v) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def spell(remedy: dict, interface: str) -> str:
    """`remedy` as its interface takes it: keywords (`step_size=0.05, adapt='window'`) or
    flags (`--step-size 0.05 --adapt window`)."""
    if interface in (CLI, BNN_FIT):
        parts = []
        for name, value in remedy.items():
            flag = "--" + name.replace("_", "-")
            if isinstance(value, bool):
                parts.append(flag if value else "--no-" + name.replace("_", "-"))
            elif isinstance(value, (tuple, list)):
                parts.append(" ".join([flag, *map(_number, value)]))
            else:
                parts.append(f"{flag} {_number(value)}")
        return " ".join(parts)
    parts = []
    for name, value in remedy.items():
        if isinstance(value, (tuple, list)):
            text = "(" + ", ".join(map(_number, value)) + ")"
        elif isinstance(value, str):
            text = repr(value)
        else:
            text = _number(value)
        parts.append(f"{name}={text}")
    return ", ".join(parts)
