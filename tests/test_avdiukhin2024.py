"""avdiukhin2024: private SOSP selection, λ_min estimators, noisy SGD's paper calibration and
Lemma 3.2 bound, the experiment files (quick and paper scale) and the paper page."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import make_setup

from algorithms import PrivacyTarget, get_algorithm
from algorithms.lambda_min import lambda_min_lanczos, lambda_min_power
from algorithms.noisy_sgd import lemma_3_2_bound
from algorithms.privacy.accounting import calibrate, epsilons
from algorithms.privacy.ledger import Mechanism
from bench import cli
from bench.runner import run_one
from bench.spec import load_experiment, parse_experiment
from problems import DataSize

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "bench" / "experiments" / "avdiukhin2024"


def mechanism(seed: int = 0) -> Mechanism:
    return Mechanism(None, np.random.default_rng(seed))


# -- AboveThreshold --------------------------------------------------------------------

def test_above_threshold_finds_first_query_below_and_is_lazy() -> None:
    mech = mechanism()
    asked: list[int] = []

    def query(j: int, value: float) -> Any:
        return lambda: asked.append(j) or value

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
    iterates = {0: setup.oracle.x0, **{s.t: s.x for s in alg.iterate(setup.oracle, plan, mech)}}
    diag = alg.diagnostics()
    assert diag["selection_passed"]
    np.testing.assert_array_equal(alg.output(), iterates[diag["selected_step"]])
    out = alg.output()
    assert np.linalg.norm(setup.oracle.grad(out)) < 4 * 0.1
    assert setup.instance.lambda_min(out) > -math.sqrt(setup.instance.constants["rho"] * 0.4)
    spent = epsilons(mech.ledger, 1e-5)
    assert spent.pld == pytest.approx(plan.eps.pld)
    assert plan.eps.pld == pytest.approx(2.0, rel=2e-3)  # the target includes ε_s
    assert spent.gdp is None
    assert plan.extra["query_sensitivity"] == pytest.approx(max(
        2 * plan.extra["bound"] / (400 * 0.1),
        2 * plan.extra["smoothness"] / (400 * math.sqrt(plan.extra["rho"] * 0.1))))


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
    assert plan.extra["sigma_tight"] == pytest.approx(tight)
    assert plan.extra["noise_ratio_tight_over_paper"] == pytest.approx(tight / plan.sigma)
    assert plan.extra["abadi_max_epsilon"] == pytest.approx(300 * (64 / 2000) ** 2)


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
    list(alg.iterate(setup.oracle, plan, mech))
    diag = alg.diagnostics()
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
    config = transformers.BertConfig(**{**TINY_BERT, "max_position_embeddings": 64})
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
    assert len(files) == 5
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


# -- reproduce and the paper page -------------------------------------------------------

TINY_QUICK = {
    "saddle.yaml": """
suite: avdiukhin2024_quick_saddle
paper: avdiukhin2024
scale: quick
seeds: 2
privacy: {epsilon: [2], delta: 1.0e-5}
eval: {points: 5, schedule: linear, metrics: [loss, grad_norm, lambda_min]}
problems:
  - {name: strict_saddle, params: {d: 4, n: 200, sigma1: 0.0, sigma2: 0.0}}
algorithms:
  - {name: noisy_sgd, params: {lr: 0.2, steps: 60, batch_size: 20}}
  - {name: noisy_sgd, label: noisy_sgd+selection, params: {lr: 0.2, steps: 60, batch_size: 20,
     select: true, alpha: 0.1, select_epsilon: 0.5, candidates: 5, estimator: lanczos}}
  - {name: dp_sgd, params: {lr: 0.2, steps: 60, batch_size: 20, clip: 1.4142135623730951}}
  - {name: sgd, params: {lr: 0.2, steps: 60, batch_size: 20}}
""",
    "fig1_digits_mlp.yaml": """
suite: avdiukhin2024_quick_fig1_digits_mlp
paper: avdiukhin2024
scale: quick
seeds: 2
privacy: {epsilon: [1, 4, 8], delta: 0.01, calibration: paper}
backend: {name: torch, dtype: float32}
eval: {points: 3, schedule: linear, metrics: [loss, test, train]}
problems: [{name: digits_mlp, params: {hidden: 8}}]
algorithms:
  - {name: noisy_sgd, params: {lr: 0.1, steps: 20, batch_size: 32, bound: 5.0}}
  - {name: sgd, params: {lr: 0.1, steps: 20, batch_size: 32}}
""",
}


def test_reproduce_writes_the_paper_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    experiments = tmp_path / "experiments"
    (experiments / "avdiukhin2024" / "quick").mkdir(parents=True)
    for name, text in TINY_QUICK.items():
        (experiments / "avdiukhin2024" / "quick" / name).write_text(text)
    monkeypatch.setattr(cli, "EXPERIMENTS", experiments)
    monkeypatch.setattr("reports.papers.avdiukhin2024.EPSILONS", (1.0,))
    out = tmp_path / "out"
    assert cli.main(["reproduce", "--no-pdf", "avdiukhin2024", "--scale", "quick", "--out",
                     str(out), "--jobs", "2", "--no-progress"]) == 0
    page = out / "report" / "avdiukhin2024" / "quick"
    html = (page / "index.html").read_text()
    status = json.loads((page / "status.json").read_text())
    assert status["artefacts"] and all(a["target"] != "other claims" for a in status["artefacts"])
    for fragment in ("Noise is All You Need", "P1", "P3", "T1", "T2", "T4", "T8",
                     "Theorem 3.3 at the paper", "Ambiguities", "GroupNorm"):
        assert fragment in html, fragment
    for image in ("test_acc_curves.png", "train_acc_curves.png", "saddle_lambda_min.png"):
        assert (page / image).is_file()
    # noiseless per-sample gradients: SGD stays at the saddle, the private methods leave it
    assert 'sgd, per-sample noise σ₁ = 0, σ₂ = 0; start at the saddle' in html
    assert "0/2 runs escaped" in html
    assert cli.main(["reproduce", "nobody2030", "--scale", "quick", "--out", str(out)]) == 2
    assert "no quick experiments for 'nobody2030'" in capsys.readouterr().err
