"""avdiukhin2024: private SOSP selection, λ_min estimators, noisy SGD's paper calibration and
Lemma 3.2 bound, the experiment files (quick and paper scale), known answers for every
declared claim and the provenance of the page's figures."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import make_setup, traced

from algorithms import PrivacyTarget, get_algorithm
from algorithms.lambda_min import lambda_min_lanczos, lambda_min_power
from algorithms.noisy_sgd import lemma_3_2_bound
from algorithms.privacy.accounting import calibrate, epsilons
from algorithms.privacy.ledger import Mechanism
from bench.experiment import load_experiment, parse_experiment
from bench.runner import run_one
from problems import DataSize
from reports.known_answers import synthetic_results, verdict_of
from reports.paper import PaperResults
from reports.papers.avdiukhin2024 import measures, sections
from reports.papers.avdiukhin2024.paper import PAPER, REGIME, STAND_IN

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "bench" / "experiments" / "avdiukhin2024"


def mechanism(seed: int = 0) -> Mechanism:
    return Mechanism(None, np.random.default_rng(seed))


# -- AboveThreshold --------------------------------------------------------------------

def test_above_threshold_finds_first_query_below_and_is_lazy() -> None:
    mech = mechanism()
    asked: list[int] = []

    def query(j: int, value: float) -> Any:
        def ask() -> float:
            asked.append(j)
            return value
        return ask

    values = [3.0, 2.5, 1.0, 0.2, 0.1]
    chosen = mech.above_threshold((query(j, v) for j, v in enumerate(values)), threshold=1.5,
                                  sensitivity=1e-4, epsilon=1.0, tag="sel")
    assert chosen == 2
    assert asked == [0, 1, 2]  # nothing after the first success is computed
    (rnd, count), = mech.ledger.summary()
    assert count == 1 and rnd.releases[0].kind == "pure" and rnd.releases[0].epsilon == 1.0
    assert epsilons(mech.ledger, 1e-5).pld == pytest.approx(1.0)


def test_above_threshold_costs_epsilon_once_whatever_the_number_of_queries() -> None:
    mech = mechanism()
    assert mech.above_threshold((lambda: 5.0 for _ in range(50)), threshold=1.5,
                                sensitivity=1e-4, epsilon=0.3, tag="sel") is None
    assert epsilons(mech.ledger, 1e-5).rdp == pytest.approx(0.3)


def test_above_threshold_noise_scales() -> None:
    """Threshold noise Lap(2Δ/ε), query noise Lap(4Δ/ε): a query equal to the threshold
    passes with probability 1/2, and the empirical spread matches."""
    passed = [mechanism(seed).above_threshold([lambda: 1.5], threshold=1.5, sensitivity=0.5,
                                              epsilon=1.0, tag="s") == 0 for seed in range(2000)]
    assert abs(np.mean(passed) - 0.5) < 0.04
    rng = np.random.default_rng(0)
    draws = rng.laplace(0, 2 * 0.5, 100_000) - rng.laplace(0, 4 * 0.5, 100_000)
    assert np.std(draws) == pytest.approx(math.sqrt(2 * 1**2 + 2 * 2**2), rel=0.02)


def test_above_threshold_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError, match="sensitivity > 0 and epsilon > 0"):
        mechanism().above_threshold([], threshold=1, sensitivity=0, epsilon=1, tag="s")


# -- λ_min estimators ------------------------------------------------------------------

def test_power_method_and_lanczos_at_the_saddle() -> None:
    setup = make_setup("strict_saddle", "numpy", d=8, n=200, lam=0.7, mu=1.0)
    x0 = setup.oracle.x0
    lam = lambda_min_power(setup.oracle, x0, smoothness=1.5, iters=300,
                           rng=np.random.default_rng(0))
    assert lam == pytest.approx(-0.7, abs=1e-6)
    assert lambda_min_lanczos(setup.oracle, x0) == pytest.approx(-0.7, abs=1e-9)


def test_power_method_agrees_with_dense_eigenvalues() -> None:
    setup = make_setup("nc_least_squares", "numpy", clients=2, base_n=50, d=5)
    x = setup.backend.asarray(np.linspace(-1, 1, 5))
    dense = np.stack([setup.oracle.hvp(x, e) for e in np.eye(5)])
    exact = np.linalg.eigvalsh(0.5 * (dense + dense.T))[0]
    top = np.linalg.eigvalsh(dense)[-1]
    est = lambda_min_power(setup.oracle, x, smoothness=top + 1, iters=2000,
                           rng=np.random.default_rng(1))
    assert est == pytest.approx(exact, abs=1e-4)


# -- noisy SGD: selection, paper calibration, Lemma 3.2 --------------------------------

def noisy(**params: Any) -> Any:
    cls = get_algorithm("noisy_sgd")
    return cls(cls.Params(**params))


def test_selection_outputs_a_private_sosp_and_accounts_for_it() -> None:
    setup = make_setup("strict_saddle", "numpy", d=6, n=400)
    alg = noisy(steps=150, batch_size=40, select=True, alpha=0.1, select_epsilon=0.4,
                candidates=8, estimator="lanczos")
    plan = alg.plan(setup.instance, PrivacyTarget(2.0, 1e-5))
    mech = Mechanism(setup.backend.noise_source(0), np.random.default_rng(1))
    steps, trace = traced(alg, setup.oracle, plan, mech)
    iterates = {0: setup.oracle.x0, **{s.t: s.x for s in steps}}
    diag = alg.diagnostics(trace)
    assert diag["selection_passed"]
    np.testing.assert_array_equal(trace.point(), iterates[diag["selected_step"]])
    out = trace.point()
    assert np.linalg.norm(setup.oracle.grad(out)) < 4 * 0.1
    lam = setup.instance.lambda_min(out)
    assert lam is not None and lam > -math.sqrt(setup.instance.constants["rho"] * 0.4)
    spent = epsilons(mech.ledger, 1e-5)
    assert spent.pld == pytest.approx(plan.eps.pld)
    assert plan.eps.pld == pytest.approx(2.0, rel=2e-3)  # the target includes ε_s
    assert spent.gdp is None
    selection = plan.extra.selection
    assert selection.query_sensitivity == pytest.approx(max(
        2 * plan.extra.bound / (400 * 0.1),
        2 * selection.smoothness / (400 * math.sqrt(selection.rho * 0.1))))


def test_selection_budget_in_paper_calibration() -> None:
    data = DataSize(n=1000, constants={"G": 1.0, "L": 1.0, "rho": 1.0})
    plain = noisy(steps=100, batch_size=50).plan(data, PrivacyTarget(1.0, 1e-5, "paper"))
    select = noisy(steps=100, batch_size=50, select=True, select_epsilon=0.25)
    plan = select.plan(data, PrivacyTarget(1.0, 1e-5, "paper"))
    assert plan.sigma == pytest.approx(plain.sigma / 0.75)  # Thm 3.3 at ε − ε_s
    assert plan.eps_paper == pytest.approx(1.0)
    with pytest.raises(ValueError, match="must exceed select_epsilon"):
        select.plan(data, PrivacyTarget(0.2, 1e-5, "paper"))


def test_paper_plan_records_the_tight_sigma_and_abadi_condition() -> None:
    data = DataSize(n=2000)
    plan = noisy(steps=300, batch_size=64, bound=1.0).plan(data, PrivacyTarget(4.0, 0.01,
                                                                                "paper"))
    tight = calibrate(lambda s: noisy(steps=300, batch_size=64, bound=1.0).planned_ledger(
        data, s), 4.0, 0.01)
    assert plan.tight is not None and plan.tight.sigma == pytest.approx(tight)
    assert plan.tight.ratio == pytest.approx(tight / plan.sigma)
    assert plan.extra.abadi_max_epsilon == pytest.approx(300 * (64 / 2000) ** 2)


def test_lemma_3_2_bound_formula() -> None:
    value = lemma_3_2_bound(2.0, 3.0, 4.0, n=100, steps=50, delta=0.01, c=0.5)
    expected = 2 * math.sqrt(6) + 0.5 * (2 * math.sqrt(math.log(5000)) + 4 * math.sqrt(
        math.log(5000)) + math.sqrt(4 * math.log(100)))
    assert value == pytest.approx(expected)


def test_lemma_rule_measures_c_at_the_start_without_changing_epsilon() -> None:
    setup = make_setup("strict_saddle", "numpy", d=6, n=400)
    alg = noisy(steps=20, batch_size=40, bound_rule="lemma_3_2", lemma_c=0.5)
    plan = alg.plan(setup.instance, PrivacyTarget(1.0, 1e-5))
    given = noisy(steps=20, batch_size=40).plan(setup.instance, PrivacyTarget(1.0, 1e-5))
    assert plan.sigma == pytest.approx(given.sigma)
    mech = Mechanism(setup.backend.noise_source(0), np.random.default_rng(1))
    _, trace = traced(alg, setup.oracle, plan, mech)
    diag = alg.diagnostics(trace)
    expected = lemma_3_2_bound(diag["lemma_L"], diag["lemma_f_max"], diag["lemma_grad_std"],
                               400, 20, 1e-5, 0.5)
    assert diag["bound"] == pytest.approx(expected)
    assert diag["lemma_L"] == pytest.approx(1.0, abs=1e-6)  # max |eig| at the saddle: λ = μ = 1
    (rnd, _), = mech.ledger.summary()
    assert rnd.releases[0].sensitivity == pytest.approx(expected)
    assert epsilons(mech.ledger, 1e-5).pld == pytest.approx(plan.eps.pld)
    with pytest.raises(ValueError, match="lemma_3_2 measures C itself"):
        noisy(bound_rule="lemma_3_2", bound=2.0)


# -- experiment files ------------------------------------------------------------------

def test_quick_experiments_are_valid() -> None:
    files = sorted((EXPERIMENTS / "quick").glob("*.yaml"))
    assert len(files) >= 4
    for path in files:
        exp = load_experiment(path)
        assert exp.paper == "avdiukhin2024" and exp.scale == "quick" and exp.specs
        assert exp.roles and set(exp.roles) <= set(PAPER.roles), (path.name, exp.roles)


def test_tiny_experiments_mirror_the_quick_ones() -> None:
    """tests/tiny/avdiukhin2024: the quick suites' names and roles, at scale quick."""
    quick = {e.suite: e.roles for e in map(load_experiment, (EXPERIMENTS / "quick").glob(
        "*.yaml"))}
    tiny = [p for p in (ROOT / "tests" / "tiny" / "avdiukhin2024").glob("*.yaml")
            if p.name != "expected.yaml"]
    assert len(tiny) >= 3
    for path in tiny:
        exp = load_experiment(path)
        assert exp.paper == "avdiukhin2024" and exp.scale == "quick"
        assert quick[exp.suite] == exp.roles, path.name
    expected = yaml.safe_load((ROOT / "tests" / "tiny" / "avdiukhin2024" / "expected.yaml")
                              .read_text())
    assert len(expected["claims"]) >= 3 and set(expected["claims"]) <= set(PAPER.targets)


def write_paper_fixtures(root: Path) -> None:
    """Tiny files in the formats the paper-scale configs read, under one data root."""
    import transformers
    from test_data_loaders import write_cifar, write_tsv
    from test_models import TINY_BERT, fake_torchvision_file

    from problems.models.bert import char_vocab

    write_cifar(root, "cifar10")
    write_cifar(root, "cifar100")
    fake_torchvision_file(root / "resnet18-f37072fd.pth", width=1.0)
    rows = [("src", i % 2, "", f"sentence number {i} is here") for i in range(12)]
    write_tsv(root / "CoLA" / "train.tsv", rows)
    write_tsv(root / "CoLA" / "dev.tsv", rows[:6])
    model_dir = root / "bert-base-uncased"
    settings: dict[str, Any] = {**TINY_BERT, "max_position_embeddings": 64}
    config = transformers.BertConfig(**settings)
    transformers.BertModel(config).save_pretrained(model_dir)
    transformers.BertTokenizer(vocab={t: i for i, t in enumerate(char_vocab())}
                               ).save_pretrained(model_dir)


def shrunk(path: Path, data_dir: Path) -> dict[str, Any]:
    """A paper-scale experiment cut to a few CPU steps on the tiny fixtures."""
    doc = yaml.safe_load(path.read_text())
    doc.update(seeds=1, backend={"name": "torch", "dtype": "float32"})
    doc["privacy"]["epsilon"] = [doc["privacy"]["epsilon"][-1]]
    doc["eval"]["points"] = 2
    for problem in doc["problems"]:
        problem["params"].update(data_dir=str(data_dir), chunk_size=2, eval_chunk=8)
    for alg in doc["algorithms"]:
        alg["params"].update(steps=2, batch_size=4)
    return doc


@pytest.mark.slow
def test_paper_scale_experiments_run_a_few_steps(tmp_path: Path) -> None:
    write_paper_fixtures(tmp_path)
    files = sorted((EXPERIMENTS / "paper").glob("*.yaml"))
    assert len(files) == 6
    for path in files:
        full = load_experiment(path)
        assert full.scale == "paper" and full.paper == "avdiukhin2024"
        assert all(s.backend.device == "cuda" for s in full.specs)
        for spec in parse_experiment(shrunk(path, tmp_path), str(path)).specs:
            record = run_one(spec)
            assert record.status == "done", (path.name, spec.problem.name, record.error)


def test_paper_scale_experiments_are_valid() -> None:
    for path in sorted((EXPERIMENTS / "paper").glob("*.yaml")):
        exp = load_experiment(path)
        assert exp.paper == "avdiukhin2024" and exp.scale == "paper" and exp.specs
        assert exp.roles and set(exp.roles) <= set(PAPER.roles), (path.name, exp.roles)


def test_paper_scale_cnn_experiment_runs_a_few_steps(tmp_path: Path) -> None:
    """The quick-suite representative of the paper configs: CIFAR-10 files, the full CNN."""
    from test_data_loaders import write_cifar

    write_cifar(tmp_path, "cifar10")
    doc = shrunk(EXPERIMENTS / "paper" / "fig1a_cifar10_cnn.yaml", tmp_path)
    doc["privacy"]["calibration"] = "paper"
    doc["eval"]["metrics"] = ["test"]
    for spec in parse_experiment(doc).specs:
        record = run_one(spec)
        assert record.status == "done", record.error




# -- known answers of the declared claims ---------------------------------------------------

KEY = "avdiukhin2024"


def verdict(claim: str, runs: list[dict[str, Any]], curves: Sequence[dict[str, Any]] = ()
            ) -> Any:
    return verdict_of(KEY, claim, synthetic_results(KEY, runs, list(curves)))


def settings_of(result: Any) -> dict[str, str]:
    return {s.setting: s.verdict for s in result.settings}


def accuracy_run(eps: float, acc: float, seed: int = 0, role: str = "fig1", **extra: Any
                 ) -> dict[str, Any]:
    """A finished noisy SGD run on the digits MLP with the empirical C = 12, no norm over C."""
    return {"role": role, "problem": "digits_mlp", "algorithm": "noisy_sgd",
            "label": "noisy_sgd", "calibration": "paper", "epsilon": eps, "seed": seed,
            "final_test_acc": acc, "final_train_acc": acc + 0.01, "p_alg_bound_rule": "given",
            "diag_bound": 12.0, "diag_max_per_sample_grad_norm": 10.0,
            "diag_guarantee_void": False, **extra}


def sgd_run(acc: float, seed: int = 0, role: str = "fig1", **extra: Any) -> dict[str, Any]:
    return {"role": role, "problem": "digits_mlp", "algorithm": "sgd", "label": "sgd",
            "epsilon": math.inf, "seed": seed, "final_test_acc": acc, **extra}


def grid(accuracy: Any, epsilons: tuple[float, ...] = (0.5, 1, 2, 4, 8), seeds: int = 5,
         spread: float = 0.002, **extra: Any) -> list[dict[str, Any]]:
    """Noisy SGD runs at each ε whose accuracy is ``accuracy(ε)`` ± ``spread``."""
    return [accuracy_run(e, accuracy(e) + spread * (s - (seeds - 1) / 2), seed=s, **extra)
            for e in epsilons for s in range(seeds)]


def rising(eps: float) -> float:
    return 0.5 + 0.05 * math.log2(eps)


@pytest.mark.known_answer("avdiukhin2024", "P1b")
@pytest.mark.known_answer("avdiukhin2024", "P1c")
@pytest.mark.known_answer("avdiukhin2024", "P1d")
@pytest.mark.parametrize(("claim", "role"), [("P1b", "fig1b"), ("P1c", "fig2a"),
                                             ("P1d", "fig2b")])
def test_paper_scale_figures_read_only_their_own_suites(claim: str, role: str) -> None:
    assert verdict(claim, grid(rising)).verdict == "not run"  # quick runs are not theirs
    assert verdict(claim, grid(rising, role=role)).verdict == "held"
    falling = grid(lambda e: rising(e) - (0.1 if e == 8 else 0.0), role=role)
    assert verdict(claim, falling).verdict == "contradicted"


@pytest.mark.known_answer("avdiukhin2024", "P1")
@pytest.mark.known_answer("avdiukhin2024", "P5")
def test_accuracy_monotone_in_epsilon_held_contradicted_inconclusive() -> None:
    assert verdict("P1", grid(rising)).verdict == "held"
    falling = grid(lambda e: rising(e) - (0.1 if e == 8 else 0.0))
    assert verdict("P1", falling).verdict == "contradicted"
    noisy = grid(lambda e: rising(e) - (0.012 if e == 8 else 0.0), spread=0.05, seeds=2)
    assert verdict("P1", noisy).verdict == "inconclusive"
    # P5 on training accuracy, from the suites that feed Figure 3(a)
    assert verdict("P5", grid(rising, role="fig3a")).verdict == "held"
    assert verdict("P5", grid(rising, role="fig1")).verdict == "not run"
    # non-private SGD (ε = ∞) is no point of the ε axis
    result = verdict("P1", grid(rising) + [sgd_run(0.1, s) for s in range(5)])
    assert result.verdict == "held" and "ε=inf" not in result.evidence()


def clipped_run(eps: float, acc: float, seed: int = 0, **extra: Any) -> dict[str, Any]:
    """A finished Algorithm-1 run (dp_sgd, tight noise) clipped at the empirical C = 12."""
    return {"role": "fig1", "problem": "digits_mlp", "algorithm": "dp_sgd", "label": "dp_sgd",
            "calibration": "pld", "epsilon": eps, "seed": seed, "final_test_acc": acc,
            "p_alg_clip": 12.0, "prem_clipped_fraction": 0.01, **extra}


@pytest.mark.known_answer("avdiukhin2024", "P2")
def test_private_training_no_worse_than_sgd_by_the_margin_paired_by_seed() -> None:
    """Non-inferiority of Algorithm 1 (the runs with the claimed guarantee) against SGD at
    ε ∈ {4, 8}, paired by seed; noisy SGD's own runs do not decide it."""
    sgd = [sgd_run(0.94 + 0.01 * s, s) for s in range(5)]
    noisy = grid(lambda e: 0.93, epsilons=(4, 8))  # the empirical C of Algorithm 2: 12
    close = [clipped_run(e, 0.92 + 0.01 * s + 0.001 * (s % 2), s) for e in (1, 4, 8)
             for s in range(5)]
    result = verdict("P2", sgd + noisy + close)
    assert result.verdict == "held" and result.claim.headline
    assert set(settings_of(result)) == {"problem = digits_mlp, calibration = pld, "
                                        f"epsilon = {e}" for e in (4, 8)}  # ε = 1 not claimed
    decision = result.settings[0].decision
    assert decision.estimate == pytest.approx(-1.96) and "5 seed pairs" in decision.text
    assert "margin 5" in decision.text and "clipped 1 % of per-sample" in decision.text
    far = [dict(r, final_test_acc=r["final_test_acc"] - 0.12) for r in close]
    assert verdict("P2", sgd + noisy + far).verdict == "contradicted"
    edge = [dict(r, final_test_acc=r["final_test_acc"] - 0.05 + 0.02 * (r["seed"] % 2))
            for r in close]
    assert verdict("P2", sgd + noisy + edge).verdict == "inconclusive"
    assert verdict("P2", sgd + noisy).verdict == "not run"  # Algorithm 2 does not decide it
    paper = [dict(r, calibration="paper") for r in close]  # Theorem 3.3's σ has no guarantee
    assert verdict("P2", sgd + noisy + paper).verdict == "not run"
    other_c = [dict(r, p_alg_clip=13.0) for r in close]
    result = verdict("P2", sgd + noisy + other_c)
    assert result.verdict == "out of regime"
    assert "clips at 13, noisy SGD's C = 12" in result.settings[0].failed[0].measured
    # on the paper's model and data it is no stand-in
    cifar = [dict(r, problem="cifar10_cnn") for r in sgd + noisy + close]
    assert verdict("P2", cifar).stand_in == ""
    assert "digits_mlp in place of CIFAR-10" in result.stand_in


@pytest.mark.known_answer("avdiukhin2024", "P3")
def test_per_sample_norms_below_c_as_a_fraction_of_runs() -> None:
    over = [accuracy_run(1, 0.8, s, diag_max_per_sample_grad_norm=18.2,
                         diag_guarantee_void=s < 8) for s in range(10)]
    result = verdict("P3", over)
    assert result.verdict == "contradicted"
    assert "every per-sample norm ≤ C in 2/10 runs" in result.evidence()
    clean = [accuracy_run(4, 0.9, s) for s in range(10)]
    result = verdict("P3", clean)
    assert result.verdict == "inconclusive"  # 10 clean runs cannot show P > 0.99
    assert result.settings[0].decision.needed == 368
    many = [accuracy_run(4, 0.9, s, diag_guarantee_void=None, prem_clipped_fraction=0.0,
                         prem_max_per_sample_norm=9.0, prem_clip_bound=12.0)
            for s in range(400)]
    assert verdict("P3", many).verdict == "held"
    # C from Lemma 3.2 is Figure 3(b)'s, not the empirical C of this claim
    lemma = [dict(r, p_alg_bound_rule="lemma_3_2", role="fig3b") for r in over]
    assert verdict("P3", lemma).verdict == "not run"


@pytest.mark.known_answer("avdiukhin2024", "P4")
def test_lemma_c_lowers_accuracy_per_epsilon() -> None:
    empirical = grid(lambda e: 0.9, epsilons=(1, 8))
    lower = grid(lambda e: 0.8, epsilons=(1, 8), role="fig3b", p_alg_bound_rule="lemma_3_2")
    result = verdict("P4", empirical + lower)
    assert result.verdict == "held" and len(result.settings) == 2
    assert result.settings[0].decision.estimate == pytest.approx(-10.0)
    higher = grid(lambda e: 0.95, epsilons=(1, 8), role="fig3b", p_alg_bound_rule="lemma_3_2")
    assert verdict("P4", empirical + higher).verdict == "contradicted"
    other = grid(lambda e: 0.9, epsilons=(1, 8), problem="digits_cnn")  # no alike run
    assert verdict("P4", other + lower).verdict == "inconclusive"


@pytest.mark.known_answer("avdiukhin2024", "P6")
def test_larger_learning_rates_fail_to_converge() -> None:
    cnn = {"problem": "cifar10_cnn"}
    assert verdict("P6", grid(rising)).verdict == "not run"  # no lr sweep
    sweep = [accuracy_run(4, 0.1, s, role="lr_sweep", p_alg_lr=0.3, status="diverged", **cnn)
             for s in range(6)]
    result = verdict("P6", sweep)  # diverged runs are the claim's own evidence here
    assert result.verdict == "held" and result.settings[0].diverged == 6
    good = [accuracy_run(4, 0.9, s, role="lr_sweep", p_alg_lr=0.3, **cnn) for s in range(6)]
    assert verdict("P6", good).verdict == "contradicted"
    assert verdict("P6", [dict(r, p_alg_lr=0.1) for r in good]).verdict == "not run"
    pooled = verdict("P6", [dict(r, p_alg_lr=0.2 + 0.2 * (r["seed"] % 2)) for r in good])
    assert len(pooled.settings) == 1 and pooled.verdict == "contradicted"  # lr > 0.1 pooled
    # on a stand-in the largest stable lr says nothing about the paper's CNN
    stand_in = verdict("P6", [dict(r, problem="digits_mlp") for r in good])
    assert stand_in.verdict == "out of regime"
    assert "digits_mlp" in stand_in.settings[0].failed[0].measured


def paper_calibrated(eps: float, seed: int = 0, **extra: Any) -> dict[str, Any]:
    """A run whose σ is Theorem 3.3's: σ = B√(T ln(1/δ))/(nε) with c₂ = 1."""
    sigma = 64 * math.sqrt(315 * math.log(100)) / (1347 * eps)
    return accuracy_run(eps, 0.9, seed, sigma=sigma, batch_size=64, steps=315, n=1347,
                        delta=0.01, p_alg_c2=1.0, eps_planned=2 * eps, eps_pld=2 * eps,
                        **extra)


@pytest.mark.known_answer("avdiukhin2024", "T1")
def test_sigma_times_epsilon_is_theorem_3_3() -> None:
    runs = [paper_calibrated(e, s) for e in (0.125, 1, 8) for s in range(2)]
    result = verdict("T1", runs)
    assert result.verdict == "held"
    assert result.claim.kind == "implementation" and not result.counts  # a check of our code
    off = [*runs, dict(paper_calibrated(4), sigma=1.02 * paper_calibrated(4)["sigma"])]
    result = verdict("T1", off)
    assert result.verdict == "contradicted" and "in 6/7 runs" in result.evidence()
    overspent = [*runs, dict(paper_calibrated(4), eps_pld=9.0)]
    assert verdict("T1", overspent).verdict == "contradicted"
    # with the private selection the paper's ε includes ε_s: σ(ε − ε_s) is the constant
    select = dict(paper_calibrated(0.8), epsilon=1.0, p_alg_select=True,
                  p_alg_select_epsilon=0.2)
    assert verdict("T1", [*runs, select]).verdict == "held"
    tight = [dict(r, calibration="pld") for r in off]  # the tight calibration is not claimed
    assert verdict("T1", tight).verdict == "not run"


@pytest.mark.known_answer("avdiukhin2024", "T1p")
def test_theorem_3_3_sigma_spends_at_most_its_epsilon_per_setting() -> None:
    """One-sided upper bound: underspending holds, overspending (PLD) contradicts, with the
    ratio, the c₂ the tight σ needs and Theorem 3.1's c₁ in the evidence."""
    def run(eps: float, ratio: float, seed: int) -> dict[str, Any]:
        return dict(paper_calibrated(eps, seed), eps_pld=ratio * eps,
                    plan_abadi_max_epsilon=1.14,
                    plan_noise_ratio_tight_over_paper=max(ratio, 1.0) ** 0.5)

    under = [run(e, 0.6, s) for e in (0.125, 1) for s in range(3)]
    result = verdict("T1p", under)
    assert result.verdict == "held" and result.claim.kind == "paper"
    assert result.claim.headline and len(result.settings) == 2
    over = [run(e, r, s) for e, r in ((0.125, 0.6), (2, 1.4), (8, 15.5)) for s in range(3)]
    result = verdict("T1p", over)
    assert result.verdict == "contradicted"
    assert settings_of(result) == {
        f"problem = digits_mlp, batch_size = 64, steps = 315, epsilon = {e:g}": v
        for e, v in ((0.125, "held"), (2, "contradicted"), (8, "contradicted"))}
    eight = result.settings[-1].evidence()
    assert "in 0/3 runs" in eight and "124 = 15.5× the target" in eight
    assert "c₁ ≥ 7.02" in eight and "3.94× Theorem 3.3's" in eight
    diverged = [dict(r, status="diverged") for r in over]  # it spent its ε all the same
    assert verdict("T1p", diverged).verdict == "contradicted"
    within = [run(4, 1.005, s) for s in range(3)]  # accountant rounding is no overspend
    assert verdict("T1p", within).verdict == "held"
    unrecorded = [dict(r, eps_pld=None) for r in over]
    assert verdict("T1p", unrecorded).verdict == "inconclusive"
    tight = [dict(r, calibration="pld") for r in over]  # only Theorem 3.3's σ is claimed
    assert verdict("T1p", tight).verdict == "not run"


def saddle_run(algorithm: str = "noisy_sgd", seed: int = 0, eps: float = 1.0,
               sigma1: float = 0.0, **extra: Any) -> dict[str, Any]:
    """A run of the synthetic check: strict_saddle (λ = 2, μ = 1, σ₂ = σ₁), lr 0.1, 400
    steps, C = G = √5 + 2σ₁, escaped (final λ_min ≈ 1) unless ``extra`` says otherwise."""
    bound = math.sqrt(5) + 2 * sigma1
    row = {"role": "saddle", "problem": "strict_saddle", "algorithm": algorithm,
           "label": algorithm, "seed": seed, "epsilon": eps if algorithm != "sgd" else math.inf,
           "p_prob_sigma1": sigma1, "p_prob_sigma2": sigma1, "p_prob_lam": 2.0,
           "p_prob_mu": 1.0, "p_alg_lr": 0.1, "steps": 400, "batch_size": 64,
           "final_lambda_min": 0.99, "final_grad_norm": 0.01, "final_loss": -0.99}
    if algorithm == "noisy_sgd":
        row.update(diag_bound=bound, diag_max_per_sample_grad_norm=1.0,
                   diag_guarantee_void=False, p_alg_select=False)
    if algorithm == "dp_sgd":
        row.update(p_alg_clip=bound)
    return {**row, **extra}


def noise_free_sgd(stays: bool = True, seeds: int = 5) -> list[dict[str, Any]]:
    lam = -2.0 if stays else 0.99
    return [saddle_run("sgd", s, final_lambda_min=lam, final_grad_norm=0.0) for s in
            range(seeds)]


@pytest.mark.known_answer("avdiukhin2024", "T2")
def test_algorithms_1_and_2_agree_when_no_norm_exceeds_c() -> None:
    noisy = [saddle_run(seed=s, sigma1=0.5) for s in range(3)]
    clipped = [saddle_run("dp_sgd", seed=s, sigma1=0.5) for s in range(3)]
    result = verdict("T2", noisy + clipped)
    assert result.verdict == "held" and "bitwise-equal outputs in 3/3 runs" in result.evidence()
    moved = [*clipped[:2], dict(clipped[2], final_loss=-0.98)]
    assert verdict("T2", noisy + moved).verdict == "contradicted"
    void = [dict(r, diag_guarantee_void=True, diag_max_per_sample_grad_norm=3.0)
            for r in noisy]
    assert verdict("T2", void + moved).verdict == "out of regime"
    other_c = [dict(r, p_alg_clip=3.236) for r in clipped]
    result = verdict("T2", noisy + other_c)
    assert result.verdict == "out of regime"
    assert "clips at 3.24 vs C = 3.24" in result.settings[0].failed[0].measured
    alone = verdict("T2", noisy)
    assert alone.verdict == "out of regime"  # no Algorithm-1 partner to compare with


def start(runs: list[dict[str, Any]], lam: float = -2.0) -> list[dict[str, Any]]:
    """Each run's x₀ (step 0): the saddle, λ_min = ``lam``."""
    return [{"run_id": f"r{i}", "step": 0, "grad_norm": 0.0, "lambda_min": lam}
            for i in range(len(runs))]


@pytest.mark.known_answer("avdiukhin2024", "T4")
def test_escape_from_the_exact_saddle_with_a_noise_free_sgd_control() -> None:
    noisy = [saddle_run(seed=s) for s in range(5)]
    runs = noisy + noise_free_sgd()
    result = verdict("T4", runs, start(runs))
    assert result.verdict == "held"
    assert {s.setting for s in result.settings} == {"label = noisy_sgd, sigma1 = 0, epsilon = 1"}
    (control,) = result.controls
    assert control.outcome == "as expected" and len(control.run_ids) == 5
    assert all("sgd" not in s.setting.replace("noisy_sgd", "") for s in result.settings)
    unexpected = verdict("T4", noisy + noise_free_sgd(stays=False), start(runs))
    assert unexpected.verdict == "held" and unexpected.controls[0].outcome == "unexpected"
    stuck = [dict(r, final_lambda_min=-2.0) for r in noisy] + [
        saddle_run(seed=s, final_lambda_min=-2.0) for s in range(5, 10)]
    assert verdict("T4", stuck, start(stuck)).verdict == "contradicted"  # (2/3)^10 < 2.5 %
    few = noisy[:3]
    assert verdict("T4", few, start(few)).verdict == "inconclusive"
    assert verdict("T4", noisy, start(noisy, lam=0.5)).verdict == "out of regime"


def iterates(runs: list[dict[str, Any]], sosp_share: float, points: int = 10, first: int = 0
             ) -> list[dict[str, Any]]:
    """For runs r{first}, r{first + 1}, …: x₀ at the saddle, then ``points`` iterates of
    which the first ``sosp_share`` are α-SOSPs."""
    rows = [{"run_id": f"r{first + i}", "step": 0, "grad_norm": 0.0, "lambda_min": -2.0}
            for i in range(len(runs))]
    for i in range(first, first + len(runs)):
        for k in range(1, points + 1):
            sosp = k <= sosp_share * points
            rows.append({"run_id": f"r{i}", "step": 40 * k, "grad_norm": 0.01 if sosp else 1.0,
                         "lambda_min": 0.9 if sosp else -1.9})
    return rows


@pytest.mark.known_answer("avdiukhin2024", "T5")
def test_half_the_iterates_are_sosps_only_past_the_theorem_horizon() -> None:
    short = [saddle_run(seed=s) for s in range(6)]
    result = verdict("T5", short + noise_free_sgd(), iterates(short + noise_free_sgd(), 0.7))
    assert result.verdict == "out of regime"
    failed = result.settings[0].failed[0].measured
    assert "T = 400 < T_thm = 64 f_max/(ηα²) = 2.56e+03" in failed
    long = [dict(r, steps=4000) for r in short]
    sgd = [dict(r, steps=4000) for r in noise_free_sgd()]
    held = verdict("T5", long + sgd, iterates(long, 0.7) + iterates(sgd, 0.0, first=len(long)))
    assert held.verdict == "held"
    assert held.controls[0].outcome == "as expected" and len(held.settings) == 1
    few = verdict("T5", long, iterates(long, 0.3))
    assert few.verdict == "contradicted"  # 0/6 runs with ≥ half SOSPs: P < 1/2 shown
    recorded = [dict(r, prem_steps_taken=300) for r in long]  # stopped early
    assert verdict("T5", recorded, iterates(recorded, 0.7)).verdict == "out of regime"


@pytest.mark.known_answer("avdiukhin2024", "T8")
def test_private_selection_returns_a_4alpha_sosp() -> None:
    chosen = [saddle_run(seed=s, label="noisy_sgd+selection", p_alg_select=True,
                         p_alg_alpha=0.05, diag_selection_passed=True) for s in range(6)]
    result = verdict("T8", [*chosen, saddle_run(seed=9)])  # no selection: not this claim's
    assert result.verdict == "held" and result.settings[0].runs == 6
    none = [dict(r, diag_selection_passed=False) for r in chosen]
    assert verdict("T8", none).verdict == "contradicted"
    far = [dict(r, final_grad_norm=0.5) for r in chosen]  # ‖∇F‖ ≥ 4α: not a 4α-SOSP
    assert verdict("T8", far).verdict == "contradicted"
    void = [dict(r, diag_guarantee_void=True) for r in chosen]
    assert verdict("T8", void).verdict == "out of regime"


# -- figures name exactly the suites and runs they draw -------------------------------------

def provenance_results() -> tuple[PaperResults, dict[str, set[str]]]:
    """Five suites: two feeding Figure 1 (one also Figure 3(a)), Figure 3(b)'s, the saddle
    and a learning-rate sweep no figure draws; with the run ids each figure must name."""
    runs: list[dict[str, Any]] = []
    expected: dict[str, set[str]] = {"test": set(), "train": set(), "saddle": set(),
                                     "lr": set()}

    def add(row: dict[str, Any], *figures: str) -> None:
        run_id = f"r{len(runs)}"
        runs.append({"n": 1347, "batch_size": 64, **row})
        for figure in figures:
            expected[figure].add(run_id)

    mlp, cnn = f"{KEY}_quick_fig1_digits_mlp", f"{KEY}_quick_fig1_digits_cnn"
    for s in range(2):
        for eps in (1.0, 8.0):
            add(accuracy_run(eps, 0.8, s, suite=mlp), "test", "train")
            add(accuracy_run(eps, 0.5, s, suite=cnn, problem="digits_cnn"), "test")
            add(accuracy_run(eps, 0.6, s, role="fig3b", suite=f"{KEY}_quick_fig3b_digits_mlp",
                             p_alg_bound_rule="lemma_3_2"), "test")
            add(accuracy_run(eps, 0.7, s, role="lr_sweep", suite=f"{KEY}_quick_lr",
                             problem="digits_cnn", p_alg_lr=0.3), "lr")
            add(saddle_run(seed=s, eps=eps, suite=f"{KEY}_quick_saddle"), "saddle")
        add(sgd_run(0.9, s, suite=mlp), "test", "train")
        add(sgd_run(0.9, s, suite=cnn, problem="digits_cnn"), "test")
        add(sgd_run(0.9, s, role="lr_sweep", suite=f"{KEY}_quick_lr", problem="digits_cnn",
                    p_alg_lr=0.3), "lr")
        add(saddle_run("sgd", s, suite=f"{KEY}_quick_saddle"), "saddle")
    runs[0]["role"] = "fig3a"  # the MLP suite also feeds Figure 3(a)
    curves = [{"run_id": f"r{i}", "step": step, "loss": 1.0, "test_acc": 0.5,
               "train_acc": 0.5, "grad_norm": 0.1, "lambda_min": -1.0 + step / 100}
              for i in range(len(runs)) for step in (0, 50, 100)]
    return synthetic_results(KEY, runs, curves), expected


def test_figures_name_exactly_the_suites_and_runs_they_draw(tmp_path: Path) -> None:
    results, expected = provenance_results()
    assert set(results.role_suites("fig3a")) == {f"{KEY}_quick_fig1_digits_mlp"}
    figures = {f.path: f for f in sections.figures(results, tmp_path)}
    stems = {"test": "test_acc_curves.png", "train": "train_acc_curves.png",
             "saddle": "saddle_lambda_min.png", "lr": "lr_sweep.png"}
    assert set(figures) == set(stems.values())
    suite_of = dict(zip(results.runs["run_id"], results.runs["suite"], strict=True))
    for figure, stem in stems.items():
        provenance = figures[stem].provenance
        assert provenance is not None and (tmp_path / stem).is_file()
        assert set(provenance.run_ids) == expected[figure], figure
        assert set(provenance.suites) == {suite_of[i] for i in expected[figure]}, figure
    assert set(figures["test_acc_curves.png"].provenance.suites) == {  # type: ignore[union-attr]
        f"{KEY}_quick_fig1_digits_mlp", f"{KEY}_quick_fig1_digits_cnn",
        f"{KEY}_quick_fig3b_digits_mlp"}


# -- issue 19: the norm trace, Lemma 3.2 on held-out data, C that holds, δ reading, regime ---

def test_norm_trace_keeps_the_largest_norm_of_each_block() -> None:
    from algorithms.noisy_sgd import norm_trace

    maxima = np.array([1.0, 5.0, 2.0, np.nan, 3.0, 4.0])
    assert norm_trace(maxima, points=3) == [[2, 5.0], [4, 2.0], [6, 4.0]]
    assert norm_trace(maxima, points=100)[3] == [4, pytest.approx(math.nan, nan_ok=True)]
    assert norm_trace(np.empty(0)) == []


def test_noisy_sgd_records_the_norm_trace_of_its_run() -> None:
    setup = make_setup("strict_saddle", "numpy", d=4, n=200)
    alg = noisy(steps=30, batch_size=20)
    plan = alg.plan(setup.instance, PrivacyTarget(1.0, 1e-5))
    _, trace = traced(alg, setup.oracle, plan, Mechanism(setup.backend.noise_source(0),
                                                         np.random.default_rng(1)))
    diag = alg.diagnostics(trace)
    norms = diag["max_norm_trace"]
    assert norms[-1][0] == 30 and len(norms) == 30
    assert max(m for _, m in norms) == pytest.approx(diag["max_per_sample_grad_norm"])


def test_lemma_c_from_held_out_data_records_its_step_size_condition() -> None:
    setup = make_setup("digits_mlp", "torch", hidden=4)
    alg = noisy(steps=5, batch_size=32, bound_rule="lemma_3_2", lemma_data="held_out")
    plan = alg.plan(setup.instance, PrivacyTarget(1.0, 0.01))
    _, trace = traced(alg, setup.oracle, plan, Mechanism(setup.backend.noise_source(0),
                                                         np.random.default_rng(1)))
    diag = alg.diagnostics(trace)
    instance: Any = setup.instance  # digits_mlp's instance has the held-out split
    held = instance.held_out_oracle(setup.backend)
    assert held.n == setup.instance.constants["n_test"] != setup.oracle.n
    assert diag["lemma_data"] == "held_out"
    assert diag["lemma_f_max"] == pytest.approx(float(setup.backend.to_numpy(held.loss(
        held.x0))), rel=1e-5)
    limit = min(1 / diag["lemma_L"], 1 / (diag["lemma_grad_std"] * math.sqrt(5)))
    assert diag["lemma_lr_max"] == pytest.approx(limit)
    assert diag["lemma_lr_ok"] is (limit >= 0.1)
    saddle = make_setup("strict_saddle", "numpy", d=4, n=200)
    with pytest.raises(ValueError, match="held-out split"):
        noisy(bound_rule="lemma_3_2", lemma_data="held_out").plan(saddle.instance,
                                                                  PrivacyTarget(1.0, 1e-5))


def test_coupling_reading_beside_the_papers_delta() -> None:
    table = sections.coupling_table()
    rows = {r[0]: r for r in table["rows"]}
    assert rows["1"][1] == "0.02" and rows["1"][2] == f"{(2 + math.e) * 0.01:.3g}"
    assert "vacuous" in rows["8"][2] and "vacuous" not in rows["4"][2]
    assert "our reading" in table["title"] and "derivation is ours" in table["note"]


def test_c_that_holds_costs_epsilon_where_norms_exceeded_c() -> None:
    sigma = 64 * math.sqrt(315 * math.log(100)) / 1347  # Theorem 3.3 at ε = 1
    spent = sections.planned_epsilon(1347, 315, 64, sigma, 0.01)
    base: dict[str, Any] = {"sigma": sigma, "n": 1347, "steps": 315, "batch_size": 64,
                            "delta": 0.01, "eps_pld": spent}
    over = [accuracy_run(1, 0.8, s, diag_max_per_sample_grad_norm=18.0 + s,
                         diag_guarantee_void=True, **base) for s in range(2)]
    clean = [dict(accuracy_run(1, 0.8, s, **base), calibration="pld") for s in range(2)]
    table = sections.holding_table(synthetic_results(KEY, over + clean))
    assert table is not None
    rows = {r[1]: r for r in table["rows"]}
    assert rows["paper"][4:7] == ["19", "2/2", "19"]
    assert float(rows["paper"][8]) == pytest.approx(
        sections.planned_epsilon(1347, 315, 64, sigma * 12 / 19, 0.01), rel=1e-3)
    assert float(rows["paper"][8]) > 1.5 * spent  # the same noise certifies a larger ε
    assert rows["pld"][6] == "12" and rows["pld"][8] == rows["pld"][7]  # C held: no cost


def test_regime_rows_measure_our_runs() -> None:
    assert measures.noise_to_bound(4.0) == pytest.approx(
        math.sqrt(2_274_880 * 2328 * math.log(100)) / (50_000 * 4))
    runs = [accuracy_run(4, 0.9, s, sigma=0.5, batch_size=64, n=1347, steps=505,
                         plan_d=7510.0) for s in range(2)]
    rows = [r.row(synthetic_results(KEY, runs)) for r in REGIME[:3]]
    assert rows[0][2].startswith(f"digits_mlp (stand-in): {math.sqrt(7510) * 0.5 / 64:.3g}")
    assert rows[1][2] == f"digits_mlp (stand-in): {1347 / 64:.3g}"
    assert rows[2][2] == f"digits_mlp (stand-in): {505 * 64 / 1347:.3g}"


def test_quick_experiments_sit_in_the_papers_regime() -> None:
    """Figure 1's stand-in has the paper's noise-to-bound ratio at every ε and 24 passes;
    the lr grid brackets the paper's 0.1; the saddle runs reach Theorem 3.4's horizon."""
    fig1 = [s for s in load_experiment(EXPERIMENTS / "quick" / "fig1_digits_mlp.yaml").specs
            if s.algorithm.name == "noisy_sgd" and s.privacy.calibration == "paper"]
    instance = make_setup("digits_mlp", "torch", **fig1[0].problem.params).instance
    for spec in fig1:
        alg = noisy(**spec.algorithm.params)
        sigma = alg.paper_sigma(instance, spec.privacy)
        ratio = math.sqrt(instance.d) * sigma / alg.params.batch_size
        assert ratio == pytest.approx(measures.noise_to_bound(spec.privacy.epsilon), rel=0.02)
        assert alg.steps(instance) * alg.params.batch_size / instance.n == pytest.approx(
            24, rel=0.01)
    lrs = {s.algorithm.params["lr"] for s in load_experiment(
        EXPERIMENTS / "quick" / "lr_sweep.yaml").specs}
    assert min(lrs) < 0.1 < max(lrs) and len(lrs) >= 5
    for name in ("saddle.yaml", "saddle_noise_free.yaml"):
        for spec in load_experiment(EXPERIMENTS / "quick" / name).specs:
            p = spec.algorithm.params
            lam = spec.problem.params["lam"]
            assert p["steps"] >= 64 * 2 * lam / (p["lr"] * measures.SADDLE_ALPHA**2)


def test_claims_declare_kind_headline_and_the_papers_setting() -> None:
    """The paper's main claims lead; figure claims name the paper's data, so the digits
    runs are stand-ins; theorem claims on instances meeting their assumptions transfer."""
    assert {c.id for c in PAPER.claims if c.headline} == {"P2", "T1p", "T5"}
    assert {c.id for c in PAPER.claims if c.kind != "paper"} == {"T1"}
    figures = {c.id for c in PAPER.claims if c.checks.startswith(("Figure", "Appendix"))}
    assert all(PAPER.claim(i).setting is not None for i in figures)
    assert all(c.setting is None for c in PAPER.claims if c.id.startswith("T"))
    setting = PAPER.claim("P2").setting
    assert setting is not None and setting.problems == ("cifar10_cnn",)
    assert verdict("P1", grid(rising)).stand_in.startswith("digits_mlp in place of CIFAR-10")
    assert [r.quantity.split(" ")[0] for r in PAPER.regime if r.lead] == ["noise-to-bound",
                                                                           "steps"]


def test_quick_suites_run_the_seeds_their_claims_need() -> None:
    """P4: 10 runs per ε (the paper's number); P2: Algorithm 1 at ε ∈ {4, 8} on every seed
    of the SGD runs it pairs with, clipped at noisy SGD's C with the tight noise."""
    quick = EXPERIMENTS / "quick"
    lemma = load_experiment(quick / "fig3b_digits_mlp_lemma_c.yaml").specs
    assert {e: sum(s.privacy.epsilon == e for s in lemma) for e in (0.125, 8)} == {
        0.125: 10, 8: 10}
    fig1 = load_experiment(quick / "fig1_digits_mlp.yaml").specs
    clipped = load_experiment(quick / "fig1_dp_sgd_reference.yaml").specs
    sgd_seeds = {s.seed for s in fig1 if s.algorithm.name == "sgd"}
    bound = {s.algorithm.params["bound"] for s in fig1 if s.algorithm.name == "noisy_sgd"}
    for eps in (4, 8):
        runs = [s for s in clipped if s.privacy.epsilon == eps]
        assert {s.seed for s in runs} == sgd_seeds
        assert {s.algorithm.params["clip"] for s in runs} == bound
        assert {s.privacy.calibration for s in runs} == {"pld"}


def test_norm_tracker_keeps_batch_maxima_in_order() -> None:
    """Past FAN batches the device stacks merge; the maxima must stay chronological."""
    from algorithms.premises import FAN, NormTracker
    from problems.backend import BackendSpec, get_backend

    tracker = NormTracker(get_backend(BackendSpec("numpy")), bound=1.0)
    for t in range(2 * FAN + 5):
        tracker.add(np.array([0.5, float(t)]))
    tracker.summary()
    np.testing.assert_array_equal(tracker.maxima, np.maximum(np.arange(2 * FAN + 5), 0.5))


def fig1_frame(real: bool) -> PaperResults:
    """Fabricated fig1 runs: noisy SGD over two ε on digits (norms within C) and, with
    ``real``, on Fashion-MNIST (norms far above C = 2.5), 3 seeds each."""
    import pandas as pd

    rows = []
    problems = [("digits_mlp", 13.0, 12.0)] + ([("fashion_mnist_cnn", 2.5, 18.0)] if real
                                                 else [])
    for problem, bound, largest in problems:
        for eps in (1.0, 4.0):
            for seed in range(3):
                rows.append({"run_id": f"{problem}-{eps}-{seed}", "suite": "s", "seed": seed,
                             "problem": problem, "algorithm": "noisy_sgd", "status": "done",
                             "calibration": "paper", "epsilon": eps, "final_test_acc":
                             0.5 + 0.1 * eps + 0.001 * seed, "prem_clip_bound": bound,
                             "prem_max_per_sample_norm": largest,
                             "prem_clipped_fraction": float(largest > bound),
                             "p_alg_bound_rule": None})
    return PaperResults("avdiukhin2024", "quick", [{"suite": "s", "roles": ["fig1"]}],
                        pd.DataFrame(rows), pd.DataFrame())


@pytest.mark.parametrize("real", [True, False])
def test_p1_p3_judged_on_real_images_where_they_ran(real: bool) -> None:
    results = fig1_frame(real)
    verdicts = {c.claim.id: c for c in PAPER.evaluate(results) if c.claim.id in ("P1", "P3")}
    judged = "fashion_mnist_cnn" if real else "digits_mlp"
    for claim in verdicts.values():
        assert all(judged in s.setting for s in claim.settings), claim.settings
    assert verdicts["P3"].verdict == ("contradicted" if real else "inconclusive")
    findings = sections.stand_ins(results, STAND_IN)
    assert [f["what"][:2] for f in findings] == (["P1", "P3"] if real else [])
    assert all(f["kind"] == "stand-in (not counted)" for f in findings)
