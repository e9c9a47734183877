"""The Dexter loader and the fold-internal feature selection (bnn/features.py): a fold's
held-out cases never influence its own features, and selecting on all cases (peeking) would
be caught by the same test."""

import numpy as np
import pytest
from scipy import sparse

from bomcmc.bnn.cv import fold_masks
from bomcmc.bnn.features import fold_feature_sets, fold_inputs, select_features
from bomcmc.datasets import dexter, read_sparse
from bomcmc.errors import BomcmcError


def test_the_shipped_dexter_sets():
    for split in ("train", "valid"):
        X, y = dexter(split)
        assert X.shape == (300, 20000) and sparse.issparse(X)
        assert y.sum() == 150 and set(np.unique(y)) == {0.0, 1.0}
        assert X.min() >= 0 and 25_000 < X.nnz < 30_000


@pytest.mark.parametrize("line, problem", [("3:x", "not index:value"),
                                           ("0:1", "1 <= index <= 5"),
                                           ("6:1", "1 <= index <= 5"),
                                           ("2:1 2:3", "appears twice"),
                                           ("4", "not index:value")])
def test_a_malformed_sparse_file_is_a_one_line_error(tmp_path, line, problem):
    path = tmp_path / "bad.data"
    path.write_text("1:2 3:4\n" + line + "\n")
    with pytest.raises(BomcmcError, match=problem) as err:
        read_sparse(path, 5)
    assert "line 2" in str(err.value) and "\n" not in str(err.value)


def _perturb_rows(X, y, rows, seed):
    """X and y with the given rows replaced by random counts and flipped labels."""
    rng = np.random.default_rng(seed)
    X2 = X.tolil(copy=True)
    for r in rows:
        X2[r, :] = 0
        cols = rng.choice(X.shape[1], size=120, replace=False)
        X2[r, cols] = rng.integers(1, 300, size=120)
    y2 = y.copy()
    y2[rows] = 1.0 - y2[rows]
    return X2.tocsr(), y2


def test_a_held_out_fold_never_influences_its_own_features():
    X, y = dexter("train")
    masks = fold_masks(300, 10)
    chosen = fold_feature_sets(X, y, masks)
    assert chosen.shape == (10, 295)
    for fold in (0, 7):
        held = np.flatnonzero(masks[fold] == 0)
        X2, y2 = _perturb_rows(X, y, held, seed=fold)
        again = fold_feature_sets(X2, y2, masks)
        np.testing.assert_array_equal(again[fold], chosen[fold])
        # the change is visible to the folds that train on those cases ...
        assert all(set(again[j]) != set(chosen[j]) for j in range(10) if j != fold)
        # ... and to a selection on all cases, the leak this test exists to catch
        assert set(select_features(X2, y2)) != set(select_features(X, y))


def test_fold_inputs_are_scaled_on_the_folds_training_cases_only():
    X, y = dexter("train")
    Xv, _ = dexter("valid")
    masks = fold_masks(300, 10)
    chosen = fold_feature_sets(X, y, masks, k=40)
    inputs, new = fold_inputs(X, chosen, masks, Xv)
    assert inputs.shape == (10, 300, 40) and new.shape == (10, 300, 40)
    held = np.flatnonzero(masks[3] == 0)
    X2, _ = _perturb_rows(X, y, held, seed=3)
    again = fold_inputs(X2, chosen, masks)
    kept = masks[3] > 0
    np.testing.assert_array_equal(again[3][kept], inputs[3][kept])
    np.testing.assert_allclose(inputs[3][kept].std(axis=0), 1.0)
