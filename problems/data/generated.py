"""Generated classification data: an honest synthetic stand-in of a real data set's size and
dimension (scikit-learn's ``make_classification``), for quick runs where the embedded digits
are too small for a private problem to be learnable."""

from __future__ import annotations

import numpy as np

from problems.data.common import Split


def generated_split(n_train: int, n_test: int, features: int, informative: int,
                    classes: int, clusters: int, class_sep: float, flip: float,
                    seed: int) -> Split:
    """``n_train + n_test`` samples in ``features`` dimensions, ``classes`` classes of
    ``clusters`` Gaussian clusters each on the vertices of an ``informative``-dimensional
    hypercube (side ``2·class_sep``; the other features are random linear combinations and
    noise), a fraction ``flip`` of labels flipped at random; scaled by 1/√features so that
    ‖a‖ ≈ 1 per sample, like normalised images."""
    from sklearn.datasets import make_classification

    x, y = make_classification(
        n_samples=n_train + n_test, n_features=features, n_informative=informative,
        n_redundant=min(informative, features - informative), n_classes=classes,
        n_clusters_per_class=clusters, class_sep=class_sep, flip_y=flip, random_state=seed)
    x = (x / np.sqrt(features)).astype(np.float64)
    y = y.astype(np.int64)
    return Split(x[:n_train], y[:n_train], x[n_train:], y[n_train:], classes=classes)
