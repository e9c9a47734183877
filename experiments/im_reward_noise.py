"""Which block reward tells IM settings apart best at the BO step's cost? (issue 33;
docs/spins.md, "The reward's noise against its signal").

IMBayesOpt sees one reward per block of 100 moves of one chain. The GP can rank two settings
(γ, k) only if their rewards differ by more than a block's noise. For a few fixed settings per
model this script runs long chains, cuts them into blocks of 100 moves and computes each
candidate reward on every block; it also computes the paper's measure (mean |ACF| of the
energy over lags 1..500) and ArviZ's ESS per move over the whole run. A candidate is better
than another where its block means rank the settings as the long-run measure does, with
larger separations (difference of block means over the pooled block sd).

Candidates, each a function of one block's log density lp = −βE (so of the energy):
- "h": Mahendran's objective (`rewards.energy_acf`).
- "ess": ArviZ's bulk ESS of the block per move.
- "jump_K" (K = 1, 10, 50): the variogram (1/K) Σ_{ℓ=1..K} mean_t (lp_{t+ℓ} − lp_t)². In a
  stationary chain its expectation is 2 σ² (1 − (1/K) Σ_ℓ ρ_ℓ), σ² the target's variance of
  lp, which no setting changes: 1 − mean ACF up to lag K, estimated without the block's own
  mean and variance.

    python experiments/im_reward_noise.py --model ising-60x60 --chains 2 --warmup 5000 \\
        --draws 10000 --out benchmarks/results/im-reward-noise-ising-60x60.json
    python experiments/im_reward_noise.py --from-json benchmarks/results/im-reward-noise-*.json
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import arviz as az
import numpy as np

import bomcmc
from bomcmc.tuning.rewards import energy_acf
from im_sampler import abs_acf  # the experiment's |ACF| per lag (experiments/ is on the path)

BLOCK = 100
JUMP_LAGS = (1, 10, 50)
# (k, γ) per model: the expert of Mahendran (2011) Table 4.1 first, then settings on and off
# the ridge γ ≈ β that IMBayesOpt's policies put their mass on (docs/spins.md)
SETTINGS = {
    "ising-60x60": [(90, 0.44), (143, 0.4405), (30, 0.4405), (250, 0.4405), (90, 0.45),
                    (143, 0.43)],
    "spinglass-9x9x9": [(list(range(1, 26)), 0.8), (13, 1.0), (5, 1.0), (40, 1.0), (13, 0.8),
                        (25, 1.1)],
    "rbm-digits-100": [(list(range(1, 21)), 0.8), (15, 1.0), (5, 1.0), (40, 1.0), (15, 0.8),
                       (15, 1.1)],
}


def jump(lp: np.ndarray, max_lag: int) -> float:
    """(1/K) Σ_{ℓ=1..K} mean_t (lp_{t+ℓ} − lp_t)² of one block."""
    return float(np.mean([np.mean((lp[lag:] - lp[:-lag]) ** 2) for lag in range(1, max_lag + 1)]))


def block_rewards(lp: np.ndarray) -> dict[str, float]:
    ess = float(az.ess(lp[None, :], method="bulk")) if np.ptp(lp) > 0 else 0.0  # stuck: 0
    out = {"h": energy_acf({"lp": lp[None, :]}), "ess": ess / lp.size}
    out.update({f"jump_{k}": jump(lp, k) for k in JUMP_LAGS})
    return out


def run_setting(model: str, k, gamma, chains: int, warmup: int, draws: int, seed: int) -> dict:
    kk = k if isinstance(k, list) else [k]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bomcmc.sample(posterior=model, sampler="im", k=kk, gamma=[gamma] * len(kk),
                            chains=chains, warmup=warmup, draws=draws, seed=seed,
                            progress=False)
    lp = np.asarray(res.idata.sample_stats.lp)  # (chains, draws)
    blocks = [block_rewards(c[i * BLOCK:(i + 1) * BLOCK]) for c in lp
              for i in range(lp.shape[1] // BLOCK)]
    return {"k": k, "gamma": gamma, "seconds": time.perf_counter() - t0,
            "var_lp": float(lp.var()),
            "mean_abs_acf": [float(abs_acf(c)[1:].mean()) for c in lp],
            "ess_per_move": float(az.ess(lp, method="bulk")) / lp.size,
            "accept": float(np.mean(res.idata.sample_stats.acceptance_rate)),
            "blocks": {name: [b[name] for b in blocks] for name in blocks[0]}}


def separations(settings: list[dict], min_accept: float = 0.05) -> dict:
    """Per reward, over the settings that accept more than `min_accept` of their moves (one
    that almost never moves is told apart by every reward): Spearman's ρ between the block
    means and −(long-run mean |ACF|), and for every pair of settings the difference of
    block means over √(sd_a² + sd_b²) (its separation), signed so that positive means the
    reward prefers the setting the long run prefers; their mean and median, and how many
    pairs the reward orders against the long run."""
    from scipy.stats import spearmanr

    settings = [s for s in settings if s["accept"] > min_accept]
    truth = np.array([np.mean(s["mean_abs_acf"]) for s in settings])
    out = {}
    for name in settings[0]["blocks"]:
        vals = [np.asarray(s["blocks"][name]) for s in settings]
        means = np.array([v.mean() for v in vals])
        sds = np.array([v.std(ddof=1) for v in vals])
        pairs = []
        for a in range(len(settings)):
            for b in range(a + 1, len(settings)):
                sign = np.sign(truth[b] - truth[a])  # > 0: a is better in the long run
                pairs.append(float(sign * (means[a] - means[b]) / np.hypot(sds[a], sds[b])))
        out[name] = {"spearman": float(spearmanr(means, -truth)[0]),
                     "mean_separation": float(np.mean(pairs)),
                     "median_separation": float(np.median(pairs)),
                     "wrong_order_pairs": int(np.sum(np.array(pairs) < 0)),
                     "pairs": len(pairs), "means": means.tolist(), "sds": sds.tolist()}
    return out


def report(result: dict) -> str:
    lines = [f"{result['model']}: {result['chains']} chains x {result['draws']} moves per "
             "setting"]
    for s in result["settings"]:
        k = f"U{{1..{s['k'][-1]}}}" if isinstance(s["k"], list) else s["k"]
        lines.append(f"  k={k} γ={s['gamma']}: mean|ACF| {np.mean(s['mean_abs_acf']):.3f}, "
                     f"accept {s['accept']:.2f}, ESS/move {1e3 * s['ess_per_move']:.2f}e-3, "
                     + ", ".join(f"{n} {np.mean(v):.4g} ± {np.std(v, ddof=1):.3g}"
                                 for n, v in s["blocks"].items()))
    for name, r in separations(result["settings"]).items():
        lines.append(f"  {name:8s} Spearman {r['spearman']:+.2f}, separation mean "
                     f"{r['mean_separation']:+.3f} median {r['median_separation']:+.3f}, "
                     f"wrong order {r['wrong_order_pairs']}/{r['pairs']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(SETTINGS))
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=5000)
    ap.add_argument("--draws", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="results JSON")
    ap.add_argument("--from-json", nargs="+", metavar="JSON", default=None,
                    help="only print the report of these results")
    args = ap.parse_args()
    if args.from_json:
        for path in args.from_json:
            with open(path) as f:
                print(report(json.load(f)))
        return
    if not (args.model and args.out):
        ap.error("--model and --out are required unless --from-json is given")
    settings = []
    for k, gamma in SETTINGS[args.model]:
        s = run_setting(args.model, k, gamma, args.chains, args.warmup, args.draws, args.seed)
        settings.append(s)
        print(f"k={k} γ={gamma}: {s['seconds']:.0f} s", flush=True)
    result = {"model": args.model, "chains": args.chains, "warmup": args.warmup,
              "draws": args.draws, "seed": args.seed, "block": BLOCK, "settings": settings,
              "separations": separations(settings)}
    with open(args.out, "w") as f:
        json.dump(result, f)
    print(report(result))


if __name__ == "__main__":
    main()
