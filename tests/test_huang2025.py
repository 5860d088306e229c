"""huang2025 (PriSMA): the paper's structure, its calibration, client partitions, the VGG,
tuning, the experiment files, and the known answers of every declared claim (the page
itself: tests/tiny/huang2025 and tests/test_paper_pages.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import build_problem, make_setup, problem_params, traced

from algorithms import PrivacyTarget, Trace, get_algorithm
from algorithms.privacy.accounting import epsilons
from algorithms.privacy.ledger import Mechanism
from bench.experiment import load_experiment, parse_experiment
from bench.runner import run_one
from bench.spec import SpecError
from bench.studies.huang2025 import (
    THEOREM3_SETTINGS,
    corollary_sigma,
    group_privacy,
    lemma_d2_study,
    paper_noise,
    theorem3_study,
)
from problems import DataSize, get_problem
from problems.backend import get_backend
from problems.partition import partition
from reports.known_answers import synthetic_results, verdict_of
from reports.paper import PaperResults
from reports.papers.huang2025.measures import noise_to_signal
from reports.papers.huang2025.paper import PAPER
from saddlebench import cli

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "bench" / "experiments" / "huang2025"


def algorithm(name: str, **params: Any) -> Any:
    cls = get_algorithm(name)
    return cls(cls.Params(**params))


def run(alg: Any, setup: Any, target: PrivacyTarget, seed: int = 0
        ) -> tuple[list[Any], Mechanism, Trace]:
    plan = alg.plan(setup.instance, target)
    mech = Mechanism(setup.backend.noise_source(seed), np.random.default_rng(seed + 1))
    steps, trace = traced(alg, setup.oracle, plan, mech)
    return [setup.backend.to_numpy(s.x) for s in steps], mech, trace


LS = {"clients": 3, "base_n": 60, "d": 5}


# -- the paper's structure --------------------------------------------------------------

def test_gamma_one_without_server_clip_is_dpsgd_gc_exactly() -> None:
    setup = make_setup("nc_least_squares", "numpy", **LS)
    common = {"lr": 0.05, "steps": 25, "batch_size": 6, "clip1": 2.0}
    target = PrivacyTarget(1.0, 1e-4, sigma=3.0)
    prisma, *_ = run(algorithm("prisma", gamma=1.0, server_clip=False, clip3=0.5, **common),
                     setup, target)
    baseline, *_ = run(algorithm("dpsgd_gc", **common), setup, target)
    for a, b in zip(prisma, baseline, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_every_step_is_at_most_lr_times_c2(backend: str) -> None:
    setup = make_setup("nc_least_squares", backend, **LS)
    alg = algorithm("prisma", lr=0.3, steps=40, batch_size=6, gamma=0.1, clip1=5.0, clip2=0.7,
                    clip3=0.2)
    xs, _, trace = run(alg, setup, PrivacyTarget(1.0, 1e-4, sigma=5.0))
    x0 = setup.backend.to_numpy(setup.oracle.x0)
    steps = np.linalg.norm(np.diff(np.stack([x0, *xs]), axis=0), axis=1)
    assert steps.max() <= 0.3 * 0.7 * (1 + 1e-12)
    assert steps.max() == pytest.approx(0.3 * 0.7)  # the noise makes the server clip bind
    assert alg.diagnostics(trace)["max_step"] == pytest.approx(steps.max())


def test_momentum_noise_is_smaller_than_dpsgd_gc() -> None:
    data = DataSize(n=50_000, clients=[np.arange(5000)] * 10)
    target = PrivacyTarget(8.0, 1e-5, "paper")
    p = algorithm("prisma", steps=1000, batch_size=512, gamma=0.5, clip1=4.0, clip3=0.5
                  ).plan(data, target)
    d = algorithm("dpsgd_gc", steps=1000, batch_size=512, clip1=4.0).plan(data, target)
    assert p.sigma == pytest.approx(d.sigma)  # one σ̂ for both (Corollary 1)
    assert p.extra.sigma_later < d.extra.sigma_later
    assert p.extra.sigma_later == pytest.approx(p.sigma * 2 * (0.5 * 4 + 0.5 * 0.5) / 512)
    assert p.extra.sigma_first == pytest.approx(d.extra.sigma_first)


@pytest.mark.parametrize(("eps", "sigma"), [(4, 11.135), (8, 5.965), (16, 3.345), (32, 1.986)])
def test_corollary_sigma_values_of_notes_section_7(eps: float, sigma: float) -> None:
    data = DataSize(n=50_000, clients=[np.arange(5000)] * 10)
    alg = algorithm("prisma", steps=1000, batch_size=512)
    assert alg.paper_sigma(data, PrivacyTarget(eps, 1e-5, "paper")) == pytest.approx(sigma,
                                                                                  abs=5e-4)
    # and eps_paper inverts Corollary 1 (ρ + ln(1/δ)/(α − 1) = ε exactly)
    assert alg.paper_epsilon(data, sigma, 1e-5) == pytest.approx(eps, rel=1e-4)


def test_condition_18_fails_at_the_paper_settings() -> None:
    data = DataSize(n=50_000, clients=[np.arange(5000)] * 10)
    alg = algorithm("prisma", steps=1000, batch_size=512)
    for eps in (4, 8, 16, 32):
        sigma = alg.paper_sigma(data, PrivacyTarget(eps, 1e-5, "paper"))
        plan = alg.plan(data, PrivacyTarget(eps, 1e-5, sigma=sigma))
        assert not plan.extra.condition_18_holds
        assert plan.extra.condition_18_rhs < plan.extra.condition_18_alpha


def test_query_sensitivity_under_replacing_one_sample() -> None:
    """Replacing one sample of a client's batch moves the C₃-variant query by at most
    2(γC₁ + (1−γ)C₃)/b (eq. 21), even for an adversarial replacement."""
    rng = np.random.default_rng(0)
    setup = make_setup("nc_least_squares", "numpy", **LS)
    gamma, c1, c3, b = 0.3, 2.0, 0.4, 6
    alg = algorithm("prisma", batch_size=b, gamma=gamma, clip1=c1, clip3=c3)
    bound = 2 * (gamma * c1 + (1 - gamma) * c3) / b
    batch = Mechanism(None, rng).sample(setup.oracle.clients[0], scheme="fixed", size=b)
    for _ in range(20):
        x, x_prev = rng.normal(size=5) * 3, rng.normal(size=5) * 3
        neighbour: Any = copy.deepcopy(setup.instance)
        k = batch.indices[rng.integers(b)]
        neighbour.a[k] = rng.normal(size=5) * 50
        neighbour.b[k] = rng.normal() * 500
        q = alg.query(setup.oracle, x, x_prev, [batch])
        q2 = alg.query(neighbour.oracle(setup.backend), x, x_prev, [batch])
        assert np.linalg.norm(q - q2) <= bound * (1 + 1e-12)


def test_large_c3_gives_algorithm_1_queries() -> None:
    setup = make_setup("nc_least_squares", "numpy", **LS)
    rng = np.random.default_rng(3)
    batch = Mechanism(None, rng).sample(setup.oracle.clients[1], scheme="fixed", size=6)
    x, x_prev = rng.normal(size=5), rng.normal(size=5)
    huge = algorithm("prisma", batch_size=6, gamma=0.2, clip1=3.0, clip3=1e9)
    alg1 = algorithm("prisma", batch_size=6, gamma=0.2, clip1=3.0, clip3=None, smoothness=5.0)
    np.testing.assert_allclose(huge.query(setup.oracle, x, x_prev, [batch]),
                               alg1.query(setup.oracle, x, x_prev, [batch]), rtol=1e-14)


def test_local_dp_accounts_each_client_once() -> None:
    setup = make_setup("nc_least_squares", "numpy", **LS)
    alg = algorithm("prisma", steps=10, batch_size=6)
    _, mech, _ = run(alg, setup, PrivacyTarget(2.0, 1e-4))
    parties = {r.sampling.party for r, _ in mech.ledger.summary()}
    assert parties == {0, 1, 2}
    single = algorithm("prisma", steps=10, batch_size=6).planned_ledger(
        DataSize(n=60, clients=[np.arange(60)]), alg.plan(setup.instance,
                                                           PrivacyTarget(2.0, 1e-4)).sigma)
    assert epsilons(mech.ledger, 1e-4) == epsilons(single, 1e-4)
    assert epsilons(mech.ledger, 1e-4).pld == pytest.approx(2.0, rel=2e-3)


def test_batch_fraction_follows_the_client_size() -> None:
    data = DataSize(n=600, clients=[np.arange(200)] * 3)
    plan = algorithm("dpsgd_gc", steps=5, batch_fraction=0.1).plan(data,
                                                                   PrivacyTarget(1, 1e-4))
    assert plan.batch_size == 20
    assert plan.extra.sensitivity == pytest.approx(2 * 1.0 / 20)


# -- partitions and the VGG -------------------------------------------------------------

def test_partitions_cover_every_sample_once() -> None:
    labels = np.repeat(np.arange(10), 30)
    for scheme in ("iid", "sorted", "dirichlet"):
        parts = partition(labels, 7, scheme, alpha=0.3, seed=1)
        assert len(parts) == 7 and all(len(p) for p in parts)
        np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(300))
        again = partition(labels, 7, scheme, alpha=0.3, seed=1)
        assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))
    iid = partition(labels, 6, "iid")
    assert {len(p) for p in iid} == {50}
    sorted_parts = partition(labels, 10, "sorted")
    assert all(len(set(labels[p])) == 1 for p in sorted_parts)
    skewed = partition(labels, 5, "dirichlet", alpha=0.05, seed=0)
    assert np.mean([len(set(labels[p])) for p in skewed]) < 6
    with pytest.raises(ValueError, match="unknown partition"):
        partition(labels, 3, "random")


def test_vgg_matches_the_paper_and_its_per_sample_gradients_are_exact() -> None:
    from test_models import assert_per_sample_grads_match

    from problems.models.vgg import vgg_tanh

    module = vgg_tanh()
    assert sum(p.numel() for p in module.parameters()) == 550_570
    inst: Any = build_problem("cifar10_vgg", problem_params("cifar10_vgg", width=0.125), 0)
    assert_per_sample_grads_match(inst, np.arange(3))
    assert inst.split.x_train.min() >= -1.0 and inst.split.x_train.max() <= 1.0


def test_clients_reach_the_oracle() -> None:
    inst = build_problem("digits_mlp", problem_params("digits_mlp", clients=4), 0)
    oracle = inst.oracle(get_backend("torch"))
    assert len(oracle.clients) == 4 and sum(map(len, oracle.clients)) == inst.n


# -- tuning -----------------------------------------------------------------------------

TUNED = {
    "suite": "tuned",
    "seeds": 2,
    "privacy": {"epsilon": 1, "delta": 1e-4, "calibration": "paper"},
    "tuning": {"metric": "grad_norm", "goal": "min", "seeds": 1},
    "eval": {"points": 2, "metrics": ["loss", "grad_norm"]},
    "problems": [{"name": "nc_least_squares", "params": LS}],
    "algorithms": [{"name": "dpsgd_gc", "params": {"steps": 30, "batch_size": 6},
                    "tune": {"lr": [0.001, 0.05], "clip1": [1.0, 5.0]}}],
}


def test_tuning_runs_the_grid_then_the_best_configuration(tmp_path: Path) -> None:
    path = tmp_path / "tuned.yaml"
    path.write_text(yaml.safe_dump(TUNED))
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    meta = json.loads((out / "tuned" / "suite.json").read_text())
    (choice,) = meta["tuning"]
    scores = [c["score"] for c in choice["candidates"]]
    assert len(scores) == 4 and all(s is not None for s in scores)
    best = choice["candidates"][int(np.argmin(scores))]["params"]
    assert choice["chosen"] == best
    assert "not privacy-accounted" in choice["rule"]
    from bench.store import Store

    store = Store(out / "tuned")
    finals, tuning = store.runs(), store.runs("tune")
    assert len(finals) == 2 and len(tuning) == 4
    assert set(finals["seed"]) == {0, 1} and set(tuning["seed"]) == {1000}
    for key in ("lr", "clip1"):
        assert (finals[f"p_alg_{key}"] == best[key]).all()
    # the report shows the finals and the choice, not the tuning runs
    assert cli.main(["report", str(out / "tuned")]) == 0
    html = (out / "tuned" / "report" / "index.html").read_text()
    assert "Tuning" in html and "not privacy-accounted" in html
    # a rerun reruns nothing
    mtimes = {p: p.stat().st_mtime for p in (out / "tuned" / "runs").glob("*.json")}
    assert cli.main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    assert {p: p.stat().st_mtime for p in (out / "tuned" / "runs").glob("*.json")} == mtimes


@pytest.mark.parametrize(("patch", "message"), [
    ({"tuning": None}, "needs a top-level 'tuning' block"),
    ({"tuning": {"seeds": [0]}}, "also run seeds"),
    ({"tuning": {"metric": "speed"}}, "unknown metric"),
    ({"tuning": {"goal": "best"}}, "min or max"),
])
def test_tuning_errors(patch: dict[str, Any], message: str) -> None:
    doc = copy.deepcopy(TUNED)
    for key, value in patch.items():
        if value is None:
            doc.pop(key)
        else:
            doc[key] = value
    with pytest.raises(SpecError, match=message):
        parse_experiment(doc)


# -- experiment files and the page ------------------------------------------------------

def test_experiment_files_are_valid() -> None:
    for scale, count in (("quick", 5), ("standard", 3), ("paper", 2)):
        files = sorted((EXPERIMENTS / scale).glob("*.yaml"))
        assert len(files) == count
        for path in files:
            exp = load_experiment(path)
            assert exp.paper == "huang2025" and exp.scale == scale
            assert exp.groups or "ablation" in exp.roles
            assert exp.roles and set(exp.roles) <= set(PAPER.roles)


def test_quick_files_tune_every_method_alike_on_three_seeds() -> None:
    for path in sorted((EXPERIMENTS / "quick").glob("*.yaml")):
        exp = load_experiment(path)
        if exp.tuning is None or "pilot" in exp.roles:  # the pilot: its own test
            continue
        assert len(exp.tuning.seeds) >= 3 and exp.tuning.extend >= 1
        tuned = {tuple(sorted(k for k in g.candidates[0].algorithm.params
                              if len({c.algorithm.params[k] for c in g.candidates}) > 1))
                 for g in exp.groups}
        assert len(tuned) == 1 and "lr" in next(iter(tuned)), path.name  # alike
    fig1 = load_experiment(EXPERIMENTS / "quick" / "fig1_least_squares.yaml")
    assert {c.algorithm.params["steps"] for g in fig1.groups for c in g.candidates} == {
        100, 200, 400}  # T is tuned
    assert {g.candidates[0].problem.params["dup"] for g in fig1.groups} == {1}  # fresh records


def test_a_grid_edge_extends_until_the_optimum_is_inside(tmp_path: Path) -> None:
    doc = {"suite": "edge", "seeds": 1, "privacy": {"epsilon": 4.0, "delta": 1e-4},
           "tuning": {"metric": "grad_norm", "goal": "min", "seeds": 3, "extend": 3},
           "eval": {"points": 2, "metrics": ["loss", "grad_norm"]}, "backend": "numpy",
           "problems": [{"name": "nc_least_squares", "params": LS}],
           "algorithms": [{"name": "dpsgd_gc", "params": {"steps": 30, "batch_size": 6,
                                                          "clip1": 5.0},
                           "tune": {"lr": [0.0001, 0.001]}}]}
    path = tmp_path / "edge.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert cli.main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    (choice,) = json.loads((tmp_path / "out" / "edge" / "suite.json").read_text())["tuning"]
    grid = sorted(c["params"]["lr"] for c in choice["candidates"])
    assert len(grid) > 2 and grid[0] < choice["chosen"]["lr"] < grid[-1]
    assert not choice["edges"]
    table1 = load_experiment(EXPERIMENTS / "paper" / "table1_cifar10_vgg.yaml")
    per_eps = {g.key: len(g.candidates) for g in table1.groups}
    assert sorted(set(per_eps.values())) == [45, 675]  # the paper's grid sizes per ε


def shrink(path: Path, data_dir: Path | None = None) -> dict[str, Any]:
    """A paper-scale experiment cut to the first grid point and a few CPU steps."""
    doc = yaml.safe_load(path.read_text())
    doc.update(seeds=1, backend={"name": "torch", "dtype": "float32"} if data_dir else "numpy")
    doc["privacy"]["epsilon"] = [doc["privacy"]["epsilon"]][0] if not isinstance(
        doc["privacy"]["epsilon"], list) else doc["privacy"]["epsilon"][:1]
    doc["tuning"]["seeds"] = 1
    for problem in doc["problems"]:
        problem.pop("sweep", None)
        if data_dir:
            problem["params"].update(data_dir=str(data_dir), chunk_size=4, eval_chunk=16)
        else:
            problem["params"].update(base_n=100)
    for alg in doc["algorithms"]:
        alg["tune"] = {k: v[:1] for k, v in alg["tune"].items() if k != "steps"}
        alg["params"].update(steps=2)
        if data_dir:
            alg["params"].update(batch_size=2)
    return doc


def test_paper_scale_experiments_run_a_few_steps(tmp_path: Path) -> None:
    from test_data_loaders import write_cifar

    write_cifar(tmp_path, "cifar10")
    for path, data_dir in ((EXPERIMENTS / "paper" / "fig1_least_squares.yaml", None),
                           (EXPERIMENTS / "paper" / "table1_cifar10_vgg.yaml", tmp_path)):
        exp = parse_experiment(shrink(path, data_dir), str(path))
        for group in exp.groups:
            (candidate,) = group.candidates
            record = run_one(group.final_specs(candidate)[0])
            assert record.status == "done", (path.name, record.error)


# -- known answers of the declared claims ------------------------------------------------

NOISE = np.array([0.3, -0.2, 0.1, -0.4, 0.2])  # mean 0, sd 0.29: one run's own noise per seed
EPS = (4.0, 8.0, 16.0, 32.0)
SEEDS = range(5)


def t1_run(label: str, eps: float, seed: int, acc_pp: float, loss: float,
           **extra: Any) -> dict[str, Any]:
    return {"role": "table1", "label": label, "algorithm": label, "problem": "digits_mlp",
            "calibration": "paper", "epsilon": eps, "seed": seed,
            "final_test_acc": acc_pp / 100, "final_test_loss": loss, **extra}


def table1(gaps: dict[float, float], spread: dict[float, float] | None = None,
           levels: dict[float, float] | None = None, loss_gap: float = -0.05,
           runs: list[dict[str, Any]] | None = None, **extra: Any) -> PaperResults:
    """Synthetic Table 1: per ε a DPSGD-GC level (accuracy in pp, loss) with a per-seed
    term both methods share, and PriSMA at ``gaps[ε]`` pp (and ``loss_gap``) above it
    plus its own noise (× ``spread[ε]``, default 0.2)."""
    rows = list(runs or [])
    for eps, gap in gaps.items():
        level = (levels or {}).get(eps, 50 + 5 * np.log2(eps))
        for seed in SEEDS:
            shared, own = 0.5 * np.sin(seed + eps), (spread or {}).get(eps, 0.2) * NOISE[seed]
            loss = 1.5 - level / 100 + shared / 100
            rows.append(t1_run("dpsgd_gc", eps, seed, level + shared, loss, **extra))
            rows.append(t1_run("prisma", eps, seed, level + shared + gap + own,
                               loss + loss_gap + own / 100, **extra))
    return synthetic_results("huang2025", rows)


def settings_of(result: Any) -> dict[str, str]:
    return {s.setting: s.verdict for s in result.settings}


@pytest.mark.known_answer("huang2025", "1")
def test_claim_1_is_superiority_at_the_strictest_eps_only() -> None:
    clear = verdict_of("huang2025", "1", table1(dict.fromkeys(EPS, 2.0)))
    assert clear.verdict == "held" and settings_of(clear) == {
        "problem = digits_mlp, epsilon = 4": "held"}
    noisy = verdict_of("huang2025", "1", table1({4.0: -1.56}, spread={4.0: 15.0}))
    (at4,) = noisy.settings
    assert noisy.verdict == "inconclusive" and at4.decision is not None
    assert at4.decision.needed is not None and at4.decision.needed > 5  # seeds to decide
    assert "runs would decide it" in at4.evidence()
    assert verdict_of("huang2025", "1", table1({4.0: -3.0})).verdict == "contradicted"
    # the paper's own effect and z stand beside ours
    assert "Table 1's own at ε = 4: +0.702 pp, z = 1.9" in clear.settings[0].evidence()


@pytest.mark.known_answer("huang2025", "1n")
def test_claim_1n_is_non_inferiority_at_1_pp_for_eps_from_8() -> None:
    # a PriSMA 0.5 pp behind is within the declared 1 pp: held, as a tie would be
    behind = verdict_of("huang2025", "1n", table1(dict.fromkeys(EPS, -0.5)))
    assert behind.verdict == "held" and sorted(settings_of(behind)) == [
        f"problem = digits_mlp, epsilon = {e:g}" for e in (16, 32, 8)]
    assert verdict_of("huang2025", "1n", table1(dict.fromkeys(EPS, -3.0))
                      ).verdict == "contradicted"
    # z ≈ −0.8 against the margin decides neither way
    noisy = verdict_of("huang2025", "1n", table1({32.0: -1.56}, spread={32.0: 15.0}))
    assert noisy.verdict == "inconclusive"
    (at8,) = verdict_of("huang2025", "1n", table1({8.0: 0.0})).settings
    assert "non-inferiority margin 1: ACC_TOLERANCE_PP" in at8.evidence()
    assert "Table 1's own at ε = 8: +0.12 pp, z = 0.379" in at8.evidence()
    assert verdict_of("huang2025", "1n", table1({4.0: 2.0})).verdict == "not run"  # ε ≥ 8 only


@pytest.mark.known_answer("huang2025", "1")
def test_claim_1_pairs_by_seed_and_falls_back_to_welch() -> None:
    paired = verdict_of("huang2025", "1", table1({4.0: 2.0}))
    assert paired.settings[0].decision is not None and paired.settings[0].decision.runs == 5
    rows = [t1_run("prisma", 4.0, s, 52.0 + 0.1 * s, 1.0) for s in SEEDS]
    rows += [t1_run("dpsgd_gc", 4.0, s + 10, 50.0 - 0.1 * s, 1.1) for s in SEEDS]
    welch = verdict_of("huang2025", "1", synthetic_results("huang2025", rows))
    decision = welch.settings[0].decision
    assert welch.verdict == "held" and decision is not None and decision.runs == 10
    assert "difference of means" in decision.text


def with_tuning(results: PaperResults, label: str, grid: list[float]) -> PaperResults:
    results.suites[0]["tuning"] = [{
        "group": f"digits_mlp[clients=10]/{label}/eps=4/paper/torch",
        "candidates": [{"params": {"lr": v}, "score": 0.5} for v in grid],
        "chosen": {"lr": grid[0]}}]
    return results


@pytest.mark.known_answer("huang2025", "1")
@pytest.mark.known_answer("huang2025", "2")
def test_a_tuned_value_on_the_grid_edge_is_out_of_regime() -> None:
    edge = with_tuning(table1({4.0: 2.0}, p_alg_lr=2.0), "prisma", [0.5, 1.0, 2.0])
    for claim in ("1", "2"):
        result = verdict_of("huang2025", claim, edge)
        assert result.verdict == "out of regime"
        (failed,) = result.settings[0].failed
        assert "lr = 2 on the upper edge of {0.5, 1, 2}" in failed.measured
        assert result.settings[0].decision is not None  # the evidence is still shown
    inside = with_tuning(table1({4.0: 2.0}, p_alg_lr=1.0), "prisma", [0.5, 1.0, 2.0])
    assert verdict_of("huang2025", "1", inside).verdict == "held"


def test_the_edge_is_judged_on_each_runs_own_group() -> None:
    """A choice on its own group's edge is flagged even where another group's extension
    widened the union of the grids past it."""
    results = table1({4.0: 2.0}, p_alg_lr=2.0)
    prisma = results.runs[results.runs["label"] == "prisma"]["run_id"].tolist()
    results.suites[0]["tuning"] = [
        {"group": "digits_mlp[clients=10]/prisma/eps=4/paper/torch", "run_ids": prisma,
         "candidates": [{"params": {"lr": v}, "score": 0.5} for v in (1.0, 2.0)]},
        {"group": "digits_mlp[clients=10]/prisma/eps=8/paper/torch", "run_ids": [],
         "candidates": [{"params": {"lr": v}, "score": 0.5} for v in (1.0, 2.0, 4.0)]}]
    result = verdict_of("huang2025", "1", results)
    assert result.verdict == "out of regime"
    assert "lr = 2 on the upper edge of {1, 2}" in result.settings[0].failed[0].measured


@pytest.mark.known_answer("huang2025", "2")
def test_claim_2_loss_gap_and_a_diverged_run_gets_no_statistic() -> None:
    assert verdict_of("huang2025", "2", table1(dict.fromkeys(EPS, 2.0))).verdict == "held"
    assert verdict_of("huang2025", "2", table1(dict.fromkeys(EPS, 2.0), loss_gap=0.2)
                      ).verdict == "contradicted"
    blown = t1_run("prisma", 8.0, 99, 10.0, 1e9, status="diverged")
    result = verdict_of("huang2025", "2", table1({8.0: 2.0}, runs=[blown]))
    setting = result.settings[0]
    assert setting.diverged == 1 and setting.runs == 11
    assert setting.decision is not None and setting.decision.runs == 5  # the paired seeds
    assert result.verdict == "held"


@pytest.mark.known_answer("huang2025", "3a")
@pytest.mark.known_answer("huang2025", "3b")
def test_claim_3_monotone_in_eps_with_declared_tolerances() -> None:
    rising = table1(dict.fromkeys(EPS, 1.0))
    assert verdict_of("huang2025", "3a", rising).verdict == "held"
    assert verdict_of("huang2025", "3b", rising).verdict == "held"
    dip = table1(dict.fromkeys(EPS, 1.0), levels={16.0: 70.0, 32.0: 60.0})
    result = verdict_of("huang2025", "3a", dip)
    assert result.verdict == "contradicted" and len(result.settings) == 2  # one per method
    assert verdict_of("huang2025", "3b", dip).verdict == "contradicted"


@pytest.mark.known_answer("huang2025", "4")
def test_claim_4_gain_at_the_strictest_eps() -> None:
    result = verdict_of("huang2025", "4", table1({4.0: 3.0, 8.0: 0.0, 16.0: 0.5, 32.0: 0.0}))
    assert result.verdict == "held"
    assert sorted(s.setting for s in result.settings) == [
        "problem = digits_mlp, epsilon = 16", "problem = digits_mlp, epsilon = 32",
        "problem = digits_mlp, epsilon = 8"]
    later = verdict_of("huang2025", "4", table1({4.0: 0.0, 8.0: 3.0, 16.0: 0.0, 32.0: 0.0}))
    assert later.verdict == "contradicted"
    assert settings_of(later)["problem = digits_mlp, epsilon = 8"] == "contradicted"


@pytest.mark.known_answer("huang2025", "4")
def test_claim_4_pairs_the_gains_by_seed_across_eps() -> None:
    """A seed's own PriSMA term (× spread 5 pp) is the same at every ε: paired by seed, the
    gain at ε = 4 minus the gain at ε = 8 is exactly 1 pp (held); as a Welch difference of
    means the seed terms would swamp it. The paper's own effect and z stand beside it."""
    result = verdict_of("huang2025", "4", table1({4.0: 1.0, 8.0: 0.0},
                                                 spread={4.0: 5.0, 8.0: 5.0}))
    (at8,) = result.settings
    assert result.verdict == "held" and at8.decision is not None
    assert at8.decision.runs == 5 and "paired difference (per seed)" in at8.decision.text
    assert at8.decision.estimate == pytest.approx(1.0)
    assert "Table 1's own at ε = 8: +0.582 pp, z = 1.2" in at8.evidence()
    rows = [{str(k): v for k, v in r.items()} for r in table1(
        {4.0: 1.0, 8.0: 0.0}, spread={4.0: 5.0, 8.0: 5.0}).runs.to_dict("records")]
    for r in rows:  # other seeds at ε = 8: Welch, and the seed terms leave it undecided
        r["seed"] += 10 * (r["epsilon"] == 8.0)
    welch = verdict_of("huang2025", "4", synthetic_results("huang2025", rows))
    assert welch.verdict == "inconclusive"
    assert "difference of means" in welch.settings[0].evidence()


def test_the_pilot_sweeps_each_table1_constant_with_lr_on_the_table1_setting() -> None:
    pilot = load_experiment(EXPERIMENTS / "standard" / "table1_pilot_digits_mlp.yaml")
    table = load_experiment(EXPERIMENTS / "quick" / "table1_digits_mlp.yaml")
    assert pilot.tuning is not None and len(pilot.tuning.seeds) == 3
    point = {g.candidates[0].algorithm.name: g.candidates[0].algorithm.params
             for g in table.groups}
    for group in pilot.groups:
        label = group.key.split("/")[1]
        method, swept = label.rsplit("_", 1)
        varied = {k for k in group.candidates[0].algorithm.params
                  if len({c.algorithm.params[k] for c in group.candidates}) > 1}
        assert varied == {"lr", swept}, label
        params = group.candidates[0].algorithm.params
        assert all(point[method][k] == params[k] for k in ("steps", "batch_size")), label
        assert {c.algorithm.params["lr"] for c in group.candidates} == {
            c.algorithm.params["lr"] for g in table.groups for c in g.candidates
            if c.algorithm.name == method}  # Table 1's η grid


def pilot_results(table1_constants: dict[str, dict[str, float]],
                  chosen: dict[tuple[str, str], dict[float, float]]) -> PaperResults:
    """Table 1 runs with ``table1_constants`` per method, and a pilot suite whose tuner
    chose, per (method, constant), ε → value (scores: the chosen value best)."""
    results = table1({4.0: 1.0}, p_alg_clip1=None)
    runs = results.runs
    for method, constants in table1_constants.items():
        for key, value in constants.items():
            runs.loc[runs["algorithm"] == method, f"p_alg_{key}"] = value
    tuning = [{"group": f"digits_mlp[clients=10]/{method}_{param}/eps={eps:g}/paper/jax",
               "chosen": {"lr": 1.0, param: value},
               "candidates": [{"params": {"lr": 1.0, param: v}, "score": 0.5 + (v == value)}
                              for v in (value, 2 * value)]}
              for (method, param), by_eps in chosen.items() for eps, value in by_eps.items()]
    results.suites.append({"suite": "huang2025_pilot", "paper": "huang2025",
                           "scale": "quick", "roles": ["pilot"], "tuning": tuning})
    return results


@pytest.mark.known_answer("huang2025", "P1")
def test_p1_table1_uses_the_pilots_choice() -> None:
    chosen = {("prisma", "clip1"): {4.0: 2.0, 32.0: 4.0}, ("prisma", "gamma"): {4.0: 0.9},
              ("dpsgd_gc", "clip1"): {4.0: 0.5}}  # the strictest ε decides: C₁ = 2
    ours = {"prisma": {"clip1": 2.0, "gamma": 0.9}, "dpsgd_gc": {"clip1": 0.5}}
    held = verdict_of("huang2025", "P1", pilot_results(ours, chosen))
    assert held.verdict == "held" and held.claim.kind == "design"
    assert "DPSGD-GC clip1 = 0.5 (pilot: 0.5)" in held.settings[0].evidence()
    other = verdict_of("huang2025", "P1", pilot_results({**ours, "dpsgd_gc": {"clip1": 1.0}},
                                                        chosen))
    assert other.verdict == "contradicted"
    assert "DPSGD-GC clip1 = 1 (pilot: 0.5)" in other.evidence()
    alone = verdict_of("huang2025", "P1", table1({4.0: 1.0}))
    assert alone.verdict == "not run"  # the pilot runs at --scale standard


def f1_run(label: str, copies: int, seed: int, norm: float, fresh: bool = False,
           **extra: Any) -> dict[str, Any]:
    """A Figure 1 run at N = 2000·copies: by duplication (base_n 2000, dup = copies) as the
    paper, or with fresh records (base_n 2000·copies, dup 1)."""
    base, dup = (2000 * copies, 1) if fresh else (2000, copies)
    return {"role": "fig1", "label": label, "algorithm": label, "problem": "nc_least_squares",
            "calibration": "paper", "epsilon": 1.0, "seed": seed, "p_prob_clients": 10,
            "p_prob_d": 10, "p_prob_lam": 1.0, "p_prob_noise_var": 2.0,
            "p_prob_base_n": base, "p_prob_dup": dup, "n": 10 * base * dup,
            "final_grad_norm": norm, **extra}


def fig1(prisma: float, dpsgd: float, fresh: bool = False, c3: float = 0.0,
         scale: tuple[float, float] = (0.5, 1.0)) -> PaperResults:
    """‖∇F‖ = scale · N^slope · e^(0.05·noise) per method; PriSMA's C₃-clipped fraction c3."""
    rows = []
    for k in range(1, 7):
        for seed in SEEDS:
            wiggle = np.exp(0.05 * NOISE[seed])
            rows.append(f1_run("prisma", k, seed, scale[0] * (2000 * k) ** prisma * wiggle,
                               fresh, prem_clipped_fraction_c3=c3))
            rows.append(f1_run("dpsgd_gc", k, seed, scale[1] * (2000 * k) ** dpsgd * wiggle,
                               fresh, prem_clipped_fraction_c3=None))
    return synthetic_results("huang2025", rows)


@pytest.mark.known_answer("huang2025", "6")
def test_claim_6_below_at_every_n() -> None:
    result = verdict_of("huang2025", "6", fig1(-0.4, -1 / 3))
    assert result.verdict == "held" and len(result.settings) == 6
    assert not result.stand_in  # eq. (22) at the paper's M, d: its own instance
    assert verdict_of("huang2025", "6", fig1(-0.4, -1 / 3, scale=(2.0, 1.0))
                      ).verdict == "contradicted"


@pytest.mark.known_answer("huang2025", "6")
@pytest.mark.known_answer("huang2025", "8")
def test_figure_1_claims_need_the_papers_instance() -> None:
    other = fig1(-0.4, -1 / 3, fresh=True)
    other.runs["p_prob_d"] = 5
    for claim in ("6", "7e", "8"):
        result = verdict_of("huang2025", claim, other)
        assert result.verdict == "out of regime", claim
        assert "d = 5 (paper 10)" in result.settings[0].failed[0].measured


def test_figure_1_runs_the_papers_25_trials_at_standard_scale() -> None:
    """§5(a)'s 25 trials: quick runs 0..9 (the main job's time), standard adds 10..24 with
    the same grids and tuning seeds (so the same tuned configurations)."""
    quick = load_experiment(EXPERIMENTS / "quick" / "fig1_least_squares.yaml")
    more = load_experiment(EXPERIMENTS / "standard" / "fig1_least_squares_trials.yaml")
    assert all(set(g.seeds) == set(range(10)) for g in quick.groups)
    assert all(set(g.seeds) == set(range(10, 25)) for g in more.groups)
    assert quick.tuning == more.tuning and [
        [c.digest for c in g.candidates] for g in quick.groups] == [
        [c.digest for c in g.candidates] for g in more.groups]


@pytest.mark.known_answer("huang2025", "7")
def test_claim_7_slopes_and_its_premises() -> None:
    assert verdict_of("huang2025", "7", fig1(-0.4, -0.1, fresh=True)).verdict == "held"
    assert verdict_of("huang2025", "7", fig1(-0.1, -0.4, fresh=True)).verdict == "contradicted"
    copied = verdict_of("huang2025", "7", fig1(-0.4, -0.1))  # the paper's duplication
    assert copied.verdict == "out of regime"
    (failed,) = copied.settings[0].failed
    assert "up to 6 times" in failed.measured and "group-privacy ε up to 6" in failed.measured
    clipped = verdict_of("huang2025", "7", fig1(-0.4, -0.1, fresh=True, c3=0.7))
    assert clipped.verdict == "out of regime"
    assert "C₃" in clipped.settings[0].failed[0].name


@pytest.mark.known_answer("huang2025", "7e")
def test_claim_7e_needs_no_algorithm_1_regime() -> None:
    assert verdict_of("huang2025", "7e", fig1(-0.4, -0.1, fresh=True)).verdict == "held"
    clipped = verdict_of("huang2025", "7e", fig1(-0.4, -0.1, fresh=True, c3=0.7))
    assert clipped.verdict == "held"  # the C₃ clip binds, as in the paper's runs
    assert verdict_of("huang2025", "7e", fig1(-0.1, -0.4, fresh=True)).verdict == "contradicted"


@pytest.mark.known_answer("huang2025", "8")
def test_claim_8_monotone_in_n() -> None:
    result = verdict_of("huang2025", "8", fig1(-0.4, -1 / 3, fresh=True))
    assert result.verdict == "held" and len(result.settings) == 2
    assert verdict_of("huang2025", "8", fig1(0.3, -1 / 3, fresh=True)).verdict == "contradicted"
    assert verdict_of("huang2025", "8", fig1(-0.4, -1 / 3)).verdict == "out of regime"


def structural(**columns: Any) -> PaperResults:
    rows = [{"role": role, "label": "prisma", "algorithm": "prisma", "calibration": "paper",
             "epsilon": 1.0, "seed": s, "problem": role, "diag_max_step": 0.05,
             "p_alg_server_clip": True,
             "diag_step_bound": 0.05, "eps_pld": 0.4, "eps_headline": 0.4,
             "eps_planned": 0.4, "plan_condition_18_holds": False,
             "plan_condition_18_rhs": -3.0, "plan_condition_18_alpha": 19.4, **columns}
            for role in ("fig1", "table1") for s in range(3)]
    return synthetic_results("huang2025", rows)


@pytest.mark.known_answer("huang2025", "10")
def test_claim_10_the_accountants_confirm_the_paper_sigma() -> None:
    assert verdict_of("huang2025", "10", structural()).verdict == "held"
    assert verdict_of("huang2025", "10", structural(eps_pld=1.2)).verdict == "contradicted"
    both = structural(eps_pld=1.2, eps_rdp=1.1)
    assert verdict_of("huang2025", "10", both).verdict == "contradicted"
    # a looser accountant over the target does not contradict what a valid one certifies
    assert verdict_of("huang2025", "10", structural(eps_rdp=1.2)).verdict == "held"
    assert corollary_sigma(4.0) == pytest.approx(11.135, abs=5e-4)


def ablation(max_steps: list[float]) -> list[dict[str, Any]]:
    """Runs of the C₂ ablation with the given largest steps (ηC₂ = 0.05)."""
    return [{"role": "ablation", "label": "prisma_no_c2", "algorithm": "prisma",
             "p_alg_server_clip": False, "seed": s, "diag_max_step": m,
             "diag_step_bound": 0.05, "calibration": "paper", "epsilon": 1.0}
            for s, m in enumerate(max_steps)]


@pytest.mark.known_answer("huang2025", "14")
def test_claim_14_step_bound_in_every_run_and_its_control() -> None:
    assert verdict_of("huang2025", "14", structural()).verdict == "held"
    over = structural(diag_max_step=0.0501)
    assert verdict_of("huang2025", "14", over).verdict == "contradicted"
    assert verdict_of("huang2025", "14", structural(algorithm="other")).verdict == "not run"
    no_clip = structural(p_alg_server_clip=False)  # only the runs that clip are checked
    assert verdict_of("huang2025", "14", no_clip).verdict == "not run"
    for steps, outcome in (([0.04, 0.07], "as expected"), ([0.04, 0.03], "unexpected")):
        rows: list[Any] = [*structural().runs.to_dict("records"), *ablation(steps)]
        result = verdict_of("huang2025", "14", synthetic_results("huang2025", rows))
        assert result.verdict == "held" and result.controls[0].outcome == outcome


@pytest.mark.known_answer("huang2025", "L1")
def test_claim_l1_realised_ledger_equals_the_plan() -> None:
    assert verdict_of("huang2025", "L1", structural()).verdict == "held"
    assert verdict_of("huang2025", "L1", structural(eps_headline=0.5)).verdict == "contradicted"


def theorem3(**columns: Any) -> PaperResults:
    study = pd.DataFrame([{"epsilon": 8.0, "sigma": 1.5, "eps_pld": 2.4, "eps_rdp": 5.9,
                           "plan_condition_18_holds": True, "plan_condition_18_rhs": 3.34,
                           "plan_condition_18_alpha": 3.30, **columns}])
    return synthetic_results("huang2025", [], studies={"theorem3": study})


@pytest.mark.known_answer("huang2025", "16")
def test_claim_16_at_settings_where_condition_18_holds() -> None:
    assert verdict_of("huang2025", "16", theorem3()).verdict == "held"
    assert verdict_of("huang2025", "16", theorem3(eps_pld=8.5, eps_rdp=9.0)
                      ).verdict == "contradicted"
    failed = verdict_of("huang2025", "16", theorem3(plan_condition_18_holds=False))
    assert failed.verdict == "out of regime"
    assert "(18) holds in 0/1 runs" in failed.settings[0].failed[0].measured
    small = verdict_of("huang2025", "16", theorem3(sigma=0.5))
    assert small.verdict == "out of regime"  # (18) also needs σ̂² ≥ 0.7


def test_the_theorem_3_study_satisfies_condition_18() -> None:
    study = theorem3_study("quick")
    assert study["plan_condition_18_holds"].all() and (study["sigma"] ** 2 >= 0.7).all()
    assert set(study["epsilon"]) == {e for e, *_ in THEOREM3_SETTINGS}


@pytest.mark.known_answer("huang2025", "18")
@pytest.mark.known_answer("huang2025", "18s")
def test_lemma_d2_as_printed_fails_and_squared_holds() -> None:
    study = lemma_d2_study("quick", trials=400)
    results = synthetic_results("huang2025", [], studies={"lemma_d2": study})
    assert verdict_of("huang2025", "18", results).verdict == "contradicted"
    assert verdict_of("huang2025", "18s", results).verdict == "held"
    # the printed form fails only where the bias exceeds its square: a scale effect
    bad = study[~study["printed_ok"]]
    assert (bad["lhs"] < 1).all()


@pytest.mark.known_answer("huang2025", "A1")
def test_claim_a1_momentum_against_gamma_one() -> None:
    def runs(prisma: float, gamma1: float) -> PaperResults:
        rows = [{"role": "ablation", "label": label, "algorithm": "prisma", "seed": s,
                 "p_prob_base_n": 2000, "final_grad_norm": value + 0.001 * s}
                for s in range(4) for label, value in (("prisma", prisma),
                                                      ("prisma_gamma1", gamma1))]
        return synthetic_results("huang2025", rows)

    assert verdict_of("huang2025", "A1", runs(0.09, 0.12)).verdict == "held"
    assert verdict_of("huang2025", "A1", runs(0.12, 0.09)).verdict == "contradicted"


def test_group_privacy_of_duplicated_records() -> None:
    assert group_privacy(1, 1.0, 1e-4) == (1.0, 1e-4)
    eps, delta = group_privacy(6, 1.0, 1e-4)
    assert eps == 6.0 and delta == pytest.approx(6 * np.exp(5) * 1e-4)


def test_fresh_records_are_nested_and_duplicates_are_copies() -> None:
    def build(**params: Any) -> Any:
        cls = get_problem("nc_least_squares")
        return cls(cls.Params(clients=2, d=3, **params)).build(0)

    small, large = (build(base_n=n) for n in (20, 40))
    np.testing.assert_array_equal(small.a[:20], large.a[:20])  # client 0 keeps its records
    np.testing.assert_array_equal(small.a[20:], large.a[40:60])  # and so does client 1
    copied = build(base_n=20, dup=2)
    np.testing.assert_array_equal(copied.a[:20], copied.a[20:40])


def test_every_role_of_the_paper_is_played_by_a_quick_or_standard_file() -> None:
    quick = {r for path in (EXPERIMENTS / "quick").glob("*.yaml")
             for r in load_experiment(path).roles}
    standard = {r for path in (EXPERIMENTS / "standard").glob("*.yaml")
                for r in load_experiment(path).roles}
    assert quick | standard == set(PAPER.roles)
    assert set(PAPER.roles) - quick == {"pilot"}  # it set constants: standard scale


# -- Table 1 on real images (Fashion-MNIST) ----------------------------------------------

def real_table1(gaps: dict[float, float], noise_scale: float = 1.0) -> list[dict[str, Any]]:
    """Fashion-MNIST Table 1 rows at the quick file's N, d, b and Corollary 1's σ̂ at T = 80
    (× ``noise_scale``), PriSMA ``gaps[ε]`` pp above DPSGD-GC."""
    rows = [{str(k): v for k, v in r.items()} for r in table1(gaps).runs.to_dict("records")]
    prisma = algorithm("prisma", steps=80, batch_size=30)
    data = DataSize(n=3000, clients=[np.arange(300)] * 10)
    for r in rows:
        sigma = prisma.paper_sigma(data, PrivacyTarget(r["epsilon"], 1e-5, "paper"))
        r.update(problem="fashion_mnist_mlp", p_prob_hidden=32, p_prob_clients=10, n=3000,
                 batch_size=30, sigma=noise_scale * sigma)
    return rows


def test_claims_1_2_4_are_judged_on_real_images_and_the_digits_are_a_stand_in(
        tmp_path: Path) -> None:
    """With Fashion-MNIST runs beside the digits, claims 1, 2 and 4 read only the real
    images (their settings name fashion_mnist_mlp); the digits' verdicts are findings marked
    stand-in, not counted; without real runs the digits are judged as before."""
    digits = [{str(k): v for k, v in r.items()} for r in table1(
        {4.0: 3.0, 32.0: 0.0}).runs.to_dict("records")]
    both = synthetic_results("huang2025", digits + real_table1({4.0: -3.0, 32.0: 0.0}))
    one = verdict_of("huang2025", "1", both)
    assert one.verdict == "contradicted"  # the real images' −3 pp, not the digits' +3 pp
    assert set(settings_of(one)) == {"problem = fashion_mnist_mlp, epsilon = 4"}
    assert "fashion_mnist_mlp in place of CIFAR-10" in one.stand_in  # never the paper's data
    for claim in ("2", "4"):
        assert {s.split(",")[0] for s in settings_of(verdict_of("huang2025", claim, both))} == {
            "problem = fashion_mnist_mlp"}
    found = PAPER.sections(both, tmp_path).findings
    assert [f["what"].split()[1] for f in found] == ["1", "2", "4"]
    assert all(f["kind"] == "stand-in (not counted)" for f in found)
    assert found[0]["numbers"].startswith("held")  # the digits' +3 pp, reported beside
    alone = synthetic_results("huang2025", digits)
    assert verdict_of("huang2025", "1", alone).verdict == "held"
    assert PAPER.sections(alone, tmp_path).findings == []


def test_real_images_are_in_the_papers_noise_regime_or_named_out_of_it() -> None:
    """The quick file's N = 300, d = 25,450, T = 80 give the paper's per-step noise-to-signal
    (10.2 at ε = 4, 1.82 at ε = 32; ratio ≈ 1.01); at 3× the noise the setting is out of
    regime, and the premise names both values."""
    rows = pd.DataFrame(real_table1({4.0: 0.0, 32.0: 0.0}))
    ratio = noise_to_signal(rows) / rows["epsilon"].map(paper_noise)
    np.testing.assert_allclose(ratio, 1.013, atol=0.01)
    assert paper_noise(4) == pytest.approx(10.21, abs=0.01)
    held = verdict_of("huang2025", "1", synthetic_results("huang2025", real_table1({4.0: 3.0})))
    assert held.verdict == "held"
    loud = verdict_of("huang2025", "2", synthetic_results("huang2025", real_table1(
        {4.0: 3.0, 32.0: 3.0}, noise_scale=3.0)))
    assert loud.verdict == "out of regime"
    (premise,) = [p for p in loud.premise_summary() if "noise-to-signal" in p.name]
    assert premise.passed is False and "vs the paper's" in premise.measured
    assert "d = 25,450" in premise.measured and "d = 550,570" in premise.measured


def test_the_real_image_table1_suites_skip_cleanly_where_fashion_mnist_is_absent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Without Fashion-MNIST the pre-flight leaves out the two real-image Table 1 suites of
    the standard scale (quick and standard), one line each, and keeps every other suite."""
    import dataclasses

    from problems.data import catalog
    from problems.data.mnist import FASHION_MNIST
    from saddlebench.cli import paper_experiments, with_data

    files = catalog._idx(dataclasses.replace(FASHION_MNIST, system=(tmp_path / "absent",)))
    monkeypatch.setattr(catalog, "DATASETS", tuple(
        dataclasses.replace(d, files=files) if d.key == "fashion-mnist" else d
        for d in catalog.DATASETS))
    monkeypatch.setenv("SADDLEBENCH_DATA", str(tmp_path / "root"))
    experiments = [load_experiment(p) for p in paper_experiments("huang2025", "standard")]
    real = {e.suite for e in experiments if "fashion_mnist" in e.suite}
    assert len(real) == 2
    assert {e.suite for e in with_data(experiments, strict=False)} == {
        e.suite for e in experiments} - real
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("not run: data missing: Fashion-MNIST") == 2
