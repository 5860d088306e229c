"""What the private minimax algorithms share (dp_rgda, dp_sgda, private_diff): released means
of per-sample clipped partials (∇_x F, ∇_y F) and of their differences between two points.

Each query clips every per-sample x-partial and y-partial separately (xu2026 Alg. 3 clips
the v- and u-estimates separately; App. D clips per sample), averages over the batch and
releases both means with N(0, (σΔ)² I), Δ = 2·bound/|B| (replace-one, the papers' adjacency;
also used for a round over the whole data, where it is the exact replace-one sensitivity).
The two releases share the batch's round, so the accountants see one Gaussian of the
concatenated vector.
"""

from __future__ import annotations

from typing import Any

from algorithms.premises import NormTracker
from algorithms.privacy.ledger import Batch, Mechanism, Sampling
from problems.clipping import clip_rows_and_norms
from problems.minimax import MinimaxOracle
from problems.oracles import Oracle


def minimax_oracle(oracle: Oracle, algorithm: str) -> MinimaxOracle:
    """``oracle`` as a :class:`MinimaxOracle`, or a clear error naming the algorithm."""
    if not isinstance(oracle, MinimaxOracle):
        raise TypeError(f"{algorithm} is a minimax algorithm: it needs a minimax problem "
                        "(e.g. matrix_sensing, ncsc_double_well)")
    return oracle


def batch_sampling(n: int, size: int) -> Sampling:
    """How a fresh batch of ``size`` records is drawn: fixed size without replacement, or
    the whole data when ``size`` ≥ n (the planned ledger's view of :func:`draw_batch`)."""
    if size >= n:
        return Sampling("none", n, rate=1.0, size=n)
    return Sampling("fixed", n, rate=size / n, size=size)


def draw_batch(mech: Mechanism, n: int, size: int) -> Batch:
    """A fresh batch as :func:`batch_sampling` describes it."""
    return mech.sample(n, scheme="none") if size >= n else mech.sample(n, scheme="fixed",
                                                                      size=size)


def release_pair(mech: Mechanism, xp: Any, gx: Any, gy: Any, *, bound: float, batch: Batch,
                 sigma: float, tag: str, norms: NormTracker | None = None,
                 scale: float = 1.0) -> tuple[Any, Any]:
    """Clip each row of the per-sample (gx, gy) at ``bound``, average, add Gaussian noise;
    the rows' norms (x and y together) go to ``norms`` (a clip at C·``scale``)."""
    sensitivity = 2.0 * bound / len(batch)
    clipped_x, norms_x = clip_rows_and_norms(xp, gx, bound)
    clipped_y, norms_y = clip_rows_and_norms(xp, gy, bound)
    if norms is not None:
        norms.add(xp.concat([norms_x, norms_y]), scale=scale)
    mean_x = xp.mean(clipped_x, axis=0)
    mean_y = xp.mean(clipped_y, axis=0)
    return (mech.gaussian(mean_x, sensitivity=sensitivity, sigma=sigma, tag=f"{tag}_x",
                          batch=batch),
            mech.gaussian(mean_y, sensitivity=sensitivity, sigma=sigma, tag=f"{tag}_y",
                          batch=batch))


def private_partials(mech: Mechanism, oracle: MinimaxOracle, x: Any, y: Any, batch: Batch, *,
                     clip: float, sigma: float, tag: str, norms: NormTracker | None = None
                     ) -> tuple[Any, Any]:
    """Noisy means of clipped (∇_x F(x, y; ξ), ∇_y F(x, y; ξ)) over ``batch``."""
    gx, gy = oracle.per_sample_partials(x, y, batch.indices)
    return release_pair(mech, oracle.xp, gx, gy, bound=clip, batch=batch, sigma=sigma, tag=tag,
                        norms=norms)


def private_partial_diffs(mech: Mechanism, oracle: MinimaxOracle, point: tuple[Any, Any],
                          previous: tuple[Any, Any], batch: Batch, *, clip: float,
                          sigma: float, tag: str, norms: NormTracker | None = None,
                          scale: float = 1.0) -> tuple[Any, Any]:
    """Noisy means of clipped per-sample differences ∇F(point; ξ) − ∇F(previous; ξ)."""
    gx, gy = oracle.per_sample_partials(*point, batch.indices)
    px, py = oracle.per_sample_partials(*previous, batch.indices)
    return release_pair(mech, oracle.xp, gx - px, gy - py, bound=clip, batch=batch,
                        sigma=sigma, tag=tag, norms=norms, scale=scale)
