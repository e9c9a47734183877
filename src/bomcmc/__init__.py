"""bomcmc: Markov chain Monte Carlo that needs no hand-tuning.

    import bomcmc
    result = bomcmc.sample(logdensity, init, sampler="hmc", chains=4, draws=1000,
                           warmup=1000, seed=0, step_size=0.1, steps=20)
    result.idata          # ArviZ InferenceData (posterior, sample_stats)
    bomcmc.summarize(result.idata)
"""

import warnings as _warnings

# ArviZ 0.2x announces its 1.0 refactor on import; bomcmc pins arviz<1, so the notice is noise.
_warnings.filterwarnings("ignore", message=r"(?s).*ArviZ is undergoing", category=FutureWarning)

from . import models as posteriors  # noqa: E402
from . import registry  # noqa: E402
from ._version import __version__  # noqa: E402
from .adaptation.base import Adapter  # noqa: E402
from .config import enable_compilation_cache, set_float64  # noqa: E402
from .diagnostics import SamplingWarning, summarize  # noqa: E402
from .driver import SampleResult, load, resume, sample  # noqa: E402
from .errors import BomcmcError  # noqa: E402
from .kernels.base import Kernel  # noqa: E402
from .models.numpyro_model import from_numpyro  # noqa: E402
from .models.pymc_model import from_pymc  # noqa: E402
from .posterior import Posterior  # noqa: E402
from .registry import Sampler  # noqa: E402
from .tuning.base import Tuner  # noqa: E402

__all__ = [
    "Adapter", "BomcmcError", "Kernel", "Posterior", "SampleResult", "Sampler",
    "SamplingWarning", "Tuner",
    "enable_compilation_cache", "from_numpyro", "from_pymc", "load", "posteriors", "registry",
    "resume", "sample",
    "set_float64", "summarize", "__version__",
]
