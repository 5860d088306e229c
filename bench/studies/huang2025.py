"""huang2025's studies (no stored runs): Theorem 3 where its condition (18) holds, and
Lemma D.2's clipping-bias inequality (40) on random vector sets. ``saddlebench reproduce
huang2025`` runs them through ``reports.papers.huang2025.PAPER.studies`` and stores their
frames (one row per setting or trial); the page only reads them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from algorithms import PrivacyTarget
from algorithms.prisma import PriSMA, PriSMAParams
from algorithms.privacy.accounting import epsilon
from problems import DataSize

# (ε, δ, N, b, T) where condition (18) holds (the smallest T of a doubling search from 100
# at each (ε, N, b); the experiments' own settings all violate it)
THEOREM3_SETTINGS = ((4.0, 1e-5, 5000, 25, 50000), (8.0, 1e-4, 2000, 40, 2000),
                     (16.0, 1e-4, 2000, 100, 1000))
LEMMA_TRIALS = 2000  # random vector sets for Lemma D.2 (each with ‖ū‖ ≤ C/2)


def theorem3_study(scale: str) -> pd.DataFrame:
    """Corollary 1's σ̂ at :data:`THEOREM3_SETTINGS` (one client: ε is per client), with
    condition (18) and the PLD and RDP accountants' ε of the planned ledger."""
    rows = []
    for eps, delta, n, b, steps in THEOREM3_SETTINGS:
        alg = PriSMA(PriSMAParams(steps=steps, batch_size=b, gamma=0.1, clip1=1.0, clip3=0.1))
        data, target = DataSize(n=n, clients=[np.arange(n)]), PrivacyTarget(eps, delta, "paper")
        sigma = alg.paper_sigma(data, target)
        ledger = alg.planned_ledger(data, sigma)
        condition = {f"plan_{k}": v for k, v in
                     alg.theorem_3_condition(data, sigma, target).items()}
        rows.append({"epsilon": eps, "delta": delta, "n": n, "batch_size": b, "steps": steps,
                     "sigma": sigma, "label": "prisma", "calibration": "paper", **condition,
                     "eps_pld": epsilon(ledger, delta, "pld"),
                     "eps_rdp": epsilon(ledger, delta, "rdp")})
    return pd.DataFrame(rows)


def _vector_set(rng: np.random.Generator, n: int, d: int, clip: float) -> np.ndarray:
    """n vectors in R^d around a centre of norm ≤ C/2: Gaussian, Student-t with 1.5 degrees
    of freedom, or one outlier; spread from 0.03C to 10C."""
    spread = clip * 10 ** rng.uniform(-1.5, 1)
    shape = int(rng.integers(3))
    dev = (rng.standard_normal((n, d)) if shape == 0 else
           rng.standard_t(1.5, (n, d)) if shape == 1 else
           np.vstack([rng.standard_normal((1, d)) * np.sqrt(n * d), np.zeros((n - 1, d))]))
    centre = rng.standard_normal(d)
    centre *= rng.uniform(0, clip / 2) / np.linalg.norm(centre)
    return centre + (dev - dev.mean(axis=0)) * spread / np.sqrt(d)


def lemma_d2_study(scale: str, trials: int = LEMMA_TRIALS) -> pd.DataFrame:
    """Eq. (40) on random vector sets u_1..u_n ∈ R^d with ‖ū‖ ≤ C/2 (C from 0.01 to 100):
    the left side as printed and squared against the right side."""
    rng = np.random.default_rng(2025)
    rows: list[dict[str, Any]] = []
    while len(rows) < trials:
        n, d = int(rng.integers(2, 50)), int(rng.integers(1, 20))
        clip = 10 ** rng.uniform(-2, 2)
        u = _vector_set(rng, n, d, clip)
        mean = u.mean(axis=0)
        if np.linalg.norm(mean) > clip / 2:
            continue
        var = float(np.mean(np.sum((u - mean) ** 2, axis=1)))
        norms = np.linalg.norm(u, axis=1)
        clipped = u * np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]
        lhs = float(np.linalg.norm(clipped.mean(axis=0) - mean))
        rhs = 8 * var**2 / clip**2 + 32 * var**2 * float(mean @ mean) / clip**4
        rows.append({"C": clip, "n": n, "d": d, "sigma2": var, "lhs": lhs, "rhs": rhs,
                     "printed_ok": lhs <= rhs * (1 + 1e-9),
                     "squared_ok": lhs**2 <= rhs * (1 + 1e-9)})
    return pd.DataFrame(rows)


STUDIES = {"theorem3": theorem3_study, "lemma_d2": lemma_d2_study}
