"""Results on disk: one Parquet file per run plus a JSON sidecar, written atomically.

Layout of a suite directory (``out/<suite>/``)::

    suite.json            the suite's name, description, paper, scale, run ids, tuning choices
    runs/<id>.parquet     the trajectory (step, time_s, point, metrics ...)
    runs/<id>.json        the sidecar: spec, plan, ledger, ε figures, status, diagnostics,
                          timings, environment (versions, git sha, code fingerprint) and the
                          trajectory's SHA-256
    .lock                 the lock file writers hold (``flock``) while they replace files

Writing: every file is staged in a synced temporary file and renamed into place. A run's
trajectory and sidecar (last) are renamed under the exclusive lock, so a run exists exactly
when its sidecar does, and two sweeps writing one suite at once never pair one's sidecar
with the other's trajectory; ``suite.json`` is read, merged (the run ids and tuning choices
of every sweep into the suite) and replaced under the same lock. A failed write (disk full,
no permission, read-only file system) raises :class:`StoreError` naming the path and the fix
and leaves no partial file: nothing already stored is replaced. Files are readable by others
as ordinary files are (0o666 less the umask: 0644 under the usual 022; folders 0o777 less
it), so colleagues on a shared file system can read the results.

Reading: a run whose sidecar is not valid JSON or lacks fields, or whose trajectory is
missing, unreadable or not the one its sidecar records, is damaged: :meth:`Store.runs` and
:meth:`Store.trajectories` skip it with a :class:`CorruptResultWarning` listing the files,
:meth:`Store.is_finished` is False (the next run recomputes and overwrites it), and
:meth:`Store.check` lists every damaged run. A run is reused only if it finished (``done``
or ``diverged``) under the same code fingerprint; errors are never cached.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import io
import json
import math
import os
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from bench.errors import UsageError
from bench.fingerprint import fingerprint
from bench.runner import RunRecord
from bench.spec import Experiment, RunSpec

CACHED_STATUSES = ("done", "diverged")
REUSED = "reused: finished, by the same code"
LOCK = ".lock"
ELSEWHERE = "or choose another --out"
# errno -> (what happened, how to fix it)
WRITE_FAULTS = {
    errno.ENOSPC: ("disk full", f"free space {ELSEWHERE}"),
    errno.EDQUOT: ("disk quota exceeded", f"free space {ELSEWHERE}"),
    errno.EACCES: ("permission denied", f"make it writable {ELSEWHERE}"),
    errno.EPERM: ("operation not permitted", f"make it writable {ELSEWHERE}"),
    errno.EROFS: ("read-only file system", ELSEWHERE.removeprefix("or ")),
}


class StoreError(UsageError, OSError):
    """Results could not be written; the message names the path, the cause and the fix."""


class CorruptResultWarning(UserWarning):
    """Stored results were skipped because their files are damaged."""


@dataclass(frozen=True)
class Damage:
    """A damaged stored run: its id, the file at fault and what is wrong with it."""

    run_id: str
    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path.name} ({self.reason})"


class _Damaged(Exception):
    def __init__(self, damage: Damage) -> None:
        super().__init__(str(damage))
        self.damage = damage


def write_error(path: Path, exc: OSError) -> StoreError:
    """``exc``, raised while writing ``path``, as a :class:`StoreError` naming the fix."""
    what, fix = WRITE_FAULTS.get(exc.errno or 0, (exc.strerror or str(exc),
                                                  f"check the path {ELSEWHERE}"))
    return StoreError(f"cannot write results to {path}: {what}; {fix}")


def umask() -> int:
    """The process's umask (read from /proc where it can be, so no other thread ever sees a
    changed one; else set and restored)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _stage(path: Path, data: bytes) -> Path:
    """``data`` in a synced temporary file beside ``path`` (removed again if that fails),
    with an ordinary file's mode: ``mkstemp`` makes it 0600, readable by its owner only."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~umask())
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _write_files(files: list[tuple[Path, bytes]]) -> None:
    """Write every file or, where staging one fails, none; renamed in the order given."""
    staged: list[tuple[Path, Path]] = []
    try:
        for path, data in files:
            try:
                staged.append((_stage(path, data), path))
            except OSError as exc:
                raise write_error(path, exc) from exc
        for tmp, path in staged:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise write_error(path, exc) from exc
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _dumps(obj: Any) -> bytes:
    """Strict JSON, a top-level field per line, each written by json's C encoder (an
    indented dump runs json's pure-Python encoder: 3× the time on the main job's 340 MB of
    sidecars, most of it realised ledgers); non-finite floats become strings ('inf',
    'nan')."""
    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    def one(v: Any) -> str:
        return json.dumps(v, default=_json_default, allow_nan=False)

    def lines(o: Any) -> str:
        if not isinstance(o, dict):
            return one(o)
        return "{\n" + ",\n".join(f"{one(k)}: {one(v)}" for k, v in o.items()) + "\n}"

    try:
        text = lines(obj)
    except ValueError:  # a non-finite float: only then is every value visited in Python
        text = lines(clean(obj))
    return text.encode()


def _number(value: Any) -> Any:
    """Undo :func:`_dumps`' encoding of non-finite floats."""
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    return value


def _merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Suite metadata ``new`` with the run ids, skipped notes and tuning choices that ``old``
    (written by another sweep into the same suite) has and ``new`` lacks."""
    if old.get("suite") != new["suite"]:
        return new
    choices = {str(c.get("group")): c for c in [*old.get("tuning", []), *new["tuning"]]
               if isinstance(c, dict)}
    return {**new,
            "run_ids": list(dict.fromkeys([*old.get("run_ids", []), *new["run_ids"]])),
            "skipped": list(dict.fromkeys([*old.get("skipped", []), *new["skipped"]])),
            "tuning": list(choices.values())}


class Store:
    """One suite's results directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.runs_dir = self.root / "runs"

    def sidecar_path(self, run_id: str) -> Path:
        return self.runs_dir / f"{run_id}.json"

    def trajectory_path(self, run_id: str) -> Path:
        return self.runs_dir / f"{run_id}.parquet"

    # -- locking ------------------------------------------------------------------------
    @contextmanager
    def _writing(self, folder: Path) -> Iterator[None]:
        """Create ``folder`` and hold the store's lock exclusively."""
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise write_error(folder, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Hold the store's lock shared (no lock where no writer has made one)."""
        try:
            fd = os.open(self.root / LOCK, os.O_RDONLY)
        except OSError:
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)

    # -- writing ------------------------------------------------------------------------
    def write_suite(self, experiment: Experiment, tuned: list[RunSpec] | None = None,
                    tuning: list[dict[str, Any]] | None = None) -> None:
        """The suite's metadata; after tuning, with the chosen runs and every choice made.
        What another sweep wrote into this suite is kept (see :func:`_merged`)."""
        meta = {
            "suite": experiment.suite,
            "description": experiment.description,
            "paper": experiment.paper,
            "scale": experiment.scale,
            "roles": list(experiment.roles),
            "source": str(experiment.path) if experiment.path else None,
            "run_ids": [s.digest for s in [*experiment.specs, *(tuned or [])]],
            "skipped": experiment.skipped,
            "tuning": tuning or [],
        }
        with self._writing(self.root):
            _write_files([(self.root / "suite.json", _dumps(_merged(self.suite(), meta)))])

    def write(self, record: RunRecord) -> None:
        """A run's trajectory and sidecar, both or neither."""
        frame = pd.DataFrame(record.rows)
        frame.insert(0, "run_id", record.run_id)
        trajectory = frame.to_parquet(index=False)
        side = {**record.sidecar(),
                "trajectory": {"sha256": hashlib.sha256(trajectory).hexdigest(),
                               "rows": len(frame)}}
        with self._writing(self.runs_dir):
            _write_files([(self.trajectory_path(record.run_id), trajectory),
                          (self.sidecar_path(record.run_id), _dumps(side))])

    # -- reading ------------------------------------------------------------------------
    def suite(self) -> dict[str, Any]:
        """The suite's metadata (just its name where there is none or it is damaged)."""
        path = self.root / "suite.json"
        try:
            meta = json.loads(path.read_bytes())
        except FileNotFoundError:
            meta = None
        except (OSError, ValueError) as exc:
            warnings.warn(f"{path} is damaged ({exc}); rerun the experiment to rewrite it",
                          CorruptResultWarning, stacklevel=2)
            meta = None
        return meta if isinstance(meta, dict) else {"suite": self.root.name}

    def _read(self, run_id: str) -> tuple[dict[str, Any], bytes]:
        """A run's sidecar and its trajectory's bytes, checked against each other;
        :class:`_Damaged` where either is damaged (FileNotFoundError: no sidecar)."""
        side_path, path = self.sidecar_path(run_id), self.trajectory_path(run_id)
        with self._reading():
            side = _sidecar(run_id, side_path)
            try:
                data = path.read_bytes()
            except OSError as exc:
                reason = ("missing: the sidecar has no trajectory"
                          if isinstance(exc, FileNotFoundError) else f"unreadable: {exc}")
                raise _Damaged(Damage(run_id, path, reason)) from None
        _verify_trajectory(run_id, path, data, (side.get("trajectory") or {}).get("sha256"))
        return side, data

    def _scan(self, run_ids: Iterable[str] | None = None
              ) -> Iterator[tuple[dict[str, Any], bytes] | Damage]:
        """(sidecar, trajectory bytes) or the damage, per stored run (of ``run_ids``)."""
        if run_ids is None:
            run_ids = (p.stem for p in sorted(self.runs_dir.glob("*.json")))
        for run_id in run_ids:
            try:
                yield self._read(run_id)
            except FileNotFoundError:
                continue
            except _Damaged as bad:
                yield bad.damage

    def check(self, run_ids: Iterable[str] | None = None) -> list[Damage]:
        """Every damaged run (of ``run_ids``; None: all stored runs)."""
        return [d for d in self._scan(run_ids) if isinstance(d, Damage)]

    def sidecar(self, run_id: str) -> dict[str, Any] | None:
        """A run's sidecar; None where there is none or the run is damaged."""
        try:
            return self._read(run_id)[0]
        except (FileNotFoundError, _Damaged):
            return None

    def is_finished(self, spec: RunSpec) -> bool:
        """Whether ``spec`` already has a reusable (finished, undamaged) result."""
        return self.explain(spec) == REUSED

    def explain(self, spec: RunSpec) -> str:
        """Why ``spec``'s stored result is reused (:data:`REUSED`) or not."""
        try:
            side = self._read(spec.digest)[0]
        except FileNotFoundError:
            return "no stored result"
        except _Damaged as exc:
            return f"damaged ({exc.damage.reason})"
        if side.get("status") not in CACHED_STATUSES:
            return (f"status {side.get('status')} (only "
                    f"{' and '.join(CACHED_STATUSES)} runs are reused)")
        stored = side.get("environment") or {}
        code, parts = fingerprint(spec)
        if stored.get("code") == code:
            return REUSED
        before = stored.get("code_parts") or {}
        changed = sorted(k for k in {*parts, *before} if parts.get(k) != before.get(k))
        if not before:
            return "code changed (the stored result predates per-module fingerprints)"
        return f"code changed: {', '.join(changed[:4])}" + (
            f" and {len(changed) - 4} more" if len(changed) > 4 else "")

    def sidecars(self) -> Iterator[dict[str, Any]]:
        """Every undamaged run's sidecar; damaged runs are skipped with a warning."""
        yield from (side for side, _ in self._undamaged())

    def _undamaged(self) -> Iterator[tuple[dict[str, Any], bytes]]:
        damaged = []
        for item in self._scan():
            if isinstance(item, Damage):
                damaged.append(item)
            else:
                yield item
        if damaged:
            warnings.warn(f"{self.runs_dir}: skipped {len(damaged)} damaged result(s): "
                          f"{'; '.join(map(str, damaged))}; rerun the experiment to recompute "
                          "them", CorruptResultWarning, stacklevel=2)

    def runs(self, stage: str | None = "final") -> pd.DataFrame:
        """One row per run: spec fields, status, privacy figures, final metrics (tuning runs
        only with ``stage="tune"``, everything with None)."""
        rows = [flatten(s) for s in self.sidecars()]
        return pd.DataFrame([r for r in rows if stage is None or r["stage"] == stage])

    def trajectories(self) -> pd.DataFrame:
        """All trajectory rows of all runs, with their run_id."""
        return _concat([pd.read_parquet(io.BytesIO(data)) for _, data in self._undamaged()])

    def runs_and_trajectories(self, stage: str | None = "final"
                              ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """:meth:`runs` (of ``stage``) and :meth:`trajectories` (of every run) from one
        pass over the store: each sidecar is read and checked once."""
        rows, frames = [], []
        for side, data in self._undamaged():
            rows.append(flatten(side))
            frames.append(pd.read_parquet(io.BytesIO(data)))
        runs = pd.DataFrame([r for r in rows if stage is None or r["stage"] == stage])
        return runs, _concat(frames)


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _sidecar(run_id: str, path: Path) -> dict[str, Any]:
    """The sidecar at ``path``, with the fields readers need; :class:`_Damaged` where it is
    not (FileNotFoundError where it does not exist)."""
    try:
        side = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise _Damaged(Damage(run_id, path, f"not valid JSON: {exc}")) from None
    try:
        if side["run_id"] != run_id:
            raise ValueError(f"it is the sidecar of run {side['run_id']}")
        flatten(side)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        reason = f"missing field {exc}" if isinstance(exc, KeyError) else f"malformed: {exc}"
        raise _Damaged(Damage(run_id, path, reason)) from None
    return side


def _verify_trajectory(run_id: str, path: Path, data: bytes, sha256: str | None) -> None:
    """Raise :class:`_Damaged` unless ``data`` is the trajectory recorded (by SHA-256; a
    readable Parquet file for sidecars written before the digest was recorded)."""
    if sha256 is not None:
        if hashlib.sha256(data).hexdigest() != sha256:
            raise _Damaged(Damage(run_id, path, "truncated or replaced: its SHA-256 is not the "
                                                "one its sidecar records"))
        return
    try:
        pq.read_metadata(io.BytesIO(data))
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
        raise _Damaged(Damage(run_id, path, f"unreadable Parquet: {exc}")) from None


def flatten(side: dict[str, Any]) -> dict[str, Any]:
    """A sidecar as one flat table row."""
    spec = side["spec"]
    plan = side.get("plan") or {}
    eps = side.get("eps") or {}
    env = side.get("environment") or {}
    output = (side.get("info") or {}).get("output") or {}  # the rule that chose the output
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
        "output_rule": output.get("rule"),
        "output_step": output.get("step"),
        "sigma": plan.get("sigma"),
        "steps": plan.get("steps"),
        "n": plan.get("n"),
        "batch_size": plan.get("batch_size"),
        "eps_planned": _number((plan.get("eps") or {}).get("headline")),
        **{f"eps_{k}": _number(eps.get(k))
           for k in ("pld", "rdp", "gdp", "advanced", "paper", "headline")},
        **{f"time_{k}": v for k, v in (side.get("timings") or {}).items()},
        "git_sha": env.get("git_sha"),
        "code": env.get("code"),
        "versions": " ".join(f"{k}={v}" for k, v in sorted((env.get("versions") or {}).items())
                             if v),
    }
    out.update({f"p_prob_{k}": v for k, v in spec["problem"]["params"].items()})
    out.update({f"p_alg_{k}": v for k, v in spec["algorithm"]["params"].items()})
    out.update({f"diag_{k}": v for k, v in (side.get("diagnostics") or {}).items()})
    out.update({f"prem_{k}": _number(v) for k, v in (side.get("premises") or {}).items()
                if not isinstance(v, (dict, list))})
    out.update({f"plan_{k}": _number(v) for k, v in (plan.get("extra") or {}).items()
                if not isinstance(v, (dict, list))})
    final = side.get("final") or {}
    out.update({f"final_{k}": _number(v) for k, v in final.items() if k not in ("point", "step")})
    return out
