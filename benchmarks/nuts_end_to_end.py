"""NUTS side by side, end to end: min ESS per second of the whole call (compilation, warm-up
and sampling) from saved harness results, against the sampling-phase accounting that
`benchmarks/run.py` reports (docs/benchmarks.md, "End to end").

    python benchmarks/nuts_end_to_end.py benchmarks/results/nuts-cpu-run{4,5,6}.json

Per file (one harness run, 3 repeats per posterior): the median over repeats of
min-ESS ÷ seconds, bomcmc ÷ NumPyro and ÷ BlackJAX. Then pooled over all files' repeats.
"""

from __future__ import annotations

import json
import sys

import numpy as np

LIBS = ("bomcmc-nuts", "numpyro-nuts", "blackjax-nuts")
ACCOUNTINGS = {
    "end to end": lambda r: r["end_to_end_s"],
    "sampling phase": lambda r: r["wall_s"],
}


def per_repeat(result: dict, seconds) -> dict:
    """{posterior: {lib: [min ESS / seconds per repeat]}}."""
    return {post: {lib: [r["ess_bulk"]["min"] / seconds(r)
                         for r in entry["samplers"][lib]["repeats"]] for lib in LIBS}
            for post, entry in result["posteriors"].items()}


def ratios(table: dict) -> dict:
    out = {}
    for post, by_lib in table.items():
        med = {lib: float(np.median(v)) for lib, v in by_lib.items()}
        out[post] = (med[LIBS[0]] / med[LIBS[1]], med[LIBS[0]] / med[LIBS[2]])
    return out


def main(paths: list[str]) -> None:
    results = [json.loads(open(p).read()) for p in paths]
    for name, seconds in ACCOUNTINGS.items():
        print(f"\n## min ESS/s, {name}: bomcmc ÷ NumPyro / ÷ BlackJAX\n")
        tables = [per_repeat(r, seconds) for r in results]
        pooled = {post: {lib: sum((t[post][lib] for t in tables), []) for lib in LIBS}
                  for post in tables[0]}
        per_file = [ratios(t) for t in tables]
        both = ratios(pooled)
        print("| posterior | " + " | ".join(f"run {i + 1}" for i in range(len(paths)))
              + " | pooled |")
        print("|---" * (len(paths) + 2) + "|")
        for post in pooled:
            cells = [f"{a:.2f} / {b:.2f}" for a, b in (f[post] for f in per_file)]
            a, b = both[post]
            print(f"| `{post}` | " + " | ".join(cells) + f" | {a:.2f} / {b:.2f} |")
        counts = [sum(a >= 1 and b >= 1 for a, b in f.values()) for f in per_file]
        n_pooled = sum(a >= 1 and b >= 1 for a, b in both.values())
        print(f"\n≥ both: {' / '.join(map(str, counts))} of {len(pooled)} per run; "
              f"{n_pooled} of {len(pooled)} pooled")


if __name__ == "__main__":
    main(sys.argv[1:] or [f"benchmarks/results/nuts-cpu-run{i}.json" for i in (4, 5, 6)])
