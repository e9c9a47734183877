"""A model from a Python file, `FILE.py:NAME` (`bomcmc sample --model FILE.py:NAME`).

FILE.py is run as a module (its folder on `sys.path` while it runs) and NAME looked up in it:

- a `bomcmc.Posterior`: used as it is;
- a `pymc.Model`: `from_pymc(NAME)`;
- a callable with a module-level `NAME_init` beside it: a JAX log density `position -> scalar`
  whose initial position (a pytree, e.g. a dict of arrays) is `NAME_init`;
- any other callable: a NumPyro model with its data bound, called with no arguments (e.g.
  `model = functools.partial(model_fn, y)`): `from_numpyro(NAME)`.

The Posterior's `model_file` records the absolute `FILE.py:NAME`; a run's config.json
keeps it, so `bomcmc resume DIR` loads the model again from the same file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import inspect
import sys
from pathlib import Path

from ..errors import BomcmcError, first_line
from ..posterior import Posterior

FORM = "FILE.py:NAME"



def split_spec(spec: str) -> tuple[Path, str]:
    """(the file, the name) of `FILE.py:NAME`, or a one-line BomcmcError."""
    path, sep, name = str(spec).rpartition(":")
    if not sep or not path or not name.isidentifier():
        raise BomcmcError(f"--model must be {FORM} (NAME a Python name), got {spec!r}")
    return Path(path).expanduser().resolve(), name


def _run_file(path: Path):
    if not path.is_file():
        raise BomcmcError(f"{path}: no such model file")
    key = "bomcmc_model_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(key, path)
    if spec is None or spec.loader is None:
        raise BomcmcError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module  # dataclasses and pickling look their module up
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - any failure of the user's file is bad input
        sys.modules.pop(key, None)
        raise BomcmcError(f"{path}: cannot be loaded: {first_line(e)}") from None
    finally:
        try:
            sys.path.remove(str(path.parent))
        except ValueError:
            pass
    return module


def _takes_no_arguments(fn) -> bool:
    try:
        inspect.signature(fn).bind()
    except TypeError:
        return False
    except ValueError:  # no signature (a builtin): let NumPyro try
        return True
    return True


def load(spec: str) -> Posterior:
    """The Posterior that `FILE.py:NAME` names (the rule in the module docstring)."""
    path, name = split_spec(spec)
    module = _run_file(path)
    if not hasattr(module, name):
        raise BomcmcError(f"{path}: defines no '{name}'")
    obj = getattr(module, name)
    where = f"{path}:{name}"
    if isinstance(obj, Posterior):
        post = obj
    elif type(obj).__module__.startswith("pymc") and type(obj).__name__ == "Model":
        from .pymc_model import from_pymc

        post = from_pymc(obj)
    elif callable(obj) and hasattr(module, f"{name}_init"):
        post = Posterior(logdensity_fn=obj, init_position=getattr(module, f"{name}_init"),
                         name=f"file:{name}")
    elif callable(obj):
        if not _takes_no_arguments(obj):
            raise BomcmcError(
                f"{where} takes arguments: bind its data (model = functools.partial("
                f"{name}, data)), or, for a log density, define {name}_init")
        from .numpyro_model import from_numpyro

        post = from_numpyro(obj)
    else:
        raise BomcmcError(
            f"{where} is a {type(obj).__name__}: expected a NumPyro model with its data bound "
            f"(no arguments), a bomcmc.Posterior, a pymc.Model, or a JAX log density with "
            f"{name}_init")
    return dataclasses.replace(post, model_file=where)
