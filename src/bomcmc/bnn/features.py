"""Univariate feature selection for the cross-validation networks, fitted inside each fold.

Wang (2012) §4.2 classifies the Dexter documents with 295 of their 20 000 word counts. Chosen on
all training cases, the features would carry information from every fold's held-out cases into
that fold's network, and its validation error would be optimistic; so each fold's features are
chosen from its own training cases only (`fold_feature_sets`).

The score is the χ² statistic of each feature's counts against the class (scikit-learn's
`chi2`), one of the two best of five univariate scores for text categorisation in Yang &
Pedersen (1997). A feature absent from a fold's training cases scores −∞; ties keep the lower
index, so a selection is a function of the data alone.
"""

from __future__ import annotations

import numpy as np

from ..errors import BomcmcError

DEXTER_FEATURES_KEPT = 295  # Wang (2012) §4.2


def select_features(X, y, k: int = DEXTER_FEATURES_KEPT) -> np.ndarray:
    """The indices (k,) of the k features with the highest χ² score on (X, y), best first.
    X: (n, p) non-negative counts, dense or SciPy sparse; y: (n,) class labels."""
    from sklearn.feature_selection import chi2

    p = X.shape[1]
    if not 1 <= k <= p:
        raise BomcmcError(f"cannot keep {k} of {p} features")
    if len(np.unique(y)) < 2:
        raise BomcmcError("feature selection needs cases of at least two classes")
    score, _ = chi2(X, y)
    score = np.where(np.isfinite(score), score, -np.inf)
    order = np.lexsort((np.arange(p), -score))  # highest score first, then lowest index
    return order[:k]


def fold_feature_sets(X, y, masks, k: int = DEXTER_FEATURES_KEPT) -> np.ndarray:
    """(K, k): fold j's features, chosen on the cases its mask keeps (`cv.fold_masks`)."""
    masks = np.asarray(masks)
    if masks.ndim != 2 or masks.shape[1] != X.shape[0]:
        raise BomcmcError(f"masks must be (folds, {X.shape[0]}), got {masks.shape}")
    y = np.asarray(y)
    return np.stack([select_features(X[m > 0], y[m > 0], k) for m in masks])


def fold_inputs(X, chosen, masks, X_new=None):
    """Each fold network's inputs: its chosen columns of X, as log(1 + count) divided by the
    column's sd over the fold's training cases (so the scaling, too, never sees held-out
    cases). Returns (K, n, k), and (K, m, k) for `X_new` scaled the same way when given."""
    masks = np.asarray(masks)

    def columns(A, idx):
        A = A[:, idx]
        A = A.toarray() if hasattr(A, "toarray") else np.asarray(A)
        return np.log1p(A)

    train, new = [], []
    for idx, m in zip(np.asarray(chosen), masks):
        A = columns(X, idx)
        sd = A[m > 0].std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        train.append(A / sd)
        if X_new is not None:
            new.append(columns(X_new, idx) / sd)
    if X_new is None:
        return np.stack(train)
    return np.stack(train), np.stack(new)
