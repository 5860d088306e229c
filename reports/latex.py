"""LaTeX for the report: escaping, booktabs tables, per-page manifests and ``report.tex``.

A page builder calls :func:`export_page`, which writes, for every table of the page::

    tables/<stem>_fragment.tex   a booktabs tabular, to \\input into a paper
    tables/<stem>.tex            a standalone document (caption and note) around it

and ``latex.json``, the page's manifest (its title, tables and figure PDFs).
:func:`build_report_tex` gathers the manifests under a report folder into one
``report.tex``; :func:`compile_pdf` runs pdflatex on any of these documents.

Only packages of Debian's texlive-latex-base, -latex-recommended and -fonts-recommended
are used. Escaped text is plain ASCII that compiles in the OT1 and T1 encodings (T1 with
Latin Modern where ``lmodern.sty`` is installed, else Computer Modern's OT1).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import unicodedata
from collections.abc import Collection, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from fnmatch import fnmatch
from itertools import groupby
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2

TEMPLATES = Path(__file__).resolve().parent / "templates"
MANIFEST = "latex.json"
#: section order of report.tex (see :func:`_rank`): the front page, paper pages
#: (<paper>/<scale>), theory, privacy, runtime, then the rest; ties sorted by path
DEFAULT_ORDER = (".", "*/*", "theory", "privacy", "runtime")
WRAP_CHARS = 40  # a text column whose longest cell is longer wraps at 16em
#: a cell of a number column: one plain number, aligned on its decimal point (siunitx ``S``)
NUMBER = re.compile(r"[-+−]?(\d+\.?\d*|\.\d+)([eE][-+−]?\d+)?")

_ASCII = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "#": r"\#", "_": r"\_",
          "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
          "[": "{[}", "]": "{]}", "*": "{*}", "$": r"\ensuremath{\$}", "<": r"\ensuremath{<}",
          ">": r"\ensuremath{>}", "|": r"\ensuremath{|}"}
# ``{[}`` and ``{*}``: a row starting with ``[`` or ``*`` must not extend the ``\\`` before it;
# ``$`` in math: text mode takes it (and ``\pounds``) from the TS1 encoding, whose Computer
# Modern fonts are bitmaps without cm-super
_GREEK = {"α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\varepsilon",
          "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "ι": r"\iota", "κ": r"\kappa",
          "λ": r"\lambda", "μ": r"\mu", "ν": r"\nu", "ξ": r"\xi", "ο": "o", "π": r"\pi",
          "ρ": r"\rho", "ς": r"\varsigma", "σ": r"\sigma", "τ": r"\tau", "υ": r"\upsilon",
          "φ": r"\varphi", "χ": r"\chi", "ψ": r"\psi", "ω": r"\omega", "ϵ": r"\epsilon",
          "ϑ": r"\vartheta", "ϕ": r"\phi", "ϖ": r"\varpi", "ϱ": r"\varrho", "ϰ": r"\varkappa",
          "Γ": r"\Gamma", "Δ": r"\Delta", "Θ": r"\Theta", "Λ": r"\Lambda", "Ξ": r"\Xi",
          "Π": r"\Pi", "Σ": r"\Sigma", "Υ": r"\Upsilon", "Φ": r"\Phi", "Ψ": r"\Psi",
          "Ω": r"\Omega"}
#: characters typeset in math mode (the macro inside ``\ensuremath``)
_MATH = {
    **_GREEK, "−": "-", "∗": "*", "∇": r"\nabla",
    "∂": r"\partial", "∞": r"\infty", "±": r"\pm", "∓": r"\mp", "×": r"\times", "·": r"\cdot",
    "⋅": r"\cdot", "∙": r"\bullet", "÷": r"\div", "∘": r"\circ", "≤": r"\leq", "≥": r"\geq",
    "≦": r"\leqq", "≧": r"\geqq", "≠": r"\neq", "≈": r"\approx", "∼": r"\sim",
    "≃": r"\simeq", "≅": r"\cong", "≡": r"\equiv", "∝": r"\propto", "≪": r"\ll", "≫": r"\gg",
    "«": r"\ll", "»": r"\gg", "‹": "<", "›": ">", "≲": r"\lesssim", "≳": r"\gtrsim",
    "≺": r"\prec", "≻": r"\succ", "⪯": r"\preceq", "⪰": r"\succeq", "≔": ":=",
    "√": r"\surd", "∑": r"\sum", "∏": r"\prod", "∫": r"\int", "∮": r"\oint", "∈": r"\in",
    "∉": r"\notin", "∋": r"\ni", "⊂": r"\subset", "⊃": r"\supset", "⊆": r"\subseteq",
    "⊇": r"\supseteq", "∪": r"\cup", "∩": r"\cap", "∅": r"\emptyset", "∖": r"\setminus",
    "∀": r"\forall", "∃": r"\exists", "∄": r"\nexists", "¬": r"\neg", "∧": r"\wedge",
    "∨": r"\vee", "⊕": r"\oplus", "⊗": r"\otimes", "⊙": r"\odot", "⊤": r"\top", "⊥": r"\bot",
    "⊢": r"\vdash", "⊨": r"\models", "→": r"\to", "←": r"\leftarrow",
    "↔": r"\leftrightarrow", "⇒": r"\Rightarrow", "⇐": r"\Leftarrow",
    "⇔": r"\Leftrightarrow", "↦": r"\mapsto", "↑": r"\uparrow", "↓": r"\downarrow",
    "⟶": r"\longrightarrow", "⟹": r"\Longrightarrow", "↗": r"\nearrow", "↘": r"\searrow",
    "‖": r"\|", "∥": r"\parallel", "∣": r"\mid", "⟨": r"\langle", "⟩": r"\rangle",
    "⌈": r"\lceil", "⌉": r"\rceil", "⌊": r"\lfloor", "⌋": r"\rfloor", "ℓ": r"\ell",
    "ℏ": r"\hbar", "ℝ": r"\mathbb{R}", "ℕ": r"\mathbb{N}", "ℤ": r"\mathbb{Z}",
    "ℚ": r"\mathbb{Q}", "ℂ": r"\mathbb{C}", "ℙ": r"\mathbb{P}", "𝔼": r"\mathbb{E}",
    "ℵ": r"\aleph", "′": r"^{\prime}", "″": r"^{\prime\prime}", "°": r"^{\circ}",
    "⋯": r"\cdots", "⋮": r"\vdots", "⋱": r"\ddots", "✓": r"\checkmark", "✔": r"\checkmark",
    "✗": r"\times", "✘": r"\times", "†": r"\dagger", "‡": r"\ddagger", "•": r"\bullet",
    "★": r"\bigstar", "☆": r"\star", "□": r"\square", "■": r"\blacksquare",
    "∎": r"\blacksquare", "△": r"\triangle", "▲": r"\blacktriangle",
    "▼": r"\blacktriangledown", "◇": r"\lozenge", "◆": r"\blacklozenge", "○": r"\circ",
    "●": r"\bullet", "∠": r"\angle", "§": r"\S", "¶": r"\P", "£": r"\pounds",
    "∆": r"\Delta", "∊": r"\in", "∕": "/", "∶": ":", "∴": r"\therefore", "∵": r"\because",
    "≐": r"\doteq", "≍": r"\asymp", "≼": r"\preccurlyeq", "≽": r"\succcurlyeq",
    "≨": r"\lneqq", "≩": r"\gneqq", "∐": r"\coprod", "∔": r"\dotplus", "∁": r"\complement",
    "∛": r"\sqrt[3]{}", "∜": r"\sqrt[4]{}", "⇑": r"\Uparrow", "⇓": r"\Downarrow",
    "↕": r"\updownarrow", "⇕": r"\Updownarrow", "↖": r"\nwarrow", "↙": r"\swarrow",
}
#: characters with a text-mode spelling in both OT1 and T1
_TEXT = {"–": r"\textendash{}", "‒": r"\textendash{}", "—": r"\textemdash{}",
         "―": r"\textemdash{}", "‐": "-", "‑": "-", "‘": r"\textquoteleft{}",
         "’": r"\textquoteright{}", "‚": ",", "“": r"\textquotedblleft{}",
         "”": r"\textquotedblright{}", "„": ",,", "…": r"\ldots{}", "¡": r"\textexclamdown{}",
         "¿": r"\textquestiondown{}", "€": "EUR", "©": "(c)", "®": "(R)",
         "ß": r"\ss{}", "æ": r"\ae{}", "Æ": r"\AE{}", "œ": r"\oe{}", "Œ": r"\OE{}",
         "ø": r"\o{}", "Ø": r"\O{}", "ł": r"\l{}", "Ł": r"\L{}", "ı": r"\i{}", "ȷ": r"\j{}",
         "\u00a0": "~", "\u2009": r"\,", "\u202f": r"\,", "⁄": "/",
         **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΧ", "ABEZHIKMNOPTX", strict=True))}
#: combining mark -> (text accent, math accent); either may be missing
_ACCENTS = {"\u0300": ("`", "grave"), "\u0301": ("'", "acute"), "\u0302": ("^", "hat"),
            "\u0303": ("~", "tilde"), "\u0304": ("=", "bar"), "\u0305": ("=", "bar"),
            "\u0306": ("u", "breve"), "\u0307": (".", "dot"), "\u0308": ('"', "ddot"),
            "\u030a": ("r", "mathring"), "\u030b": ("H", ""), "\u030c": ("v", "check"),
            "\u0323": ("d", ""), "\u0327": ("c", ""), "\u0331": ("b", ""),
            "\u20d7": ("", "vec")}
_MATH_PLAIN = re.compile(r"[A-Za-z0-9+=()/.,:;!?'-]")
# TeX's ligatures on ASCII (-- ``  '' ,, !` ?`) are broken: escaped text is what it says
_LIGATURE = re.compile(r"(?<=[-`',!?])(?=[-`',])")
_SAFE_PATH = re.compile(r"[A-Za-z0-9_.\-/]+")


class LatexError(RuntimeError):
    """pdflatex failed; the message ends with the last lines of its log."""


class PdflatexMissing(FileNotFoundError):
    """pdflatex is not installed."""


# -- escaping -----------------------------------------------------------------------------
#: a rate formula as our texts write it: O(…), Õ(…), Ω(…), Ω̃(…), Θ(…) with balanced brackets
RATE_START = re.compile(r"(?<!\w)(?:[OΩΘ]\u0303?|Õ)\(")
_TILDED = {"Õ": r"\tilde{O}", "O\u0303": r"\tilde{O}", "Ω\u0303": r"\tilde{\Omega}"}


def _closing(text: str, start: int) -> int:
    """The index just after the bracket that closes the one at ``text[start]`` (-1: none)."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return -1


def formula_end(text: str, match: re.Match[str]) -> int:
    """Where the rate formula that :data:`RATE_START` matched ends (-1: unbalanced, or not
    plain ASCII once written as TeX)."""
    end = _closing(text, match.end() - 1)
    return end if end > 0 and formula_tex(text[match.start():end]).isascii() else -1


def formula_tex(text: str) -> str:
    """A formula written in Unicode (``Õ(n^{-1/3} + (√d/(nε))^{1/2})``) as TeX:
    ``√x``/``√(…)`` as ``\\sqrt``, symbols as macros, ``log`` as ``\\log``."""
    for plain, tex in _TILDED.items():
        text = text.replace(plain, tex + " ")
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "√":
            end = _closing(text, i + 1) if text[i + 1:i + 2] == "(" else i + 2
            inner = text[i + 2:end - 1] if text[i + 1:i + 2] == "(" else text[i + 1:end]
            out.append(rf"\sqrt{{{formula_tex(inner)}}}")
            i = max(end, i + 2)
            continue
        out.append(f"{_MATH[ch]} " if ch in _MATH and _MATH[ch].startswith("\\")
                   else _MATH.get(ch, ch))
        i += 1
    return re.sub(r"(?<!\\)\blog\b", r"\\log ", "".join(out))


def latex_escape(value: Any) -> str:
    """``value`` as ASCII LaTeX for text mode: rate formulas (``Õ(…)``, ``O(…)``, ``Ω(…)``)
    as math (:func:`formula_tex`), specials escaped, known symbols as math macros,
    super/subscript runs as ``^{}``/``_{}``, accents as accent macros, anything
    else as its NFKD ASCII decomposition, or ``?`` where it has none."""
    text, out, done = unicodedata.normalize("NFC", str(value)), [], 0
    for match in RATE_START.finditer(text):
        if match.start() >= done and (end := formula_end(text, match)) > 0:
            out += [_LIGATURE.sub("{}", _escape(text[done:match.start()])),
                    rf"\ensuremath{{{formula_tex(text[match.start():end])}}}"]
            done = end
    return "".join([*out, _LIGATURE.sub("{}", _escape(text[done:]))])


def _escape(text: str) -> str:
    out = []
    for script, run in groupby(_clusters(text), key=_script):
        if script:
            body = "".join(_math_char(c) for cluster in run
                           for c in unicodedata.normalize("NFKD", cluster[0]))
            out.append(rf"\ensuremath{{{script}{{{body}}}}}")
        else:
            out.extend(_cluster(cluster) for cluster in run)
    return "".join(out)


def _clusters(text: str) -> Iterator[str]:
    """Characters with the combining marks that follow them."""
    cluster = ""
    for ch in text:
        if cluster and unicodedata.category(ch).startswith("M"):
            cluster += ch
            continue
        if cluster:
            yield cluster
        cluster = ch
    if cluster:
        yield cluster


def _script(cluster: str) -> str:
    """'^' for a superscript character, '_' for a subscript one, else ''."""
    kind = unicodedata.decomposition(cluster[0]).partition(" ")[0]
    return {"<super>": "^", "<sub>": "_"}.get(kind, "")


def _math_char(ch: str) -> str:
    if ch in _MATH:
        return _MATH[ch]
    return ch if _MATH_PLAIN.fullmatch(ch) else rf"\text{{{_escape(ch)}}}"


def _cluster(cluster: str) -> str:
    """A character with its combining marks as accents: math accents on a math symbol (or
    on a letter whose mark is math-only, like a vector arrow), text accents on the rest;
    marks without an accent of the kind are dropped."""
    base, marks = cluster[0], [_ACCENTS[m] for m in cluster[1:] if m in _ACCENTS]
    if base in _MATH or (base.isascii() and base.isalpha() and any(not t for t, _ in marks)):
        body = _MATH.get(base, base)
        for _, math in marks:
            body = rf"\{math}{{{body}}}" if math else body
        return rf"\ensuremath{{{body}}}"
    out = _char(base)
    for text, _ in marks:
        out = rf"\{text}{{{out}}}" if text and out else out
    return out


def _char(ch: str) -> str:
    if ch in _ASCII:
        return _ASCII[ch]
    if " " <= ch <= "~":
        return ch
    if ch in _MATH:
        return rf"\ensuremath{{{_MATH[ch]}}}"
    if ch in _TEXT:
        return _TEXT[ch]
    if ch.isspace():
        return " "
    if unicodedata.category(ch) == "Cf":  # zero-width and other invisible format characters
        return ""
    decomposed = unicodedata.normalize("NFKD", ch)
    return _escape(decomposed) if decomposed != ch else "?"


def latex_env() -> jinja2.Environment:
    """Jinja2 for LaTeX templates: ``\\VAR{}``, ``\\BLOCK{}``, ``\\#{}`` and a ``latex``
    escape filter."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        block_start_string=r"\BLOCK{", block_end_string="}",
        variable_start_string=r"\VAR{", variable_end_string="}",
        comment_start_string=r"\#{", comment_end_string="}",
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["latex"] = latex_escape
    return env


# -- tables and manifests -----------------------------------------------------------------
def slug(text: str, taken: Collection[str] = (), length: int = 120) -> str:
    """A file stem from ``text``: ASCII ``[a-z0-9_]``, whole up to ``length`` characters
    (far longer than any table title; plus ``_2``, ``_3``, ... where the stem is in
    ``taken``); Greek letters by their names."""
    words = "".join(_slug_char(c) for c in unicodedata.normalize("NFKD", text)).lower()
    base = re.sub(r"[^a-z0-9]+", "_", words).strip("_")[:length].rstrip("_") or "table"
    stem, n = base, 1
    while stem in taken:
        n += 1
        stem = f"{base}_{n}"
    return stem


def _slug_char(ch: str) -> str:
    if ch.isascii():
        return ch
    name = unicodedata.name(ch, "")
    return f" {name.split()[-1]} " if name.startswith("GREEK") else " "


def write_table(folder: Path, stem: str, table: Mapping[str, Any]) -> list[Path]:
    """Write ``folder/tables/<stem>_fragment.tex`` (the booktabs tabular) and
    ``<stem>.tex`` (a standalone document with the title as caption and the note below);
    ``table`` is ``{"title", "note", "columns", "rows"}`` with cells as text."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", stem):
        raise ValueError(f"unsafe table stem {stem!r}")
    env = latex_env()
    context = _table_context(table)
    fragment = env.get_template("table_fragment.tex.j2").render(**context)
    standalone = env.get_template("table_standalone.tex.j2").render(**context,
                                                                     fragment=fragment)
    paths = [folder / "tables" / f"{stem}_fragment.tex", folder / "tables" / f"{stem}.tex"]
    paths[0].parent.mkdir(parents=True, exist_ok=True)
    for path, text in zip(paths, (fragment, standalone), strict=True):
        path.write_text(text, encoding="utf-8")
    return paths


def _table_context(table: Mapping[str, Any]) -> dict[str, Any]:
    """Title, note, column spec and the header and rows padded to one width."""
    rows = [[str(c) for c in row] for row in table.get("rows", [])]
    header = [str(c) for c in table.get("columns", [])]
    width = max([1, len(header), *map(len, rows)])
    header, *rows = [r + [""] * (width - len(r)) for r in (header, *rows)]
    specs = [_column_spec([r[i] for r in rows]) for i in range(width)]
    return {"title": str(table.get("title", "")), "note": str(table.get("note", "")),
            "spec": "".join(specs), "header": [_braced(h, s) for h, s in zip(header, specs,
                                                                             strict=True)],
            "rows": [[_number_cell(c) if s == "N" else _text_cell(c)
                      for c, s in zip(row, specs, strict=True)] for row in rows]}


def _text_cell(cell: str) -> str:
    """A text cell, escaped; long names (run labels, paths, suites) may break after ``/``
    and ``_`` instead of running out of a narrow column."""
    return re.sub(r"(/|\\_)", r"\1\\allowbreak{}", latex_escape(cell))


def _braced(text: str, spec: str) -> str:
    """A header cell, escaped; braced over a number column (siunitx reads it as text)."""
    return f"{{{latex_escape(text)}}}" if spec == "N" else latex_escape(text)


def _number_cell(cell: str) -> str:
    """A cell of a number column: the number for siunitx to align, anything else braced."""
    text = cell.strip()
    return text.replace("−", "-") if NUMBER.fullmatch(text) else f"{{{latex_escape(text)}}}"


def _column_spec(cells: Sequence[str]) -> str:
    """'N' (decimal-aligned, :data:`NUMBER`) for plain numbers, 'r' for other numbers, a
    ragged 16em paragraph for long text, else 'l'."""
    filled = [c.strip() for c in cells if c.strip() not in ("", "–", "-")]
    if filled and all(NUMBER.fullmatch(c) for c in filled):
        return "N"
    if filled and all(re.match(r"[-+−]?\.?\d", c) for c in filled):
        return "r"
    if any(len(c) > WRAP_CHARS for c in cells):
        return r">{\raggedright\arraybackslash}p{16em}"
    return "l"


def write_manifest(folder: Path, title: str, tables: Sequence[tuple[str, Mapping[str, Any]]],
                   figures: Sequence[tuple[str, str]], summary: Sequence[str] = ()) -> Path:
    """Write ``folder/latex.json``: the page title, its ``summary`` (the bottom line, a
    paragraph per sentence), each table's fragment and standalone document (by stem) with
    caption and note, each figure's PDF with caption; paths are relative to ``folder``."""
    manifest = {
        "title": title, "summary": list(summary),
        "tables": [{"fragment": f"tables/{stem}_fragment.tex", "standalone": f"tables/{stem}.tex",
                    "caption": str(t.get("title", "")), "note": str(t.get("note", ""))}
                   for stem, t in tables],
        "figures": [{"pdf": pdf, "caption": caption} for pdf, caption in figures],
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / MANIFEST
    path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def export_page(folder: Path, title: str, tables: Sequence[Mapping[str, Any]],
                figures: Sequence[tuple[str, str]], summary: Sequence[str] = ()) -> Path:
    """Write every table of a page (stems from their titles) and the page's manifest;
    ``figures`` are (PDF path relative to ``folder``, caption); ``summary``: the page's
    bottom line, set before its tables. Returns the manifest."""
    stems: list[str] = []
    for table in tables:
        stems.append(slug(str(table.get("title", "")), stems))
        write_table(folder, stems[-1], table)
    return write_manifest(folder, title, list(zip(stems, tables, strict=True)), figures,
                          summary)


# -- the whole report ---------------------------------------------------------------------
def build_report_tex(report_root: Path, order: Sequence[str] = DEFAULT_ORDER,
                     git_sha: str | None = None) -> Path:
    """Write ``report_root/report.tex``: a title page, the contents, and one section per
    manifest under ``report_root`` (in ``order``: top folder names and glob patterns of
    folders), with its tables and figures placed in order; returns its path."""
    manifests = sorted(report_root.rglob(MANIFEST))
    if not manifests:
        raise ValueError(f"no {MANIFEST} under {report_root}; nothing to put in report.tex")
    pages = sorted((_page(report_root, m) for m in manifests),
                   key=lambda p: (_rank(p["folder"], order), p["folder"]))
    text = latex_env().get_template("report.tex.j2").render(
        pages=pages, git_sha=git_sha,
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    path = report_root / "report.tex"
    path.write_text(text, encoding="utf-8")
    return path


def _rank(folder: str, order: Sequence[str]) -> int:
    """The first entry of ``order`` naming the folder's top folder ('.' for the root), else
    the first glob pattern the folder matches, else last."""
    named = [i for i, entry in enumerate(order) if entry == folder.split("/")[0]]
    matched = [i for i, entry in enumerate(order) if fnmatch(folder, entry)]
    return (named or matched or [len(order)])[0]


def _page(root: Path, manifest: Path) -> dict[str, Any]:
    """A manifest with its folder and its paths relative to ``root``."""
    page = json.loads(manifest.read_text(encoding="utf-8"))
    folder = PurePosixPath(manifest.parent.relative_to(root).as_posix())
    for table in page["tables"]:
        table["fragment"] = _tex_path(root, folder / table["fragment"])
    for figure in page["figures"]:
        figure["pdf"] = _tex_path(root, folder / figure["pdf"])
    return {"summary": [], **page, "folder": folder.as_posix()}


def _tex_path(root: Path, path: PurePosixPath) -> str:
    """``path`` for ``\\input``/``\\includegraphics``: it must exist and be plain ASCII."""
    if not _SAFE_PATH.fullmatch(path.as_posix()):
        raise ValueError(f"{path}: LaTeX needs paths of [A-Za-z0-9_.-/] only")
    if not (root / path).is_file():
        raise FileNotFoundError(f"{root / path} (named in a {MANIFEST}) does not exist")
    return path.as_posix()


# -- pdflatex -----------------------------------------------------------------------------
def pdflatex_available() -> bool:
    """Whether ``pdflatex`` is on the PATH."""
    return shutil.which("pdflatex") is not None


def compile_pdf(tex: Path, timeout: float = 300) -> Path:
    """Run pdflatex twice (for the contents) in ``tex``'s folder; returns the PDF.
    Raises :class:`PdflatexMissing` without pdflatex, :class:`LatexError` on failure."""
    exe = shutil.which("pdflatex")
    if exe is None:
        raise PdflatexMissing("pdflatex is not installed (Debian: apt-get install "
                              "texlive-latex-recommended texlive-fonts-recommended)")
    command = [exe, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", tex.name]
    for _ in range(2):
        try:
            result = subprocess.run(command, cwd=tex.parent, stdin=subprocess.DEVNULL,
                                    capture_output=True, text=True, errors="replace",
                                    timeout=timeout / 2)
        except subprocess.TimeoutExpired as e:
            raise LatexError(f"pdflatex {tex} took more than {timeout / 2:g} s") from e
        if result.returncode != 0:
            raise LatexError(f"pdflatex failed on {tex}:\n{_log_tail(tex, result.stdout)}")
    return tex.with_suffix(".pdf")


def overfull_boxes(tex: Path) -> list[str]:
    """The 'Overfull \\hbox/\\vbox' warnings in the log of the last compilation of ``tex``
    (text that runs into the margin); empty: none."""
    log = tex.with_suffix(".log").read_text(errors="replace")
    return [line for line in log.splitlines() if line.startswith("Overfull \\")]


def _log_tail(tex: Path, stdout: str, lines: int = 40) -> str:
    log = tex.with_suffix(".log")
    text = log.read_text(errors="replace") if log.exists() else stdout
    return "\n".join(text.splitlines()[-lines:])

