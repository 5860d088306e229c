"""Per-sample L2 clipping, written once against the array namespace ``xp`` (used by the
algorithms and by the oracles' clipped sums)."""

from __future__ import annotations

from typing import Any


def row_norms(xp: Any, rows: Any) -> Any:
    """L2 norm of every row of a (b, d) array."""
    return xp.linalg.vector_norm(rows, axis=1)


def clip_rows_and_norms(xp: Any, rows: Any, clip: float) -> tuple[Any, Any]:
    """Each row g scaled to g / max(1, ‖g‖/C) (Abadi et al. 2016, Alg. 1 line 3), and the
    row norms ‖g‖ it computed (for premise data)."""
    norms = row_norms(xp, rows)
    factors = 1.0 / xp.clip(norms / clip, min=1.0)
    return rows * factors[:, None], norms


def clip_rows(xp: Any, rows: Any, clip: float) -> Any:
    """Scale each row g to g / max(1, ‖g‖/C) (Abadi et al. 2016, Alg. 1 line 3)."""
    return clip_rows_and_norms(xp, rows, clip)[0]
