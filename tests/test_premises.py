"""Premise data (algorithms/premises.py): the norm tracker on every backend, the oracles'
clipped sums with norms (the same sums as without), and the vocabulary's keys."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_setup, to_numpy

from algorithms import premises
from algorithms.premises import (
    CLIP_SUFFIXES,
    PREMISES,
    NormTracker,
    clip_keys,
    clip_premises,
    unmeasured,
)
from problems.backend import Backend, BackendSpec, get_backend
from problems.clipping import clip_factors, clip_rows, clip_rows_and_norms, row_norms
from problems.oracles import Oracle

BACKENDS = ["numpy", "torch", "jax"]


def backend(name: str) -> Backend:
    if name != "numpy":
        pytest.importorskip(name)
    return get_backend(BackendSpec(name=name, dtype="float64"))


@pytest.mark.parametrize("name", BACKENDS)
def test_tracker_max_median_fraction(name: str) -> None:
    be = backend(name)
    tracker = NormTracker(be, 2.0)
    tracker.add(be.asarray(np.array([1.0, 3.0, 0.5])))
    tracker.add(be.asarray(np.array([2.0, 2.5, 4.0, 1.0])))
    tracker.add(be.asarray(np.array([0.1, 0.2])))
    tracker.add(be.asarray(np.zeros(0)))  # an empty batch adds nothing
    s = tracker.summary()
    assert s["max"] == 4.0
    # per-batch medians 1.0, (2.0 + 2.5)/2 = 2.25 and 0.15: their median is 1.0
    assert s["median"] == pytest.approx(1.0)
    assert s["over"] == 3 and tracker.seen == 9  # 3.0, 2.5, 4.0 exceed C = 2 (2.0 does not)
    assert s["fraction"] == pytest.approx(3 / 9)
    assert tracker.premises() == {"max_per_sample_norm": 4.0,
                                  "median_per_sample_norm": pytest.approx(1.0),
                                  "clip_bound": 2.0, "clipped_fraction": pytest.approx(3 / 9)}


@pytest.mark.parametrize("name", BACKENDS)
def test_tracker_scaled_clip_many_batches_and_nan(name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    be = backend(name)
    tracker = NormTracker(be, 10.0)
    # a clip at 10·0.5 = 5: norms 4 and 6 → ratios 8 and 12, one over
    tracker.add(be.asarray(np.array([4.0, 6.0])), scale=0.5)
    tracker.add(be.asarray(np.array([1.0])), scale=0.0)  # no move: nothing released
    s = tracker.summary()
    assert (s["max"], s["median"], s["over"], s["fraction"]) == (12.0, 10.0, 1, 0.5)

    monkeypatch.setattr(premises, "FAN", 2)  # rows merged on several levels
    rng = np.random.default_rng(1)
    batches = [rng.random(rng.integers(1, 4)) * 2 for _ in range(11)]
    many = NormTracker(be, 1.0)
    for batch in batches:
        many.add(be.asarray(batch))
    every = np.concatenate(batches)
    m = many.summary()
    assert m["max"] == pytest.approx(every.max())
    assert m["median"] == pytest.approx(np.median([np.median(b) for b in batches]))
    assert m["over"] == int((every > 1.0).sum()) and m["fraction"] == m["over"] / len(every)
    # a diverging run's NaN norms: left out of max and median, never over the bound
    many.add(be.asarray(np.array([np.nan, 0.5, np.nan])))
    assert many.summary()["max"] == pytest.approx(every.max())
    assert many.summary()["over"] == m["over"] and many.seen == len(every) + 3


def test_nothing_seen_and_unmeasured() -> None:
    tracker = NormTracker(backend("numpy"), 1.0)
    assert tracker.premises() == unmeasured(1.0)
    assert unmeasured(1.0)["clip_bound"] == 1.0
    assert set(clip_premises({"": None, "c3": tracker})) == {*clip_keys(), *clip_keys("c3")}
    with pytest.raises(ValueError, match="suffix"):
        clip_keys("nope")


def test_vocabulary_is_documented() -> None:
    for suffix in ("", *CLIP_SUFFIXES):
        assert set(clip_keys(suffix)) <= set(PREMISES)
    assert {"steps_taken", "horizon", "data_exhausted_at", "triggers"} <= set(PREMISES)
    assert all(text.strip() for text in PREMISES.values())


@pytest.mark.parametrize("name", BACKENDS)
def test_clip_rows_and_norms_is_clip_rows(name: str) -> None:
    be = backend(name)
    rows = be.asarray(np.random.default_rng(0).normal(size=(9, 4)) * 3)
    clipped, norms = clip_rows_and_norms(be.xp, rows, 2.0)
    np.testing.assert_array_equal(to_numpy(clipped), to_numpy(clip_rows(be.xp, rows, 2.0)))
    np.testing.assert_array_equal(to_numpy(norms), to_numpy(row_norms(be.xp, rows)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", BACKENDS)
def test_clip_factors_are_the_clip_formulas_bits(name: str, dtype: str) -> None:
    """1 / max(1, ‖g‖/C) by ``xp.maximum`` gives the bits of ``xp.clip(…, min=1)`` (its
    former formula, issue 24), NaN, ∞, 0 and norms on the bound included."""
    if name != "numpy":
        pytest.importorskip(name)
    be = get_backend(BackendSpec(name=name, dtype=dtype))
    norms = be.asarray(np.array([0.0, 1e-300, 0.5, 2.0, 2.0000000001, 3.7, 1e300, np.inf,
                                 np.nan]))
    for clip in (2.0, 0.3, 1.0):
        np.testing.assert_array_equal(to_numpy(clip_factors(be.xp, norms, clip)),
                                      to_numpy(1.0 / be.xp.clip(norms / clip, min=1.0)))


@pytest.mark.parametrize("scale", [None, 0.5])
def test_numpy_batch_row_is_the_sorted_row(scale: float | None) -> None:
    """numpy's partition path of a batch row: the picks and count of the generic sort path,
    NaN norms (sorted last) included."""
    xp = backend("numpy").xp
    rng = np.random.default_rng(3)
    for b in (1, 2, 5, 8):
        norms = rng.random(b) * 3
        if b > 2:
            norms[1] = np.nan
        picks, over = premises._batch_row(xp, norms, 1.0, scale)
        ordered = np.sort(norms if scale is None else norms / scale)
        np.testing.assert_array_equal(picks, ordered[[(b - 1) // 2, b // 2, b - 1]])
        assert over == int(np.sum((norms if scale is None else norms / scale) > 1.0))


@pytest.mark.parametrize(("problem", "backend_name"), [("strict_saddle", "numpy"),
                                                       ("digits_mlp", "torch"),
                                                       ("digits_mlp", "jax")])
def test_clipped_sums_with_norms_equal_the_sums(problem: str, backend_name: str) -> None:
    if backend_name != "numpy":
        pytest.importorskip(backend_name)
    o: Oracle = make_setup(problem, BackendSpec(name=backend_name, dtype="float64")).oracle
    x0 = to_numpy(o.x0)
    x = o.backend.asarray(x0 + 0.01)
    x_prev = o.backend.asarray(x0 - 0.02)
    idx = np.array([0, 3, 4, 7, 9])
    for clip in (1e-3, 1e3):
        total, norms = o.clipped_grad_sum_and_norms(x, idx, clip)
        np.testing.assert_array_equal(to_numpy(total), to_numpy(o.clipped_grad_sum(x, idx, clip)))
        want = to_numpy(row_norms(o.xp, o.per_sample_grads(x, idx)))
        np.testing.assert_allclose(to_numpy(norms), want, rtol=1e-9)
        total, norms = o.clipped_grad_diff_sum_and_norms(x, x_prev, idx, clip)
        np.testing.assert_array_equal(
            to_numpy(total), to_numpy(o.clipped_grad_diff_sum(x, x_prev, idx, clip)))
        want = to_numpy(row_norms(o.xp, o.per_sample_grad_diffs(x, x_prev, idx)))
        np.testing.assert_allclose(to_numpy(norms), want, rtol=1e-6)
    # an empty batch
    total, norms = o.clipped_grad_sum_and_norms(x, idx[:0], 1.0)
    assert to_numpy(norms).shape == (0,)
