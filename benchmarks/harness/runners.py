"""The harness's entrants by name, gathered from their families' modules.

bomcmc's samplers (`bomcmc_runners`), NumPyro's and BlackJAX's NUTS (`nuts_peers`), the bare
reference loop (`bare_hmc`), BlackJAX's self-tuning samplers (`benchmarks/peers_blackjax.py`)
and nutpie (`benchmarks/peers_nutpie.py`). Every runner is `run(ctx, seed) -> dict`.
"""

from __future__ import annotations

from benchmarks import peers_blackjax, peers_nutpie

from . import bare_hmc, bomcmc_runners, nuts_peers
from .nuts_peers import need

# BlackJAX's self-tuning samplers, run by benchmarks/peers_blackjax.py
PEER_SAMPLERS = tuple(peers_blackjax.RUNNERS)
# nutpie's NUTS, run by benchmarks/peers_nutpie.py
NUTPIE_SAMPLERS = tuple(peers_nutpie.RUNNERS)

RUNNERS = {**bomcmc_runners.RUNNERS, **nuts_peers.RUNNERS, **bare_hmc.RUNNERS,
           **peers_blackjax.RUNNERS, **peers_nutpie.RUNNERS}
ALL_SAMPLERS = tuple(RUNNERS)
DEFAULT_SAMPLERS = "bomcmc-hmc,numpyro-nuts,blackjax-nuts"
NUTS_SAMPLERS = ("bomcmc-nuts", "numpyro-nuts", "blackjax-nuts")


def check_installed(samplers) -> None:
    """Stop, before any sampling, when a sampler's optional library is missing."""
    for s in samplers:
        if s.startswith("numpyro-"):
            need("numpyro")
        if s.startswith("blackjax-"):
            need("blackjax")
        if s in NUTPIE_SAMPLERS:
            need("nutpie")
