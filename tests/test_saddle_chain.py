"""saddle_chain (problems/synthetic/saddle_chain.py): its stages are critical points with the
stated Hessians (against finite differences), the noise cancels in the mean, the per-sample
derivatives are those of the per-sample losses, the published constants bound what they
claim to, and E3's chain files give spider_sosp constants that bound every instance's."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from problems import get_problem
from problems.backend import BackendSpec, get_backend
from problems.synthetic.saddle_chain import SaddleChainInstance, link

NUMPY = get_backend(BackendSpec(name="numpy"))
CHAIN = get_problem("saddle_chain")
QUICK = Path(__file__).resolve().parents[1] / "bench" / "experiments" / "liu2024" / "quick"


def chain(**params: object) -> SaddleChainInstance:
    base = {"d": 10, "n": 4096, "atoms": 512, "alpha": 0.2, "gap": 12.7, "ratio": 1.1,
            "rho": 4.0, "sigma2": 0.25}
    return CHAIN(CHAIN.Params(**{**base, **params})).build(0)


def numeric_gradient(f, x: np.ndarray, h: float = 1e-5) -> np.ndarray:
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])


def numeric_hessian(grad, x: np.ndarray, h: float = 1e-5) -> np.ndarray:
    columns = [(grad(x + h * e) - grad(x - h * e)) / (2 * h) for e in np.eye(len(x))]
    return 0.5 * (np.stack(columns, 1) + np.stack(columns, 0))


def test_stages_are_strict_saddles_then_a_minimum_against_finite_differences() -> None:
    inst = chain()
    a, w, k = inst.shape.depth, inst.shape.width, inst.shape.links
    assert k == 5 and a == pytest.approx(12.7 / 6)
    lam = a / (2 * w**2)
    assert lam >= 1.1 * math.sqrt(4.0 * 0.2) and 2 * a / w**3 == pytest.approx(4.0 - 0.77 * 0.25)
    for stage in range(1, k + 2):
        x = inst.stage(stage)
        assert np.allclose(numeric_gradient(inst.loss, x), 0.0, atol=1e-7)
        assert np.allclose(inst.grad(x), 0.0, atol=1e-12)
        exact = inst.hessian(x)
        assert np.allclose(exact, numeric_hessian(inst.grad, x), atol=1e-6)
        # and the Hessian of the loss itself (second differences), so grad is F's gradient
        assert np.allclose(exact, numeric_hessian(lambda y: numeric_gradient(inst.loss, y),
                                                  x, h=1e-3), atol=1e-4)
        eigenvalues = np.linalg.eigvalsh(exact)
        if stage <= k:  # exactly one negative eigenvalue, on coordinate x_stage
            assert (eigenvalues < -1e-9).sum() == 1
            assert eigenvalues[0] == pytest.approx(-lam if stage < k else -2 * lam)
            assert exact[stage - 1, stage - 1] == pytest.approx(eigenvalues[0])
            assert inst.loss(x) == pytest.approx(a * (2 - stage))
        else:  # the minimum: every eigenvalue positive, F = −KA = inf F
            assert eigenvalues[0] > 0
            assert inst.loss(x) == pytest.approx(-k * a) == inst.constants["f_star"]
    assert inst.loss(inst.x0) - inst.constants["f_star"] == pytest.approx(12.7)
    assert inst.lambda_min(inst.x0) == pytest.approx(inst.constants["lambda_min_at_saddle"])


def test_links_scale_like_alpha_to_the_three_halves() -> None:
    sizes = {a: link(CHAIN.Params(d=24, n=8192, atoms=4096, alpha=a, gap=12.7, ratio=1.1,
                                  rho=4.0, sigma2=0.25)) for a in (0.4, 0.28, 0.2)}
    assert [s.links for s in sizes.values()] == [1, 2, 5]
    with pytest.raises(ValueError, match="gap"):
        chain(gap=1.0)


def test_noise_cancels_in_the_mean_and_per_sample_derivatives_are_the_losses() -> None:
    inst = chain()
    oracle = inst.oracle(NUMPY)
    rng = np.random.default_rng(1)
    x = inst.stage(3) + 0.3 * rng.standard_normal(inst.d)
    everyone = np.arange(inst.n)
    assert np.allclose(oracle.per_sample_grads(x, everyone).mean(0), inst.grad(x), atol=1e-12)
    assert np.mean(oracle.per_sample_losses(x, everyone)) == pytest.approx(inst.loss(x))
    idx = rng.choice(inst.n, 7, replace=False)
    rows = oracle.per_sample_grads(x, idx)
    for row, i in zip(rows, idx, strict=True):
        one = np.array([i])
        assert np.allclose(row, numeric_gradient(
            lambda y, one=one: oracle.per_sample_losses(y, one)[0], x), atol=1e-6)
    summed = np.stack(oracle.hvps(x, list(np.eye(inst.d)), idx), 1) * len(idx)
    assert np.allclose(summed, numeric_hessian(
        lambda y: oracle.per_sample_grads(y, idx).sum(0), x), atol=1e-5)
    assert np.allclose(np.stack(oracle.hvps(x, list(np.eye(inst.d))), 1), inst.hessian(x))


def test_published_constants_bound_the_per_sample_derivatives() -> None:
    inst = chain()
    oracle, c = inst.oracle(NUMPY), inst.constants
    rng = np.random.default_rng(2)
    idx = rng.choice(inst.n, 64, replace=False)
    for _ in range(40):
        x = rng.uniform(-4, 4, inst.d) * inst.shape.width
        assert np.linalg.norm(oracle.per_sample_grads(x, idx), axis=1).max() <= c["G"]
        step = rng.standard_normal(inst.d) * 1e-3
        for i in idx[:4]:
            one = np.array([i])
            h = np.stack(oracle.hvps(x, list(np.eye(inst.d)), one), 1)
            h2 = np.stack(oracle.hvps(x + step, list(np.eye(inst.d)), one), 1)
            assert np.abs(np.linalg.eigvalsh(h)).max() <= c["L"]
            assert np.linalg.norm(h2 - h, 2) <= c["rho"] * np.linalg.norm(step) * (1 + 1e-6)


def test_e3_chain_files_hold_the_class_constants_fixed_over_alpha() -> None:
    files = sorted(QUICK.glob("e3_chain_*.yaml"))
    assert len(files) == 3
    algorithms = set()
    for path in files:
        spec = yaml.safe_load(path.read_text())
        (problem,) = spec["problems"]
        inst = CHAIN(CHAIN.Params(**{**problem["params"], "n": 8192})).build(0)
        for entry in spec["algorithms"]:
            p = entry["params"]
            assert p["alpha"] == problem["params"]["alpha"] and p["gap"] == inst.constants["gap"]
            assert p["G"] >= inst.constants["G"] and p["M"] >= inst.constants["L"]
            assert p["rho"] >= inst.constants["rho"]
            algorithms.add((entry.get("label", ""), p["G"], p["M"], p["rho"], p["gap"]))
    assert len(algorithms) == 2  # one entry per τ, the same constants at every α
