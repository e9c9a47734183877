"""bomcmc's NUTS against NumPyro's and BlackJAX's, per posterior, and the repeats of several
runs with the same settings pooled, for the summary tables of `docs/benchmarks.md`."""

from __future__ import annotations

import statistics

from .stats import median_tree


def nuts_comparison(result: dict) -> dict:
    """Per posterior, bomcmc-nuts ÷ NumPyro and ÷ BlackJAX of min ESS per gradient and of
    min ESS per second (each the median over repeats first, then the ratio; the per-repeat
    ratios, same seed and starts, are kept for the spread), and the two checks of the NUTS
    issue: ESS/s ≥ 1× each, ESS/grad within ±20 % of each. Empty unless bomcmc-nuts ran
    next to another NUTS."""
    out = {}
    for name, post in result["posteriors"].items():
        sams = post["samplers"]
        if "bomcmc-nuts" not in sams:
            continue
        ours = sams["bomcmc-nuts"]
        row = {"dim": post["dim"]}
        for other in ("numpyro-nuts", "blackjax-nuts"):
            if other not in sams:
                continue
            theirs = sams[other]
            r = {}
            for fig in ("ess_per_grad", "ess_per_s"):
                a_ = ours["median"][fig]["min"]
                b_ = theirs["median"][fig]["min"]
                r[fig] = a_ / b_ if a_ and b_ else None
                reps = [x[fig]["min"] / y[fig]["min"]
                        for x, y in zip(ours["repeats"], theirs["repeats"])
                        if x[fig]["min"] and y[fig]["min"]]
                r[fig + "_per_repeat"] = reps
            # seconds per gradient of the slowest chain (wall ÷ Σ_t max_c n): the speed of
            # the code, free of how many steps the adapted ε and metric happened to need
            cost = [[x["s_per_grad_per_chain"] / x["lockstep_factor"] for x in q["repeats"]
                     if x.get("s_per_grad_per_chain") and x.get("lockstep_factor")]
                    for q in (ours, theirs)]
            r["s_per_lockstep_grad"] = (statistics.median(cost[0]) / statistics.median(cost[1])
                                        if cost[0] and cost[1] else None)
            r["s_per_lockstep_grad_per_repeat"] = [a_ / b_ for a_, b_ in zip(*cost)]
            r["ess_per_s_ok"] = r["ess_per_s"] is not None and r["ess_per_s"] >= 1.0
            r["ess_per_grad_ok"] = (r["ess_per_grad"] is not None
                                    and abs(r["ess_per_grad"] - 1.0) <= 0.2)
            row[other] = r
        out[name] = row
    return out


def pool_results(results: list[dict]) -> dict | None:
    """The repeats of several runs with the same settings (chains, draws, warm-up, float)
    pooled per posterior, for the samplers every contributing run has (so per-repeat pairs
    stay aligned); a seed already pooled for a posterior is not pooled again (repeat r of a
    run has seed `--seed` + r). Medians are recomputed. None unless at least two runs hold
    bomcmc-nuts."""
    runs = [r for r in results
            if any("bomcmc-nuts" in p["samplers"] for p in r["posteriors"].values())]
    if len(runs) < 2:
        return None
    key = lambda r: tuple(r["meta"]["args"][k] for k in ("chains", "draws", "warmup",  # noqa: E731
                                                          "float64"))
    runs = [r for r in runs if key(r) == key(runs[0])]
    if len(runs) < 2:
        return None
    pooled, used = {}, set()
    names = list(dict.fromkeys(n for r in runs for n in r["posteriors"]))
    for name in names:
        have = [r for r in runs if "bomcmc-nuts" in r["posteriors"].get(name, {})
                .get("samplers", {})]
        common = [sn for sn in have[0]["posteriors"][name]["samplers"]
                  if all(sn in r["posteriors"][name]["samplers"] for r in have)]
        reps = {sn: [] for sn in common}
        seeds = set()
        for r in have:
            seed0 = r["meta"]["args"]["seed"]
            sams = r["posteriors"][name]["samplers"]
            n_rep = min(len(sams[sn]["repeats"]) for sn in common)
            for i in range(n_rep):
                if seed0 + i in seeds:
                    continue
                seeds.add(seed0 + i)
                used.add(r["meta"]["tag"])
                for sn in common:
                    reps[sn].append(sams[sn]["repeats"][i])
        pooled[name] = {
            "dim": have[0]["posteriors"][name]["dim"], "seeds": sorted(seeds),
            "samplers": {sn: {"repeats": v, "median": median_tree(v)}
                         for sn, v in reps.items()},
        }
    meta = dict(runs[0]["meta"])
    meta["tag"] = " + ".join(r["meta"]["tag"] for r in runs if r["meta"]["tag"] in used)
    n_max = max(len(p["seeds"]) for p in pooled.values())
    meta["args"] = dict(meta["args"], repeats=n_max)
    return {"meta": meta, "posteriors": pooled}
