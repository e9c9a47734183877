"""bomcmc: Markov chain Monte Carlo that needs no hand-tuning.

    import bomcmc
    result = bomcmc.sample(logdensity, init, chains=4, draws=1000, warmup=1000, seed=0)
    result.idata          # ArviZ InferenceData (posterior, sample_stats)
    bomcmc.summarize(result.idata)

The public names are imported when first used (PEP 562), so `import bomcmc` and
`bomcmc --help` do not pay for importing JAX.
"""

import importlib as _importlib
import warnings as _warnings

from ._version import __version__
from .errors import BomcmcError

# ArviZ 0.2x announces its 1.0 refactor on import; bomcmc pins arviz<1, so the notice is noise.
_warnings.filterwarnings("ignore", message=r"(?s).*ArviZ is undergoing", category=FutureWarning)

# public name -> (module, attribute); attribute None: the module itself
_PUBLIC = {
    "Adapter": ("adaptation.base", "Adapter"),
    "BayesianMLPClassifier": ("bnn.classifier", "BayesianMLPClassifier"),
    "BayesianMLPRegressor": ("bnn.regressor", "BayesianMLPRegressor"),
    "Kernel": ("kernels.base", "Kernel"),
    "Posterior": ("posterior", "Posterior"),
    "SampleResult": ("driver", "SampleResult"),
    "Sampler": ("registry", "Sampler"),
    "SamplerConfig": ("options", "SamplerConfig"),
    "SamplingWarning": ("diagnostics", "SamplingWarning"),
    "Tuner": ("tuning.base", "Tuner"),
    "enable_compilation_cache": ("config", "enable_compilation_cache"),
    "from_numpyro": ("models.numpyro_model", "from_numpyro"),
    "from_pymc": ("models.pymc_model", "from_pymc"),
    "load": ("driver", "load"),
    "posteriors": ("models", None),
    "resume": ("public", "resume"),
    "sample": ("public", "sample"),
    "set_float64": ("config", "set_float64"),
    "summarize": ("diagnostics", "summarize"),
}


def __getattr__(name: str):
    if name in _PUBLIC:
        module, attr = _PUBLIC[name]
        mod = _importlib.import_module(f"{__name__}.{module}")
        value = mod if attr is None else getattr(mod, attr)
    else:  # a subpackage or module, e.g. bomcmc.models, bomcmc.registry
        try:
            value = _importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError:
            raise AttributeError(f"module 'bomcmc' has no attribute '{name}'") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))


__all__ = ["BomcmcError", "__version__", *_PUBLIC, "registry"]
