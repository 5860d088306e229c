"""``spider_sosp`` (liu2024, Algorithms 2–4): single-pass SpiderBoost with adaptive batches,
tree-aggregated gradient noise and a Hessian-model saddle escape; the notes' "Alg 3-R".

    drift ← κ, frozen ← 0, count ← 0, esc ← False
    for t = 0..T−1:
      if drift ≥ κ or count ≥ τ:                                    # lines 4–6: O1, O3
          ∇ ← (1/b) Σ ∇f(x_t; z),  H ← (1/b) Σ ∇²f(x_t; z'),  new tree, drift ← count ← 0
      else:                                                         # lines 8–9: O2, O4
          b_t ← b_t(‖g_{t−1}‖)  (A6)
          ∇ ← ∇ + (1/b_t) Σ [∇f(x_t; z) − ∇f(x_{t−1}; z)]
          H ← H + (1/b_t) Σ [∇²f(x_t; z') − ∇²f(x_{t−1}; z')]
      ∇̃_t ← ∇ + TREE(k)                                              # released, k = leaf
      if not esc and frozen ≤ 0 and t ≥ 1 and ‖∇̃_t‖ ≤ c_det·α:       # line 11 (A7)
          esc ← True, frozen ← Γ, (g_a, H_a, x_a) ← (∇̃_t, H, x_t), count += 1
      g_t ← g_a + H_a(x_t − x_a) + N(0, σ_esc² I) if esc else ∇̃_t    # lines 14–18 (Alg. 2)
      x_{t+1} ← x_t − g_t/M,  drift += ‖g_t‖,  frozen −= 1           # line 19
      if esc and (‖x_{t+1} − x_a‖ ≥ Ξ or frozen ≤ 0): esc ← False     # lines 20–21

Every oracle call draws fresh samples from one pass over the data (``mech.pool``); the run
stops, recorded as such, when the pass cannot fill the next call's batch(es) (A3).

Privacy (notes §3, exact): two streams over disjoint single-use batches. Gradient leaves
(O1 with replace-one sensitivity 2G/b, O2 with 2M‖x_t − x_{t−1}‖/b_t = 2‖g_{t−1}‖/b_t)
enter the tree (algorithms/privacy/tree.py), which records each leaf's nodes; each escape
release depends on the Hessian estimate H_a, whose records are in the O3 batch (2M/b) and
the O4 batches (2ρ‖Δx‖/b_t) of its lifetime: the release of sensitivity s·‖x_t − x_a‖ is
recorded on each of those batches. Per-sample gradients are clipped at G and per-sample
differences at M‖Δx‖ (no-ops under Assumption 3.1); the Hessian's sensitivity rests on
the per-sample bounds M and ρ of Assumption 3.1, so the problem must supply true constants
(``strict_saddle`` does). Batches are ``separate`` (the literal algorithm: each oracle its
own batch, the streams compose in parallel) or ``shared`` (O1/O3 and O2/O4 on one batch,
the streams add up).

Calibration. With ``parameters: resolved`` (Alg 3-R, notes §2.6) utility fixes the noise,
σ_tree = c_tree·γ/√(dL) and σ_esc = γ/√(d ln(T/ι)), and the calibrated multiplier σ sets the
sensitivity targets s_g = σ_tree/σ, s_H = σ_esc/(σΞ), hence the batch sizes
b = max{2G/s_g, c_v G²/γ², c_v M²/ϰ², 2M/s_H} and
b_t(u) = max{2u/s_g, c_v κu/γ², c_v ρ²κu/(M²ϰ²), 2ρu/(M s_H), 1}. With ``parameters: paper``
the batches are Theorem 3.17's, b = G√d/(εα) + G²/α² + M√d/(ρε) + M²/(ρα) and
b_t = max{‖g‖√d/(αε), κ‖g‖/α², ρκ‖g‖/(M²α), 1}, and the noise is σ·(2G/b) for both streams;
``calibration: paper`` is the paper's σ_tree = σ_t = α/√d (so σ = α b/(2G√d)), whose
realised ε the accountants report (G1: far above the target). The planned ledger is the
worst record: L = ⌈log₂T⌉ + 1 tree nodes, or K = Γτ escape releases.

Deviations and resolved ambiguities (notes §2.1–2.6):

* T1–T5: the tree's levels 0..⌈log₂Σ⌉, node noise drawn once and reused;
* A4: ∇̃_t is released on refresh steps too, and the tree restarts at every refresh (O1 is
  leaf 1 of a new tree);
* A6: b_t from ‖g_{t−1}‖ = M‖x_t − x_{t−1}‖ (the paper's b_t(‖g_t‖) is circular), ceiled,
  at least 1;
* A7: the escape threshold γ log³(·) is c_det·α (the literal log³ is ~10³);
* A9: a refresh forced by ``count`` mid-escape keeps the snapshot H_a; the ledger charges
  the snapshot's records for every release that uses it;
* A11/S1: the output is the anchor of the first escape that fails to move Ξ within Γ steps
  (a certificate, post-processing), else the last iterate; ``early_stop`` ends the run there;
* A13: noise never depends on realised maxima: sensitivity targets are fixed in advance;
* G1: ``tau: paper`` (α^{3/2}/(M√ρ) < 1, a refresh after every escape) or ``repaired``,
  τ = ⌈κ√ρ/(M√α)⌉; escape releases per Hessian lifetime K = Γ·max(1, τ);
* §2.7: γ = α/c_γ, ϰ = √(ρα)/c_H, Ξ = c_Ξ√(α/ρ), Γ = ⌈c_Γ (M/√(ρα)) ln(d/ι)⌉,
  T = ⌈c_T BM/α²⌉ (or ``steps``), κ = c_κ max{α√d/ε, (BGM)^{1/3}}; the concentration logs
  ℓ₁ are absorbed into c_v;
* ablations: ``noise: gaussian`` replaces the tree by per-leaf Gaussian noise at equal
  privacy (σ_tree/√L per leaf, Ganesh et al.'s increments); ``batch: fixed`` uses the
  worst-case b_t(G) at every step; ``escape: false`` never escapes (an FOSP method).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

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
from algorithms.lambda_min import hessian
from algorithms.premises import NormTracker, clip_keys
from algorithms.privacy.ledger import Batch, Ledger, Mechanism, Pool, Release, Sampling
from algorithms.privacy.tree import GaussianSums, TreeSums, tree_depth
from problems.base import DataInfo
from problems.oracles import Oracle
from problems.params import Count, Fraction, params

HESSIAN_MAX = 2000  # dense Hessian estimates (notes §6: dense is better for d ≲ 2000)


@params
class SpiderSOSPParams:
    alpha: PositiveFloat = 0.1
    steps: Count | None = None
    c_gamma: PositiveFloat = 4.0
    c_hess: PositiveFloat = 4.0
    c_xi: PositiveFloat = 1.0
    c_escape: PositiveFloat = 2.0
    c_steps: PositiveFloat = 32.0
    c_kappa: PositiveFloat = 1.0
    c_det: PositiveFloat = 1.0
    c_var: PositiveFloat = 1.0
    c_tree: PositiveFloat = 1.0
    iota: Fraction = 0.05
    gap: PositiveFloat = 2.0
    G: float | None = None
    M: float | None = None
    rho: float | None = None
    parameters: Literal["resolved", "paper"] = "resolved"
    tau: Literal["repaired", "paper"] = "repaired"
    batching: Literal["separate", "shared"] = "separate"
    batch: Literal["adaptive", "fixed"] = "adaptive"
    noise: Literal["tree", "gaussian"] = "tree"
    escape: bool = True
    early_stop: bool = False


@dataclass(frozen=True)
class Constants:
    """Everything Alg 3-R derives before it touches data (§2.7)."""

    G: float
    M: float
    rho: float
    d: int
    gamma: float
    varkappa: float
    xi: float
    escape_steps: int
    steps: int
    depth: int
    kappa: float
    tau: int
    sigma_tree: float
    sigma_escape: float

    @property
    def escape_releases(self) -> int:
        """K = Γ·τ: escape releases that can use one Hessian estimate."""
        return self.escape_steps * self.tau


def theorem_steps(p: SpiderSOSPParams, M: float) -> int:
    """T = ⌈c_T·B·M/α²⌉ (§2.7: Lemma 3.2's ≤ 16BM/α² descent steps plus the escapes, c_T =
    ``c_steps``, B = ``gap``): the horizon of Theorem 3.17's guarantee."""
    return math.ceil(p.c_steps * p.gap * M / p.alpha**2)


def derive(p: SpiderSOSPParams, data: DataInfo, epsilon: float) -> Constants:
    """The constants of Alg 3-R from the problem's G, M, ρ (or the params') and α."""
    def constant(given: float | None, key: str) -> float:
        value = given if given is not None else data.constants.get(key)
        if value is None:
            raise ValueError(f"spider_sosp needs the per-sample constant {key} (Assumption "
                             f"3.1): the problem has none; pass it as a parameter")
        return float(value)

    G, M, rho = constant(p.G, "G"), constant(p.M, "L"), constant(p.rho, "rho")
    d, a = data.d, p.alpha
    if d > HESSIAN_MAX:
        raise ValueError(f"spider_sosp keeps dense d × d Hessian estimates: d ≤ {HESSIAN_MAX}, "
                         f"got d = {d}")
    gamma, xi = a / p.c_gamma, p.c_xi * math.sqrt(a / rho)
    escape_steps = math.ceil(p.c_escape * M / math.sqrt(rho * a) * math.log(d / p.iota))
    steps = p.steps or theorem_steps(p, M)
    privacy = a * math.sqrt(d) / epsilon if math.isfinite(epsilon) else 0.0
    kappa = p.c_kappa * max(privacy, (p.gap * G * M) ** (1 / 3))
    tau = 1 if p.tau == "paper" else math.ceil(kappa * math.sqrt(rho) / (M * math.sqrt(a)))
    depth = tree_depth(steps)
    if p.parameters == "paper":
        sigma_tree = sigma_escape = a / math.sqrt(d)  # Thm 3.17 (replaced by σ·2G/b in plan)
    else:
        sigma_tree = p.c_tree * gamma / math.sqrt(d * depth)
        sigma_escape = gamma / math.sqrt(d * math.log(steps / p.iota))
    return Constants(G=G, M=M, rho=rho, d=d, gamma=gamma, varkappa=math.sqrt(rho * a) / p.c_hess,
                     xi=xi, escape_steps=escape_steps, steps=steps, depth=depth, kappa=kappa,
                     tau=tau, sigma_tree=sigma_tree, sigma_escape=sigma_escape)


@dataclass
class Batches:
    """Batch sizes for a noise multiplier σ: the refresh size b and the rule b_t(u)."""

    p: SpiderSOSPParams
    c: Constants
    sigma: float
    epsilon: float

    @property
    def s_grad(self) -> float:
        """Per-leaf sensitivity target of the gradient stream."""
        return self.c.sigma_tree / self.sigma

    @property
    def s_hess(self) -> float:
        """Operator-norm sensitivity target of the Hessian estimate."""
        return self.c.sigma_escape / (self.sigma * self.c.xi)

    def noise(self) -> tuple[float, float]:
        """(σ_tree, σ_esc): Alg 3-R's, fixed by utility; with ``parameters: paper`` σ·2G/b
        for both streams (the multiplier σ of O1's sensitivity)."""
        if self.p.parameters == "paper":
            sigma = self.sigma * 2 * self.c.G / self.refresh()
            return sigma, sigma
        return self.c.sigma_tree, self.c.sigma_escape

    def worst_sensitivities(self) -> tuple[float, float]:
        """The largest replace-one sensitivity of one record: (a gradient leaf, a Hessian
        record in operator norm). Alg 3-R sizes every batch to its targets (s_g, s_H). The
        paper's batches do not: O1's leaf has 2G/b, but an O2 leaf has 2u/b_t with
        b_t ≥ u·c, c = max{√d/(αε), κ/α², ρκ/(M²α)}, so up to 2/c; an O4 record
        2ρ(u/M)/b_t ≤ 2ρ/(Mc) beside O3's 2M/b (adaptive batches; u = ‖g_{t−1}‖)."""
        if self.p.parameters != "paper":
            return self.s_grad, self.s_hess
        c, a, e, b = self.c, self.p.alpha, self.epsilon, self.refresh()
        private = math.sqrt(c.d) / (a * e) if math.isfinite(e) else 0.0
        per_move = max(private, c.kappa / a**2, c.rho * c.kappa / (c.M**2 * a))
        return max(2 * c.G / b, 2 / per_move), max(2 * c.M / b, 2 * c.rho / (c.M * per_move))

    def multipliers(self) -> tuple[float, float]:
        """Noise over the worst record's sensitivity: (a tree node, an escape release,
        whose sensitivity is the Hessian record's times Ξ)."""
        (tree, escape), (leaf, hess) = self.noise(), self.worst_sensitivities()
        return tree / leaf, escape / (hess * self.c.xi)

    def refresh(self) -> int:
        c, cv = self.c, self.p.c_var
        if self.p.parameters == "paper":
            e, a, d = self.epsilon, self.p.alpha, c.d
            private = (c.G * math.sqrt(d) / (e * a) + c.M * math.sqrt(d) / (c.rho * e)
                       if math.isfinite(e) else 0.0)
            return math.ceil(private + c.G**2 / a**2 + c.M**2 / (c.rho * a))
        return math.ceil(max(2 * c.G / self.s_grad, cv * c.G**2 / c.gamma**2,
                             cv * c.M**2 / c.varkappa**2, 2 * c.M / self.s_hess))

    def difference(self, u: float) -> int:
        """b_t for ‖g_{t−1}‖ = u (A6)."""
        c, cv, k = self.c, self.p.c_var, self.c.kappa
        if self.p.batch == "fixed":
            u = c.G
        if self.p.parameters == "paper":
            a, e = self.p.alpha, self.epsilon
            private = u * math.sqrt(c.d) / (a * e) if math.isfinite(e) else 0.0
            return max(1, math.ceil(max(private, k * u / a**2, c.rho * k * u / (c.M**2 * a))))
        return max(1, math.ceil(max(2 * u / self.s_grad, cv * k * u / c.gamma**2,
                                    cv * c.rho**2 * k * u / (c.M**2 * c.varkappa**2),
                                    2 * c.rho * u / (c.M * self.s_hess))))


def escape(g: np.ndarray, hess: np.ndarray, *, steps: int, radius: float, lr: float,
           std: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2 from the anchor 0 for a stack of trials: g (trials, d), H (trials, d, d).

    x_t = x_{t−1} − η(g + H x_{t−1} + ζ_{t−1}), ζ ~ N(0, std² I), until ‖x_t‖ ≥ Ξ (the
    trial escapes; y = x_t) or Γ steps (y = the anchor, E6). Returns (y − anchor, steps
    taken); the escape steps of :class:`SpiderSOSP` are the same recursion, interleaved
    with oracle calls and charged to H's records.
    """
    x = np.zeros_like(g)
    done = np.zeros(len(g), dtype=bool)
    taken = np.full(len(g), steps)
    for t in range(1, steps + 1):
        noise = std * rng.standard_normal(g.shape)
        x = np.where(done[:, None], x, x - lr * (g + np.einsum("tij,tj->ti", hess, x) + noise))
        out = ~done & (np.linalg.norm(x, axis=1) >= radius)
        taken[out] = t
        done |= out
        if done.all():
            break
    return np.where(done[:, None], x, 0.0), taken


@dataclass(frozen=True)
class SpiderSOSPExtras(Extras):
    """Alg 3-R's constants (stored as ``c_<name>``) and, for a private run, the batch sizes
    they give at the plan's σ, the noise over the worst record's sensitivity per stream
    (the planned ledger's multipliers) and how far σ_tree falls short of Theorem 2.2's
    σ = 4s√(log₂T ln(1/δ))/ε at the paper's add/remove sensitivity s of O1's leaf
    (``tree_shortfall_o1``) and of the largest leaf (``tree_shortfall``)."""

    constants: Constants = field(metadata=INTERNAL)
    b: int | None = field(default=None, metadata=OPTIONAL)
    b_t_at_G: int | None = field(default=None, metadata=OPTIONAL)
    escape_releases: int | None = field(default=None, metadata=OPTIONAL)
    tree_multiplier: float | None = field(default=None, metadata=OPTIONAL)
    escape_multiplier: float | None = field(default=None, metadata=OPTIONAL)
    tree_shortfall_o1: float | None = field(default=None, metadata=OPTIONAL)
    tree_shortfall: float | None = field(default=None, metadata=OPTIONAL)

    def to_dict(self) -> dict[str, Any]:
        return {**{f"c_{k}": v for k, v in vars(self.constants).items()}, **super().to_dict()}


@register_algorithm
class SpiderSOSP(Algorithm[SpiderSOSPParams, SpiderSOSPExtras]):
    """Alg 3-R: tree-noised adaptive-batch SpiderBoost with Hessian-model escapes."""

    name = "spider_sosp"
    paper = "liu2024"
    reference = ("Liu, Talwar 2024, Adaptive Batch Size for Privately Finding Second-Order "
                 "Stationary Points, Algs. 1-4")
    needs = ("G", "L", "rho")
    data_limited = True
    #: the batch sizes follow from α: α = 2 and a small c_v keep them to a few dozen samples
    small: ClassVar[dict[str, Any]] = {"alpha": 2.0, "c_var": 0.01, "batching": "shared"}
    rate = Rate(objective="population", stationarity="second", privacy_exponent=1 / 2,
                sample_exponent=1 / 3, source="Theorem 3.17 (Remark 3.18), liu2024",
                note="with the paper's τ the proof supports only 2/5 and n^{-2/7} (notes G2)")
    #: O1's clip at G is the main clip, O2's at M‖Δx‖ the ``diff`` clip (the Hessian
    #: estimates are not clipped: their bounds M, ρ are assumed); ``horizon``: ⌈c_T·B·M/α²⌉;
    #: ``triggers``: escapes started (line 11)
    premises = ("steps_taken", "horizon", "data_exhausted_at", "triggers", *clip_keys(),
                *clip_keys("diff"))

    def __init__(self, params: SpiderSOSPParams | None = None,
                 constants: Constants | None = None, epsilon: float = math.inf) -> None:
        super().__init__(params)
        #: Alg 3-R's constants and the target ε they were derived at (:meth:`resolved`)
        self.constants, self.epsilon = constants, epsilon

    # -- plan -----------------------------------------------------------------------------
    def resolved(self, data: DataInfo, target: PrivacyTarget) -> SpiderSOSP:
        """The algorithm with its constants derived for ``data`` and ``target``."""
        return SpiderSOSP(self.params, derive(self.params, data, target.epsilon),
                          target.epsilon)

    def extras(self, data: DataInfo, target: PrivacyTarget, sigma: float) -> SpiderSOSPExtras:
        c = self._constants()
        if sigma <= 0:
            return SpiderSOSPExtras(c)
        sizes = Batches(self.params, c, sigma, target.epsilon)
        b, (tree, escape), (sigma_tree, _) = sizes.refresh(), sizes.multipliers(), sizes.noise()
        theorem = 4 * math.sqrt(math.log2(c.steps) * math.log(1 / target.delta)) / \
            (target.epsilon * sigma_tree)  # Thm 2.2's σ per unit of sensitivity, over σ_tree
        return SpiderSOSPExtras(c, b=b, b_t_at_G=sizes.difference(c.G),
                                escape_releases=c.escape_releases, tree_multiplier=tree,
                                escape_multiplier=escape, tree_shortfall_o1=theorem * c.G / b,
                                tree_shortfall=theorem * sizes.worst_sensitivities()[0] / 2)

    def steps(self, data: DataInfo) -> int:
        return self._constants().steps

    def batch_size(self, data: DataInfo) -> float:
        return 1.0  # adaptive; the plan records b and b_t(G)

    def _constants(self) -> Constants:
        if self.constants is None:
            raise RuntimeError("spider_sosp: plan() first")
        return self.constants

    def planned_ledger(self, data: DataInfo, sigma: float) -> Ledger:
        """The worst record: L tree nodes (gradient stream), K escape releases (Hessian),
        each at the noise over the largest sensitivity a record can have
        (:meth:`Batches.multipliers`)."""
        c, ledger = self._constants(), Ledger()
        tree, escape = Batches(self.params, c, sigma, self.epsilon).multipliers()
        grad = [Release("gaussian", "tree_node", sigma=tree)] * c.depth
        hess = [Release("gaussian", "escape", sigma=escape)] * \
            (c.escape_releases if self.params.escape else 0)
        pool = Sampling("disjoint", data.n, rate=1 / data.n, size=1)
        if self.params.batching == "shared":
            ledger.record(pool, grad + hess)
        else:
            for releases in (grad, hess):
                if releases:
                    ledger.record(pool, releases)
        return ledger

    def paper_sigma(self, data: DataInfo, target: PrivacyTarget) -> float:
        """Thm 3.17's σ_tree = α/√d at the paper's b, as a multiplier of 2G/b."""
        if self.params.parameters != "paper":
            raise ValueError("spider_sosp: calibration paper needs parameters: paper")
        c = self._constants()
        b = Batches(self.params, c, 1.0, target.epsilon).refresh()
        return self.params.alpha / math.sqrt(c.d) / (2 * c.G / b)

    def paper_epsilon(self, data: DataInfo, sigma: float, delta: float) -> float | None:
        """ε as the paper computes it for this run's noise: Thm 2.2 for the tree,
        4s√(log₂T ln(1/δ))/σ_tree, plus Lemma 3.13 for the escapes,
        2Ξ s_H √(Γτ ln(1/δ))/σ_t with the paper's τ = α^{3/2}/(M√ρ), at the largest
        sensitivities of a record (:meth:`Batches.worst_sensitivities`) halved to the
        paper's add/remove convention (G/b, M/b, …); the two parts compose as ε/2 + ε/2."""
        c = self._constants()
        sizes = Batches(self.params, c, sigma, self.epsilon)
        (sigma_tree, sigma_escape), (leaf, hess) = sizes.noise(), sizes.worst_sensitivities()
        log = math.log(1 / delta)
        tree = 4 * (leaf / 2) * math.sqrt(math.log2(c.steps) * log) / sigma_tree
        tau = self.params.alpha**1.5 / (c.M * math.sqrt(c.rho))
        escapes = 2 * c.xi * (hess / 2) * math.sqrt(c.escape_steps * tau * log) / sigma_escape
        return tree + (escapes if self.params.escape else 0.0)

    # -- Algorithm 3 ----------------------------------------------------------------------
    def iterate(self, oracle: Oracle, plan: Plan[SpiderSOSPExtras], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        run = trace.state = _Run(self.params, plan.extra.constants, oracle, plan, mech)
        trace.clips.update(run.norms)
        for t in range(plan.steps):
            x = run.step(t)
            if x is None:
                break
            if run.certified is not None and trace.output is None:
                trace.output = run.certified  # S1: the first failed escape's anchor
            yield Step(t + 1, x, epoch=run.pool.progress)
            if trace.output is not None and self.params.early_stop:
                break

    def premise_data(self, trace: Trace) -> dict[str, Any]:
        run: _Run | None = trace.state
        return {**super().premise_data(trace),
                "horizon": None if run is None else theorem_steps(self.params, run.c.M),
                "data_exhausted_at": (trace.steps_taken if run is not None
                                      and run.stopped == "data" else None),
                "triggers": None if run is None else run.counts["escapes"]}

    def diagnostics(self, trace: Trace) -> dict[str, Any]:
        run: _Run | None = trace.state
        return {**(run.diagnostics() if run is not None else {}),
                "output": "certificate" if trace.output is not None else "last"}


class _Run:
    """The state of one run of Algorithm 3 (kept out of the registered class)."""

    def __init__(self, p: SpiderSOSPParams, c: Constants, oracle: Oracle,
                 plan: Plan[SpiderSOSPExtras], mech: Mechanism) -> None:
        self.p, self.c = p, c
        self.oracle, self.mech, self.xp = oracle, mech, oracle.xp
        self.sizes = Batches(self.p, self.c, plan.sigma, plan.target.epsilon)
        self.b = self.sizes.refresh()
        self.sigma_tree, self.sigma_escape = self.sizes.noise()
        self.pool: Pool = mech.pool(oracle.n, epochs=1)
        self.x, self.x_prev, self.g_norm = oracle.x0, oracle.x0, 0.0
        self.drift, self.frozen, self.count, self.escaping = self.c.kappa, 0, 0, False
        self.tree: TreeSums | GaussianSums | None = None
        self.hess: np.ndarray = np.zeros((self.c.d, self.c.d))
        self.lifetime: list[tuple[Batch, float]] = []
        self.anchor: tuple[Any, Any, np.ndarray, list[tuple[Batch, float]]] | None = None
        self.certified: Any = None
        self.counts = {"refreshes": 0, "differences": 0, "escapes": 0, "escapes_succeeded": 0,
                       "escapes_failed": 0, "escape_steps": 0}
        self.first_certificate_t: int | None = None
        self.escape_log: list[tuple[int, int, bool]] = []  # (start t, end t, moved Ξ)
        self.escape_start = 0
        self.stopped = "steps"
        #: per-sample norms against G (O1) and, divided by the move, against M (O2)
        self.norms = {"": NormTracker(oracle.backend, self.c.G),
                      "diff": NormTracker(oracle.backend, self.c.M)}

    def _take(self, size: int) -> tuple[Batch, Batch] | None:
        """The batch(es) of one oracle call: one shared, or two separate."""
        need = size if self.p.batching == "shared" else 2 * size
        if self.pool.used + need > len(self.pool.population):
            return None
        first = self.pool.take(size)
        second = first if self.p.batching == "shared" else self.pool.take(size)
        assert first is not None and second is not None
        return first, second

    def _new_sums(self) -> TreeSums | GaussianSums:
        if self.p.noise == "gaussian":  # equal privacy: one release of σ/√L per leaf
            return GaussianSums(self.mech, self.sigma_tree / math.sqrt(self.c.depth))
        return TreeSums(self.mech, self.sigma_tree)

    def refresh(self) -> Any | None:
        """O1 and O3 at x_t (lines 5–6): leaf 1 of a new tree."""
        taken = self._take(self.b)
        if taken is None:
            return None
        grad_batch, hess_batch = taken
        total, norms = self.oracle.clipped_grad_sum_and_norms(self.x, grad_batch.indices,
                                                              self.c.G)
        self.norms[""].add(norms)
        self.hess = hessian(self.oracle, self.x, hess_batch.indices)
        self.lifetime = [(hess_batch, 2 * self.c.M / self.b)]
        self.tree = self._new_sums()
        self.drift, self.count = 0.0, 0
        self.counts["refreshes"] += 1
        return self.tree.add(total / self.b, sensitivity=2 * self.c.G / self.b,
                             batch=grad_batch)

    def difference(self) -> Any | None:
        """O2 and O4 at (x_t, x_{t−1}) on the same samples (lines 8–9)."""
        assert self.tree is not None
        size = self.sizes.difference(self.g_norm)
        taken = self._take(size)
        if taken is None:
            return None
        grad_batch, hess_batch = taken
        step = self.oracle.norm(self.x - self.x_prev)
        delta, norms = self.oracle.clipped_grad_diff_sum_and_norms(
            self.x, self.x_prev, grad_batch.indices, self.c.M * step)
        delta = delta / size
        self.norms["diff"].add(norms, scale=step)
        self.hess = self.hess + (hessian(self.oracle, self.x, hess_batch.indices)
                                 - hessian(self.oracle, self.x_prev, hess_batch.indices))
        self.lifetime.append((hess_batch, 2 * self.c.rho * step / size))
        self.counts["differences"] += 1
        sensitivity = max(2 * self.c.M * step / size, 1e-300)  # a zero move is a zero leaf
        return self.tree.add(delta, sensitivity=sensitivity, batch=grad_batch)

    def escape_direction(self) -> Any:
        """g_a + H_a(x_t − x_a) + N(0, σ_esc² I) (Alg. 2 line 5), charged to H_a's records."""
        assert self.anchor is not None
        g_a, x_a, h_a, records = self.anchor
        model, distance = self.hessian_model(h_a, x_a)
        value = g_a + model
        if distance == 0.0:  # H_a(x_t − x_a) = 0: no data in this release
            return self.mech.perturb(value, self.sigma_escape)
        return self.mech.charged(value, std=self.sigma_escape, tag="escape",
                                 charges=[(batch, s * distance) for batch, s in records])

    def hessian_model(self, h_a: np.ndarray, x_a: Any) -> tuple[Any, float]:
        """(H_a(x_t − x_a) on the backend, ‖x_t − x_a‖): the dense Hessian estimates are
        float64 host arrays (assembled from HVPs), so the move goes to the host once, here."""
        move = self.oracle.backend.to_numpy(self.x - x_a).astype(np.float64)
        return self.oracle.backend.asarray(h_a @ move), float(np.linalg.norm(move))

    def step(self, t: int) -> Any | None:
        """One iteration; the new x, or None when the data run out."""
        c = self.c
        if self.drift >= c.kappa or self.count >= c.tau or self.tree is None:
            estimate = self.refresh()
        else:
            estimate = self.difference()
        if estimate is None:
            self.stopped = "data"
            return None
        if (self.p.escape and not self.escaping and self.frozen <= 0 and t >= 1
                and self.oracle.norm(estimate) <= self.p.c_det * self.p.alpha):  # line 11
            self.escaping, self.frozen = True, c.escape_steps
            self.anchor = (estimate, self.x, self.hess.copy(), list(self.lifetime))
            self.escape_start = t
            self.count += 1
            self.counts["escapes"] += 1
        g = self.escape_direction() if self.escaping else estimate
        if self.escaping:
            self.counts["escape_steps"] += 1
        self.x_prev, self.x = self.x, self.x - g / c.M  # line 19
        self.g_norm = self.oracle.norm(g)
        self.drift += self.g_norm
        self.frozen -= 1
        if self.escaping:
            self._end_escape(t)
        return self.x

    def _end_escape(self, t: int) -> None:
        """Lines 20–21; a failed escape certifies its anchor (S1)."""
        assert self.anchor is not None
        moved = self.oracle.norm(self.x - self.anchor[1]) >= self.c.xi
        if moved or self.frozen <= 0:
            self.escaping = False
            self.escape_log.append((self.escape_start, t, moved))
            self.counts["escapes_succeeded" if moved else "escapes_failed"] += 1
            if not moved and self.certified is None:
                self.certified, self.first_certificate_t = self.anchor[1], t + 1

    def diagnostics(self) -> dict[str, Any]:
        c = self.c
        return {**self.counts, "first_certificate_t": self.first_certificate_t,
                "samples_used": int(self.pool.used), "stopped": self.stopped, "b": self.b,
                "b_t_at_G": self.sizes.difference(c.G), "escape_horizon": c.escape_steps,
                "escape_radius": c.xi, "kappa": c.kappa, "tau": c.tau,
                "sigma_tree": self.sigma_tree, "sigma_escape": self.sigma_escape}
