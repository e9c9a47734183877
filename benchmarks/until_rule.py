#!/usr/bin/env python
"""The run-until-precise rule's own cost (`driver.until.Until.add`) on a run of many short
chunks: 3000 chunks of 6 draws of 4 chains, 401 quantities each (the shape of a long
robot-arm fit with `--until-ess`, whose rule reads the network's 400 outputs and its
log-likelihood after every super-transition), a burn-in of a quarter of the gradients, and a
target never met, so that every chunk is read.

    python benchmarks/until_rule.py [--chunks 3000]

Prints the seconds `add` took in all.
"""

import argparse
import time

import numpy as np

from bomcmc.driver import until


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=3000)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rule = until.Until(1e9, None, burn_in=0.25)
    t0 = time.perf_counter()
    for _ in range(args.chunks):
        rule.add(rng.normal(size=(4, 6, 401)).astype(np.float32), 0.1, np.full((4, 6), 600.0))
    print(f"{args.chunks} chunks: the rule took {time.perf_counter() - t0:.1f} s "
          f"({rule.report()['draws']} draws read at the end)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
