"""numpy, torch and jax agree: same iterates under replayed noise, same oracle values.

float64 everywhere. With ``BackendSpec(noise="replay")`` every backend draws the same
privacy noise from a numpy stream, and batches always come from a host numpy generator, so
trajectories may differ only by floating-point rounding (closed form vs autodiff,
different summation orders).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_setup, run_algorithm, to_numpy, unsupported

from algorithms import ALGORITHMS
from problems import PROBLEMS
from problems.backend import BackendSpec

RTOL, ATOL = 1e-10, 1e-12
SYNTHETIC = ("nc_least_squares", "strict_saddle")


def replay(name: str) -> BackendSpec:
    return BackendSpec(name=name, dtype="float64", noise="replay")


def trajectory(alg: str, problem: str, backend: str, **overrides) -> np.ndarray:
    setup = make_setup(problem, replay(backend))
    steps = run_algorithm(alg, setup, noise_seed=11, sampling_seed=12, **overrides)[3]
    return np.array([to_numpy(s.x) for s in steps])


@pytest.mark.parametrize("problem", SYNTHETIC)
@pytest.mark.parametrize("alg", sorted(a for a, cls in ALGORITHMS.items() if not cls.minimax))
def test_iterates_agree_across_backends(alg: str, problem: str) -> None:
    if reason := unsupported(alg, make_setup(problem, replay("numpy")).instance):
        pytest.skip(reason)
    fields = ALGORITHMS[alg].Params.__dataclass_fields__
    kw = {k: v for k, v in {"steps": 20, "lr": 0.05}.items() if k in fields}
    if alg == "dp_sgd":
        kw["clip"] = 0.5  # small enough that clipping is active on both problems
    reference = trajectory(alg, problem, "numpy", **kw)
    d = make_setup(problem, replay("numpy")).instance.d
    # 20 steps, or fewer for single-pass algorithms when the small data run out
    assert reference.shape == (20, d) or (ALGORITHMS[alg].data_limited
                                          and 1 <= len(reference) <= 20)
    assert np.all(np.isfinite(reference))
    for backend in ("torch", "jax"):
        if backend not in PROBLEMS[problem].backends:
            continue
        got = trajectory(alg, problem, backend, **kw)
        np.testing.assert_allclose(got, reference, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{alg} on {problem}: {backend} vs numpy")


def test_replay_noise_is_identical_across_backends() -> None:
    draws = []
    for backend in ("numpy", "torch", "jax"):
        setup = make_setup("strict_saddle", replay(backend))
        draws.append(to_numpy(setup.backend.noise_source(3).normal((4, 7))))
    np.testing.assert_array_equal(draws[0], draws[1])
    np.testing.assert_array_equal(draws[0], draws[2])


def test_digits_mlp_torch_and_jax_agree_on_iterates() -> None:
    kw = {"steps": 10, "lr": 0.1, "clip": 0.5}
    a = trajectory("dp_sgd", "digits_mlp", "torch", **kw)
    b = trajectory("dp_sgd", "digits_mlp", "jax", **kw)
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-11)


# -- oracles -------------------------------------------------------------------------------


def oracle_values(problem: str, backend: str, x: np.ndarray, x_prev: np.ndarray,
                  v: np.ndarray, idx: np.ndarray) -> dict[str, np.ndarray]:
    setup = make_setup(problem, replay(backend))
    o, be = setup.oracle, setup.backend
    xb, xpb, vb = be.asarray(x), be.asarray(x_prev), be.asarray(v)
    return {
        "per_sample_grads": to_numpy(o.per_sample_grads(xb, idx)),
        "per_sample_grad_diffs": to_numpy(o.per_sample_grad_diffs(xb, xpb, idx)),
        "grad_batch": to_numpy(o.grad(xb, idx)),
        "grad_full": to_numpy(o.grad(xb)),
        "hvp_batch": to_numpy(o.hvp(xb, vb, idx)),
        "hvp_full": to_numpy(o.hvp(xb, vb)),
        "loss_batch": to_numpy(o.loss(xb, idx)),
        "loss_full": to_numpy(o.loss(xb)),
    }


def random_point(problem: str, backend: str, seed: int) -> tuple[np.ndarray, ...]:
    setup = make_setup(problem, replay(backend))
    rng = np.random.default_rng(seed)
    d, n = setup.instance.d, setup.instance.n
    x = rng.standard_normal(d) * (0.1 if problem == "digits_mlp" else 1.0)
    x = x + to_numpy(setup.oracle.x0)
    x_prev = x + 0.3 * rng.standard_normal(d) * (0.1 if problem == "digits_mlp" else 1.0)
    v = rng.standard_normal(d)
    idx = rng.choice(n, size=13, replace=False)  # 13: not a power of two (jax pads)
    return x, x_prev, v, idx


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("problem", SYNTHETIC)
def test_oracles_agree_closed_form_vs_autodiff(problem: str, seed: int) -> None:
    x, x_prev, v, idx = random_point(problem, "numpy", seed)
    reference = oracle_values(problem, "numpy", x, x_prev, v, idx)
    assert reference["per_sample_grads"].shape == (13, len(x))
    for backend in ("torch", "jax"):
        got = oracle_values(problem, backend, x, x_prev, v, idx)
        for key, ref in reference.items():
            np.testing.assert_allclose(got[key], ref, rtol=1e-10, atol=1e-12,
                                       err_msg=f"{problem}.{key}: {backend} vs numpy")


@pytest.mark.parametrize("problem", SYNTHETIC)
def test_oracle_consistency_with_finite_differences(problem: str) -> None:
    """The closed forms are derivatives of the loss (guards against a shared wrong loss)."""
    setup = make_setup(problem, "numpy")
    o = setup.oracle
    x, _, v, idx = random_point(problem, "numpy", 3)
    h = 1e-6
    fd_grad = np.array([(o.loss(x + h * e, idx) - o.loss(x - h * e, idx)) / (2 * h)
                        for e in np.eye(len(x))])
    np.testing.assert_allclose(o.grad(x, idx), fd_grad, rtol=1e-6, atol=1e-7)
    fd_hvp = (o.grad(x + h * v, idx) - o.grad(x - h * v, idx)) / (2 * h)
    np.testing.assert_allclose(o.hvp(x, v, idx), fd_hvp, rtol=1e-5, atol=1e-6)
    # the mean gradient is the mean of the per-sample gradients
    np.testing.assert_allclose(o.grad(x, idx), o.per_sample_grads(x, idx).mean(axis=0),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", [0, 1])
def test_digits_mlp_oracles_torch_vs_jax(seed: int) -> None:
    x, x_prev, v, idx = random_point("digits_mlp", "torch", seed)
    a = oracle_values("digits_mlp", "torch", x, x_prev, v, idx)
    b = oracle_values("digits_mlp", "jax", x, x_prev, v, idx)
    for key, ref in a.items():
        np.testing.assert_allclose(b[key], ref, rtol=1e-9, atol=1e-11,
                                   err_msg=f"digits_mlp.{key}: jax vs torch")
    # and the per-sample gradients really differ between samples (not a broadcast)
    assert not np.allclose(a["per_sample_grads"][0], a["per_sample_grads"][1])


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_empty_and_odd_batches(backend: str) -> None:
    """jax pads batches to powers of two: padding must not leak into sums or rows."""
    setup = make_setup("nc_least_squares", replay(backend))
    ref = make_setup("nc_least_squares", replay("numpy"))
    x = np.linspace(-1, 1, setup.instance.d)
    for size in (1, 7, 8, 9, 33):
        idx = np.arange(size) * 2
        np.testing.assert_allclose(
            to_numpy(setup.oracle.per_sample_grads(setup.backend.asarray(x), idx)),
            ref.oracle.per_sample_grads(x, idx), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(
            to_numpy(setup.oracle.grad(setup.backend.asarray(x), idx)),
            ref.oracle.grad(x, idx), rtol=1e-10, atol=1e-12)
