"""Splitting a training set over M clients: i.i.d., label-sorted, or Dirichlet(α).

* ``iid``: a random permutation cut into M near-equal parts (huang2025 §5(b): "shuffled and
  split randomly and evenly");
* ``sorted``: indices sorted by label, cut into M contiguous parts, so each client sees
  few classes (the classic pathological heterogeneity);
* ``dirichlet``: for every class, client shares drawn from Dirichlet(α·1_M) (Hsu et al.
  2019); small α is more heterogeneous. Draws are repeated until every client holds at
  least one sample.

The partition depends only on the labels, M, the scheme and the seed: it is part of the
problem, not of a run.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

Scheme = Literal["iid", "sorted", "dirichlet"]
SCHEMES = get_args(Scheme)
MAX_DRAWS = 1000


def partition(labels: np.ndarray, clients: int, scheme: str = "iid", alpha: float = 0.5,
              seed: int = 0) -> list[np.ndarray]:
    """Index arrays (sorted) of each client's samples; together they cover every sample once."""
    labels = np.asarray(labels)
    n = len(labels)
    if not 1 <= clients <= n:
        raise ValueError(f"clients must be in [1, {n}], got {clients}")
    if scheme not in SCHEMES:
        raise ValueError(f"unknown partition {scheme!r}; choose one of {', '.join(SCHEMES)}")
    rng = np.random.default_rng(seed)
    if scheme == "iid":
        parts = np.array_split(rng.permutation(n), clients)
    elif scheme == "sorted":
        parts = np.array_split(np.argsort(labels, kind="stable"), clients)
    else:
        parts = _dirichlet(labels, clients, alpha, rng)
    return [np.sort(p) for p in parts]


def _dirichlet(labels: np.ndarray, clients: int, alpha: float,
               rng: np.random.Generator) -> list[np.ndarray]:
    if not alpha > 0:
        raise ValueError(f"dirichlet alpha must be > 0, got {alpha}")
    for _ in range(MAX_DRAWS):
        parts: list[list[int]] = [[] for _ in range(clients)]
        for cls in np.unique(labels):
            members = rng.permutation(np.flatnonzero(labels == cls))
            shares = rng.dirichlet(np.full(clients, alpha))
            cuts = (np.cumsum(shares)[:-1] * len(members)).astype(int)
            for client, chunk in enumerate(np.split(members, cuts)):
                parts[client].extend(chunk.tolist())
        if all(parts):
            return [np.asarray(p, dtype=np.int64) for p in parts]
    raise ValueError(f"no Dirichlet({alpha}) partition over {clients} clients left every client "
                     f"a sample in {MAX_DRAWS} draws; use fewer clients or a larger alpha")
