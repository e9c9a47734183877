#!/usr/bin/env python
"""What the bandit did in `experiments/dexter.py`'s AHMC runs, from their `dexter.json`
(the `bandit` field: η, L, reward, acceptance and divergences per super-transition).

    python experiments/dexter_bandit.py RUN/dexter.json [RUN2/dexter.json ...]

Per run: its super-transitions; those with a divergence (the reward scores them 0); those that
were stuck without one (the record holds each super-transition's mean acceptance over its
transitions and chains: stuck when that mean times their number is under 1/2, so that no
chain's weights can have moved in expectation; with one chain, `bnn.cv`'s `stuck_zero` rule)
and the rewards these got; the share of the budget the two took; the
settings' spread; and the run's scores.
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def summarise(row: dict, steps: int) -> dict:
    b = row["bandit"]
    L = np.asarray(b["L"], float)
    n = np.maximum(1, steps // L)  # transitions per super-transition (per chain)
    acc = np.asarray([np.nan if a is None else a for a in b["accept"]], float)
    div = np.asarray([0 if d is None else d for d in b["divergent"]])
    reward = np.asarray(b["reward"], float)
    chains = row.get("chains", 1)
    stuck = (acc * n * chains < 0.5) & (div == 0)
    moving = ~stuck & (div == 0)
    return {"method": row["method"], "seed": row["seed"], "chain": row.get("chain", 0),
            "stuck_zero": bool(row.get("stuck_zero", False)),
            "eps_bounds": row.get("eps_bounds", [0.01, 0.61]), "supers": int(len(L)),
            "divergent_supers": int((div > 0).sum()), "stuck_supers": int(stuck.sum()),
            "stuck_rewards": reward[stuck].round(2).tolist(),
            "moving_rewards_range": [float(np.nanmin(reward[moving])),
                                     float(np.nanmax(reward[moving]))] if moving.any() else None,
            "failed_share": float((stuck | (div > 0)).mean()),
            "eta_median": float(np.median(b["eps"])), "L_median": float(np.median(L)),
            **{k: row["errors"][k] for k in ("mean", "median", "vote")}}


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    out = []
    for f in args.files:
        data = json.loads(open(f).read())
        steps = data["budget"]["steps"]
        for row in data["runs"]:
            if "bandit" in row:
                s = summarise(row, steps)
                out.append(s)
                print(json.dumps(s))
    return out


if __name__ == "__main__":
    main()
