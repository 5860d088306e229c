"""The privacy page: every audited algorithm's claimed ε (the paper's formula and the
accountants), the exact checks (L0) and the canary audit (L1) with its lower bounds, and
whether the paper's own calibration meets the ε it is asked for.

Input: the JSON files ``saddlebench audit`` writes (one per algorithm, ``out/audit``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reports.latex import export_page
from reports.render import fmt, write_page

COLUMNS = ("algorithm", "paper", "problem", "L1 setting", "σ", "ε claimed (PLD)", "ε RDP",
           "ε GDP", "ε paper formula", "L0", "max Δ ratio", "noise std", "L1 runs per side",
           "statistic", "μ̂", "μ claimed", "μ lb", "ε lb", "ε lb ÷ ε", "detects ε ≥",
           "ε lb (threshold)", "L1", "L1 subsampled (ε lb)", "one-run ε lb (95%)",
           "one-run ε lb, real training (95%)", "paper σ spends (PLD)", "CPU s")
ASSUMPTION_COLUMNS = ("algorithm", "assumption", "declared", "canary", "× declared",
                      "L1 runs per side", "ε claimed", "ε lb", "ε lb ÷ ε", "L0 findings",
                      "guarantee_void", "verdict")


def load_audits(folder: Path) -> list[dict[str, Any]]:
    """Every audit result stored in ``folder`` (sorted by algorithm)."""
    audits = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    return sorted(audits, key=lambda a: a["algorithm"])


def _paper_calibration(a: dict[str, Any]) -> str:
    pc = a["paper_calibration"]
    if pc is None:
        return "no formula"
    verdict = "meets" if pc["meets"] else "exceeds"
    return f"{fmt(pc['eps_pld'])} for ε = {fmt(pc['target'])}: {verdict}"


def _verdict(passed: bool) -> str:
    return "pass" if passed else "FAIL"


def _subsampled(a: dict[str, Any]) -> str:
    sub = a.get("canary_subsampled")
    if sub is None:
        return "–"
    return f"{_verdict(sub['passed'])} ({fmt(sub['eps_lower'], 3)})"


def _one_run(one: dict[str, Any] | None) -> str:
    if one is None:
        return "–"
    text = f"{fmt(one['eps_lb'], 3)} ({one['correct']}/{one['guesses']} of {one['canaries']})"
    if one.get("problem"):
        text += f" on {one['problem']}"
    return text if one["passed"] else f"{text} exceeds"


def row(a: dict[str, Any]) -> list[str]:
    """One algorithm's row of :data:`COLUMNS`."""
    eps, exact, canary = a["eps_claimed"], a["exact"], a["canary"]
    mu_lb = canary["mu_lb_gdp"] if canary["exact_gdp"] else canary["mu_lb"]
    return [a["algorithm"], a["paper"], a["problem"], a["setting"], fmt(a["sigma"]),
            fmt(eps["pld"]), fmt(eps["rdp"]), fmt(eps["gdp"]), fmt(a["eps_paper"]),
            _verdict(a["exact_passed"]), fmt(exact["max_sensitivity_ratio"]),
            fmt(exact["noise_std"], 3), str(canary["runs"] // 2), canary["statistic"],
            fmt(canary["mu_hat"], 3), fmt(canary["mu_claimed"], 3), fmt(mu_lb, 3),
            fmt(canary["eps_lower"], 3), fmt(canary["ratio"], 3),
            fmt(canary["eps_detectable"], 3), fmt(canary["eps_lb"], 3),
            _verdict(canary["passed"]), _subsampled(a), _one_run(a.get("one_run")),
            _one_run(a.get("one_run_training")), _paper_calibration(a),
            fmt(a["cpu_seconds"], 3)]


def _assumption_verdict(x: dict[str, Any]) -> str:
    """In regime: L0 and L1 pass; a broken assumption: flagged (by the algorithm's
    ``guarantee_void``, else by L0)."""
    if not x["violated"]:
        return "pass" if x["passed"] else "FAIL"
    return "flagged" if x["flagged"] else "FAIL (not flagged)"


def assumption_rows(a: dict[str, Any]) -> list[list[str]]:
    """One row of :data:`ASSUMPTION_COLUMNS` per assumption audit of an algorithm."""
    return [[a["algorithm"], x["assumption"], fmt(x["declared"]), fmt(x["value"]),
             fmt(x["multiple"]), str(x["canary"]["runs"] // 2),
             fmt(x["canary"]["eps_claimed"]), fmt(x["canary"]["eps_lower"], 3),
             fmt(x["canary"]["ratio"], 3), str(len(x["exact_failures"])),
             str(x["guarantee_void"]), _assumption_verdict(x)]
            for x in a.get("assumptions", [])]


def build_privacy_page(audit_dir: Path, out: Path) -> Path:
    """Write ``out/index.html`` and the LaTeX (``out/tables/privacy_audit.tex``,
    ``out/latex.json``) from the audits in ``audit_dir``."""
    audits = load_audits(audit_dir)
    if not audits:
        raise ValueError(f"no audit results in {audit_dir}; run `saddlebench audit --all`")
    out.mkdir(parents=True, exist_ok=True)
    rows = [row(a) for a in audits]
    assumptions = [r for a in audits for r in assumption_rows(a)]
    tables = [{"title": "Privacy audit", "columns": list(COLUMNS), "rows": rows,
               "note": "Claimed ε, exact checks (L0) and the white-box canary audit (L1) per "
                       "algorithm."}]
    if assumptions:
        tables.append({"title": "Assumption audits", "columns": list(ASSUMPTION_COLUMNS),
                       "rows": assumptions,
                       "note": "L0 and L1 with a canary sized against an assumption the "
                               "claim rests on (a gradient bound C, a smoothness L): in "
                               "regime, and broken on purpose."})
    export_page(out, "Privacy audit", tables, [])
    write_page(
        "privacy.html.j2", out, out.parent, [("Privacy audit", None)],
        columns=COLUMNS, rows=rows, assumption_columns=ASSUMPTION_COLUMNS,
        assumptions=assumptions, audits=audits,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        shas=sorted({a.get("git_sha") or "unknown" for a in audits}))
    return out
