#!/usr/bin/env python
"""The modern-peers table of docs/benchmarks.md from `benchmarks/run.py` results.

    python benchmarks/peers_table.py benchmarks/results/peers-*.json [later files ...]

For every posterior and sampler, means over the repeats (seeds) of: min and median bulk ESS
per 1000 gradients of the sampling phase, the same with the warm-up's gradients counted, min
ESS per second of the sampling phase and end to end (compilation included), the largest
R-hat and the largest |z| of the means against the run's reference (flagged when above 4).
Then, per posterior, `bomcmc-ahmc` ÷ the best peer in min ESS per 1000 gradients with the
warm-up counted, in the sampling phase alone, and in min ESS per second end to end (the
peers: every sampler but bomcmc's own, runs flagged by |z| > 4 left out). Seconds compare
only within one run of `benchmarks/run.py` (the machine's load differs between runs): a
seconds ratio across two result files is shown in brackets, marked "another run". And for
each pair in PAIRS (bomcmc's bandit over another library's kernel, that kernel with its own
tuning) the same three ratios.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

OURS = "bomcmc-ahmc"
OWN = ("bomcmc-ahmc", "bomcmc-ahmc-paper", "bomcmc-amams", "bomcmc-hmc", "bomcmc-nuts",
       "bare-hmc")
# bomcmc's bandit driving another library's kernel, against that kernel's own tuning
PAIRS = (("bomcmc-amams", "blackjax-mams"),)


def _mean(runs: list[dict], get) -> float:
    vals = [get(r) for r in runs]
    vals = [v for v in vals if v is not None and np.isfinite(v)]
    return float(np.mean(vals)) if vals else float("nan")


def summary(runs: list[dict]) -> dict:
    """Seed means of one sampler's figures on one posterior."""
    return {
        "seeds": len(runs),
        "min": _mean(runs, lambda r: r["ess_per_kgrad"]["min"]),
        "median": _mean(runs, lambda r: r["ess_per_kgrad"]["median"]),
        "min_all": _mean(runs, lambda r: r["ess_per_kgrad_incl_warmup"]["min"]),
        "median_all": _mean(runs, lambda r: r["ess_per_kgrad_incl_warmup"]["median"]),
        "per_s": _mean(runs, lambda r: r["ess_per_s"]["min"]),
        "per_s_e2e": _mean(runs, lambda r: r["ess_bulk"]["min"] / r["end_to_end_s"]),
        "rhat": max((r.get("rhat_max") or float("nan")) for r in runs),
        "z": max((r.get("mean_z_max") or float("nan")) for r in runs),
        "chains": max(r.get("chains_run", 0) for r in runs) or None,
    }


def rows(results: list[dict]) -> list[str]:
    head = ["| posterior | sampler | seeds | ESS/1000 grad, min / median | with warm-up, "
            "min / median | min ESS/s, sampling; end to end | max R-hat | max \\|z\\| |",
            "|---|---|---|---|---|---|---|---|"]
    body, ratios, pairs = [], [], []
    for res in results:
        for name, post in res["posteriors"].items():
            sums = {s: summary(v["repeats"]) for s, v in post["samplers"].items()}
            source = {s: v.get("source", 0) for s, v in post["samplers"].items()}
            for s, m in sums.items():
                flag = " **FLAG**" if m["z"] > 4 else ""
                label = f"`{s}`" + (f" ({m['chains']} chains)" if m["chains"] else "")
                body.append(f"| {name} | {label} | {m['seeds']} | {m['min']:.1f} / "
                            f"{m['median']:.1f} | {m['min_all']:.1f} / {m['median_all']:.1f} | "
                            f"{m['per_s']:.0f}; {m['per_s_e2e']:.0f} | {m['rhat']:.3f} | "
                            f"{m['z']:.2f}{flag} |")
            peers = {s: m for s, m in sums.items() if s not in OWN and m["z"] <= 4}
            if OURS in sums and peers:
                best = max(peers, key=lambda s: peers[s]["min_all"])
                fastest = max(peers, key=lambda s: peers[s]["per_s_e2e"])
                side_by_side = source[fastest] == source[OURS]
                per_s = (f"{sums[OURS]['per_s_e2e'] / peers[fastest]['per_s_e2e']:.2f} "
                         f"(`{fastest}`)" if side_by_side else
                         f"({sums[OURS]['per_s_e2e'] / peers[fastest]['per_s_e2e']:.2f}, "
                         f"`{fastest}`, another run)")
                ratios.append(f"| {name} | {sums[OURS]['min_all']:.1f} | `{best}` "
                              f"{peers[best]['min_all']:.1f} | "
                              f"{sums[OURS]['min_all'] / peers[best]['min_all']:.2f} | "
                              f"{sums[OURS]['min'] / max(m['min'] for m in peers.values()):.2f} | "
                              f"{per_s} |")
            for ours, theirs in PAIRS:
                if ours in sums and theirs in sums:
                    a, b = sums[ours], sums[theirs]
                    per_s = a["per_s_e2e"] / b["per_s_e2e"]
                    pairs.append(f"| {name} | `{ours}` ÷ `{theirs}` | "
                                 f"{a['min_all'] / b['min_all']:.2f} | {a['min'] / b['min']:.2f} | "
                                 + (f"{per_s:.2f} |" if source[ours] == source[theirs]
                                    else f"({per_s:.2f}, another run) |"))
    out = head + body
    if pairs:
        out += ["", "| posterior | pair | min ESS/1000 grad ratio, with warm-up | sampling only "
                "| min ESS per second end to end |", "|---|---|---|---|---|"] + pairs
    if ratios:
        out += ["", "| posterior | `bomcmc-ahmc` min ESS/1000 grad, with warm-up | best peer "
                "(correct runs only) | ratio, with warm-up | ratio, sampling only (best "
                "peer's sampling) | ratio, min ESS per second end to end (fastest peer) |",
                "|---|---|---|---|---|---|"] + ratios
    return out


def merge(results: list[dict]) -> list[dict]:
    """One result per posterior, its samplers gathered from every file; where two files ran
    the same sampler on the same posterior, the later file's runs replace the earlier's (so
    a re-run of one sampler updates the table without re-running the peers)."""
    merged: dict[str, dict] = {}
    for k, res in enumerate(results):
        for name, post in res["posteriors"].items():
            into = merged.setdefault(name, {"samplers": {}})
            # which file each sampler's runs came from: seconds compare only within a run
            into["samplers"].update({s: {**v, "source": k} for s, v in post["samplers"].items()})
    return [{"posteriors": {name: post}} for name, post in merged.items()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="benchmarks/run.py result files")
    args = ap.parse_args(argv)
    print("\n".join(rows(merge([json.loads(Path(p).read_text()) for p in args.results]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
