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

COLUMNS = ("algorithm", "paper", "problem", "σ", "ε claimed (PLD)", "ε RDP", "ε GDP",
           "ε paper formula", "L0", "max Δ ratio", "noise std", "L1 runs", "FPR ub",
           "TPR lb", "TPR max", "μ lb", "ε lb", "L1", "paper σ spends (PLD)")


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


def row(a: dict[str, Any]) -> list[str]:
    """One algorithm's row of :data:`COLUMNS`."""
    eps, exact, canary = a["eps_claimed"], a["exact"], a["canary"]
    return [a["algorithm"], a["paper"], a["problem"], fmt(a["sigma"]), fmt(eps["pld"]),
            fmt(eps["rdp"]), fmt(eps["gdp"]), fmt(a["eps_paper"]),
            "pass" if exact["passed"] else "FAIL", fmt(exact["max_sensitivity_ratio"]),
            fmt(exact["noise_std"], 3), str(canary["runs"] // 2), fmt(canary["fpr_ub"], 3),
            fmt(canary["tpr_lb"], 3), fmt(canary["tpr_max"], 3), fmt(canary["mu_lb"], 3),
            fmt(canary["eps_lb"], 3), "pass" if canary["passed"] else "FAIL",
            _paper_calibration(a)]


def build_privacy_page(audit_dir: Path, out: Path) -> Path:
    """Write ``out/index.html`` and the LaTeX (``out/tables/privacy_audit.tex``,
    ``out/latex.json``) from the audits in ``audit_dir``."""
    audits = load_audits(audit_dir)
    if not audits:
        raise ValueError(f"no audit results in {audit_dir}; run `saddlebench audit --all`")
    out.mkdir(parents=True, exist_ok=True)
    rows = [row(a) for a in audits]
    export_page(out, "Privacy audit", [{
        "title": "Privacy audit", "columns": list(COLUMNS), "rows": rows,
        "note": "Claimed ε, exact checks (L0) and the white-box canary audit (L1) per "
                "algorithm."}], [])
    write_page(
        "privacy.html.j2", out, out.parent, [("Privacy audit", None)],
        columns=COLUMNS, rows=rows, audits=audits,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        shas=sorted({a.get("git_sha") or "unknown" for a in audits}))
    return out
