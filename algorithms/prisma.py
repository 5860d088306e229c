"""``prisma`` (huang2025, Algorithm 1 and its C₃ variant, eq. 20) and ``dpsgd_gc``.

PriSMA: differentially Private Stochastic recursive Momentum with gradient clipping, for
M clients under local (record-level, per client) DP. For t = 0..T−1:

    each client i: sample B_iᵗ ⊂ [N], |B_iᵗ| = b, without replacement          # line 6
      t = 0: v_i⁰ = (1/b) Σ_j clip_C1(∇f_ij(x⁰)) + ξ_i⁰                         # line 8
      t > 0: g = (1/b) Σ_j clip_C1(∇f_ij(xᵗ)),  g̃ = (1/b) Σ_j clip_C1(∇f_ij(xᵗ⁻¹))  # line 10
             v_iᵗ = g + (1−γ)(v_iᵗ⁻¹ − g̃) + ξ_iᵗ                              # line 11
    server: xᵗ⁺¹ = xᵗ − η clip_C2((1/M) Σ_i v_iᵗ)                               # line 17

written through the query of eq. (6), q_iᵗ = γg + (1−γ)(g − g̃), so that v_iᵗ = q_iᵗ + ξ_iᵗ
+ (1−γ)v_iᵗ⁻¹ (the last term is post-processing). The C₃ variant (eq. 20), which the
experiments tune, clips each per-sample difference clip_C1(∇f_ij(xᵗ)) − clip_C1(∇f_ij(xᵗ⁻¹))
at C₃ before averaging.

Privacy (replace-one, per client, §3): the mean query has sensitivity Δ₀ = 2C₁/b at t = 0 and
Δ₁ = 2(γC₁ + (1−γ)C₃)/b after (Algorithm 1: C₃ → LηC₂, eq. 9); the noise is
ξ ~ N(0, (σ̂Δ_k)² I) with one noise multiplier σ̂ for every step. ``calibration: paper`` is
Corollary 1: σ̂² = 7b²T/(N²ε)·(1 + 2 ln(1/δ)/ε) with N the client's sample count;
``pld``/``rdp`` calibrate σ̂ with the accountants (fixed-size batches without replacement,
per client; see algorithms/privacy/accounting.py).

``dpsgd_gc`` is the paper's baseline, "Algorithm 1 with γ = 1 and without the server
clipping": v_iᵗ = g + ξ_iᵗ, sensitivity 2C₁/b (its noise is not stated in the paper: the
γ = 1 case of Corollary 1, notes §2.7 #12). It is a preset of ``prisma`` (γ = 1, no C₃, no
server clip), under its own name and with its own few params; at γ = 1 without C₃ the
query is g alone (the correction (1−γ)(g − g̃) vanishes, so g̃ is not computed).

Deviations and resolved ambiguities (notes §2.7):

* sampling is a fresh uniform b-subset of each client's data at every step, independently
  across clients (#13), through ``mech.sample(..., scheme="fixed")``;
* x⁰ is the problem's start point: 0 for least squares as the paper, a standard
  initialisation for networks (all-zero tanh networks do not train; #11);
* the output is the last iterate xᵀ (the theory bounds a uniformly random iterate; #15);
* clipping is flat over the whole parameter vector; C₂ defaults to min(4, C₁/2), the
  CNN experiments' rule (the least-squares experiments fix C₂ = 1);
* Theorem 3's condition (18) fails at the paper's settings (notes §3): the plan records
  whether it holds; the paper's σ̂ is used "as in the paper" regardless;
* the largest step ‖xᵗ⁺¹ − xᵗ‖ is measured on the iterates and reported beside ηC₂ with
  the configured C₂ also when ``server_clip: false`` (the C₂ ablation), so that the step
  bound of §3 is checked, not restated.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import PositiveFloat

from algorithms.base import (
    Algorithm,
    Extras,
    Plan,
    PrivacyTarget,
    Rate,
    Step,
    Trace,
    register_algorithm,
)
from algorithms.distributed import clipped_client_means, combined_client_means
from algorithms.premises import NormTracker, clip_keys, clip_tracked
from algorithms.privacy.ledger import Batch, Ledger, Mechanism, Release, Sampling
from problems.base import DataInfo
from problems.clipping import clip_factors
from problems.oracles import Oracle
from problems.params import Count, Proportion, params


@params
class PriSMAParams:
    lr: PositiveFloat = 0.1
    steps: Count = 1000
    batch_size: Count = 512
    batch_fraction: Proportion | None = None
    gamma: Proportion = 0.5
    clip1: PositiveFloat = 1.0
    clip2: PositiveFloat | None = None
    clip3: PositiveFloat | None = 0.5
    server_clip: bool = True
    smoothness: PositiveFloat | None = None


@dataclass(frozen=True)
class PriSMAExtras(Extras):
    #: Δ₀ and Δ₁, the sensitivities of the mean query at t = 0 and t > 0
    sensitivity_first: float
    sensitivity: float
    #: C₂ (None: no server clipping) and the per-sample bound on the momentum correction
    server_clip: float | None
    momentum_bound: float
    #: the noise stds σ̂Δ₀ and σ̂Δ₁
    sigma_first: float
    sigma_later: float
    #: Theorem 3's condition (18), α ≤ rhs, at Corollary 1's α
    condition_18_rhs: float
    condition_18_alpha: float
    condition_18_holds: bool


@register_algorithm
class PriSMA(Algorithm[PriSMAParams, PriSMAExtras]):
    """Locally private recursive momentum with per-sample and server clipping."""

    name = "prisma"
    paper = "huang2025"
    reference = ("Huang, Zhang, Ling 2025, Differential Privacy in Distributed Learning: "
                 "Beyond Uniformly Bounded Stochastic Gradients (AISTATS), Alg. 1 / eq. 20")
    rate = Rate(objective="empirical", stationarity="first", privacy_exponent=2 / 5,
                sample_exponent=None,
                source="Theorem 4 (eq. 19), huang2025",
                note="(1/T)Σ_t E‖∇F(x^t)‖ ≤ Õ((√d/(√M·N·ε))^{2/5}) for M clients with N "
                     "records each (local DP); eq. 108 prints the exponent as 1/δ and the "
                     "conclusion as 2/3, both typos for 1/5 of d·log(1/δ)/(MN²ε²), i.e. 2/5")
    #: C₁ (per-sample gradients) is the main clip; C₃ (eq. 20) and the server's C₂ are
    #: recorded with the suffixes c3 and c2 (None where the run does not apply them)
    premises = ("steps_taken", *clip_keys(), *clip_keys("c3"), *clip_keys("c2"))

    # -- sizes and sensitivities ------------------------------------------------------------
    def steps(self, data: DataInfo) -> int:
        return int(self.params.steps)

    def batch_size(self, data: DataInfo) -> float:
        """b per client: ``batch_size``, or ``batch_fraction`` of the smallest client's N
        (the least-squares experiments use b = 0.1N)."""
        smallest = min(len(c) for c in _clients(data))
        fraction = self.params.batch_fraction
        b = max(1, round(fraction * smallest)) if fraction is not None else self.params.batch_size
        if b > smallest:
            raise ValueError(f"batch_size {b} exceeds the smallest client's {smallest} samples")
        return float(b)

    def server_clip(self) -> float | None:
        """C₂ (None: no server clipping)."""
        return self.nominal_server_clip() if self.params.server_clip else None

    def nominal_server_clip(self) -> float:
        """C₂ as configured, whether or not the server applies it (the C₂ ablation)."""
        p = self.params
        return p.clip2 if p.clip2 is not None else min(4.0, p.clip1 / 2)

    def momentum_bound(self, data: DataInfo) -> float:
        """The per-sample bound on the momentum correction: C₃, or LηC₂ (Algorithm 1); none
        at γ = 1, where the correction vanishes."""
        p = self.params
        if p.gamma == 1:
            return 0.0
        if p.clip3 is not None:
            return float(p.clip3)
        c2 = self.server_clip()
        smooth = p.smoothness if p.smoothness is not None else data.constants.get("L")
        if c2 is None or smooth is None:
            raise ValueError("Algorithm 1 without clip3 needs the server clip C2 and a "
                             "smoothness L (params.smoothness or the problem's L)")
        return float(smooth) * p.lr * c2

    def sensitivities(self, data: DataInfo) -> tuple[float, float]:
        """(Δ₀, Δ₁): replace-one sensitivities of the mean query at t = 0 and t > 0."""
        p, b = self.params, self.batch_size(data)
        first = 2 * p.clip1 / b
        later = 2 * (p.gamma * p.clip1 + (1 - p.gamma) * self.momentum_bound(data)) / b
        return first, later

    # -- privacy ------------------------------------------------------------------------
    def planned_ledger(self, data: DataInfo, sigma: float) -> Ledger:
        first, later = self.sensitivities(data)
        ledger = Ledger()
        b, steps = int(self.batch_size(data)), self.steps(data)
        for party, client in enumerate(_clients(data)):
            sampling = Sampling("fixed", len(client), rate=b / len(client), size=b, party=party)
            ledger.record(sampling, [Release("gaussian", "v0", sigma=sigma, sensitivity=first)])
            if steps > 1:
                ledger.record(sampling, [Release("gaussian", "v", sigma=sigma,
                                                 sensitivity=later)], steps - 1)
        return ledger

    def _corollary_constant(self, data: DataInfo) -> float:
        """7b²T/N² of Corollary 1 (N: the smallest client, which needs the most noise)."""
        n = min(len(c) for c in _clients(data))
        return 7 * self.batch_size(data) ** 2 * self.steps(data) / n**2

    def paper_sigma(self, data: DataInfo, target: PrivacyTarget) -> float:
        """Corollary 1: σ̂² = 7b²T/(N²ε) (1 + 2 ln(1/δ)/ε)."""
        eps, log = target.epsilon, math.log(1 / target.delta)
        return math.sqrt(self._corollary_constant(data) / eps * (1 + 2 * log / eps))

    def paper_epsilon(self, data: DataInfo, sigma: float, delta: float) -> float | None:
        """Corollary 1 solved for ε: 2KL u² + K u − σ̂² = 0 with u = 1/ε."""
        k, log = self._corollary_constant(data), math.log(1 / delta)
        u = (-k + math.sqrt(k * k + 8 * k * log * sigma**2)) / (4 * k * log)
        return 1 / u

    def extras(self, data: DataInfo, target: PrivacyTarget, sigma: float) -> PriSMAExtras:
        first, later = self.sensitivities(data)
        return PriSMAExtras(sensitivity_first=first, sensitivity=later,
                            server_clip=self.server_clip(),
                            momentum_bound=self.momentum_bound(data),
                            sigma_first=sigma * first, sigma_later=sigma * later,
                            **self.theorem_3_condition(data, sigma, target))

    def theorem_3_condition(self, data: DataInfo, sigma: float,
                            target: PrivacyTarget) -> dict[str, Any]:
        """Theorem 3's condition (18), α ≤ (2σ̂²/3) log(N/(bα(1+σ̂²))) + 1, at Corollary 1's
        α = 1 + 2 ln(1/δ)/ε."""
        n = min(len(c) for c in _clients(data))
        alpha = 1 + 2 * math.log(1 / target.delta) / target.epsilon
        rhs = (2 * sigma**2 / 3) * math.log(n / (self.batch_size(data) * alpha
                                                 * (1 + sigma**2))) + 1
        return {"condition_18_rhs": rhs, "condition_18_alpha": alpha,
                "condition_18_holds": bool(alpha <= rhs)}

    # -- the algorithm ------------------------------------------------------------------
    def query(self, oracle: Oracle, x: Any, x_prev: Any, batches: list[Batch],
              clips: Mapping[str, NormTracker | None] | None = None) -> Any:
        """q_iᵗ of eq. (6)/(20), one row per client: γg + (1−γ)·avg clip_C3(per-sample diff);
        g alone at t = 0 and, where the correction vanishes (γ = 1 without C₃), always. The
        per-sample norms go to ``clips`` (suffix → tracker; None: not tracked)."""
        xp, p = oracle.xp, self.params
        tracked = clips if clips is not None else {}
        if x_prev is None or (p.gamma == 1 and p.clip3 is None):  # line 8 at t = 0
            return clipped_client_means(oracle, batches, x, None, p.clip1, tracked.get(""))

        def combine(sq: Any, sq_prev: Any, inner: Any) -> tuple[Any, Any]:
            """Per sample, q = γ·c g + (1−γ)·s (c g − c′ g′) with c, c′ the C₁ clips of g
            and g′ (line 10) and s the C₃ clip of their difference (eq. (20); 1 without C₃)."""
            norms, norms_prev = xp.sqrt(sq), xp.sqrt(sq_prev)
            c, c_prev = clip_factors(xp, norms, p.clip1), clip_factors(xp, norms_prev, p.clip1)
            first = tracked.get("")
            if first is not None:
                first.add(norms)
                first.add(norms_prev)
            s = 1.0
            if p.clip3 is not None:
                diff = xp.sqrt(xp.maximum(c * c * sq + c_prev * c_prev * sq_prev
                                          - 2 * c * c_prev * inner, 0.0))
                third = tracked.get("c3")
                if third is not None:
                    third.add(diff)
                s = clip_factors(xp, diff, p.clip3)
            return c * (p.gamma + (1 - p.gamma) * s), -(1 - p.gamma) * s * c_prev

        return combined_client_means(oracle, batches, x, x_prev, combine)

    def iterate(self, oracle: Oracle, plan: Plan[PriSMAExtras], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        xp, p = oracle.xp, self.params
        c2, b = plan.extra.server_clip, int(plan.batch_size)
        bounds = {"": p.clip1, "c3": p.clip3, "c2": c2}
        clips = trace.clips = {s: None if bound is None else NormTracker(oracle.backend, bound)
                               for s, bound in bounds.items()}
        x, x_prev, v = oracle.x0, None, None
        largest = xp.zeros_like(x[0])  # the largest step, kept on the device
        for t in range(plan.steps):
            batches = [mech.sample(client, scheme="fixed", size=b, party=i)
                       for i, client in enumerate(oracle.clients)]  # line 6
            queries = self.query(oracle, x, x_prev, batches, clips)
            sens = plan.extra.sensitivity_first if t == 0 else plan.extra.sensitivity
            noisy = mech.gaussian(queries, sensitivity=sens, sigma=plan.sigma, tag="v",
                                  batch=batches)  # lines 8, 11 (+ ξ)
            v = noisy if v is None else noisy + (1 - p.gamma) * v
            direction = xp.mean(v, axis=0)  # line 17
            if c2 is not None:
                direction = clip_tracked(xp, direction[None, :], c2, clips["c2"])[0]
            x_prev, x = x, x - p.lr * direction
            moved = xp.linalg.vector_norm(x - x_prev)  # measured on the iterates
            largest = xp.where(moved > largest, moved, largest)
            trace.facts["max_step"] = largest
            yield Step(t + 1, x)

    def diagnostics(self, trace: Trace) -> dict[str, Any]:
        """The largest step ‖xᵗ⁺¹ − xᵗ‖ measured on the iterates, and ηC₂ with the
        configured C₂ (§3: at most ηC₂ with server clipping; a run without it, the C₂
        ablation, shows whether the bound binds); none for DPSGD-GC, which has no C₂."""
        p = self.params
        bound = None if p.gamma == 1 and not p.server_clip else p.lr * self.nominal_server_clip()
        return {"max_step": float(trace.facts.get("max_step", 0.0)), "step_bound": bound,
                "server_clip_applied": p.server_clip}


@params
class DPSGDGCParams:
    lr: PositiveFloat = 0.1
    steps: Count = 1000
    batch_size: Count = 512
    batch_fraction: Proportion | None = None
    clip1: PositiveFloat = 1.0


def dpsgd_gc(params: DPSGDGCParams) -> PriSMAParams:
    """DPSGD-GC as PriSMA: γ = 1, no C₃, no server clip."""
    return PriSMAParams(lr=params.lr, steps=params.steps, batch_size=params.batch_size,
                        batch_fraction=params.batch_fraction, gamma=1.0, clip1=params.clip1,
                        clip3=None, server_clip=False)


@register_algorithm
class DPSGDGC(PriSMA):
    """Distributed clipped DP-SGD under local DP: the :func:`dpsgd_gc` preset of PriSMA,
    registered under its own name with its own params (only its metadata here)."""

    name = "dpsgd_gc"
    paper = "huang2025"
    reference = ("Abadi et al. 2016 in the distributed local-DP form of huang2025 "
                 "(Algorithm 1 with γ = 1, no server clipping)")
    rate = Rate(objective="empirical", stationarity="first", privacy_exponent=1 / 3,
                sample_exponent=None,
                source="huang2025 §4.3 (after Theorem 4) and §1, citing Koloskova et al. "
                       "2023 and Li et al. 2024",
                note="Õ((√d/(√M·N·ε))^{1/3}) under huang2025's assumptions (bounded "
                     "variance, no bounded gradients): the rate the paper cites for this "
                     "baseline, not proved in it (§4.3 misprints √(MN)ε for √M·N·ε)")
    Params = DPSGDGCParams
    premises = ("steps_taken", *clip_keys())

    def __init__(self, params: DPSGDGCParams | None = None) -> None:
        super().__init__(dpsgd_gc(params if params is not None else DPSGDGCParams()))


def _clients(data: DataInfo) -> list[np.ndarray]:
    return list(data.clients) or [np.arange(data.n)]
