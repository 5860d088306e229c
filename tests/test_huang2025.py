"""huang2025 (PriSMA): the paper's structure, its calibration, client partitions, the VGG,
tuning, the experiment files and the page."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import build_problem, make_setup, problem_params

from algorithms import PrivacyTarget, get_algorithm
from algorithms.privacy.accounting import epsilons
from algorithms.privacy.ledger import Mechanism
from bench import cli
from bench.runner import run_one
from bench.spec import SpecError, load_experiment, parse_experiment
from problems import DataSize
from problems.backend import get_backend
from problems.partition import partition

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "bench" / "experiments" / "huang2025"


def algorithm(name: str, **params: Any) -> Any:
    cls = get_algorithm(name)
    return cls(cls.Params(**params))


def run(alg: Any, setup: Any, target: PrivacyTarget, seed: int = 0) -> tuple[list[Any], Any]:
    plan = alg.plan(setup.instance, target)
    mech = Mechanism(setup.backend.noise_source(seed), np.random.default_rng(seed + 1))
    xs = [setup.backend.to_numpy(s.x) for s in alg.iterate(setup.oracle, plan, mech)]
    return xs, mech


LS = {"clients": 3, "base_n": 60, "d": 5}


# -- the paper's structure --------------------------------------------------------------

def test_gamma_one_without_server_clip_is_dpsgd_gc_exactly() -> None:
    setup = make_setup("nc_least_squares", "numpy", **LS)
    common = {"lr": 0.05, "steps": 25, "batch_size": 6, "clip1": 2.0}
    target = PrivacyTarget(1.0, 1e-4, sigma=3.0)
    prisma, _ = run(algorithm("prisma", gamma=1.0, server_clip=False, clip3=0.5, **common),
                    setup, target)
    baseline, _ = run(algorithm("dpsgd_gc", **common), setup, target)
    for a, b in zip(prisma, baseline, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_every_step_is_at_most_lr_times_c2(backend: str) -> None:
    setup = make_setup("nc_least_squares", backend, **LS)
    alg = algorithm("prisma", lr=0.3, steps=40, batch_size=6, gamma=0.1, clip1=5.0, clip2=0.7,
                    clip3=0.2)
    xs, _ = run(alg, setup, PrivacyTarget(1.0, 1e-4, sigma=5.0))
    x0 = setup.backend.to_numpy(setup.oracle.x0)
    steps = np.linalg.norm(np.diff(np.stack([x0, *xs]), axis=0), axis=1)
    assert steps.max() <= 0.3 * 0.7 * (1 + 1e-12)
    assert steps.max() == pytest.approx(0.3 * 0.7)  # the noise makes the server clip bind
    assert alg.diagnostics()["max_step"] == pytest.approx(steps.max())


def test_momentum_noise_is_smaller_than_dpsgd_gc() -> None:
    data = DataSize(n=50_000, clients=[np.arange(5000)] * 10)
    target = PrivacyTarget(8.0, 1e-5, "paper")
    p = algorithm("prisma", steps=1000, batch_size=512, gamma=0.5, clip1=4.0, clip3=0.5
                  ).plan(data, target)
    d = algorithm("dpsgd_gc", steps=1000, batch_size=512, clip1=4.0).plan(data, target)
    assert p.sigma == pytest.approx(d.sigma)  # one σ̂ for both (Corollary 1)
    assert p.extra["sigma_later"] < d.extra["sigma_later"]
    assert p.extra["sigma_later"] == pytest.approx(p.sigma * 2 * (0.5 * 4 + 0.5 * 0.5) / 512)
    assert p.extra["sigma_first"] == pytest.approx(d.extra["sigma_first"])


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
        assert not plan.extra["condition_18_holds"]
        assert plan.extra["condition_18_rhs"] < plan.extra["condition_18_alpha"]


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
        neighbour = copy.deepcopy(setup.instance)
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
    _, mech = run(alg, setup, PrivacyTarget(2.0, 1e-4))
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
    assert plan.extra["sensitivity"] == pytest.approx(2 * 1.0 / 20)


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
    inst = build_problem("cifar10_vgg", problem_params("cifar10_vgg", width=0.125), 0)
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
    for scale in ("quick", "paper"):
        files = sorted((EXPERIMENTS / scale).glob("*.yaml"))
        assert len(files) == 2
        for path in files:
            exp = load_experiment(path)
            assert exp.paper == "huang2025" and exp.scale == scale and exp.groups
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


QUICK = {
    "fig1_least_squares.yaml": {
        "suite": "huang2025_quick_fig1_least_squares", "paper": "huang2025", "scale": "quick",
        "seeds": 2, "privacy": {"epsilon": 1, "delta": 1e-4, "calibration": "paper"},
        "tuning": {"metric": "grad_norm", "goal": "min", "seeds": 1},
        "eval": {"points": 2, "metrics": ["grad_norm"]},
        "problems": [{"name": "nc_least_squares", "params": LS, "sweep": {"dup": [1, 2, 3]}}],
        "algorithms": [
            {"name": "prisma", "params": {"steps": 40, "batch_fraction": 0.1, "clip2": 1.0},
             "tune": {"lr": [0.05], "clip1": [5.0], "gamma": [0.02], "clip3": [0.01]}},
            {"name": "dpsgd_gc", "params": {"steps": 40, "batch_fraction": 0.1},
             "tune": {"lr": [0.05], "clip1": [5.0]}}]},
    "table1_digits_mlp.yaml": {
        "suite": "huang2025_quick_table1_digits_mlp", "paper": "huang2025", "scale": "quick",
        "seeds": 2, "privacy": {"epsilon": [8, 32], "delta": 1e-5, "calibration": "paper"},
        "tuning": {"metric": "test_acc", "goal": "max", "seeds": 1},
        "eval": {"points": 2, "metrics": ["test"]}, "backend": {"name": "torch"},
        "problems": [{"name": "digits_mlp", "params": {"hidden": 8, "clients": 4}}],
        "algorithms": [
            {"name": "prisma", "params": {"steps": 20, "batch_size": 8},
             "tune": {"lr": [0.5], "clip1": [1.0, 4.0], "gamma": [0.5], "clip3": [0.5]}},
            {"name": "dpsgd_gc", "params": {"steps": 20, "batch_size": 8},
             "tune": {"lr": [0.5], "clip1": [1.0]}}]},
}


def test_reproduce_writes_the_paper_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "experiments" / "huang2025" / "quick"
    folder.mkdir(parents=True)
    for name, doc in QUICK.items():
        (folder / name).write_text(yaml.safe_dump(doc, allow_unicode=True))
    monkeypatch.setattr(cli, "EXPERIMENTS", tmp_path / "experiments")
    out = tmp_path / "out"
    assert cli.main(["reproduce", "--no-pdf", "huang2025", "--out", str(out), "--jobs", "2",
                     "--no-progress"]) == 0
    page = out / "report" / "huang2025" / "quick"
    html = (page / "index.html").read_text()
    status = json.loads((page / "status.json").read_text())
    assert status["artefacts"] and all(a["target"] != "other claims" for a in status["artefacts"])
    for fragment in ("Beyond Uniformly Bounded", "Table 1 regenerated", "z =", "Tuning",
                     "published vs ours", "not privacy-accounted", "11.135", "condition (18)"):
        assert fragment in html, fragment
    assert any(p.suffix == ".png" for p in page.iterdir())
    for claim in ("6", "7", "8", "1", "2", "3", "4", "13", "14", "16"):
        assert f"<td>{claim}</td>" in html, claim
