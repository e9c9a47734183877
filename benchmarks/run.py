#!/usr/bin/env python
"""Side-by-side sampler benchmark: bomcmc HMC and NUTS vs NumPyro NUTS vs BlackJAX NUTS
and BlackJAX's self-tuning samplers (ChEES-HMC, MEADS, MAMS, NUTS with a low-rank metric;
benchmarks/peers_blackjax.py).

    python benchmarks/run.py --posteriors logistic-german \
        --samplers bomcmc-hmc,numpyro-nuts,blackjax-nuts --chains 4 --draws 1000 \
        --warmup 1000 --repeats 3 [--cache-check] [--tag NAME] [--float64]

The entry point only: the harness lives in `benchmarks/harness/` (runners by family, figures,
tables, command line; see its `__init__`), and `python -m benchmarks.run` works as well.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ (a package at the repository root)

from benchmarks.harness.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
