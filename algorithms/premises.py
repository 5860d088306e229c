"""Premise data: what a run records so that a report can tell whether the premises of a
paper's theorem held in it (the ``out of regime`` verdict names a failed premise with its
measured value, e.g. "per-sample norm 93 > C = 12 in 103/140 runs", "T = 400 < T_thm").

:data:`PREMISES` is the vocabulary: every key an algorithm may record, with its meaning.
An algorithm declares the keys it always records in ``Algorithm.premises`` and returns them
from ``Algorithm.premise_data()``; the runner stores them in the sidecar under
``"premises"`` and the store flattens them into ``prem_<key>`` columns.

Clip keys come in groups of four, one group per clip an algorithm applies: the main clip
(the per-sample gradient clip, or the bound an unclipped algorithm assumes) has no suffix;
a further clip adds ``_<suffix>`` (:data:`CLIP_SUFFIXES`), e.g. ``clipped_fraction_c3``.
For a clip whose bound is proportional to the move, C·‖x − x′‖ (SPIDER differences), the
recorded norms are divided by ‖x − x′‖ so that they compare with the constant C (they are
then empirical per-sample smoothness ratios).

:class:`NormTracker` gathers the four values of one clip from the per-sample norms the
algorithm already computes, on the backend's device: each batch adds a few small device
arrays (its middle order statistics, its max, its count over C) and nothing is copied to
the host until :meth:`NormTracker.summary`, called once after the run (by
``premise_data``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from problems.backend import Backend, JaxBackend
from problems.clipping import clip_rows_and_norms

#: the clip keys' meanings (``{what}``: the vectors the clip applies to)
_CLIP_KEYS = {
    "max_per_sample_norm": "largest norm of the {what} seen by the clip",
    "median_per_sample_norm": "median over the batches the clip was applied to of each "
                              "batch's median norm of the {what}",
    "clip_bound": "the bound {bound}",
    "clipped_fraction": "fraction of the {what} seen whose norm exceeded the bound (were "
                        "clipped{unclipped})",
}

#: the further clips, suffix → (the vectors it applies to, its bound)
CLIP_SUFFIXES: dict[str, tuple[str, str]] = {
    "diff": ("per-sample gradient differences ∇f_i(x) − ∇f_i(x′) divided by ‖x − x′‖ (or "
             "undivided where the difference clip is a fixed constant)",
             "M (or C_u) of the difference clip M‖x − x′‖ (SPIDER's O2, dp_rgda's and "
             "private_diff's increments)"),
    "c2": ("server directions (1/M) Σ_i v_i, one per step (prisma)", "C₂ of the server clip"),
    "c3": ("per-sample differences clip_C₁(∇f_ij(xᵗ)) − clip_C₁(∇f_ij(xᵗ⁻¹)) (prisma, eq. 20)",
           "C₃"),
    "y": ("per-sample y-gradients of the inner ascent (private_diff)", "c_y of the y clip"),
}


def _clip_entries() -> dict[str, str]:
    main_what = ("per-sample gradients (minimax: the x- and y-partials of a sample count as "
                 "two vectors)")
    out = {key: text.format(what=main_what,
                            bound="C of the main per-sample clip, or the per-sample bound an "
                                  "algorithm that does not clip assumes (noisy_sgd)",
                            unclipped="; without clipping: voided the assumed bound")
           for key, text in _CLIP_KEYS.items()}
    for suffix, (what, bound) in CLIP_SUFFIXES.items():
        out.update({f"{key}_{suffix}": text.format(what=what, bound=bound, unclipped="")
                    for key, text in _CLIP_KEYS.items()})
    return out


PREMISES: dict[str, str] = {
    "steps_taken": "iterations the run actually took (the t of its last iterate)",
    "horizon": "T_thm: the iterations the paper's theorem needs for its guarantee, computed "
               "from the run's parameters and the problem's constants (declared only where "
               "that needs no invented constant)",
    "data_exhausted_at": "single-use data: the last step completed before the data could not "
                         "fund the next oracle call, where the run stopped; null if they "
                         "never ran out",
    "triggers": "events of the algorithm's escape / trigger test: gauss_psgd ‖ĝ‖ ≤ 3χ, "
                "dp_spider_at escape-noise injections, spider_sosp escapes started, dp_rgda "
                "escape phases entered (‖v‖ < α); ada_dp_spider, which has no escape, the "
                "refreshes its drift test (drift ≥ κ) asked for",
    **_clip_entries(),
}


def clip_keys(suffix: str = "") -> tuple[str, ...]:
    """The four keys of one clip (``suffix``: "" for the main clip, else a
    :data:`CLIP_SUFFIXES` key)."""
    if suffix and suffix not in CLIP_SUFFIXES:
        raise ValueError(f"unknown clip suffix {suffix!r}; choose {sorted(CLIP_SUFFIXES)}")
    tail = f"_{suffix}" if suffix else ""
    return tuple(f"{key}{tail}" for key in _CLIP_KEYS)


#: device arrays merged at a time (:class:`_Stack`)
FAN = 64


class _Stack:
    """Equally shaped device arrays, merged on the device FAN at a time (FAN rows into one
    stack, FAN stacks into one, ...): few merges, all of one shape each, so jax compiles
    each once; nothing is copied to the host before :meth:`to_numpy`."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.levels: list[list[Any]] = [[]]

    def append(self, row: Any) -> None:
        xp = self.backend.xp
        self.levels[0].append(row)
        level = 0
        while len(self.levels[level]) >= FAN:
            items, self.levels[level] = self.levels[level], []
            merged = xp.stack(items) if level == 0 else xp.concat(items)
            if level + 1 == len(self.levels):
                self.levels.append([])
            self.levels[level + 1].append(merged)
            level += 1

    def to_numpy(self) -> np.ndarray:
        """All rows on the host, in the order appended (fewer than FAN copies per level)."""
        convert = self.backend.to_numpy
        parts = [np.asarray(convert(t)) for level in reversed(self.levels[1:]) for t in level]
        if self.levels[0]:
            parts.append(np.stack([np.asarray(convert(r)) for r in self.levels[0]]))
        return np.concatenate(parts)


def _batch_row(xp: Any, norms: Any, bound: float, scale: float | None = None
               ) -> tuple[Any, Any]:
    """One batch on the device: (the two middle order statistics and the max of the norms
    ÷ ``scale``, the number over ``bound``)."""
    if scale is not None:
        norms = norms / scale
    b = norms.shape[0]
    at = [(b - 1) // 2, b // 2, b - 1]
    if isinstance(norms, np.ndarray):
        # NaN sorts last; numpy only partitions around the three picks (O(b), not a sort)
        return np.partition(norms, at)[at], np.count_nonzero(norms > bound)
    ordered = xp.sort(norms)
    return xp.stack([ordered[i] for i in at]), xp.sum(norms > bound)


_JAX_ROW: Any = None


def _jax_row(backend: JaxBackend) -> Any:
    """:func:`_batch_row` compiled for jax (one dispatch per batch; one compile per batch
    size, as the oracles' own per-sample operations)."""
    global _JAX_ROW
    if _JAX_ROW is None:
        _JAX_ROW = backend.jax.jit(functools.partial(_batch_row, backend.xp))
    return _JAX_ROW


class NormTracker:
    """Per-sample norms of one clip, reduced on the backend's device.

    ``add(norms)`` takes the (b,) norms of one batch (a backend array) and keeps, on the
    device, the batch's two middle order statistics, its max and its number over the bound
    (a sort, a stack and a count: no copy to the host; one compiled call on jax); a
    zero-length batch adds nothing. ``scale`` is for a clip at C·scale (a difference clip
    C·‖x − x′‖ passes ‖x − x′‖): the norms are divided by ``scale`` and compared with C.
    :meth:`summary` copies everything to the host once. The median is the median over
    batches of each batch's median; batches whose max or median is NaN (a diverging run) are
    left out of the max and the median, and a NaN norm is never counted over the bound.
    """

    def __init__(self, backend: Backend, bound: float | None) -> None:
        self.backend = backend
        self.xp = backend.xp
        self.bound = None if bound is None else float(bound)
        self.seen = 0
        self._row = (_jax_row(backend) if isinstance(backend, JaxBackend)
                     else functools.partial(_batch_row, backend.xp))
        self._picks = _Stack(backend)
        self._over = _Stack(backend)
        self._summary: dict[str, float | None] | None = None
        #: each batch's largest norm, in order (on the host after :meth:`summary`)
        self.maxima = np.empty(0)

    def add(self, norms: Any, scale: float = 1.0) -> None:
        b = int(norms.shape[0])
        if b == 0 or scale == 0.0:
            return
        picks, over = self._row(norms, math.inf if self.bound is None else self.bound,
                                None if scale == 1.0 else scale)
        self._picks.append(picks)
        self._over.append(over)
        self.seen += b
        self._summary = None

    def summary(self) -> dict[str, float | None]:
        """max, median (of the per-batch medians), the fraction and the number of norms
        over the bound (None: nothing seen, or no bound); one device-to-host copy."""
        if self._summary is None:
            self._summary = self._reduce()
        return self._summary

    def _reduce(self) -> dict[str, float | None]:
        if not self.seen:
            return {"max": None, "median": None, "fraction": None, "over": None}
        picks = self._picks.to_numpy().astype(np.float64)
        self.maxima = picks[:, 2]
        over = int(self._over.to_numpy().astype(np.int64).sum())
        return {"max": _ignoring_nan(np.max, picks[:, 2]),
                "median": _ignoring_nan(np.median, (picks[:, 0] + picks[:, 1]) / 2),
                "fraction": over / self.seen if self.bound is not None else None,
                "over": over if self.bound is not None else None}

    def premises(self, suffix: str = "") -> dict[str, float | None]:
        """The clip's four :data:`PREMISES` entries."""
        s = self.summary()
        max_key, median_key, bound_key, fraction_key = clip_keys(suffix)
        return {max_key: s["max"], median_key: s["median"], bound_key: self.bound,
                fraction_key: s["fraction"]}


def _ignoring_nan(reduce: Any, column: np.ndarray) -> float:
    """``reduce`` over the batches whose value is not NaN (a diverging run's last batches);
    NaN if there are none."""
    kept = column[~np.isnan(column)]
    return float(reduce(kept)) if kept.size else math.nan


def clip_tracked(xp: Any, rows: Any, bound: float, tracker: NormTracker | None,
                 scale: float = 1.0) -> Any:
    """:func:`~problems.clipping.clip_rows` whose row norms also go to ``tracker`` (None:
    this clip is not tracked in the run); ``scale`` as in :meth:`NormTracker.add`."""
    clipped, norms = clip_rows_and_norms(xp, rows, bound)
    if tracker is not None:
        tracker.add(norms, scale=scale)
    return clipped


def unmeasured(bound: float | None, suffix: str = "") -> dict[str, float | None]:
    """A clip's entries before (or without) any measurement: only the bound."""
    max_key, median_key, bound_key, fraction_key = clip_keys(suffix)
    return {max_key: None, median_key: None,
            bound_key: None if bound is None else float(bound), fraction_key: None}


def clip_premises(trackers: Mapping[str, NormTracker | None]) -> dict[str, float | None]:
    """The entries of several clips, suffix → tracker (None: the clip was not applied in
    this run, or the run has not started: only None values)."""
    out: dict[str, float | None] = {}
    for suffix, tracker in trackers.items():
        out.update(tracker.premises(suffix) if tracker is not None else unmeasured(None, suffix))
    return out
