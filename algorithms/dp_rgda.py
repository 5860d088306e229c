"""``dp_rgda`` (xu2026, Algorithms 2–3): differentially private recursive gradient
descent–ascent for min_x max_y f(x, y), with the perturb-and-monitor saddle escape.

Algorithm 3 (the inner updater at x_t; the notes' resolved version, §2.2):

    x_{t,−1} = x_{t−1}, x_{t,k} = x_t (k ≥ 0), y_{t,−1} = y_{t,0} = y_t          # line 3
    if t mod q = 0:                                                           # lines 4–8
        B ← S₁ samples;  v_{t,0} = Clip-mean ∇_x F(x_t, y_t) + ω,  u_{t,0} = … ∇_y F + τ
        k₀ = 1  (A3: no k = 0 increment after a refresh)
    else: v_{t,−1} = v_{t−1}, u_{t,−1} = u_{t−1}, k₀ = 0                        # line 10
    for k = k₀..K−1:                                                          # lines 12–16
        B ← S₂ samples
        v_{t,k} = v_{t,k−1} + Clip-mean [∇_x F(x_{t,k}, y_{t,k}) − ∇_x F(x_{t,k−1}, y_{t,k−1})] + ζ
        u_{t,k} = u_{t,k−1} + Clip-mean [∇_y F(·) − ∇_y F(·)] + χ
        y_{t,k+1} = Π_Y(y_{t,k} + λ u_{t,k})
    s_t = argmin_{k<K} ‖G̃_λ(y_{t,k})‖, G̃ = (y_{t,k} − y_{t,k+1})/λ               # line 18
    return y_{t+1} = y_{t,s_t+1} (A6), v_t = v_{t,s_t}, u_t = u_{t,s_t}

Algorithm 2 (the outer driver):

    for t = 0..T−1:
        (y_{t+1}, v_t, u_t) ← Algorithm 3                                       # line 3
        descent phase: ‖v_t‖ ≥ α → x_{t+1} = x_t − η v_t/‖v_t‖                  # lines 5–6
                       else anchor m = t, x_{t+1} = x_t + ξ, ξ ~ U(B₀(r))          # lines 8–9
        escape phase:  D = η_H² Σ_{j=m+1}^t ‖v_j‖²                              # line 12
                       D > (t − m)D̄ → rescaled exit step, back to descent        # lines 13–15
                       else x_{t+1} = x_t − η_H v_t; after t_thres such steps the
                       anchor x_m is the output (an SOSP certificate)              # lines 17–19

Privacy: data are touched only in Algorithm 3; every query clips per-sample x- and
y-partials (or their differences) separately and releases their means with Gaussian
noise of multiplier σ (std σ·2C/|B|, replace-one); the escape test, the ball perturbation
(public randomness), the selection s_t and the output are post-processing. Batches are
fixed-size without replacement, fresh for every query.

Calibrations: ``paper`` is Appendix D's, the advanced composition theorem over the run's
queries (one (ε₀, δ₀) Gaussian mechanism per query, no amplification by sampling), i.e.
``advanced``; ``pld``/``rdp`` calibrate the same ledger tightly (with amplification by
sampling without replacement). σ is the refresh noise multiplier; increments get
σ·ratio, ratio = 1 (``noise_split: uniform``, App. D: the same σ for every query) or the
ratio Algorithm 3's lines 1–2 imply (``alg3``). The plan reports the per-coordinate noise
stds and Algorithm 3's own formulas (c = 1) beside them.

``schedule: erm`` replaces (T, q, K, S₁, S₂, α) by Theorem 1's proof-derived ERM choices
(resolution A10) from ε̄ = √(d log(1/δ))/(nε), d = max(d_x, d_y): S₁ = n, K = 1,
T = ⌈c_T ε̄^{−4/3}⌉, q = max(1, ⌊1/(Tε̄²)⌋), S₂ = min(n, max(⌈n/√T⌉, ⌈1/(Tε̄²)⌉)),
α = c_α ε̄^{2/3} and η = ``lr``·α (a normalised step proportional to the target accuracy),
and Lemma 6's t_thres = ⌈2 ln(√d/r)/(η_H √(ρ_Φ α))⌉ = Õ(1/(η_H α_H)) (so D̄ = R²/t_thres²
follows α too); used by the rate check of xu2026 Table 1.

Resolutions of the paper's ambiguities (notes §2.6), each a parameter where it matters:

* A1: Algorithm 3's "universal constant" c = 1 in the reported formulas;
* A2: K > 1 increments per step are all counted (√(TK), not √T);
* A3: no k = 0 increment right after a refresh (``refresh_increment: true`` is the literal
  algorithm, which counts the x-move twice);
* A5: t = 0 is a refresh and x_{−1} = x₀;
* A6: s_t ranges over k = 0..K−1 (y_{t,K} has no u_{t,K}) and, deviating from the notes'
  recommendation, y_{t+1} = y_{t,s_t+1}, the ascent step taken from the selected point
  (``select: next``): returning y_{t,s_t} itself (``current``) never moves y when K = 1,
  the case the proofs treat (where Algorithm 3 is then joint GDA on w = (x, y)), and in
  noise it keeps picking k = 0. (v_t, u_t) stay the estimates at (x_t, y_{t,s_t}), and
  the next call's k = 0 increment runs from that point to (x_{t+1}, y_{t+1});
* A7: α is an input; A8: without a certificate the output is x_T;
* A9: the run goes on to T after a certificate (the first certified anchor stays the
  output; ``early_return: true`` stops at it, as Algorithm 2 does);
* A13: increments clip at a fixed C_u (``diff_clip_mode: fixed``, App. D) or at
  C_u·‖w_{t,k} − w_{t,k−1}‖ (``movement``, the theory's data-independent L‖Δw‖; a zero move
  releases nothing);
* A19: App. D's (η_x, η_y) = (η, λ); η_H, r, t_thres, D̄ (= R²/t_thres²) and α are not in the
  paper: defaults are the notes' suggestions (§2.4);
* the uniform-ball perturbation ξ = r U^{1/d} g/‖g‖ uses public randomness.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from pydantic import PositiveFloat

from algorithms.base import (
    INTERNAL,
    OPTIONAL,
    Algorithm,
    Extras,
    Plan,
    PrivacyTarget,
    Rate,
    Step,
    Trace,
    register_algorithm,
)
from algorithms.minimax import (
    batch_sampling,
    draw_batch,
    minimax_oracle,
    private_partial_diffs,
    private_partials,
)
from algorithms.premises import NormTracker, clip_keys
from algorithms.privacy.ledger import Ledger, Mechanism, Release
from problems.base import DataInfo
from problems.minimax import MinimaxOracle
from problems.oracles import Oracle
from problems.params import Count, params


@dataclass
class Estimate:
    """(v, u): the tracked estimates of (∇_x f, ∇_y f) at (x_t, y), and that y."""

    v: Any
    u: Any
    y: Any


@params
class DPRGDAParams:
    steps: Count = 400
    inner_steps: Count = 5
    period: Count = 10
    batch_refresh: Count = 200
    batch_diff: Count = 50
    lr: PositiveFloat = 0.2
    lr_y: PositiveFloat = 0.8
    clip: PositiveFloat = 1.0
    diff_clip: PositiveFloat = 1.0
    diff_clip_mode: Literal["fixed", "movement"] = "fixed"
    alpha: PositiveFloat = 0.3
    lr_escape: PositiveFloat = 0.2
    radius: PositiveFloat = 0.05
    escape_steps: Count = 20
    escape_radius: PositiveFloat = 0.5
    refresh_increment: bool = False
    select: Literal["next", "current"] = "next"
    early_return: bool = False
    noise_split: Literal["uniform", "alg3"] = "uniform"
    schedule: Literal["given", "erm"] = "given"
    theory_steps: PositiveFloat = 1.0
    theory_alpha: PositiveFloat = 1.0

    @property
    def movement(self) -> float:
        """D̄ = R²/t_thres² (Lemma 6: t_thres·√D̄ ≤ R)."""
        return self.escape_radius**2 / self.escape_steps**2


def eps_bar(data: DataInfo, target: PrivacyTarget) -> float:
    """ε̄ = √(d log(1/δ))/(nε) with d = max(d_x, d_y)."""
    d = max(data.d, int(data.constants.get("d_y", 0)))
    return math.sqrt(d * math.log(1.0 / target.delta)) / (data.n * target.epsilon)


def escape_threshold(alpha: float, lr_escape: float, radius: float, d: int, rho: float
                     ) -> int:
    """Lemma 6's t_thres = 2 ln(η_H α_H L_Φ/(C ρ_Φ r₀))/(η_H α_H) = Õ(1/(η_H α_H)) with
    α_H = √(ρ_Φ α), r₀ = δ₂ r/√d, taking the log's free constants L_Φ η_H α_H/(C ρ_Φ) and
    δ₂ as 1: t_thres = ⌈2 ln(√d/r)/(η_H α_H)⌉ (at least 1)."""
    alpha_h = math.sqrt(rho * alpha)
    return max(1, math.ceil(2.0 * max(math.log(math.sqrt(d) / radius), 1.0)
                            / (lr_escape * alpha_h)))


def erm_schedule(params: DPRGDAParams, data: DataInfo, target: PrivacyTarget
                 ) -> DPRGDAParams:
    """Theorem 1's ERM parameters (module docstring) at this (n, d, ε, δ), with Lemma 6's
    escape threshold t_thres (:func:`escape_threshold`, ρ_Φ from the problem's
    ``hessian_lipschitz``, else 1) and D̄ = R²/t_thres² following it."""
    if math.isinf(target.epsilon):
        raise ValueError("dp_rgda schedule: erm needs a finite epsilon")
    e = eps_bar(data, target)
    steps = math.ceil(params.theory_steps * e ** (-4 / 3))
    period = max(1, min(steps, math.floor(1.0 / (steps * e * e))))
    batch_diff = min(data.n, max(math.ceil(data.n / math.sqrt(steps)),
                                 math.ceil(1.0 / (steps * e * e))))
    alpha = params.theory_alpha * e ** (2 / 3)
    rho = float(data.constants.get("hessian_lipschitz", 1.0))
    return replace(params, steps=steps, period=period, inner_steps=1, batch_refresh=data.n,
                   batch_diff=batch_diff, alpha=alpha, lr=params.lr * alpha,
                   escape_steps=escape_threshold(alpha, params.lr_escape, params.radius,
                                                 data.d, rho))


def refresh_steps(p: DPRGDAParams) -> int:
    """#{t < T : t mod q = 0}."""
    return math.ceil(p.steps / p.period)


def increments(p: DPRGDAParams) -> int:
    """K per step, one fewer after a refresh (A3) unless ``refresh_increment``."""
    skipped = 0 if p.refresh_increment else refresh_steps(p)
    return p.steps * p.inner_steps - skipped


def increment_ratio(p: DPRGDAParams, n: int) -> float:
    """Increment noise multiplier over refresh noise multiplier: 1 (``uniform``, App. D)
    or the ratio of Algorithm 3's lines 1–2 as multipliers of 2C/S (``alg3``):
    max(1, S₂√(TK)/n) / max(1, S₁√(T/q)/n)."""
    if p.noise_split == "uniform":
        return 1.0
    refresh = max(1.0, min(p.batch_refresh, n) * math.sqrt(p.steps / p.period) / n)
    increment = max(1.0, min(p.batch_diff, n) * math.sqrt(p.steps * p.inner_steps) / n)
    return increment / refresh


def ball(mech: Mechanism, d: int, radius: float) -> np.ndarray:
    """ξ ~ Uniform(B₀(r)) in R^d from public randomness (post-processing: no ledger entry)."""
    g = mech.public.standard_normal(d)
    return radius * mech.public.random() ** (1.0 / d) * g / np.linalg.norm(g)


@dataclass(frozen=True)
class DPRGDAExtras(Extras):
    """The run's schedule and its noise, beside Algorithm 3's formulas (c = 1)."""

    #: the params the run uses: the given ones, or Theorem 1's ERM schedule
    resolved: DPRGDAParams = field(metadata=INTERNAL)
    queries: int
    std_refresh: float
    std_increment: float
    increment_noise_ratio: float
    schedule: dict[str, Any]
    escape_steps: int
    alpha: float
    std_alg3_refresh: float | None = field(default=None, metadata=OPTIONAL)
    std_alg3_increment: float | None = field(default=None, metadata=OPTIONAL)
    eps_bar: float | None = field(default=None, metadata=OPTIONAL)


@register_algorithm
class DPRGDA(Algorithm[DPRGDAParams, DPRGDAExtras]):
    """DP RGDA: SPIDER-tracked GDA with normalised descent and perturb-and-monitor escape."""

    name = "dp_rgda"
    paper = "xu2026"
    reference = ("Xu, Tao, Ding, Fan, Wang 2026, Finding Differentially Private Second Order "
                 "Stationary Points in Stochastic Minimax Optimization, Algs. 2-3")
    rate = Rate(objective="empirical", stationarity="second", privacy_exponent=2 / 3,
                sample_exponent=None,
                source="Theorem 1 (ERM), xu2026",
                note="‖∇Φ_S‖ ≤ α, λ_min(∇²Φ_S) ≥ −√(ρ_Φα) with α = Õ((√(d log(1/δ))/(nε))^{2/3}), "
                     "d = max(d₁, d₂); Theorem 2 (population, single pass): α = Õ(n^{-1/3} + "
                     "(√(d log(1/δ))/(nε))^{1/2})")
    minimax = True
    #: the refresh clip C is the main clip, the increments' C_u (× ‖Δw‖ under ``movement``)
    #: the ``diff`` clip; ``triggers``: escape phases entered (‖v_t‖ < α, line 8). No
    #: ``horizon``: Theorem 1's T needs L, F₀ and M, which the problems do not supply
    premises = ("steps_taken", "triggers", *clip_keys(), *clip_keys("diff"))
    #: App. D: advanced composition over the queries
    paper_accountant = "advanced"

    # -- schedule and privacy --------------------------------------------------------------
    def resolved(self, data: DataInfo, target: PrivacyTarget) -> DPRGDA:
        """With ``schedule: erm``, the algorithm at Theorem 1's ERM schedule."""
        if self.params.schedule != "erm":
            return self
        return DPRGDA(erm_schedule(self.params, data, target))

    def steps(self, data: DataInfo) -> int:
        return self.params.steps

    def batch_size(self, data: DataInfo) -> float:
        return float(self.params.batch_diff)

    def planned_ledger(self, data: DataInfo, sigma: float) -> Ledger:
        p, ledger = self.params, Ledger()
        for tag, size, clip, count, multiplier in (
                ("refresh", p.batch_refresh, p.clip, refresh_steps(p), sigma),
                ("increment", p.batch_diff, p.diff_clip, increments(p),
                 sigma * increment_ratio(p, data.n))):
            if count:
                size = min(size, data.n)
                release = [Release("gaussian", f"{tag}_{part}", sigma=multiplier,
                                   sensitivity=2 * clip / size) for part in ("x", "y")]
                ledger.record(batch_sampling(data.n, size), release, count)
        return ledger

    def extras(self, data: DataInfo, target: PrivacyTarget, sigma: float) -> DPRGDAExtras:
        """Per-coordinate noise stds of this plan beside Algorithm 3's formulas (c = 1)."""
        p, n = self.params, data.n
        alg3: dict[str, float] = {}
        if math.isfinite(target.epsilon):
            scale = math.sqrt(math.log(1.0 / target.delta)) / target.epsilon
            alg3 = {"std_alg3_refresh": p.clip * scale * max(
                        1.0 / p.batch_refresh, math.sqrt(p.steps / p.period) / n),
                    "std_alg3_increment": p.diff_clip * scale * max(
                        1.0 / p.batch_diff, math.sqrt(p.steps * p.inner_steps) / n),
                    "eps_bar": eps_bar(data, target)}
        return DPRGDAExtras(
            resolved=p, queries=refresh_steps(p) + increments(p),
            std_refresh=sigma * 2 * p.clip / min(p.batch_refresh, n),
            std_increment=sigma * increment_ratio(p, n) * 2 * p.diff_clip / min(p.batch_diff, n),
            increment_noise_ratio=increment_ratio(p, n),
            schedule={k: getattr(p, k) for k in ("steps", "period", "inner_steps",
                                                 "batch_refresh", "batch_diff", "alpha", "lr",
                                                 "escape_steps")},
            escape_steps=p.escape_steps, alpha=p.alpha, **alg3)

    # -- Algorithm 3 -----------------------------------------------------------------------
    def inner(self, oracle: MinimaxOracle, mech: Mechanism, plan: Plan[DPRGDAExtras], t: int,
              x: Any, x_prev: Any, y: Any, state: Estimate | None,
              clips: Mapping[str, NormTracker | None] | None = None) -> tuple[Any, Estimate]:
        """One call of Algorithm 3: y_{t+1} and (v_t, u_t) with the y they estimate at; the
        per-sample norms go to ``clips`` (suffix → tracker; None: not tracked)."""
        p, sigma, tracked = plan.extra.resolved, plan.sigma, clips if clips is not None else {}
        ys, vs, us = [y], [], []
        start = 0
        if t % p.period == 0 or state is None:  # lines 4-8
            batch = draw_batch(mech, oracle.n, p.batch_refresh)
            v, u = private_partials(mech, oracle, x, y, batch, clip=p.clip, sigma=sigma,
                                    tag="refresh", norms=tracked.get(""))
            if not p.refresh_increment:  # A3
                vs, us, start = [v], [u], 1
                ys.append(oracle.project_y(y + p.lr_y * u))
            previous = (x, y)
        else:  # line 10: (v, u) estimate at (x_{t-1}, state.y)
            v, u = state.v, state.u
            previous = (x_prev, state.y)
        for k in range(start, p.inner_steps):  # lines 12-16
            point = (x, ys[k])
            v, u = self._increment(p, oracle, mech, sigma, tracked.get("diff"), point, previous,
                                   v, u)
            vs.append(v)
            us.append(u)
            ys.append(oracle.project_y(ys[k] + p.lr_y * u))
            previous = point
        gaps = [oracle.norm(ys[k] - ys[k + 1]) for k in range(p.inner_steps)]
        s = int(np.argmin(gaps))  # line 18 (G̃ = (y_k − y_{k+1})/λ; λ is common)
        y_next = ys[s + 1] if p.select == "next" else ys[s]
        return y_next, Estimate(vs[s], us[s], ys[s])

    def _increment(self, p: DPRGDAParams, oracle: MinimaxOracle, mech: Mechanism,
                   sigma: float, norms: NormTracker | None, point: tuple[Any, Any],
                   previous: tuple[Any, Any], v: Any, u: Any) -> tuple[Any, Any]:
        xp = oracle.xp
        bound, scale = p.diff_clip, 1.0
        if p.diff_clip_mode == "movement":  # A13
            scale = oracle.norm(xp.concat([point[0] - previous[0], point[1] - previous[1]]))
            bound *= scale
            if bound == 0.0:
                return v, u  # the difference query is exactly zero: nothing to release
        batch = draw_batch(mech, oracle.n, p.batch_diff)
        dv, du = private_partial_diffs(mech, oracle, point, previous, batch, clip=bound,
                                       sigma=sigma * increment_ratio(p, oracle.n),
                                       tag="increment", norms=norms, scale=scale)
        return v + dv, u + du

    # -- Algorithm 2 -----------------------------------------------------------------------
    def iterate(self, oracle: Oracle, plan: Plan[DPRGDAExtras], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        mm, p = minimax_oracle(oracle, self.name), plan.extra.resolved
        backend = mm.backend
        trace.clips = {"": NormTracker(backend, p.clip), "diff": NormTracker(backend, p.diff_clip)}
        facts = trace.facts
        facts.update(triggers=0, escapes=0, certificates=[], stopped_at=None)
        x = x_prev = mm.x0  # A5
        y, state = mm.y0, None
        escape, anchor_t, anchor, esc, moved_sq = False, 0, x, 0, 0.0
        for t in range(p.steps):
            y, state = self.inner(mm, mech, plan, t, x, x_prev, y, state, trace.clips)  # line 3
            v = state.v
            v_norm = mm.norm(v)
            x_prev = x
            if not escape:
                if v_norm >= p.alpha:  # lines 5-6
                    x = x - (p.lr / v_norm) * v
                else:  # lines 8-9
                    facts["triggers"] += 1
                    escape, anchor_t, anchor, esc, moved_sq = True, t, x, 0, 0.0
                    x = x + backend.asarray(ball(mech, mm.d, p.radius))
            else:
                moved_sq += v_norm**2  # line 12 (without η_H², applied below)
                if p.lr_escape**2 * moved_sq > (t - anchor_t) * p.movement:  # lines 13-15
                    x = x - math.sqrt((t - anchor_t) * p.movement / moved_sq) * v
                    escape = False
                    facts["escapes"] += 1
                else:  # lines 17-19
                    x = x - p.lr_escape * v
                    esc += 1
                    if esc == p.escape_steps:  # the anchor x_m is certified
                        facts["certificates"].append(anchor_t)
                        if trace.output is None:
                            trace.output = anchor  # Algorithm 2's return (else x_T, A8)
                        escape = False
                        if p.early_return:
                            facts["stopped_at"] = t + 1
                            yield Step(t + 1, x)
                            return
            yield Step(t + 1, x)

    def diagnostics(self, trace: Trace) -> dict[str, Any]:
        facts = trace.facts
        certificates = facts.get("certificates", [])
        return {"escape_triggers": facts.get("triggers", 0), "escapes": facts.get("escapes", 0),
                "certificates": len(certificates),
                "first_certificate_t": certificates[0] if certificates else None,
                "stopped_at": facts.get("stopped_at")}
