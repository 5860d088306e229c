"""``noisy_sgd``: DP-SGD without clipping (avdiukhin2024, Algorithm 2).

    choose Δ > c₂ · C · √(T log(1/δ)) / (n ε)                 # Theorem 3.3
    for t = 0..T−1:
        uniformly sample a minibatch B_t                      # line 2
        ξ_t ~ N(0, Δ² I_d)                                    # line 3
        x_{t+1} = x_t − η (avg_{i∈B_t} ∇f_i(x_t) + ξ_t)        # line 4, NO clipping
    optionally: privately select an SOSP among the iterates   # §3.4 (sosp_selection)

Privacy holds only on the event that every per-sample gradient seen has norm ≤ C
(Lemma 3.2): then Algorithm 2 equals clipped DP-SGD (Algorithm 1) step for step and
inherits its guarantee, (ε, 2δ) in total. Nothing is clipped; when a gradient exceeds C
the guarantee of that run is void. With ``check_bound`` (default) every per-sample
gradient norm is measured, in training and, with ``select``, at every candidate of the
selection (whose sensitivity 2C/n needs the same bound), and the run reports the largest
one, how many exceeded C and ``guarantee_void``; a void run records ε = ∞ with the norm
that broke the bound (``void_reason``).

Deviations and resolved ambiguities:

* C (``bound``) defaults to the problem's published gradient bound ``G`` where it has one
  (e.g. ``strict_saddle``); otherwise it must be given (the paper picks C = 2.5
  empirically, itself an unaccounted use of the data). ``bound_rule: lemma_3_2`` takes C
  from Lemma 3.2 instead (Figure 3(b)), with L, f_max and σ measured at x₀ when the run
  starts and the unnamed constant c as ``lemma_c``; the noise multiplier σ, hence ε, does
  not depend on C. ``lemma_data: train`` (default) measures them on the private training
  set (an unaccounted use of it, as the paper's own empirical C); ``held_out`` measures
  them on the problem's held-out (test) split, which the guarantee does not cover, so C
  uses no private data. Lemma 3.2 also needs η ≤ min(1/L, 1/(σ√T)): the run records
  that limit (``lemma_lr_max``) and whether its η meets it.
* Every run records the largest per-sample norm of each batch, in at most
  :data:`TRACE_POINTS` blocks of consecutive steps (``max_norm_trace``: [last step of the
  block, largest norm in it]), for the norm-against-C figure.
* Sampling: Poisson with q = B/n by default, because Theorem 3.1 (Abadi et al.) that the
  proof invokes assumes it; noise N(0, (σC)²) goes on the sum, divided by B, so
  Δ = σC/B. ``sampling: fixed`` is the paper's literal "minibatch of size B"
  (replace-one, sensitivity 2C).
* ``calibration: paper`` is Theorem 3.3 with its unnamed constant c₂ as a parameter
  (default 1): Δ = c₂ C √(T ln(1/δ)) / (n ε), i.e. σ = c₂ B √(T ln(1/δ)) / (n ε).
  ``eps_paper`` inverts that formula; ``eps_pld``/``eps_rdp`` are what σ really spends.
  Theorem 3.1 also needs ε < c₁ T B²/n² (another unnamed constant, ``c1``, default 1): the
  plan records the largest ε that condition admits and whether the target meets it.
* Output: the last iterate, as in the paper's experiments; with ``select`` the privately
  selected iterate of §3.4 (the theory's output), at an extra ε_s (``select_epsilon``):
  ``calibration: paper`` then spends ε − ε_s on training so the paper's total is ε.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Self

import numpy as np
from pydantic import PositiveFloat, model_validator

from algorithms.base import (
    INTERNAL,
    Algorithm,
    Extras,
    Plan,
    PrivacyTarget,
    Rate,
    Step,
    Trace,
    register_algorithm,
)
from algorithms.dp_sgd import noisy_sum_ledger, sum_sensitivity
from algorithms.premises import NormTracker, clip_keys, unmeasured
from algorithms.privacy.ledger import Batch, Ledger, Mechanism
from algorithms.sgd import SGDParams, draw_minibatch, minibatch_size
from algorithms.sosp_selection import (
    SelectionConstants,
    SelectionParams,
    candidate_times,
    select,
    selection_constants,
    selection_release,
    stored_constants,
)
from problems.base import DataInfo
from problems.oracles import Oracle
from problems.params import params
from problems.statistics import start_statistics


def lemma_3_2_bound(smoothness: float, f_max: float, grad_std: float, n: int, steps: int,
                    delta: float, c: float = 1.0) -> float:
    """Lemma 3.2's high-probability bound on every per-sample gradient norm seen:

    C = 2√(L f_max) + c (L √log(T/δ) + σ √log(nT) + √(σ log(1/δ))),

    with the paper's unnamed absolute constant c as a parameter (the term √(σ log(1/δ))
    is kept as printed; notes §2.7 #14). Used for Figure 3(b), "C chosen per Theorem 3.3".
    """
    return 2 * math.sqrt(smoothness * f_max) + c * (
        smoothness * math.sqrt(math.log(steps / delta))
        + grad_std * math.sqrt(math.log(n * steps))
        + math.sqrt(grad_std * math.log(1 / delta)))


#: the trace clip key of the per-sample norms measured at the selection's candidates
SELECTION = "selection"
TRACE_POINTS = 48


def lemma_lr_max(smoothness: float, grad_std: float, steps: int) -> float:
    """Lemma 3.2's step-size condition: η ≤ min(1/L, 1/(σ√T))."""
    return min(1 / smoothness, 1 / (grad_std * math.sqrt(steps)))


def norm_trace(maxima: np.ndarray, points: int = TRACE_POINTS) -> list[list[float]]:
    """[[last step of the block, largest norm in it], ...]: each batch's largest per-sample
    norm (batch t = step t) reduced to at most ``points`` blocks of consecutive steps."""
    if not maxima.size:
        return []
    edges = np.unique(np.linspace(0, maxima.size, min(points, maxima.size) + 1).astype(int))
    return [[int(hi), float(np.nanmax(maxima[lo:hi])) if np.isfinite(maxima[lo:hi]).any()
             else math.nan] for lo, hi in itertools.pairwise(edges)]


@params
class NoisySGDParams(SGDParams, SelectionParams):
    bound: PositiveFloat | None = None
    bound_rule: Literal["given", "lemma_3_2"] = "given"
    lemma_c: PositiveFloat = 1.0
    lemma_data: Literal["train", "held_out"] = "train"
    c2: PositiveFloat = 1.0
    c1: PositiveFloat = 1.0
    check_bound: bool = True

    @model_validator(mode="after")
    def _lemma_measures_the_bound(self) -> Self:
        if self.bound_rule == "lemma_3_2" and (self.select or self.bound is not None):
            raise ValueError("bound_rule lemma_3_2 measures C itself: give no bound, no select")
        return self


@dataclass(frozen=True)
class NoisySGDExtras(Extras):
    #: C at plan time (NaN with ``lemma_3_2``: measured when the run starts)
    bound: float
    #: L2 sensitivity of the noisy sum at that C
    sensitivity: float
    #: the largest ε Theorem 3.1 admits, ε < c₁ T B²/n²
    abadi_max_epsilon: float
    #: d, for the noise-to-bound ratio √d·σ/B = √d·Δ/C
    d: int
    #: ``lemma_data: held_out``: the data whose held-out split Lemma 3.2 is measured on
    held_out: DataInfo | None = field(default=None, metadata=INTERNAL)
    #: ρ, L and Δ_q of the §3.4 selection (``select``; stored flat)
    selection: SelectionConstants | None = field(default=None, metadata=INTERNAL)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), **stored_constants(self.selection)}


@register_algorithm
class NoisySGD(Algorithm[NoisySGDParams, NoisySGDExtras]):
    """Noisy SGD without clipping; noise scaled to an assumed gradient bound C."""

    name = "noisy_sgd"
    paper = "avdiukhin2024"
    reference = ("Avdiukhin, Dinitz, Fan, Yaroslavtsev 2024, Noise is All You Need: "
                 "Private Second-Order Convergence of Noisy SGD, Alg. 2")
    rate = Rate(objective="empirical", stationarity="second", privacy_exponent=1 / 2,
                sample_exponent=None,
                source="Theorem 3.5 (Theorem 1.1), avdiukhin2024",
                note="α = Ω̃(f_max·d^{1/4}/√(nε)) = Ω̃((√d/(nε))^{1/2}); at least half of the "
                     "iterates are α-SOSPs w.h.p. (the output needs the §3.4 selection); "
                     "holds only on the event that no per-sample gradient exceeds C")
    assumes_bound = True
    #: C is the assumed bound: ``clipped_fraction`` is the fraction of per-sample gradients
    #: over C (each voids the guarantee); unmeasured without ``check_bound``
    premises = ("steps_taken", *clip_keys())

    # -- sizes and privacy ------------------------------------------------------------------
    def steps(self, data: DataInfo) -> int:
        return int(self.params.steps)

    def batch_size(self, data: DataInfo) -> float:
        return minibatch_size(self.params, data)

    def bound(self, data: DataInfo) -> float:
        """C at plan time (NaN with ``lemma_3_2``: measured when the run starts)."""
        if self.params.bound_rule == "lemma_3_2":
            return math.nan
        if self.params.bound is not None:
            return float(self.params.bound)
        if "G" in data.constants:
            return float(data.constants["G"])
        raise ValueError("noisy_sgd needs a gradient bound C: set params.bound "
                         "(this problem publishes no bound G)")

    def planned_ledger(self, data: DataInfo, sigma: float) -> Ledger:
        """T noisy sums at sensitivity C (2C for fixed batches), then the selection's ε_s."""
        p = self.params
        ledger = noisy_sum_ledger(p, data.n, self.steps(data), sigma,
                                  sum_sensitivity(p, self.bound(data)))
        if p.select:
            ledger.record(*selection_release(p))
        return ledger

    def _training_epsilon(self, epsilon: float) -> float:
        """The part of ε the paper's calibration gives to training (ε − ε_s with selection)."""
        if not self.params.select:
            return epsilon
        if epsilon <= self.params.select_epsilon:
            raise ValueError(f"epsilon {epsilon} must exceed select_epsilon "
                             f"{self.params.select_epsilon}")
        return epsilon - self.params.select_epsilon

    def _theorem_3_3(self, data: DataInfo, delta: float) -> float:
        """c₂ B √(T ln(1/δ)) / n: σ·ε = this constant in Theorem 3.3."""
        p = self.params
        return p.c2 * p.batch_size * math.sqrt(self.steps(data) * math.log(1 / delta)) / data.n

    def paper_sigma(self, data: DataInfo, target: PrivacyTarget) -> float:
        """Theorem 3.3: σ = Δ B / C with Δ = c₂ C √(T ln(1/δ)) / (n ε)."""
        return self._theorem_3_3(data, target.delta) / self._training_epsilon(target.epsilon)

    def paper_epsilon(self, data: DataInfo, sigma: float, delta: float) -> float | None:
        """Theorem 3.3 solved for ε (the paper's (ε, 2δ) claim), plus ε_s of the selection."""
        select_eps = self.params.select_epsilon if self.params.select else 0.0
        return self._theorem_3_3(data, delta) / sigma + select_eps

    def extras(self, data: DataInfo, target: PrivacyTarget, sigma: float) -> NoisySGDExtras:
        p, bound = self.params, self.bound(data)
        q = p.batch_size / data.n
        held_out = None
        if p.bound_rule == "lemma_3_2" and p.lemma_data == "held_out":
            if not hasattr(data, "held_out_oracle"):
                raise ValueError("lemma_data held_out needs a problem with a held-out split; "
                                 "use lemma_data: train")
            held_out = data
        return NoisySGDExtras(
            bound=bound, sensitivity=sum_sensitivity(p, bound),
            abadi_max_epsilon=p.c1 * q * q * self.steps(data), d=data.d, held_out=held_out,
            selection=selection_constants(p, data, bound) if p.select else None)

    # -- Algorithm 2 -------------------------------------------------------------------------
    def run_bound(self, oracle: Oracle, plan: Plan[NoisySGDExtras], trace: Trace) -> float:
        """C of this run: the plan's, or Lemma 3.2 at x₀ with ``lemma_3_2`` (its measured
        constants go to the trace)."""
        p = self.params
        if p.bound_rule != "lemma_3_2":
            return plan.extra.bound
        held_out = plan.extra.held_out
        source = oracle if held_out is None else \
            held_out.held_out_oracle(oracle.backend)  # type: ignore[attr-defined]
        s = start_statistics(source)
        limit = lemma_lr_max(s.smoothness, s.grad_std, plan.steps)
        trace.facts.update(lemma_L=s.smoothness, lemma_f_max=s.f_max,
                           lemma_grad_std=s.grad_std, lemma_data=p.lemma_data,
                           lemma_lr_max=limit, lemma_lr_ok=p.lr <= limit)
        return lemma_3_2_bound(s.smoothness, s.f_max, s.grad_std, oracle.n, plan.steps,
                               plan.target.delta, p.lemma_c)

    def iterate(self, oracle: Oracle, plan: Plan[NoisySGDExtras], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        xp, p = oracle.xp, self.params
        times = candidate_times(p, plan.steps, mech.public) if p.select else None  # §3.4
        bound = trace.facts["bound"] = self.run_bound(oracle, plan, trace)  # Theorem 3.3
        sensitivity = sum_sensitivity(p, bound)
        norms = trace.clips[""] = NormTracker(oracle.backend, bound)
        x = oracle.x0
        kept = {0: x} if times is not None and 0 in times else {}
        for t in range(plan.steps):
            batch = draw_minibatch(p, mech, oracle.n)  # line 2
            total = gradient_sum(oracle, x, batch, norms if p.check_bound else None) \
                if len(batch) else xp.zeros_like(x)
            noisy = mech.gaussian(total, sensitivity=sensitivity, sigma=plan.sigma,  # line 3
                                  tag="grad_sum", batch=batch)
            x = x - p.lr * noisy / p.batch_size  # line 4
            if times is not None and t + 1 in times:
                kept[t + 1] = x
            yield Step(t + 1, x)
        if times is not None and plan.extra.selection is not None:  # §3.4
            candidates = [kept[int(t)] for t in times]
            if p.check_bound:  # Δ_q = 2C/n needs ‖∇f_i‖ ≤ C at every candidate too
                checked = trace.clips[SELECTION] = NormTracker(oracle.backend, bound)
                for candidate in candidates:
                    checked.add(oracle.grad_sum_and_norms(candidate, np.arange(oracle.n))[1])
            chosen = select(oracle, candidates, p, plan.extra.selection, mech)
            trace.facts["selected_step"] = None if chosen is None else int(times[chosen])
            if chosen is not None:
                trace.output = candidates[chosen]

    # -- the run's record ---------------------------------------------------------------------
    def premise_data(self, trace: Trace) -> dict[str, Any]:
        out = super().premise_data(trace)
        if not self.params.check_bound:
            out.update(unmeasured(trace.facts.get("bound", math.inf)))
        return out

    def diagnostics(self, trace: Trace) -> dict[str, Any]:
        p = self.params
        lemma = {k: v for k, v in trace.facts.items() if k.startswith("lemma_")}
        out: dict[str, Any] = {"bound": trace.facts.get("bound", math.inf),
                               "bound_checked": p.check_bound, **lemma}
        if p.check_bound:
            norms = trace.clips.get("")
            seen = [t.summary() for t in (norms, trace.clips.get(SELECTION)) if t is not None]
            violations = sum(int(s.get("over") or 0) for s in seen)
            largest = max((s.get("max") or 0.0 for s in seen), default=0.0)
            out.update(max_per_sample_grad_norm=largest, bound_violations=violations,
                       guarantee_void=violations > 0,
                       max_norm_trace=norm_trace(norms.maxima) if norms is not None else [])
            if violations:  # the run records ε = ∞ (bench.runner)
                out["void_reason"] = (f"a per-sample gradient norm {largest:.4g} exceeds the "
                                      f"assumed bound C = {out['bound']:.4g}")
        if p.select:
            selected = trace.facts.get("selected_step")
            out.update(selected_step=selected, selection_passed=selected is not None)
        return out


def gradient_sum(oracle: Oracle, x: Any, batch: Batch, norms: NormTracker | None) -> Any:
    """Σ_{i∈B_t} ∇f_i(x_t), unclipped (line 4); with ``norms`` (``check_bound``) the
    per-sample norms go there, to be checked against C on the device."""
    if norms is None:
        return oracle.grad(x, batch.indices) * len(batch)
    total, seen = oracle.grad_sum_and_norms(x, batch.indices)
    norms.add(seen)
    return total
