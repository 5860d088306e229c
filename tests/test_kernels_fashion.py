"""Every client's clipped mean in one call (issue 38): torch book-keeping and jax's padded
kernel equal the per-sample path on the Fashion-MNIST MLP and CNN (tiny fake images), for
equal, unequal and padded client batches, at one point and between two; a distributed step
hands all its clients to one such call."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import make_setup

torch = pytest.importorskip("torch")

from algorithms import distributed  # noqa: E402
from algorithms.privacy.ledger import Batch, Sampling  # noqa: E402
from problems import ghost  # noqa: E402
from problems.backend import BackendSpec  # noqa: E402
from problems.ghost import BookkeepingOracle  # noqa: E402
from problems.oracles import Oracle, TorchOracle  # noqa: E402

MODELS = [("fashion_mnist_mlp", {}), ("fashion_mnist_cnn", {})]
# clients' batches: equal, unequal, one client, a client of one sample (fake n = 48)
GROUPS = [[np.arange(0, 6), np.arange(6, 12)],
          [np.array([0, 3, 4, 7, 9]), np.array([10, 11]), np.array([20, 21, 30, 47])],
          [np.arange(7)], [np.array([5]), np.arange(12, 20)]]


def bookkeeping(name: str, dtype: str = "float64") -> BookkeepingOracle:
    made = make_setup(name, BackendSpec(name="torch", dtype=dtype)).oracle
    assert isinstance(made, BookkeepingOracle)
    return made


def points(o: Oracle, seed: int = 1) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    x = o.backend.to_numpy(o.x0) + 0.01 * rng.standard_normal(o.d)
    return o.backend.asarray(x), o.backend.asarray(x + 0.05 * rng.standard_normal(o.d))


def per_sample_means(o: Oracle, x: Any, x_prev: Any | None, groups: list[np.ndarray],
                     clip: float) -> tuple[np.ndarray, np.ndarray]:
    """Each group's clipped mean and the row norms from materialised per-sample rows."""
    means, norms = [], []
    for group in groups:
        rows = o.per_sample_grads(x, group)
        if x_prev is not None:
            rows = rows - o.per_sample_grads(x_prev, group)
        rows = o.backend.to_numpy(rows)
        n = np.linalg.norm(rows, axis=1)
        means.append((rows * np.minimum(1.0, clip / n)[:, None]).mean(axis=0))
        norms.append(n)
    return np.stack(means), np.concatenate(norms)


def assert_close(got: Any, want: np.ndarray, o: Oracle, tol: float) -> None:
    """Within ``tol`` relative to the largest entry (1e-6 float32, 1e-12 float64)."""
    got = o.backend.to_numpy(got)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * float(np.abs(want).max()))


@pytest.mark.parametrize("difference", [False, True])
@pytest.mark.parametrize("groups", GROUPS)
@pytest.mark.parametrize(("name", "overrides"), MODELS)
@pytest.mark.parametrize("clip", [1e-3, 1e3])  # every sample clipped / none
def test_bookkeeping_group_means_equal_the_per_sample_path(
        name: str, overrides: dict, groups: list[np.ndarray], difference: bool,
        clip: float) -> None:
    o = bookkeeping(name)
    x, x_prev = points(o)
    prev = x_prev if difference else None
    means, norms = o.clipped_group_means(x, prev, groups, clip)
    want_means, want_norms = per_sample_means(o, x, prev, groups, clip)
    assert_close(means, want_means, o, 1e-12)
    assert_close(norms, want_norms, o, 1e-12)
    base = Oracle.clipped_group_means(o, x, prev, groups, clip)  # the per-sample path
    assert_close(base[0], want_means, o, 1e-12)


@pytest.mark.parametrize("rows", [True, False])
@pytest.mark.parametrize("groups", GROUPS[:2])
def test_every_cnn_layer_path_in_groups(rows: bool, groups: list[np.ndarray],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Per-sample rows (the batched weighted rows) or Grams (convolutions group by group)
    forced on every layer that can take them."""
    o = bookkeeping("fashion_mnist_cnn")
    monkeypatch.setattr(ghost, "_materialise",
                        lambda site, g: site.kind == "scale" or (rows and site.transposed))
    x, x_prev = points(o)
    for prev in (None, x_prev):
        means, norms = o.clipped_group_means(x, prev, groups, 0.05)
        want_means, want_norms = per_sample_means(o, x, prev, groups, 0.05)
        assert_close(means, want_means, o, 1e-12)
        assert_close(norms, want_norms, o, 1e-12)


@pytest.mark.parametrize(("name", "overrides"), MODELS)
def test_float32_group_means_within_1e_6(name: str, overrides: dict) -> None:
    o = bookkeeping(name, "float32")
    x, x_prev = points(o)
    for prev in (None, x_prev):
        means, _ = o.clipped_group_means(x, prev, GROUPS[1], 0.05)
        want = Oracle.clipped_group_means(o, x, prev, GROUPS[1], 0.05)[0]
        assert_close(means, o.backend.to_numpy(want), o, 1e-6)


def test_one_group_is_the_clipped_sum() -> None:
    o = bookkeeping("fashion_mnist_mlp")
    x, x_prev = points(o)
    idx = GROUPS[1][0]
    means, _ = o.clipped_group_means(x, x_prev, [idx], 0.05)
    want = TorchOracle.clipped_grad_diff_sum(o, x, x_prev, idx, 0.05) / len(idx)
    assert_close(means[0], want.numpy(), o, 1e-12)
    with pytest.raises(ValueError, match="non-empty"):
        o.clipped_group_means(x, None, [idx, idx[:0]], 0.05)


@pytest.mark.parametrize("difference", [False, True])
@pytest.mark.parametrize("groups", GROUPS)
def test_jax_padded_group_means_equal_the_per_sample_path(groups: list[np.ndarray],
                                                          difference: bool) -> None:
    """jax pads every client's batch to the largest one's bucket (weight 0 on padding)."""
    pytest.importorskip("jax")
    o = make_setup("fashion_mnist_mlp", BackendSpec(name="jax", dtype="float64")).oracle
    x, x_prev = points(o)
    prev = x_prev if difference else None
    means, norms = o.clipped_group_means(x, prev, groups, 0.05)
    want_means, want_norms = per_sample_means(o, x, prev, groups, 0.05)
    assert_close(means, want_means, o, 1e-12)
    assert_close(norms, want_norms, o, 1e-12)


def prisma_combine(xp: Any, seen: list[Any]) -> Any:
    """PriSMA's eq. (20) weights (each point's gradient clipped, their difference clipped
    again), recording the statistics it is handed."""
    def combine(sq: Any, sq_prev: Any, inner: Any) -> tuple[Any, Any]:
        seen.append((sq, sq_prev, inner))
        c, c_prev = (1 / xp.maximum(xp.sqrt(v) / 0.05, 1.0) for v in (sq, sq_prev))
        diff = xp.sqrt(xp.maximum(c * c * sq + c_prev * c_prev * sq_prev - 2 * c * c_prev * inner,
                                  0.0))
        s = 1 / xp.maximum(diff / 0.01, 1.0)
        return c * (0.9 + 0.1 * s), -0.1 * s * c_prev

    return combine


@pytest.mark.parametrize("groups", GROUPS)
def test_jax_combined_group_means_equal_the_per_sample_path(groups: list[np.ndarray]) -> None:
    """jax's book-keeping combination (one pass over the padded clients' block) equals the
    per-sample rows; ``combine`` sees the real samples only, in the groups' order."""
    pytest.importorskip("jax")
    o = make_setup("fashion_mnist_mlp", BackendSpec(name="jax", dtype="float64")).oracle
    x, x_prev = points(o)
    seen: list[Any] = []
    got = o.combined_group_means(x, x_prev, groups, prisma_combine(o.xp, seen))
    want = Oracle.combined_group_means(o, x, x_prev, groups, prisma_combine(o.xp, seen))
    assert_close(got, o.backend.to_numpy(want), o, 1e-12)
    for fast, rows in zip(*seen, strict=True):
        assert fast.shape == (sum(len(g) for g in groups),)
        assert_close(fast, o.backend.to_numpy(rows), o, 1e-12)


def test_jax_group_widths_pad_under_an_eighth() -> None:
    from problems.oracles import _group_width

    widths = [_group_width(b) for b in range(1, 600)]
    assert all(b <= w < b * 9 / 8 + 1 for b, w in enumerate(widths, 1))
    assert len(set(widths[200:300])) <= 8  # few kernels as Poisson sizes vary


def test_a_distributed_step_is_one_call_without_per_sample_rows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """All clients go to one oracle call where no (b, d) rows are held; the per-sample path
    still splits them by the memory budget, with the same means."""
    monkeypatch.setattr(distributed, "GROUP_FLOATS", 1)  # one client per call if rows held
    o = bookkeeping("fashion_mnist_mlp")
    x, x_prev = points(o)
    batches = [Batch(g, Sampling("fixed", 48, size=len(g))) for g in GROUPS[0]]
    calls: list[int] = []
    original = BookkeepingOracle.clipped_group_means

    def counted(self: Any, *args: Any) -> Any:
        calls.append(len(args[2]))
        return original(self, *args)

    monkeypatch.setattr(BookkeepingOracle, "clipped_group_means", counted)
    got = distributed.clipped_client_means(o, batches, x, x_prev, 0.05, None)
    assert calls == [len(batches)]
    monkeypatch.setattr(BookkeepingOracle, "materialises_rows", True)
    want = distributed.clipped_client_means(o, batches, x, x_prev, 0.05, None)
    assert calls == [len(batches), 1, 1]
    assert_close(got, want.numpy(), o, 1e-12)


def test_groups_run_over_consecutive_equal_sizes() -> None:
    """Book-keeping contracts consecutive clients of one batch size as one view (no gather)."""
    runs = ghost.Groups([3, 3, 2, 2, 2, 5]).runs
    assert runs == [(slice(0, 2), slice(0, 6), (2, 3)), (slice(2, 5), slice(6, 12), (3, 2)),
                    (slice(5, 6), slice(12, 17), (1, 5))]
