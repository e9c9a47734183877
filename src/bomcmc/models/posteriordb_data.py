"""The shipped posteriordb files: posterior definitions, data sets and reference summaries.

`reference(name)` gives the reference posterior's mean, sd and Monte-Carlo standard error per
coordinate (10 chains × 1000 draws of Stan's NUTS, from posteriordb); `flatten_draws` and
`flatten_idata` name a run's coordinates the same way (`theta[1]`, ...).
"""

from __future__ import annotations

import io
import json
import zipfile
from functools import lru_cache

import numpy as np

from ..datasets import data_path
from ..errors import BomcmcError

DATA_ROOT = ("posteriordb",)
SUMMARY_FILE = ("posteriordb", "reference_posteriors", "summaries.json")


# ---------------------------------------------------------------------------------------
# Reading the shipped files
# ---------------------------------------------------------------------------------------
def _read_json_zip(path) -> object:
    with path.open("rb") as f:
        raw = f.read()
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        names = [n for n in z.namelist() if n.endswith(".json")]
        if len(names) != 1:
            raise BomcmcError(f"{path.name}: expected one JSON file in the zip, found {names}")
        return json.loads(z.read(names[0]))


@lru_cache(maxsize=None)
def posterior_info(name: str) -> dict:
    """posteriordb's `posteriors/NAME.json` (model, data, dimensions, reference name)."""
    path = data_path(*DATA_ROOT, "posteriors", f"{name}.json")
    if not path.is_file():
        raise BomcmcError(f"no posteriordb posterior '{name}' is shipped")
    return json.loads(path.read_text())


@lru_cache(maxsize=None)
def _load_data_cached(data_name: str) -> dict:
    path = data_path(*DATA_ROOT, "data", "data", f"{data_name}.json.zip")
    if not path.is_file():
        raise BomcmcError(f"no posteriordb data set '{data_name}' is shipped")
    return _read_json_zip(path)


def load_data(data_name: str) -> dict:
    """The data set as posteriordb stores it: {field: int, float or list}."""
    return dict(_load_data_cached(data_name))


# ---------------------------------------------------------------------------------------
# Reference posteriors
# ---------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _summaries() -> dict:
    return json.loads(data_path(*SUMMARY_FILE).read_text())


def reference_name(name: str) -> str | None:
    """The posteriordb reference posterior used for `name` (None where there is none)."""
    return posterior_info(name).get("reference_posterior_name")


def has_reference(name: str) -> bool:
    ref = reference_name(name)
    return ref is not None and ref in _summaries()["posteriors"]


def reference(name: str) -> dict[str, dict[str, float]]:
    """{param: {"mean", "sd", "mcse_mean", "mcse_sd"}} of the reference draws on the
    constrained scale, names as Stan flattens them (`theta[1]`, 1-based). The centred eight
    schools uses the non-centred reference (the same posterior)."""
    ref = reference_name(name)
    if ref is None:
        raise BomcmcError(f"posteriordb posterior '{name}' has no reference draws")
    try:
        params = _summaries()["posteriors"][ref]["params"]
    except KeyError:
        raise BomcmcError(f"reference summary for '{ref}' is not shipped") from None
    keep = ("mean", "sd", "mcse_mean", "mcse_sd")
    return {p: {k: float(v[k]) for k in keep} for p, v in params.items()}


def summarize_reference_draws(chains: list[dict]) -> dict[str, dict[str, float]]:
    """Per-parameter summary of posteriordb reference draws (a list of chains, each
    {param: draws}): mean, sd (ddof=1 over all draws), ArviZ's MCSE of the mean and of the sd,
    bulk/tail ESS and R-hat. Used to derive `summaries.json` from the draws zips."""
    import arviz as az

    names = list(chains[0])
    arrays = {n: np.asarray([c[n] for c in chains], dtype=np.float64) for n in names}
    ds = az.convert_to_dataset({f"v{i}": arrays[n] for i, n in enumerate(names)})
    mcse_mean = az.mcse(ds, method="mean")
    mcse_sd = az.mcse(ds, method="sd")
    ess_bulk = az.ess(ds, method="bulk")
    ess_tail = az.ess(ds, method="tail")
    rhat = az.rhat(ds)
    out = {}
    for i, n in enumerate(names):
        v, a = f"v{i}", arrays[n]
        out[n] = {"mean": float(a.mean()), "sd": float(a.std(ddof=1)),
                  "mcse_mean": float(mcse_mean[v]), "mcse_sd": float(mcse_sd[v]),
                  "ess_bulk": float(ess_bulk[v]), "ess_tail": float(ess_tail[v]),
                  "r_hat": float(rhat[v])}
    return out


def flatten_draws(arrays: dict[str, np.ndarray], sample_dims: int = 2) -> dict[str, np.ndarray]:
    """{var: (chain, draw, *shape)} -> {"var" or "var[i,j]" (1-based): (chain, draw)}."""
    out = {}
    for var, a in arrays.items():
        a = np.asarray(a)
        lead, shape = a.shape[:sample_dims], a.shape[sample_dims:]
        if not shape:
            out[var] = a
            continue
        for idx in np.ndindex(*shape):
            out[f"{var}[{','.join(str(i + 1) for i in idx)}]"] = a[(Ellipsis,) + idx].reshape(lead)
    return out


def flatten_idata(idata, group: str = "posterior") -> dict[str, np.ndarray]:
    """A bomcmc InferenceData's `posterior` (or another) group as {Stan name: (chain, draw)}."""
    ds = getattr(idata, group)
    return flatten_draws({str(v): ds[v].transpose("chain", "draw", ...).values
                          for v in ds.data_vars})
