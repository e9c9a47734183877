"""Loaders for the data shipped inside the package (see PROVENANCE.md beside this file)."""

from __future__ import annotations

import csv
from importlib import resources

import numpy as np

from ..errors import BomcmcError


def data_path(*parts: str):
    return resources.files(__package__).joinpath("data", *parts)


def read_csv(path, name: str | None = None) -> tuple[list[str], np.ndarray]:
    """Read a numeric CSV with a header row: UTF-8 with or without a byte-order mark (Excel's
    "CSV UTF-8"), any line ends. Malformed files raise a one-line BomcmcError naming the
    file, the line and the problem."""
    name = name or str(path)
    try:
        raw = path.read_bytes() if hasattr(path, "read_bytes") else open(path, "rb").read()
        text = raw.decode("utf-8-sig")
    except OSError as e:
        raise BomcmcError(f"{name}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise BomcmcError(f"{name}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise BomcmcError(f"{name}: file is empty")
    header = [h.strip() for h in rows[0]]
    data = []
    for lineno, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise BomcmcError(
                f"{name}: line {lineno} has {len(row)} fields, header has {len(header)}"
            )
        data.append(_numbers(row, header, name, lineno))
    if not data:
        raise BomcmcError(f"{name}: no data rows")
    return header, np.asarray(data, dtype=np.float64)


def _numbers(row: list[str], header: list[str], name: str, lineno: int) -> list[float]:
    """One data row as floats; a non-number or a NaN/inf is an error naming line and column."""
    values = []
    for col, cell in zip(header, row):
        try:
            v = float(cell)
        except ValueError:
            raise BomcmcError(f"{name}: line {lineno}, column '{col}': "
                              f"{cell.strip()!r} is not a number") from None
        if not np.isfinite(v):
            raise BomcmcError(f"{name}: line {lineno}, column '{col}': {cell.strip()} "
                              "(NaN or inf) is not allowed")
        values.append(v)
    return values


def _text(path, name: str) -> str:
    try:
        raw = path.read_bytes() if hasattr(path, "read_bytes") else open(path, "rb").read()
        return raw.decode("utf-8-sig")
    except OSError as e:
        raise BomcmcError(f"{name}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise BomcmcError(f"{name}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def read_sparse(path, n_features: int, name: str | None = None):
    """A sparse `index:value` file (the NIPS 2003 feature-selection challenge's format, SVMlight
    without labels): one case per line, 1-based feature indices. Returns a SciPy CSR matrix
    (cases, n_features); a malformed token, an index outside 1..n_features or a repeated index
    is a one-line BomcmcError naming the file and the line."""
    from scipy import sparse

    name = name or str(path)
    rows, cols, vals = [], [], []
    n = 0
    for lineno, line in enumerate(_text(path, name).splitlines(), start=1):
        if not line.strip():
            continue
        seen = set()
        for token in line.split():
            idx, sep, val = token.partition(":")
            try:
                j, v = int(idx), float(val)
            except ValueError:
                raise BomcmcError(f"{name}: line {lineno}: {token!r} is not index:value") from None
            if not sep or not 1 <= j <= n_features or not np.isfinite(v):
                raise BomcmcError(f"{name}: line {lineno}: {token!r} is not index:value with "
                                  f"1 <= index <= {n_features} and a finite value")
            if j in seen:
                raise BomcmcError(f"{name}: line {lineno}: feature {j} appears twice")
            seen.add(j)
            rows.append(n)
            cols.append(j - 1)
            vals.append(v)
        n += 1
    return sparse.csr_matrix((vals, (rows, cols)), shape=(n, n_features))


DEXTER_FEATURES = 20000


def dexter(split: str = "train"):
    """The Dexter text-classification data (NIPS 2003 feature-selection challenge;
    PROVENANCE.md §6): (X, y) with X a CSR matrix (300, 20000) of word counts and y in {0, 1}
    (the challenge's −1/+1). `split` is "train" (verbatim) or "valid" (reconstructed)."""
    if split not in ("train", "valid"):
        raise BomcmcError(f"Dexter split must be 'train' or 'valid', got {split!r}")
    X = read_sparse(data_path("dexter", f"dexter_{split}.data"), DEXTER_FEATURES,
                    f"dexter_{split}.data")
    labels = [line.strip() for line in _text(data_path("dexter", f"dexter_{split}.labels"),
                                             f"dexter_{split}.labels").splitlines()
              if line.strip()]
    if len(labels) != X.shape[0] or set(labels) - {"1", "-1"}:
        raise BomcmcError(f"dexter_{split}.labels: expected {X.shape[0]} labels of ±1")
    return X, (np.asarray(labels, dtype=float) > 0).astype(float)


LOGREG_DATASETS = ("australian", "german", "heart", "pima", "ripley")


def girolami_logreg(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Design matrix and 0/1 labels, preprocessed as the BLR code of Girolami & Calderhead 2011
    (PROVENANCE.md §3): German/Heart labels 1→0, 2→1; features standardised with ddof=1;
    polynomial basis [1, X, X², X³] for Ripley (order 3), [1, X] for the others."""
    if name not in LOGREG_DATASETS:
        raise BomcmcError(f"unknown logistic data set '{name}' (one of {LOGREG_DATASETS})")
    _, arr = read_csv(data_path("girolami_logreg", f"{name}.csv"), f"{name}.csv")
    X, y = arr[:, :-1], arr[:, -1]
    if name in ("german", "heart"):
        y = y - 1.0
    X = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
    order = 3 if name == "ripley" else 1
    design = np.concatenate([np.ones((X.shape[0], 1))] + [X**k for k in range(1, order + 1)], 1)
    return design, y


def stochastic_volatility() -> tuple[np.ndarray, np.ndarray]:
    """Girolami & Calderhead's simulated series (PROVENANCE.md §4): returns (y, true_x), 2000
    observations and the latent log-volatilities that generated them (β = 0.65, σ = 0.15,
    φ = 0.98)."""
    _, arr = read_csv(data_path("stochastic_volatility", "girolami_sv_T2000.csv"),
                      "girolami_sv_T2000.csv")
    return arr[:, 1], arr[:, 2]


def log_gaussian_cox() -> tuple[np.ndarray, np.ndarray]:
    """Girolami & Calderhead's simulated 64 × 64 Cox process (PROVENANCE.md §5): returns
    (counts, true_x), each (64, 64) with [i, j] the grid cell in row i, column j."""
    _, arr = read_csv(data_path("log_gaussian_cox", "girolami_lgc_64x64.csv"),
                      "girolami_lgc_64x64.csv")
    order = np.argsort(arr[:, 0])  # MATLAB's column-major linear index, 1-based
    true_x, counts = arr[order, 1], arr[order, 2]
    return counts.reshape(64, 64, order="F"), true_x.reshape(64, 64, order="F")


ROBOT_ARM_NOISE_SD = 0.05  # MacKay's generating noise (PROVENANCE.md §1)


def robot_arm(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """MacKay's robot-arm data (MacKay 1992; PROVENANCE.md §1): inputs (joint angles x1, x2)
    and outputs (y1, y2). `split`: "train" = rows 1–200, "test" = rows 401–600 (Wang 2012
    §4.1; Neal 1996 §3.3), "extra" = rows 201–400, "all" = the 600 rows."""
    rows = {"train": slice(0, 200), "extra": slice(200, 400), "test": slice(400, 600),
            "all": slice(0, 600)}
    if split not in rows:
        raise BomcmcError(f"robot_arm split must be one of {', '.join(rows)}, got '{split}'")
    _, arr = read_csv(data_path("robot_arm", "robot_arm_600.csv"), "robot_arm_600.csv")
    arr = arr[rows[split]]
    return arr[:, :2], arr[:, 2:]


def robot_arm_truth(X: np.ndarray) -> np.ndarray:
    """The noise-free arm position y = (2 cos x1 + 1.3 cos(x1 + x2), 2 sin x1 + 1.3 sin(x1 + x2))."""
    x1, x2 = X[:, 0], X[:, 1]
    return np.stack([2 * np.cos(x1) + 1.3 * np.cos(x1 + x2),
                     2 * np.sin(x1) + 1.3 * np.sin(x1 + x2)], axis=1)
