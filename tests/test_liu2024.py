"""liu2024: the tree mechanism (nodes, noise, exact ledger against dp-accounting), Alg 3-R's
structural claims (single use, escape windows, drift, sensitivity targets, privacy), the
paper's calibration, Algorithm 2 alone, the studies and the page."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import make_mech

from algorithms import PrivacyTarget
from algorithms.privacy.accounting import epsilon, epsilons
from algorithms.privacy.ledger import Mechanism, Pool
from algorithms.privacy.tree import GaussianSums, TreeSums, leaf_node_counts, tree_depth, tree_nodes
from algorithms.spider_sosp import SpiderSOSP, _Run, escape
from bench import cli
from bench.spec import load_experiment
from bench.studies.liu2024 import escape_study, lam_for_ratio, noise_growth_study
from problems import get_problem
from problems.backend import BackendSpec, get_backend

EXPERIMENTS = Path(__file__).resolve().parents[1] / "bench" / "experiments" / "liu2024"
NUMPY = get_backend(BackendSpec(name="numpy"))


# -- the tree ------------------------------------------------------------------------------------

def test_tree_nodes_partition_every_prefix() -> None:
    assert tree_nodes(13) == [(3, 0), (2, 2), (0, 12)]  # [1,8], [9,12], [13,13]
    assert tree_nodes(8) == [(3, 0)]
    for t in range(1, 300):
        leaves = [leaf for level, j in tree_nodes(t)
                  for leaf in range((j << level) + 1, ((j + 1) << level) + 1)]
        assert leaves == list(range(1, t + 1))  # disjoint, ordered, covering [1, t]
        assert all(j % 2 == 0 for _, j in tree_nodes(t))  # odd nodes are never used
        assert len(tree_nodes(t)) == bin(t).count("1") <= tree_depth(t)


def test_leaf_node_counts_reach_the_depth() -> None:
    counts = leaf_node_counts(1024)
    assert counts.max() == tree_depth(1024) == 11  # leaf 1 is in every level's first node
    assert counts[0] == 11 and counts[1] == 10  # leaf 2 misses the odd node (0, 1)
    assert (leaf_node_counts(1000) <= tree_depth(1000)).all()


def pool(mech: Mechanism, n: int) -> Pool:
    return mech.pool(n, epochs=1)


def test_tree_noise_is_drawn_once_per_node_with_the_right_variance() -> None:
    trials, sigma, leaves = 4000, 0.7, 8
    noise = np.zeros((trials, leaves))
    for trial in range(trials):
        mech = Mechanism(NUMPY.noise_source(trial), np.random.default_rng(trial))
        p, tree = pool(mech, leaves), TreeSums(mech, sigma)
        noise[trial] = [tree.add(np.zeros(1), sensitivity=1.0, batch=p.take(1))[0]
                        for _ in range(leaves)]
    expected = np.array([len(tree_nodes(t)) for t in range(1, leaves + 1)]) * sigma**2
    np.testing.assert_allclose(noise.var(axis=0), expected, rtol=0.08)
    # t = 2 and t = 3 share node [1, 2]; t = 3 adds [3, 3]: the difference is one node
    assert np.cov(noise[:, 1], noise[:, 2])[0, 1] == pytest.approx(sigma**2, rel=0.1)
    assert np.var(noise[:, 2] - noise[:, 1]) == pytest.approx(sigma**2, rel=0.08)


def test_tree_ledger_is_exact_gdp_and_below_the_rdp_tree_event() -> None:
    mech = make_mech(NUMPY)
    p, tree = pool(mech, 2048), TreeSums(mech, 5.0)
    batches = [p.take(2) for _ in range(1024)]
    for batch in batches:
        tree.add(np.zeros(3), sensitivity=1.0, batch=batch)
    np.testing.assert_array_equal([len(b.releases) for b in batches], leaf_node_counts(1024))
    from algorithms.privacy.accounting import _dpa

    dpa = _dpa()
    exact = dpa.get_epsilon_gaussian(5.0 / math.sqrt(11), 1e-6)
    assert exact == pytest.approx(3.0804, abs=1e-4)  # anchors dp_tooling.md §6.5
    assert epsilon(mech.ledger, 1e-6, "gdp") == pytest.approx(exact, rel=1e-9)
    assert epsilon(mech.ledger, 1e-6, "pld") == pytest.approx(exact, rel=1e-4)
    rdp = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_SPECIAL)
    rdp.compose(dpa.SingleEpochTreeAggregationDpEvent(5.0, 1024))
    assert rdp.get_epsilon(1e-6) == pytest.approx(3.3003, abs=1e-4)
    assert exact < rdp.get_epsilon(1e-6)


def test_gaussian_sums_accumulate_one_release_per_leaf() -> None:
    mech = make_mech(NUMPY)
    p, sums = pool(mech, 100), GaussianSums(mech, 2.0)
    batches = [p.take(1) for _ in range(50)]
    out = [sums.add(np.zeros(4000), sensitivity=0.5, batch=b) for b in batches]
    assert all(len(b.releases) == 1 and b.releases[0].sigma == 4.0 for b in batches)
    assert np.std(out[-1]) == pytest.approx(2.0 * math.sqrt(50), rel=0.05)


def test_noise_growth_study_tree_flat_gaussian_sqrt() -> None:
    growth = noise_growth_study(leaves=64, trials=40)
    assert growth["gaussian"].iloc[-1] / growth["gaussian"].iloc[0] == pytest.approx(8, rel=0.25)
    assert growth["tree"].max() < 3 * growth["tree"].min()


# -- Alg 3-R ---------------------------------------------------------------------------------------

def saddle_setup(n: int = 40000, lam: float = 1.0):
    problem = get_problem("strict_saddle")
    inst = problem(problem.Params(d=5, n=n, lam=lam)).build(0)
    return inst, inst.oracle(NUMPY)


def run_sosp(inst, oracle, target: PrivacyTarget, monkeypatch=None, **params):
    alg = SpiderSOSP(SpiderSOSP.Params(**{"alpha": 0.6, "steps": 200, **params}))
    plan = alg.plan(inst, target)
    mech = make_mech(NUMPY)
    taken: list[np.ndarray] = []
    if monkeypatch is not None:
        original = Pool.take

        def take(self, size):
            batch = original(self, size)
            if batch is not None:
                taken.append(batch.indices)
            return batch

        monkeypatch.setattr(Pool, "take", take)
    steps = list(alg.iterate(oracle, plan, mech))
    return alg, plan, mech, steps, taken


def test_alg3r_structure_single_use_escape_windows_and_targets(monkeypatch) -> None:
    inst, oracle = saddle_setup()
    drifts: list[float] = []
    original = _Run.difference

    def difference(self):
        drifts.append(self.drift)
        return original(self)

    monkeypatch.setattr(_Run, "difference", difference)
    target = PrivacyTarget(epsilon=2.0, delta=1e-6)
    alg, plan, mech, _, taken = run_sosp(inst, oracle, target, monkeypatch)
    used = np.concatenate(taken)
    assert len(used) == len(np.unique(used)) == alg.diagnostics()["samples_used"]  # claim 16
    c = alg.constants
    assert c is not None and alg.escape_log
    for start, end, _ in alg.escape_log:  # claim 17: at most Γ steps
        assert end - start + 1 <= c.escape_steps
    starts = [s for s, _, _ in alg.escape_log]
    assert all(b - a >= c.escape_steps for a, b in itertools.pairwise(starts))
    assert drifts and max(drifts) < c.kappa  # claim 18
    releases = [r for rnd, _ in mech.ledger.summary() for r in rnd.releases]
    assert {r.tag for r in releases} >= {"tree_node", "escape"}
    assert min(r.sigma for r in releases) >= plan.sigma * (1 - 1e-9)  # claim 19: targets met
    spent = epsilons(mech.ledger, 1e-6)
    assert spent.pld is not None and plan.eps.pld is not None
    assert spent.pld <= plan.eps.pld * (1 + 1e-6) and plan.eps.pld == pytest.approx(2.0,
                                                                                    rel=1e-3)


def test_alg3r_escapes_the_saddle_and_certifies_a_minimum() -> None:
    inst, oracle = saddle_setup(n=200000)
    alg, *_ = run_sosp(inst, oracle, PrivacyTarget(epsilon=4.0, delta=1e-6), alpha=0.3,
                       early_stop=True)
    diag = alg.diagnostics()
    assert diag["escapes_succeeded"] >= 1 and diag["output"] == "certificate"
    out = alg.output()
    assert np.linalg.norm(oracle.grad(out)) <= 0.3
    assert inst.lambda_min(out) > 0  # left the saddle (λ_min(0) = −1) for a minimum


def test_without_escapes_it_never_escapes_and_uses_the_tree_only() -> None:
    inst, oracle = saddle_setup()
    alg, _, mech, _, _ = run_sosp(inst, oracle, PrivacyTarget(epsilon=2.0, delta=1e-6),
                                  escape=False)
    assert alg.diagnostics()["escapes"] == 0
    assert {r.tag for rnd, _ in mech.ledger.summary() for r in rnd.releases} == {"tree_node"}


def test_paper_calibration_overspends_its_target() -> None:
    inst, oracle = saddle_setup()
    target = PrivacyTarget(epsilon=1.0, delta=1e-6, calibration="paper")
    alg, plan, _, _, _ = run_sosp(inst, oracle, target, parameters="paper", alpha=0.3)
    assert plan.calibration == "paper"
    assert plan.extra["sigma_tight"] > plan.sigma  # the honest multiplier is larger
    assert plan.eps.pld is not None and plan.eps.pld > 1.0  # G1: not (1, 1e-6)-DP
    c = alg.constants
    assert c is not None
    b = plan.extra["b"]
    assert plan.sigma * 2 * c.G / b == pytest.approx(0.3 / math.sqrt(5))  # σ_tree = α/√d
    # the paper's own formulas (Thm 2.2 + Lemma 3.13) at its own σ: also above the target
    assert plan.eps_paper is not None and plan.eps_paper > 1.0


def test_batches_shrink_with_privacy_and_adaptive_sizes_follow_the_step() -> None:
    inst, _ = saddle_setup()
    loose = SpiderSOSP(SpiderSOSP.Params(alpha=0.3)).plan(inst, PrivacyTarget(8.0, 1e-6))
    tight = SpiderSOSP(SpiderSOSP.Params(alpha=0.3)).plan(inst, PrivacyTarget(1.0, 1e-6))
    assert tight.extra["b"] > loose.extra["b"]
    from algorithms.spider_sosp import Batches

    alg = SpiderSOSP(SpiderSOSP.Params(alpha=0.3))
    plan = alg.plan(inst, PrivacyTarget(2.0, 1e-6))
    assert alg.constants is not None
    sizes = Batches(alg.params, alg.constants, plan.sigma, 2.0)
    assert sizes.difference(0.0) == 1 and sizes.difference(0.01) < sizes.difference(1.0)
    fixed = Batches(SpiderSOSP.Params(alpha=0.3, batch="fixed"), alg.constants, plan.sigma, 2.0)
    assert fixed.difference(0.01) == fixed.difference(1.0) == sizes.difference(alg.constants.G)


def test_spider_sosp_refuses_problems_without_constants_and_big_d() -> None:
    digits = get_problem("nc_least_squares")().build(0)
    with pytest.raises(ValueError, match="per-sample constant"):
        SpiderSOSP().plan(digits, PrivacyTarget(1.0, 1e-6))
    problem = get_problem("strict_saddle")
    big = problem(problem.Params(d=2001, n=10)).build(0)
    with pytest.raises(ValueError, match="dense"):
        SpiderSOSP().plan(big, PrivacyTarget(1.0, 1e-6))


# -- Algorithm 2 and E1 ----------------------------------------------------------------------------

def test_algorithm_2_escapes_a_saddle_not_a_minimum() -> None:
    rng = np.random.default_rng(0)
    d, trials = 6, 50
    g = np.zeros((trials, d))
    saddle = np.broadcast_to(np.diag([-1.0] + [1.0] * (d - 1)), (trials, d, d))
    minimum = np.broadcast_to(np.eye(d), (trials, d, d))
    kw = {"steps": 60, "radius": 0.3, "lr": 0.5, "std": 0.01, "rng": rng}
    y, taken = escape(g, saddle, **kw)
    assert (np.linalg.norm(y, axis=1) >= 0.3).all() and (taken < 60).all()
    y, taken = escape(g, minimum, **kw)
    assert (y == 0).all() and (taken == 60).all()  # a failed escape returns the anchor


def test_escape_study_matches_theorem_3_4_on_a_small_grid() -> None:
    study = escape_study(ratios=(0.0, 2.0), dims=(10,), trials=40)
    strict = study[(study["anchor"] == "saddle") & (study["ratio"] == 2.0)].iloc[0]
    assert strict["escape_rate"] >= 0.95 and strict["decrease_min"] >= strict["phi"]
    strict_minimum = study[(study["anchor"] == "minimum") & (study["ratio"] == 2.0)]
    assert (strict_minimum["escape_rate"] <= 0.05).all()
    lam = lam_for_ratio(2.0, 0.1)
    assert lam / math.sqrt((lam + 0.859 + 0.385) * 0.1) == pytest.approx(2.0)


# -- experiments and the page ----------------------------------------------------------------------

def test_experiment_files_are_valid() -> None:
    for scale in ("quick", "paper"):
        files = sorted((EXPERIMENTS / scale).glob("*.yaml"))
        assert [f.name for f in files] == ["e2_sosp_vs_fosp.yaml", "e3_sample_complexity.yaml",
                                           "e4_ablations.yaml"]
        for path in files:
            exp = load_experiment(path)
            assert exp.paper == "liu2024" and exp.scale == scale and exp.specs
            assert not exp.skipped


SADDLE = {"d": 5, "n": 40000, "lam": 1.0}
TINY = {
    "e2_sosp_vs_fosp.yaml": {
        "suite": "liu2024_quick_e2_sosp_vs_fosp", "paper": "liu2024", "scale": "quick",
        "seeds": 2, "privacy": {"epsilon": 4, "delta": 1e-6, "calibration": "pld"},
        "eval": {"points": 2, "metrics": ["grad_norm", "lambda_min"]},
        "problems": [{"name": "strict_saddle", "params": {"d": 5, "n": 40000},
                      "sweep": {"lam": [0.8, 1.4]}}],
        "algorithms": [
            {"name": "spider_sosp", "params": {"alpha": 0.6, "steps": 30}},
            {"name": "spider_sosp", "label": "spider_boost_fosp",
             "params": {"alpha": 0.6, "steps": 30, "escape": False}},
            {"name": "dp_sgd", "params": {"steps": 30, "lr": 0.5, "batch_size": 200}}]},
    "e3_sample_complexity.yaml": {
        "suite": "liu2024_quick_e3_sample_complexity", "paper": "liu2024", "scale": "quick",
        "seeds": 2, "privacy": {"epsilon": [2, 4], "delta": 1e-6, "calibration": "pld"},
        "eval": {"points": 2, "metrics": ["grad_norm", "lambda_min"]},
        "problems": [{"name": "strict_saddle", "params": {**SADDLE, "n": 200000}}],
        "algorithms": [{"name": "spider_sosp", "params": {"early_stop": True},
                        "sweep": {"alpha": [0.45, 0.6]}}]},
    "e4_ablations.yaml": {
        "suite": "liu2024_quick_e4_ablations", "paper": "liu2024", "scale": "quick",
        "seeds": 2, "privacy": {"epsilon": 2, "delta": 1e-6, "calibration": "pld"},
        "eval": {"points": 2, "metrics": ["grad_norm", "lambda_min"]},
        "problems": [{"name": "strict_saddle", "params": {**SADDLE, "n": 200000}}],
        "algorithms": [
            {"name": "spider_sosp", "params": {"alpha": 0.6, "early_stop": True}},
            {"name": "spider_sosp", "label": "fixed_batches",
             "params": {"alpha": 0.6, "early_stop": True, "batch": "fixed"}},
            {"name": "spider_sosp", "label": "paper_parameters",
             "params": {"alpha": 0.6, "early_stop": True, "parameters": "paper"},
             "privacy": {"calibration": ["paper", "pld"]}}]},
}


def test_reproduce_writes_the_paper_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "experiments" / "liu2024" / "quick"
    folder.mkdir(parents=True)
    for name, doc in TINY.items():
        (folder / name).write_text(yaml.safe_dump(doc))
    monkeypatch.setattr(cli, "EXPERIMENTS", tmp_path / "experiments")
    monkeypatch.setattr("reports.papers.liu2024.TRIALS", 10)
    out = tmp_path / "out"
    assert cli.main(["reproduce", "--no-pdf", "liu2024", "--out", str(out), "--jobs", "2",
                     "--no-progress"]) == 0
    page = out / "report" / "liu2024" / "quick"
    html = (page / "index.html").read_text()
    status = json.loads((page / "status.json").read_text())
    assert status["artefacts"] and all(a["target"] != "other claims" for a in status["artefacts"])
    for fragment in ("Adaptive Batch Size", "E1: Algorithm 2 alone", "E2: who ends at a saddle",
                     "E3: samples to the first certified SOSP", "E4: ablations",
                     "Utility bounds", "Ganesh et al. 2023 (claimed)", "A13"):
        assert fragment in html, fragment
    for claim in ("7", "8", "S1", "E2a", "E2b", "E3", "4", "11", "1"):
        assert f"<td>{claim}</td>" in html, claim
    for figure in ("e1_escape.png", "e3_sample_complexity.png", "e4_noise_growth.png"):
        assert (page / figure).is_file()
    # the front page links the paper with its claims' statuses; the wall time is recorded
    front = (out / "report" / "index.html").read_text()
    assert 'href="liu2024/quick/index.html"' in front and "E2a" in front
    (timing,) = (out / "reproduce_times.jsonl").read_text().splitlines()
    assert json.loads(timing)["papers"] == ["liu2024"]
