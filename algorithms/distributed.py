"""What distributed algorithms share: one mean per client over its batch, computed for many
clients per oracle call (their batches concatenated) within a memory budget."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from algorithms.premises import NormTracker
from algorithms.privacy.ledger import Batch
from problems.oracles import Oracle

GROUP_FLOATS = 2**25  # per-sample entries computed at once (128 MiB in float32)


def _client_groups(oracle: Oracle, batches: list[Batch]) -> Iterator[list[Batch]]:
    """The clients' batches (all of one size) in groups of at most ``GROUP_FLOATS``
    per-sample entries."""
    group = max(1, GROUP_FLOATS // (len(batches[0]) * oracle.d))
    for start in range(0, len(batches), group):
        yield batches[start:start + group]


def per_client_mean(oracle: Oracle, batches: list[Batch],
                    rows: Callable[[np.ndarray], Any]) -> Any:
    """(m, d): the mean over each client's batch of ``rows(idx)``, a (len(idx), d) array of
    per-sample quantities. All batches have one size; clients go through ``rows`` together,
    a group (:func:`_client_groups`) at a time."""
    xp, size = oracle.xp, len(batches[0])
    means = []
    for chunk in _client_groups(oracle, batches):
        values = rows(np.concatenate([b.indices for b in chunk]))
        means.append(xp.mean(xp.reshape(values, (len(chunk), size, oracle.d)), axis=1))
    return xp.concat(means)


def clipped_client_means(oracle: Oracle, batches: list[Batch], x: Any, x_prev: Any | None,
                         clip: float, tracker: NormTracker | None, scale: float = 1.0) -> Any:
    """(m, d): each client's mean over its batch of ∇f_i(x) − ∇f_i(x_prev) (∇f_i(x) when
    ``x_prev`` is None), each row clipped at ``clip``, the row norms going to ``tracker``
    (``scale`` as in :meth:`NormTracker.add`); one :meth:`Oracle.clipped_group_means`
    call per group of clients (:func:`_client_groups`), or for all of them where the oracle
    holds no per-sample rows."""
    means = []
    chunks = _client_groups(oracle, batches) if oracle.materialises_rows else iter([batches])
    for chunk in chunks:
        values, norms = oracle.clipped_group_means(x, x_prev, [b.indices for b in chunk],
                                                   clip)
        if tracker is not None:
            tracker.add(norms, scale=scale)
        means.append(values)
    return oracle.xp.concat(means)
