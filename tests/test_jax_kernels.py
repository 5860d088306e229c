"""The fused jax kernels (issue 24): each oracle kernel one jitted function, jitted clipping,
noise drawn ahead in blocks. Every fused path equals torch's kernel and the materialised
computation (per-sample gradients, then numpy clipping and sums), in float64 on a digits
MLP, at batch sizes that jax pads (13, 1) and one it does not (16)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import make_instance, make_setup, to_numpy

from problems.backend import BLOCK_BYTES, BLOCK_ROWS, BackendSpec, get_backend
from problems.clipping import clip_rows, clip_rows_and_norms, row_norms
from problems.oracles import autodiff_oracle

pytest.importorskip("jax")
pytest.importorskip("torch")

RTOL, ATOL = 1e-9, 1e-11
SIZES = (13, 16, 1)  # padded to 16, a full bucket, padded to 8
CLIPS = (0.05, 1e6)  # clipping every row, clipping none


def setups() -> tuple[Any, Any]:
    spec = {"dtype": "float64", "noise": "replay"}
    return (make_setup("digits_mlp", BackendSpec(name="jax", **spec)),
            make_setup("digits_mlp", BackendSpec(name="torch", **spec)))


def point(size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, x_prev, idx) near the initial point, ``size`` random samples."""
    jax_setup, _ = setups()
    rng = np.random.default_rng(seed)
    x = to_numpy(jax_setup.oracle.x0) + 0.1 * rng.standard_normal(jax_setup.instance.d)
    x_prev = x + 0.03 * rng.standard_normal(len(x))
    return x, x_prev, rng.choice(jax_setup.instance.n, size=size, replace=False)


def materialised(rows: np.ndarray, clip: float) -> tuple[np.ndarray, np.ndarray]:
    """(Σ clipped rows, row norms) computed from the rows in numpy."""
    return clip_rows(np, rows, clip).sum(axis=0), np.linalg.norm(rows, axis=1)


def close(got: Any, want: Any, what: str) -> None:
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=RTOL, atol=ATOL,
                               err_msg=what)


@pytest.mark.parametrize("clip", CLIPS)
@pytest.mark.parametrize("size", SIZES)
def test_clipped_sums_equal_torch_and_materialised(size: int, clip: float) -> None:
    """jax's book-keeping sums (problems/ghost_jax.py: no per-sample rows) equal the rows'
    clipped sums, padded batches included."""
    (jx, tc), (x, x_prev, idx) = setups(), point(size)
    assert not jx.oracle.materialises_rows
    for label, pair in (("grad", (x,)), ("diff", (x, x_prev))):
        j_args = tuple(jx.backend.asarray(a) for a in pair)
        t_args = tuple(tc.backend.asarray(a) for a in pair)
        rows = to_numpy(tc.oracle.per_sample_grads(*t_args, idx) if label == "grad"
                        else tc.oracle.per_sample_grad_diffs(*t_args, idx))
        want_sum, want_norms = materialised(rows, clip)
        if label == "grad":
            fused, torch_sum = (jx.oracle.clipped_grad_sum_and_norms(*j_args, idx, clip),
                                tc.oracle.clipped_grad_sum(*t_args, idx, clip))
            alone = jx.oracle.clipped_grad_sum(*j_args, idx, clip)
        else:
            fused, torch_sum = (jx.oracle.clipped_grad_diff_sum_and_norms(*j_args, idx, clip),
                                tc.oracle.clipped_grad_diff_sum(*t_args, idx, clip))
            alone = jx.oracle.clipped_grad_diff_sum(*j_args, idx, clip)
        where = f"{label} sum, batch {size}, clip {clip}"
        close(fused[0], want_sum, f"jax {where} vs materialised")
        close(fused[1], want_norms, f"jax {where} norms vs materialised")
        close(alone, fused[0], f"jax {where} alone vs with norms")
        close(torch_sum, want_sum, f"torch {where} vs materialised")
        assert to_numpy(fused[1]).shape == (size,)


@pytest.mark.parametrize("clip", CLIPS)
@pytest.mark.parametrize("size", SIZES)
def test_clipped_group_means_equal_torch_and_materialised(size: int, clip: float) -> None:
    """Three clients' batches in one jax kernel (vmapped clipped sums) equal torch's generic
    path and each group's clipped rows averaged in numpy; norms in the groups' order."""
    (jx, tc), (x, x_prev, _) = setups(), point(size)
    groups = list(np.random.default_rng(size).permutation(jx.instance.n)[:3 * size]
                  .reshape(3, size))
    for prev in (None, x_prev):
        pair = (x, prev)
        j_args = tuple(None if a is None else jx.backend.asarray(a) for a in pair)
        t_args = tuple(None if a is None else tc.backend.asarray(a) for a in pair)
        rows = [to_numpy(tc.oracle.per_sample_grads(t_args[0], g) if prev is None
                         else tc.oracle.per_sample_grad_diffs(*t_args, g)) for g in groups]
        want = np.stack([clip_rows(np, r, clip).mean(axis=0) for r in rows])
        where = f"{'grad' if prev is None else 'diff'} means, batch {size}, clip {clip}"
        means, norms = jx.oracle.clipped_group_means(*j_args, groups, clip)
        close(means, want, f"jax {where}")
        close(norms, np.concatenate([np.linalg.norm(r, axis=1) for r in rows]),
              f"jax {where} norms")
        close(tc.oracle.clipped_group_means(*t_args, groups, clip)[0], want, f"torch {where}")


@pytest.mark.parametrize("size", SIZES)
def test_unclipped_sum_rows_and_means_equal_torch(size: int) -> None:
    (jx, tc), (x, x_prev, idx) = setups(), point(size, seed=1)
    xj, xpj, xt, xpt = (s.backend.asarray(a) for s in (jx, tc) for a in (x, x_prev))
    rows = to_numpy(tc.oracle.per_sample_grads(xt, idx))
    total, norms = jx.oracle.grad_sum_and_norms(xj, idx)
    close(total, rows.sum(axis=0), f"unclipped sum, batch {size}")
    close(norms, np.linalg.norm(rows, axis=1), f"unclipped norms, batch {size}")
    close(jx.oracle.per_sample_grads(xj, idx), rows, f"per-sample gradients, batch {size}")
    close(jx.oracle.per_sample_grad_diffs(xj, xpj, idx),
          tc.oracle.per_sample_grad_diffs(xt, xpt, idx), f"differences, batch {size}")
    close(jx.oracle.grad(xj, idx), rows.mean(axis=0), f"mean gradient, batch {size}")
    close(jx.oracle.loss(xj, idx), tc.oracle.loss(xt, idx), f"loss, batch {size}")
    v = np.random.default_rng(size).standard_normal(len(x))
    close(jx.oracle.hvp(xj, jx.backend.asarray(v), idx),
          tc.oracle.hvp(xt, tc.backend.asarray(v), idx), f"hvp, batch {size}")


def test_jitted_clip_rows_equals_numpy_and_keeps_the_dtype() -> None:
    for dtype in ("float32", "float64"):
        be = make_setup("digits_mlp", BackendSpec(name="jax", dtype=dtype)).backend
        rows = np.random.default_rng(0).standard_normal((9, 40)) * np.arange(1, 10)[:, None]
        for clip in (0.5, 3.0, 100.0):
            got, norms = clip_rows_and_norms(be.xp, be.asarray(rows), clip)
            assert got.dtype == be.dtype and norms.dtype == be.dtype
            tol = {"rtol": 1e-6} if dtype == "float32" else {"rtol": 1e-12}
            np.testing.assert_allclose(to_numpy(got), clip_rows(np, rows, clip), **tol)
            np.testing.assert_allclose(to_numpy(norms), row_norms(np, rows), **tol)
            assert np.all(np.linalg.norm(to_numpy(got), axis=1) <= clip * (1 + 1e-6))


# -- noise ---------------------------------------------------------------------------------


def native(dtype: str = "float32") -> Any:
    return make_setup("digits_mlp", BackendSpec(name="jax", dtype=dtype)).backend


def draws(seed: int, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    source = native().noise_source(seed)
    return [to_numpy(source.normal(shape)) for shape in shapes]


def test_noise_is_reproducible_and_independent_across_blocks() -> None:
    shapes = [(5,)] * (2 * BLOCK_ROWS + 3) + [(2, 3)] * 4
    first, again = draws(7, shapes), draws(7, shapes)
    for a, b, shape in zip(first, again, shapes, strict=True):
        assert a.shape == shape and a.dtype == np.float32
        np.testing.assert_array_equal(a, b)
    flat = np.concatenate([a.ravel() for a in first])
    assert len(np.unique(flat)) == len(flat)  # no draw repeats, within or across blocks
    other = np.concatenate([a.ravel() for a in draws(8, shapes)])
    assert not np.allclose(flat, other)


def test_noise_of_a_shape_does_not_depend_on_other_shapes_within_a_block() -> None:
    """Blocks are per shape: a draw of another shape in between does not shift a block."""
    plain = draws(3, [(4,)] * 3)
    mixed = draws(3, [(4,), (6,), (4,), (4,)])
    np.testing.assert_array_equal(np.stack(plain), np.stack([mixed[0], mixed[2], mixed[3]]))


def test_noise_is_standard_normal() -> None:
    x = np.concatenate(draws(0, [(1000,)] * 100))
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1.0) < 0.01
    assert abs(np.mean(np.abs(x) < 1.0) - 0.6827) < 0.01
    float64 = to_numpy(native("float64").noise_source(0).normal((3,)))
    assert float64.dtype == np.float64


def test_large_draws_come_one_at_a_time() -> None:
    be = native()
    source = be.noise_source(0)
    big = (BLOCK_BYTES // 4 + 1,)
    assert source._rows(big) == 1 and source._rows((5,)) == BLOCK_ROWS
    assert to_numpy(source.normal(big)).shape == big


def test_threefry_stream_is_jax_own() -> None:
    """The unrolled cpu lowering computes the same bits as jax's own (rolled) one."""
    import jax  # lazy: needs the jax extra

    native()  # the backend registers the unrolled lowering
    got = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (5,), dtype=np.float32))
    np.testing.assert_array_equal(
        got, np.array([-1.446257, 1.539381, 0.38250625, 1.9707018, -0.5876674], np.float32))


def test_instances_of_one_model_share_kernels_and_results() -> None:
    """Two data sets of one MLP (seeds 0, 1) share one set of jitted kernels (a new run
    neither traces nor lowers them again), and each oracle's results equal those of an
    oracle that jits its own; a different model gets kernels of its own."""
    spec = BackendSpec(name="jax", dtype="float64", noise="replay")
    backend = get_backend(spec)
    first, second = (make_instance("digits_mlp", seed) for seed in (0, 1))
    wider = make_instance("digits_mlp", 0, hidden=9)
    a, b, c = (inst.oracle(backend) for inst in (first, second, wider))
    assert a._clipped_sum is b._clipped_sum and a._rows is b._rows
    assert c._clipped_sum is not a._clipped_sum
    for inst, shared in ((first, a), (second, b)):
        own = autodiff_oracle(backend, inst.losses_fn(backend),
                              (inst.split.x_train, inst._onehot(inst.split.y_train)),
                              x0=inst.x0)
        assert own._clipped_sum is not shared._clipped_sum
        x = shared.x0 + 0.1
        for size in SIZES:
            idx = np.arange(size)
            close(shared.clipped_grad_diff_sum(x, shared.x0, idx, 0.05),
                  own.clipped_grad_diff_sum(x, own.x0, idx, 0.05), "shared diff sum")
            close(shared.loss(x, idx), own.loss(x, idx), "shared loss")


def test_clipped_client_means_in_groups_equal_one_group(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """Clients split into groups by the memory budget give the means and tracked norms of
    one group, on jax's kernel and on the generic path (torch)."""
    from algorithms import distributed
    from algorithms.premises import NormTracker
    from algorithms.privacy.ledger import Batch, Sampling

    (jx, tc), (x, x_prev, _) = setups(), point(8, seed=2)
    order = np.random.default_rng(5).permutation(jx.instance.n)[:40]
    batches = [Batch(order[8 * i:8 * i + 8], Sampling()) for i in range(5)]
    for setup in (jx, tc):
        xs = [setup.backend.asarray(a) for a in (x, x_prev)]

        def means(floats: int, xs: list[Any] = xs, setup: Any = setup) -> tuple[Any, int]:
            monkeypatch.setattr(distributed, "GROUP_FLOATS", floats)
            tracker = NormTracker(setup.backend, 0.05)
            got = distributed.clipped_client_means(setup.oracle, batches, xs[0], xs[1], 0.05,
                                                   tracker)
            return got, tracker.seen

        (whole, seen_whole), (split, seen_split) = means(2**25), means(2 * 8 * jx.instance.d)
        close(split, whole, f"{setup.backend.name}: 3 groups vs 1")
        assert to_numpy(split).shape == (5, jx.instance.d) and seen_split == seen_whole == 40
