"""The suite report never pools variants: a problem sweep (the README's example), an lr
sweep, two entries of one algorithm and two files written into one folder each give their
own rows, named by the values that differ (issue 41, item 1)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bench.results import load
from reports.render import build_report
from reports.tables import privacy_table, summarise, with_variants
from saddlebench.cli import main

SWEEP = """\
suite: my_sweep
seeds: 2
privacy: {{epsilon: [1], delta: 1.0e-5, calibration: pld}}
eval: {{points: 2, metrics: [loss, grad_norm]}}
problems:
  - name: strict_saddle
    params: {{d: 4, n: 200}}
    sweep: {{n: [200, 400]}}
algorithms:
  - name: dp_sgd
    params: {{lr: 0.1, steps: 10, batch_size: 16, clip: 1.0}}
    sweep: {{lr: [0.05, {lr}]}}
  - name: dp_sgd
    params: {{lr: 0.3, steps: 10, batch_size: 16, clip: 1.0}}
"""


def test_the_suite_report_separates_every_variant(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(SWEEP.format(lr=0.1))
    second.write_text(SWEEP.format(lr=0.2))  # a second file into the same folder
    for path in (first, second):
        assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    runs = load(tmp_path / "out" / "my_sweep").runs
    named = with_variants(runs)
    # 2 n × (lr 0.05, 0.1, 0.2 from the sweeps, 0.3 from the second entry): 8 variants,
    # each of 2 seeds; the runs both files share (lr 0.05, 0.3) count once
    assert named["variant"].nunique() == 8
    assert set(named.groupby("variant").size()) == {2}
    assert {"n=200, lr=0.05", "n=400, lr=0.3"} <= set(named["variant"])
    summary = summarise(runs)
    cells = summary[summary["metric"] == "loss"]
    assert len(cells) == 8 and set(cells["seeds"]) == {2}
    assert len(privacy_table(runs)) == 8
    report = build_report(tmp_path / "out" / "my_sweep")
    html = (report / "index.html").read_text()
    assert "n=400, lr=0.2" in html
    assert "sgd (n=200, lr=0.05) &" in (report / "tables" / "loss.tex").read_text()


def test_nothing_varies_means_no_variant_name() -> None:
    runs = pd.DataFrame({"problem": "p", "label": "a", "algorithm": "a", "epsilon": [1.0, 2.0],
                         "seed": 0, "status": "done", "p_alg_lr": [0.1, 0.2],
                         "final_loss": [1.0, 2.0]})
    # lr differs only across ε (a per-ε tuned step): one row per ε, no variant
    assert list(with_variants(runs)["variant"]) == ["", ""]
