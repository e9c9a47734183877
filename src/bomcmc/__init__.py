"""bomcmc: Markov chain Monte Carlo that needs no hand-tuning.

    import bomcmc
    result = bomcmc.sample(logdensity, init, sampler="hmc", chains=4, draws=1000,
                           warmup=1000, seed=0, step_size=0.1, steps=20)
    result.idata          # ArviZ InferenceData (posterior, sample_stats)
    bomcmc.summarize(result.idata)
"""

__version__ = "0.1.0"

import warnings as _warnings

# ArviZ 0.2x announces its 1.0 refactor on import; bomcmc pins arviz<1, so the notice is noise.
_warnings.filterwarnings("ignore", message=r"(?s).*ArviZ is undergoing", category=FutureWarning)

from .config import enable_compilation_cache, set_float64  # noqa: E402
from .diagnostics import summarize  # noqa: E402
from .errors import BomcmcError  # noqa: E402
from .posterior import Posterior  # noqa: E402
from .run import SampleResult, load, resume, sample  # noqa: E402
from . import models as posteriors  # noqa: E402

__all__ = [
    "BomcmcError", "Posterior", "SampleResult", "enable_compilation_cache", "load",
    "posteriors", "resume", "sample", "set_float64", "summarize", "__version__",
]
