"""LaTeX: escaping of any unicode, booktabs tables, page manifests, report.tex, pdflatex.

The compile tests skip where pdflatex is missing, unless SADDLEBENCH_REQUIRE_TOOLS=1 (then
they fail).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from reports import latex
from reports.latex import (
    LatexError,
    PdflatexMissing,
    build_report_tex,
    compile_pdf,
    export_page,
    latex_env,
    latex_escape,
    overfull_boxes,
    pdflatex_available,
    slug,
    write_manifest,
    write_table,
)

#: what our tables hold, ASCII specials and TeX's ligature pairs
NASTY = ("‖∇Φ(x_399)‖ λ_min ≤ ≥ ∝ √d ✓ ✗ × · → ± ε δ σ μ ρ α γ η Γ Ξ Φ x²³⁻¹ x₁₂ ᵗ⁺¹ x̄ ε̂ "
         "— – “q” ‘q’ … ° ′ ½ ™ ﬁ é ǖ Å ß ☃ 😀 \\ & % $ # _ { } ~ ^ [ ] * < > | \" ' ` -- ``''"
         " ,, !` ?` \t\n\u00a0\u200b x\u20d7 ε\u0302\u20d7 ㎍\u0301 <\u0301 ϓ ∛")
#: Unicode blocks escaped whole: Latin, combining marks, Greek, modifier letters, general
#: punctuation to supplemental arrows, dingbats, math operators, presentation forms
BLOCKS = [(0x20, 0x250), (0x2B0, 0x400), (0x1D00, 0x1DC0), (0x2000, 0x2C00),
          (0xFB00, 0xFB07), (0xFF01, 0xFF5F), (0x1D400, 0x1D480)]


def require_tool(name: str) -> None:
    """Skip the test without ``name`` (fail it under SADDLEBENCH_REQUIRE_TOOLS=1)."""
    if shutil.which(name) is None:
        message = f"{name} is not installed"
        if os.environ.get("SADDLEBENCH_REQUIRE_TOOLS") == "1":
            pytest.fail(f"SADDLEBENCH_REQUIRE_TOOLS=1 but {message}")
        pytest.skip(message)


def samples() -> list[str]:
    """:data:`NASTY`, each of its characters and of :data:`BLOCKS`, each combining mark on
    a letter, a Greek letter and nothing, and 2000 random code points (seeded)."""
    chars = [chr(c) for lo, hi in BLOCKS for c in range(lo, hi)]
    marks = [chr(c) for c in range(0x300, 0x370)] + ["\u20d7", "\u20dd"]
    rng = random.Random(20260101)
    randoms = [chr(rng.randrange(0x110000)) for _ in range(2000)]
    return [NASTY, *NASTY, *chars, *(f"{b}{m}" for m in marks for b in ("x", "ε", "")), *randoms]


def pages(tex: Path) -> int:
    """Pages of the PDF pdflatex last wrote for ``tex`` (from its log)."""
    found = re.search(r"Output written on .*?\((\d+) pages?", log(tex))
    return int(found.group(1)) if found else 0


def log(tex: Path) -> str:
    """``tex``'s log with pdflatex's line wrapping undone."""
    return "".join(tex.with_suffix(".log").read_text(errors="replace").splitlines())


def assert_compiles(tex: Path) -> None:
    pdf = compile_pdf(tex)
    assert pdf.is_file() and pages(tex) >= 1
    assert not re.search(r"\d+pk>", log(tex)), "bitmap (Type 3) fonts: not paper-ready"


def assert_fits(tex: Path) -> None:
    """``tex`` compiles and no text runs into the margin (no overfull box in its log)."""
    assert_compiles(tex)
    assert not overfull_boxes(tex), "\n".join(overfull_boxes(tex))


# -- escaping -----------------------------------------------------------------------------
def test_escape_specials() -> None:
    assert latex_escape("a_b & 50% #1 {x} $") == r"a\_b \& 50\% \#1 \{x\} \ensuremath{\$}"
    assert latex_escape("~^\\") == r"\textasciitilde{}\textasciicircum{}\textbackslash{}"
    assert latex_escape("[0, 1]*") == "{[}0, 1{]}{*}"  # never an argument of the \\ before
    assert latex_escape("a--b ``q'' <x|y>") == (
        r"a-{}-b `{}`q'{}' \ensuremath{<}x\ensuremath{|}y\ensuremath{>}")
    assert latex_escape("line\nbreak\ttab") == "line break tab"
    assert latex_escape(0.5) == "0.5"


def test_escape_symbols_scripts_and_accents() -> None:
    assert latex_escape("‖∇Φ(x_399)‖") == (
        r"\ensuremath{\|}\ensuremath{\nabla}\ensuremath{\Phi}(x\_399)\ensuremath{\|}")
    assert latex_escape("ε=1") == r"\ensuremath{\varepsilon}=1"
    assert latex_escape("λ_min ≤ ✓") == (
        r"\ensuremath{\lambda}\_min \ensuremath{\leq} \ensuremath{\checkmark}")
    assert latex_escape("x⁻¹ᵗ⁺¹ x₁₂") == r"x\ensuremath{^{-1t+1}} x\ensuremath{_{12}}"
    assert latex_escape("é x̄ ε̂ ǖ x\u20d7") == (
        r"\'{e} \={x} \ensuremath{\hat{\varepsilon}} \={\"{u}} \ensuremath{\vec{x}}")
    assert latex_escape("– — “q”") == (
        r"\textendash{} \textemdash{} \textquotedblleft{}q\textquotedblright{}")
    assert latex_escape("ﬁ ½ ＡＢ") == "fi 1/2 AB"  # NFKD's ASCII where there is one
    assert latex_escape("☃😀\x00") == "???"  # else a visible '?'
    assert latex_escape("a\u200bb\u00a0c") == "ab~c"


def test_escape_is_ascii_and_balanced_for_any_unicode() -> None:
    for text in samples():
        out = latex_escape(text)
        assert out.isascii() and "\n" not in out, (text, out)
        bare = out.replace(r"\{", "").replace(r"\}", "")
        assert bare.count("{") == bare.count("}"), (text, out)
        assert not re.search(r"(?<!\\)[%&#$]", out), (text, out)


def test_latex_environment() -> None:
    tpl = latex_env().from_string(r"\BLOCK{for x in xs}\VAR{x|latex}\\ \BLOCK{endfor}\#{no}")
    assert tpl.render(xs=["a_1", "b&c"]) == r"a\_1\\ b\&c\\ "


# -- tables and manifests -----------------------------------------------------------------
def table(title: str = "Nasty ‖∇Φ(x_399)‖ & λ_min", rows: int = 3) -> dict[str, Any]:
    return {"title": title, "note": "Mean ± s.e.; ε ≤ 1 — 50%.",
            "columns": ["method", "ε", "value", "why"],
            "rows": [[f"m{i}", "1", f"{i}.5 ± 0.1", "a reason longer than forty characters, "
                      "so that it wraps"] for i in range(rows)] + [["[ragged]", "–"]]}


def test_slug() -> None:
    assert slug("Privacy audit") == "privacy_audit"
    assert slug("‖∇Φ(x_399)‖ vs λ_min") == "phi_x_399_vs_lamda_min"
    assert slug("Runtime targets", {"runtime_targets"}) == "runtime_targets_2"
    assert slug("Runtime targets", {"runtime_targets", "runtime_targets_2"}) == (
        "runtime_targets_3")
    assert slug("") == slug("∇‖") == "table"
    title = "Published vs ours: Table 2 of the paper, matrix sensing, scale 100"
    assert slug(title) == "published_vs_ours_table_2_of_the_paper_matrix_sensing_scale_100"
    long = slug("A very long title " * 10)
    assert len(long) <= 120 and re.fullmatch(r"[a-z0-9_]+", long) and not long.endswith("_")


def test_rate_formulas_are_math() -> None:
    assert latex_escape("bound Õ(n^{-1/3} + (√d/(nε))^{1/2}) holds") == (
        r"bound \ensuremath{\tilde{O} (n^{-1/3} + (\sqrt{d}/(n\varepsilon ))^{1/2})} holds")
    assert latex_escape("O(x ☃) and (O(y") == "O(x ?) and (O(y"  # not TeX: escaped as text


def test_write_table(tmp_path: Path) -> None:
    fragment, standalone = write_table(tmp_path, "nasty", table())
    assert (fragment, standalone) == (tmp_path / "tables" / "nasty_fragment.tex",
                                      tmp_path / "tables" / "nasty.tex")
    frag = fragment.read_text()
    assert r"\documentclass" not in frag and r"\begin{table}" not in frag
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert rule in frag
    # text left, numbers right ('–' is a missing number), long text wraps
    # plain numbers aligned on the decimal point (N: siunitx's S), '–' braced as text
    assert r"\begin{tabular}{@{}lNr>{\raggedright\arraybackslash}p{16em}@{}}" in frag
    assert r"{[}ragged{]} & {\textendash{}} &" in frag
    body = [line for line in frag.splitlines() if line.endswith(r"\\")]
    assert len(body) == 5 and all(line.count(" & ") == 3 for line in body)  # padded rows
    doc = standalone.read_text()
    assert doc.startswith(r"\documentclass") and frag.strip() in doc
    assert r"\caption{Nasty \ensuremath{\|}\ensuremath{\nabla}" in doc
    assert r"\footnotesize Mean \ensuremath{\pm} s.e.; \ensuremath{\varepsilon}" in doc
    assert doc.isascii() and frag.isascii()
    with pytest.raises(ValueError, match="unsafe"):
        write_table(tmp_path, "../x", table())


def test_export_page_and_manifest(tmp_path: Path) -> None:
    manifest = export_page(tmp_path, "Page ε", [table("Same"), table("Same"), table("")],
                           [("fig.pdf", "A figure, ε = 1")])
    assert manifest == tmp_path / "latex.json"
    data = json.loads(manifest.read_text())
    assert data["title"] == "Page ε"
    assert [t["fragment"] for t in data["tables"]] == [
        "tables/same_fragment.tex", "tables/same_2_fragment.tex", "tables/table_fragment.tex"]
    assert data["tables"][1] == {"fragment": "tables/same_2_fragment.tex",
                                 "standalone": "tables/same_2.tex", "caption": "Same",
                                 "note": "Mean ± s.e.; ε ≤ 1 — 50%."}
    assert data["figures"] == [{"pdf": "fig.pdf", "caption": "A figure, ε = 1"}]
    assert all((tmp_path / t["standalone"]).is_file() for t in data["tables"])


# -- the report ---------------------------------------------------------------------------
def fake_report(root: Path, folders: list[str], tables: int = 1) -> None:
    """A page with ``tables`` tables and one PDF figure in each of ``folders``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1, 2], [1, 0.5, 0.2])
    for folder in folders:
        out = root / folder
        out.mkdir(parents=True, exist_ok=True)
        fig.savefig(out / "curve.pdf")
        export_page(out, f"Page {folder}: {NASTY}", [table(f"T{i} ε") for i in range(tables)],
                    [("curve.pdf", f"Curve of {folder}: ‖∇F(x_t)‖ against t")])
    plt.close(fig)


def test_report_tex_orders_pages_and_paths(tmp_path: Path) -> None:
    folders = ["runtime_1thread", "runtime", "privacy", "theory/quick", "tao2025/quick",
               "avdiukhin2024/quick", "."]
    fake_report(tmp_path, folders)
    tex = build_report_tex(tmp_path, git_sha="abc123").read_text()
    sections = re.findall(r"\\texttt\{([^}]*)\}", tex)[1:]  # after the title page's sha
    assert sections == [".", "avdiukhin2024/quick", "tao2025/quick", "theory/quick",
                        "privacy", "runtime", "runtime\\_1thread"]
    assert r"\input{tables/t0_epsilon_fragment.tex}" in tex  # the root page's table
    assert r"\input{tao2025/quick/tables/t0_epsilon_fragment.tex}" in tex
    assert "{theory/quick/curve.pdf}" in tex and "git \\texttt{abc123}" in tex
    assert tex.count(r"\clearpage") == len(folders) + 1 and tex.isascii()


def test_report_tex_refuses_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no latex\.json"):
        build_report_tex(tmp_path)
    write_manifest(tmp_path / "a", "A", [], [("missing.pdf", "")])
    with pytest.raises(FileNotFoundError, match=r"missing\.pdf"):
        build_report_tex(tmp_path)
    write_manifest(tmp_path / "a", "A", [], [("with space.pdf", "")])
    with pytest.raises(ValueError, match="paths of"):
        build_report_tex(tmp_path)


# -- pdflatex -----------------------------------------------------------------------------
def test_missing_pdflatex_is_a_clear_error(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(latex.shutil, "which", lambda _: None)
    assert not pdflatex_available()
    with pytest.raises(PdflatexMissing, match="not installed") as error:
        compile_pdf(tmp_path / "x.tex")
    assert isinstance(error.value, FileNotFoundError)


def test_latex_error_shows_the_log(tmp_path: Path) -> None:
    require_tool("pdflatex")
    tex = tmp_path / "broken.tex"
    tex.write_text("\\documentclass{article}\\begin{document}\\nosuchmacro\\end{document}\n")
    with pytest.raises(LatexError, match="Undefined control sequence"):
        compile_pdf(tex)


def test_any_unicode_compiles(tmp_path: Path) -> None:
    """Every sample in a tabular (rows may start with anything), in the caption and in the
    note (paragraph mode)."""
    require_tool("pdflatex")
    chars = samples()
    rows = [chars[i:i + 12] for i in range(0, len(chars), 12)]
    _, tex = write_table(tmp_path, "unicode", {"title": NASTY, "note": "".join(chars),
                                               "columns": list(NASTY[:12]), "rows": rows})
    assert_compiles(tex)


def test_wide_and_long_table_compiles_on_one_page(tmp_path: Path) -> None:
    require_tool("pdflatex")
    wide = {"title": "wide", "note": "", "columns": [f"column ε{i}" for i in range(40)],
            "rows": [[f"{i * j}.123 ± 0.5" for j in range(40)] for i in range(150)]}
    _, tex = write_table(tmp_path, "wide", wide)
    assert_compiles(tex)
    assert pages(tex) == 1


def test_long_titles_names_and_paths_fit_the_page(tmp_path: Path) -> None:
    """A heading too long for one line, run labels and suite names longer than a wrapped
    column, numbers with signs and exponents: no overfull box."""
    require_tool("pdflatex")
    title = ("Differential Privacy in Distributed Learning: Beyond Uniformly Bounded "
             "Stochastic Gradients (huang2025, quick)")
    rows = [["liu2024_quick_e3_sample_complexity · strict_saddle · spider_sosp, pld",
             "matrix_sensing[]/dp_rgda/eps=2/advanced/numpy: lr = 1e-07 on the lower edge",
             "−0.5", "+1.25e-3", "–"]] * 3
    write_table(tmp_path, "long", {"title": title, "note": "", "rows": rows,
                                   "columns": ["fitted on", "why", "a", "b", "c"]})
    write_manifest(tmp_path, title, [("long", {"title": title})], [])
    assert_fits(build_report_tex(tmp_path))


def test_report_compiles(tmp_path: Path) -> None:
    """Two pages with a table and a PDF figure each, and one with 30 tables (never too many
    unprocessed floats)."""
    require_tool("pdflatex")
    fake_report(tmp_path, ["tao2025/quick", "privacy"])
    fake_report(tmp_path, ["runtime"], tables=30)
    tex = build_report_tex(tmp_path, git_sha="abc123")
    assert_fits(tex)
    assert (tmp_path / "report.pdf").is_file() and pages(tex) >= 6
    assert "Too many unprocessed floats" not in log(tex)
    assert re.search(r"\\contentsline \{section\}\{\\numberline \{1\}",
                     (tmp_path / "report.toc").read_text())
