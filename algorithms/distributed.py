"""What distributed algorithms share: one mean per client over its batch, computed for many
clients per oracle call (their batches concatenated) within a memory budget."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from algorithms.premises import NormTracker
from algorithms.privacy.ledger import Batch
from problems.oracles import Combine, Oracle

GROUP_FLOATS = 2**25  # per-sample entries computed at once (128 MiB in float32)


def _client_groups(oracle: Oracle, batches: list[Batch]) -> Iterator[list[Batch]]:
    """The clients' batches (all of one size) in groups of at most ``GROUP_FLOATS``
    per-sample entries."""
    group = max(1, GROUP_FLOATS // (len(batches[0]) * oracle.d))
    for start in range(0, len(batches), group):
        yield batches[start:start + group]


def _per_chunk(oracle: Oracle, batches: list[Batch], call: Callable[[list[Batch]], Any]) -> Any:
    """``call`` on groups of clients (:func:`_client_groups`), or on all of them where the
    oracle holds no per-sample rows; the (m, d) results stacked in client order."""
    chunks = _client_groups(oracle, batches) if oracle.materialises_rows else iter([batches])
    return oracle.xp.concat([call(chunk) for chunk in chunks])


def clipped_client_means(oracle: Oracle, batches: list[Batch], x: Any, x_prev: Any | None,
                         clip: float, tracker: NormTracker | None, scale: float = 1.0) -> Any:
    """(m, d): each client's mean over its batch of ∇f_i(x) − ∇f_i(x_prev) (∇f_i(x) when
    ``x_prev`` is None), each row clipped at ``clip``, the row norms going to ``tracker``
    (``scale`` as in :meth:`NormTracker.add`); one :meth:`Oracle.clipped_group_means`
    call per chunk of clients (:func:`_per_chunk`)."""
    def call(chunk: list[Batch]) -> Any:
        values, norms = oracle.clipped_group_means(x, x_prev, [b.indices for b in chunk], clip)
        if tracker is not None:
            tracker.add(norms, scale=scale)
        return values

    return _per_chunk(oracle, batches, call)


def combined_client_means(oracle: Oracle, batches: list[Batch], x: Any, x_prev: Any,
                          combine: Combine) -> Any:
    """(m, d): each client's mean over its batch of α_i ∇f_i(x) + β_i ∇f_i(x_prev), (α, β)
    from ``combine`` (:meth:`Oracle.combined_group_means`), one call per chunk of clients."""
    return _per_chunk(oracle, batches, lambda chunk: oracle.combined_group_means(
        x, x_prev, [b.indices for b in chunk], combine))
