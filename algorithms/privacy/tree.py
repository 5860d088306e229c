"""Private prefix sums: the binary-tree mechanism (liu2024 Algorithm 1, resolved as in the
notes §2.1) and, for ablations, independent per-leaf Gaussian noise.

Leaves t = 1, 2, … hold values M_t, each computed from its own batch; the mechanism
releases X_t = Σ_{j≤t} M_j + noise_t. In the tree, noise_t = TREE(t) is the sum of the
noises of the dyadic nodes NODE(t): following the binary expansion of t from the high bit,
with k the sum of the higher bits, node (ℓ, k/2^ℓ) covers leaves [k+1, k+2^ℓ]. Levels run
ℓ = 0..⌈log₂Σ⌉ (T1: the paper's levels miss the node [1, Σ]); a node's noise N(0, σ²I) is
drawn once, at its first use, and reused (T2); NODE returns its set (T3); logs are base 2
(T4). E‖TREE(t)‖² = dσ²|NODE(t)| (T5).

Privacy, exactly: a record in leaf k enters every released node that covers it, each a
Gaussian release of the leaf's sensitivity s_k with std σ. At a node's first use the
mechanism attaches one release (multiplier σ/s_k) to the batch of every leaf it covers, so
a leaf's round lists exactly its nodes (at most ⌈log₂Σ⌉ + 1, only nodes (ℓ, j) with j even
are ever used) and the accountant composes them: σ_eff = σ/(s_k √#nodes). With single-use
(``disjoint``) batches the worst leaf pays (parallel composition); this is the exact GDP
value that dp-accounting's SingleEpochTreeAggregationDpEvent bounds by RDP (anchors
dp_tooling.md §2.5, §6.2).

:class:`GaussianSums` is the per-step alternative (Ganesh et al. 2023's increments): each
leaf gets its own N(0, σ²I) once, so noise_t accumulates over t; at equal privacy its σ is
the tree's σ/√L.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from algorithms.privacy.ledger import Batch, Mechanism, Release

Node = tuple[int, int]  # (level ℓ, index j): leaves [j·2^ℓ + 1, (j + 1)·2^ℓ]


def tree_nodes(t: int) -> list[Node]:
    """NODE(t): the dyadic nodes whose leaves partition [1, t], largest first."""
    if t < 1:
        raise ValueError(f"leaf index must be >= 1, got {t}")
    nodes, k = [], 0
    for level in range(t.bit_length() - 1, -1, -1):
        if t >> level & 1:
            nodes.append((level, k >> level))
            k += 1 << level
    return nodes


def tree_depth(horizon: int) -> int:
    """L = ⌈log₂ Σ⌉ + 1: the most nodes a leaf can be in within ``horizon`` leaves."""
    return math.ceil(math.log2(horizon)) + 1 if horizon > 1 else 1


def leaf_node_counts(horizon: int) -> np.ndarray:
    """How many released nodes cover each leaf 1..horizon when all ``horizon`` prefixes are
    released (the ledger's per-record release counts)."""
    counts = np.zeros(horizon, dtype=int)
    released = {node for t in range(1, horizon + 1) for node in tree_nodes(t)}
    for level, j in released:
        counts[j << level:(j + 1) << level] += 1
    return counts


class TreeSums:
    """Prefix sums with binary-tree noise of std ``sigma`` per node (one tree; restart by
    making a new one). ``add`` takes leaf t + 1 and returns X_{t+1}."""

    def __init__(self, mech: Mechanism, sigma: float, tag: str = "tree") -> None:
        if not sigma > 0:
            raise ValueError(f"tree noise needs sigma > 0, got {sigma}")
        self.mech, self.sigma, self.tag = mech, sigma, tag
        self.t = 0
        self.total: Any = None
        self.leaves: list[tuple[Batch, float]] = []
        self._noise: dict[Node, Any] = {}

    def add(self, value: Any, *, sensitivity: float, batch: Batch) -> Any:
        """Leaf t + 1 = ``value`` (L2 sensitivity ``sensitivity`` in ``batch``)."""
        if not sensitivity > 0:
            raise ValueError(f"a tree leaf needs sensitivity > 0, got {sensitivity}")
        self.t += 1
        base = self.total
        self.total = value if base is None else base + value
        self.leaves.append((batch, float(sensitivity)))
        noisy = self.total + self.noise(self.t, value)
        return self.mech.emit(noisy, tag=self.tag, value=value, base=base,
                              std=self.sigma * math.sqrt(len(tree_nodes(self.t))),
                              charges=[(batch, float(sensitivity))])

    def noise(self, t: int, like: Any) -> Any:
        """TREE(t), drawing (and accounting for) nodes at their first use."""
        total = None
        for node in tree_nodes(t):
            if node not in self._noise:
                self._noise[node] = self.sigma * self.mech.noise.normal(tuple(like.shape))
                self._attach(node)
            total = self._noise[node] if total is None else total + self._noise[node]
        self._evict(t)
        return total

    def _attach(self, node: Node) -> None:
        level, j = node
        for batch, s in self.leaves[j << level:(j + 1) << level]:
            batch.releases.append(Release("gaussian", f"{self.tag}_node",
                                          sigma=self.sigma / s, sensitivity=s))

    def _evict(self, t: int) -> None:
        """Drop nodes no later prefix uses (node (ℓ, j) serves t < (j + 2)·2^ℓ)."""
        for level, j in [n for n in self._noise if (n[1] + 2) << n[0] <= t + 1]:
            del self._noise[(level, j)]


class GaussianSums:
    """Prefix sums where each leaf carries its own N(0, σ²I) (no tree): noise_t grows as
    √t·σ. Same interface as :class:`TreeSums`."""

    def __init__(self, mech: Mechanism, sigma: float, tag: str = "increment") -> None:
        if not sigma > 0:
            raise ValueError(f"Gaussian increments need sigma > 0, got {sigma}")
        self.mech, self.sigma, self.tag = mech, sigma, tag
        self.t = 0
        self.total: Any = None

    def add(self, value: Any, *, sensitivity: float, batch: Batch) -> Any:
        self.t += 1
        noisy = self.mech.gaussian(value, sensitivity=sensitivity,
                                   sigma=self.sigma / sensitivity, tag=self.tag, batch=batch)
        self.total = noisy if self.total is None else self.total + noisy
        return self.total
