"""Results on disk: one Parquet file per run plus a JSON sidecar, written atomically.

Layout of a suite directory (``out/<suite>/``)::

    suite.json            the experiment's name, description, paper, scale, run ids
    runs/<id>.parquet     the trajectory (step, time_s, point, metrics ...)
    runs/<id>.json        the sidecar: spec, plan, ledger, ε figures, status, diagnostics,
                          timings, environment (versions, git sha, code fingerprint)

Each file is written to a temporary name and renamed; the sidecar is written last, so a
run exists exactly when its sidecar does. A run is reused only if it finished (``done``
or ``diverged``) under the same code fingerprint; errors are never cached.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from bench.env import code_fingerprint
from bench.runner import RunRecord
from bench.spec import Experiment, RunSpec

CACHED_STATUSES = ("done", "diverged")


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _dumps(obj: Any) -> bytes:
    """Strict JSON; non-finite floats become strings ('inf', 'nan')."""
    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v
    return json.dumps(clean(obj), indent=1, default=_json_default, allow_nan=False).encode()


def _number(value: Any) -> Any:
    """Undo :func:`_dumps`' encoding of non-finite floats."""
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    return value


class Store:
    """One suite's results directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.runs_dir = self.root / "runs"

    def sidecar_path(self, run_id: str) -> Path:
        return self.runs_dir / f"{run_id}.json"

    def trajectory_path(self, run_id: str) -> Path:
        return self.runs_dir / f"{run_id}.parquet"

    # -- writing ------------------------------------------------------------------------
    def write_suite(self, experiment: Experiment, tuned: list[RunSpec] | None = None,
                    tuning: list[dict[str, Any]] | None = None) -> None:
        """The suite's metadata; after tuning, with the chosen runs and every choice made."""
        meta = {
            "suite": experiment.suite,
            "description": experiment.description,
            "paper": experiment.paper,
            "scale": experiment.scale,
            "source": str(experiment.path) if experiment.path else None,
            "run_ids": [s.digest for s in [*experiment.specs, *(tuned or [])]],
            "skipped": experiment.skipped,
            "tuning": tuning or [],
        }
        _atomic_write(self.root / "suite.json", _dumps(meta))

    def write(self, record: RunRecord) -> None:
        frame = pd.DataFrame(record.rows)
        frame.insert(0, "run_id", record.run_id)
        _atomic_write(self.trajectory_path(record.run_id), frame.to_parquet(index=False))
        _atomic_write(self.sidecar_path(record.run_id), _dumps(record.sidecar()))

    # -- reading ------------------------------------------------------------------------
    def suite(self) -> dict[str, Any]:
        path = self.root / "suite.json"
        return json.loads(path.read_text()) if path.is_file() else {"suite": self.root.name}

    def sidecar(self, run_id: str) -> dict[str, Any] | None:
        path = self.sidecar_path(run_id)
        if not path.is_file():
            return None
        return json.loads(path.read_text())

    def is_finished(self, spec: RunSpec) -> bool:
        """Whether ``spec`` already has a reusable result."""
        side = self.sidecar(spec.digest)
        return bool(
            side
            and side.get("status") in CACHED_STATUSES
            and side.get("environment", {}).get("code") == code_fingerprint()
            and self.trajectory_path(spec.digest).is_file()
        )

    def sidecars(self) -> Iterator[dict[str, Any]]:
        if not self.runs_dir.is_dir():
            return
        for path in sorted(self.runs_dir.glob("*.json")):
            yield json.loads(path.read_text())

    def runs(self, stage: str | None = "final") -> pd.DataFrame:
        """One row per run: spec fields, status, privacy figures, final metrics (tuning runs
        only with ``stage="tune"``, everything with None)."""
        rows = [flatten(s) for s in self.sidecars()]
        return pd.DataFrame([r for r in rows if stage is None or r["stage"] == stage])

    def trajectories(self) -> pd.DataFrame:
        """All trajectory rows of all runs, with their run_id."""
        frames = [pd.read_parquet(self.trajectory_path(s["run_id"])) for s in self.sidecars()
                  if self.trajectory_path(s["run_id"]).is_file()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def flatten(side: dict[str, Any]) -> dict[str, Any]:
    """A sidecar as one flat table row."""
    spec = side["spec"]
    plan = side.get("plan") or {}
    eps = side.get("eps") or {}
    out: dict[str, Any] = {
        "run_id": side["run_id"],
        "problem": spec["problem"]["name"],
        "algorithm": spec["algorithm"]["name"],
        "label": spec.get("label") or spec["algorithm"]["name"],
        "epsilon": float(spec["privacy"]["epsilon"]),
        "delta": spec["privacy"]["delta"],
        "calibration": spec["privacy"]["calibration"],
        "backend": spec["backend"]["name"],
        "device": spec["backend"]["device"],
        "dtype": spec["backend"]["dtype"],
        "seed": spec["seed"],
        "stage": spec.get("stage", "final"),
        "status": side["status"],
        "error": side.get("error"),
        "sigma": plan.get("sigma"),
        "steps": plan.get("steps"),
        "n": plan.get("n"),
        "batch_size": plan.get("batch_size"),
        "eps_planned": _number((plan.get("eps") or {}).get("headline")),
        **{f"eps_{k}": _number(eps.get(k))
           for k in ("pld", "rdp", "gdp", "advanced", "paper", "headline")},
        **{f"time_{k}": v for k, v in (side.get("timings") or {}).items()},
        "git_sha": (side.get("environment") or {}).get("git_sha"),
    }
    out.update({f"p_prob_{k}": v for k, v in spec["problem"]["params"].items()})
    out.update({f"p_alg_{k}": v for k, v in spec["algorithm"]["params"].items()})
    out.update({f"diag_{k}": v for k, v in (side.get("diagnostics") or {}).items()})
    out.update({f"plan_{k}": _number(v) for k, v in (plan.get("extra") or {}).items()
                if not isinstance(v, (dict, list))})
    final = side.get("final") or {}
    out.update({f"final_{k}": _number(v) for k, v in final.items() if k not in ("point", "step")})
    return out
