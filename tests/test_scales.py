"""The ``standard`` scale: ``quick`` and the longer checks of <paper>/standard/, on one page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.experiment import SCALES
from reports.paper import collect
from saddlebench.cli import paper_experiments, reproducible


def test_standard_runs_quick_and_the_longer_checks() -> None:
    quick = {p.name for p in paper_experiments("tao2025", "quick")}
    standard = {p.parent.name + "/" + p.name for p in paper_experiments("tao2025", "standard")}
    assert "fig1_long_horizon.yaml" not in quick  # the horizon check left the quick job
    assert {f"quick/{name}" for name in quick} | {
        "standard/fig1_long_horizon.yaml", "standard/tune_lr_long_horizon.yaml",
        "standard/fig1_fashion_mnist_mlp_20_passes.yaml"} == standard
    huang = {p.parent.name + "/" + p.name for p in paper_experiments("huang2025", "standard")}
    assert huang == {f"quick/{p.name}" for p in paper_experiments("huang2025", "quick")} | {
        "standard/table1_fashion_mnist_mlp_middle_eps.yaml",  # Table 1's ε = 8, 16 on real images
        "standard/table1_pilot_digits_mlp.yaml",  # the pilot that set Table 1's constants
        "standard/fig1_least_squares_trials.yaml"}  # Figure 1's trials 10..24
    liu = {p.parent.name + "/" + p.name for p in paper_experiments("liu2024", "standard")}
    assert liu == {f"quick/{p.name}" for p in paper_experiments("liu2024", "quick")} | {
        "standard/e2_uniform_iterate.yaml"}  # E2b (a design check)
    assert set(reproducible("quick")) <= set(reproducible("standard"))
    assert SCALES["paper"] == ("paper",)


def test_a_standard_page_collects_its_quick_suites_too(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    from bench.store import Store

    def one_run(store: Store) -> tuple[pd.DataFrame, pd.DataFrame]:
        return pd.DataFrame({"run_id": [store.root.name], "status": ["done"]}), pd.DataFrame()

    monkeypatch.setattr(Store, "runs_and_trajectories", one_run)
    for scale in ("quick", "standard", "paper"):
        folder = tmp_path / f"s_{scale}"
        (folder / "runs").mkdir(parents=True)
        (folder / "suite.json").write_text(json.dumps({
            "suite": f"s_{scale}", "paper": "demo", "scale": scale, "run_ids": []}))
    seen = {scale: sorted(collect(tmp_path, "demo", scale).runs["suite"]) for scale in SCALES}
    assert seen == {"quick": ["s_quick"], "standard": ["s_quick", "s_standard"],
                    "paper": ["s_paper"]}


def test_avdiukhin2024_real_images_quick_and_selection_standard() -> None:
    quick = {p.name for p in paper_experiments("avdiukhin2024", "quick")}
    standard = {p.parent.name + "/" + p.name
                for p in paper_experiments("avdiukhin2024", "standard")}
    assert {"fig1_fashion_mnist_cnn.yaml", "fig1_fashion_mnist_cnn_dp_sgd.yaml"} <= quick
    assert {f"quick/{name}" for name in quick} | {
        "standard/fig1_fashion_mnist_cnn_selection.yaml"} == standard
