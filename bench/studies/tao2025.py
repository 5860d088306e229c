"""tao2025's study (no training): claim E0, whether Gauss-PSGD's escape test ‖ĝ‖ ≤ 3χ can fire
at the experiments' own settings (App. E). ``saddlebench reproduce tao2025`` runs
:func:`trigger_study` through ``reports.papers.tao2025.paper.PAPER.studies`` and stores its rows;
the page reads them back. Each draw is seeded as the runner seeds a run
(:func:`bench.runner.mechanism` of its ``seed``).

The paper's MNIST setting (App. E): d = 101,770, n = 6,000 per client, η = 1e-3, κ = 0.1,
χ = 0.01, Def. 8's σ = √(2 ln(1.25/δ))/ε = 4.84 at ε = 1; b₁ = 256, b₂ = 64, M = 1, G = 1
and 20 passes are the notes' defaults (§6: not stated).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from algorithms.base import Plan, PrivacyTarget
from algorithms.gauss_psgd import GaussPSGD, o1_noise_std
from bench.runner import mechanism
from problems.backend import get_backend
from problems.base import DataSize
from problems.models.mlp import MLP, layer_sizes

PAPER_SIGMA, PAPER_D, PAPER_N, PAPER_LR, PAPER_KAPPA = 4.84, 101_770, 6_000, 1e-3, 0.1
PAPER_B1, PAPER_B2, PAPER_PASSES, PAPER_DELTA = 256, 64, 20, 1e-5
PAPER_CHI = 0.01  # App. E, 'Algorithms'
# Figures 1-2 (App. E): data set → (input features, lr) of the 784/3072-128-10 ReLU MLP
PAPER_DATA = {"MNIST": (784, 1e-3), "CIFAR-10": (3072, 1e-2)}
PAPER_EPSILONS, PAPER_CLIENTS = (0.5, 1.0, 2.0), (1, 2, 5, 10)
TRIGGER_SEEDS = 3


def paper_d(features: int) -> int:
    """d of the paper's one-hidden-layer MLP (128 ReLU units, 10 classes) on ``features``
    inputs: 101,770 for MNIST, 394,634 for CIFAR-10."""
    return MLP(layer_sizes(features, [128], 10), activation="relu", init_scheme="kaiming"
               ).n_params


def paper_gauss_psgd(lr: float) -> GaussPSGD:
    """Gauss-PSGD with the experiments' constants (App. E: χ, κ, Γ, Q, lr) and the notes'
    defaults for what the paper does not state (§6: b₁, b₂, G, M, 20 passes, Option A)."""
    return GaussPSGD(GaussPSGD.Params(
        lr=lr, batch_refresh=PAPER_B1, batch_diff=PAPER_B2, kappa=PAPER_KAPPA, grad_clip=1.0,
        diff_clip=1.0, epochs=PAPER_PASSES, records=PAPER_N, chi=PAPER_CHI, escape_steps=10,
        escape_rounds=3))


def averaged_o1_noise(alg: GaussPSGD, plan: Plan[Any], data: DataSize, seed: int
                      ) -> np.ndarray:
    """ξ̄ of one O1 answer: each client's Gaussian release (σ from the plan, sensitivity
    2G/b₁ as Algorithm 2 line 5) drawn on its first batch through the mechanism of a run
    seeded ``seed`` (the runner's streams), averaged as the server does (Algorithm 3); the
    answer is the clipped mean gradient + ξ̄."""
    p = alg.params
    mech, _ = mechanism(seed, get_backend("numpy"))
    batches = [mech.pool(client, epochs=p.epochs, party=j).take(p.batch_refresh)
               for j, client in enumerate(data.clients)]
    noisy = mech.gaussian(np.zeros((len(batches), data.d)), sensitivity=2 * p.grad_clip
                          / p.batch_refresh, sigma=plan.sigma, tag="O1",
                          batch=[b for b in batches if b is not None])
    return np.asarray(noisy).mean(axis=0)


def trigger_study(scale: str) -> pd.DataFrame:
    """Claim E0: Gauss-PSGD planned at the Figures' own settings with the paper's
    calibration (Def. 8 per query) and the accountants, and per (data set, ε, m, seed) the
    averaged noise ξ̄ of an O1 answer drawn through the mechanism. Since the clipped mean
    gradient has norm ≤ G, every O1 answer has ‖ĝ‖ ≥ ‖ξ̄‖ − G whatever the data and the
    iterate (no data or training needed; the same rows at every scale)."""
    rows = []
    for m in PAPER_CLIENTS:
        for eps in PAPER_EPSILONS:
            plan = None  # sizes, passes and (ε, δ) decide it: one for both data sets
            for name, (features, lr) in PAPER_DATA.items():
                alg, d = paper_gauss_psgd(lr), paper_d(features)
                data = DataSize(PAPER_N * m, d=d,
                                clients=np.array_split(np.arange(PAPER_N * m), m))
                plan = plan or alg.plan(data, PrivacyTarget(eps, PAPER_DELTA, "paper"))
                p = alg.params
                formula = o1_noise_std(p, plan.sigma) * math.sqrt(d / m)
                for seed in range(TRIGGER_SEEDS):
                    noise = float(np.linalg.norm(averaged_o1_noise(alg, plan, data, seed)))
                    rows.append({
                        "data": name, "d": d, "epsilon": eps, "clients": m, "seed": seed,
                        "n_per_client": PAPER_N, "lr": lr, "chi": PAPER_CHI,
                        "b1": p.batch_refresh, "G": p.grad_clip, "passes": p.epochs,
                        "calibration": plan.calibration, "sigma": plan.sigma,
                        "eps_pld": plan.eps.pld, "noise_formula": formula,
                        "noise_norm": noise, "lower_bound": noise - p.grad_clip,
                        "threshold": 3 * PAPER_CHI,
                        "can_fire": noise - p.grad_clip <= 3 * PAPER_CHI,
                        # the largest b₁ at which ‖ξ̄‖ − G stays above 3χ (noise ∝ 1/b₁)
                        "b1_max": p.batch_refresh * noise / (p.grad_clip + 3 * PAPER_CHI)})
    return pd.DataFrame(rows)
