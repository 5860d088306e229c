"""scikit-learn's embedded 8×8 digits (1,797 images, 10 classes): real data, no download."""

from __future__ import annotations

import math

import numpy as np

from problems.data.common import Split

DIGITS = 1797


def digits_train_size(test_fraction: float) -> int:
    """The training records :func:`load_digits_split` keeps (scikit-learn's
    ``train_test_split`` holds out ⌈test_fraction · 1797⌉)."""
    return DIGITS - math.ceil(test_fraction * DIGITS)


def load_digits_split(test_fraction: float, seed: int) -> Split:
    """Digits scaled to [0, 1], stratified split with ``test_fraction`` held out."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x / 16.0, y, test_size=test_fraction, random_state=seed, stratify=y
    )
    return Split(x_tr, y_tr.astype(np.int64), x_te, y_te.astype(np.int64), classes=10)
