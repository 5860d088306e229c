"""Camera-ready figures: every figure's PDFs are laid out at a two-column paper's single-column
(3.5 in) and double-column (7 in) widths, with every text at least 7 pt at that size, read
back from the PDFs themselves (page size from the MediaBox, font sizes from the ``Tf``
operators of the content streams)."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import pytest

from reports.figures import PRINT_INCHES, plain_log_label, save_figure, style


def pdf_facts(path: Path) -> tuple[float, list[float]]:
    """(page width in inches, every font size set in the page's content, in pt)."""
    data = path.read_bytes()
    box = re.search(rb"/MediaBox \[\s*([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)", data)
    assert box is not None
    sizes = []
    for stream in re.findall(rb"stream\r?\n(.*?)\r?\nendstream", data, re.S):
        try:
            text = zlib.decompress(stream)
        except zlib.error:
            text = stream  # an uncompressed stream (or a font file: no Tf in it)
        sizes += [float(s) for s in re.findall(rb"/F\d+ ([\d.]+) Tf", text)]
    return (float(box[3]) - float(box[1])) / 72, sizes


def three_panels() -> object:
    """A figure as the paper pages draw one: three panels 13 in wide, small tick labels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for i, ax in enumerate(axes):
        for eps in (1, 4):
            ax.plot([0, 10, 20, 30], [5, 3 / eps, 2 / eps, 1 / eps], label=f"ε = {eps}")
        ax.set_title(f"panel {i}")
        ax.set_xlabel("step")
        ax.set_ylabel("‖∇F‖")
        ax.tick_params(labelsize=5)
        ax.legend(ncol=2)
    fig.suptitle("three panels", fontsize=12)
    return fig


@pytest.mark.parametrize(("name", "width"), [("fig.pdf", PRINT_INCHES["double"]),
                                            ("fig_column.pdf", PRINT_INCHES["single"])])
def test_each_figure_is_printed_at_column_widths_with_7pt_text(tmp_path: Path, name: str,
                                                              width: float) -> None:
    assert save_figure(three_panels(), tmp_path, "fig") == "fig.png"
    inches, sizes = pdf_facts(tmp_path / name)
    assert inches == pytest.approx(width, abs=0.01)
    assert sizes and min(sizes) >= 7.0, sorted(set(sizes))
    assert b"/Subtype /Type3" not in (tmp_path / name).read_bytes()


def test_a_narrow_column_stacks_the_panels_and_the_png_keeps_the_drawn_layout(
        tmp_path: Path) -> None:
    import struct

    save_figure(three_panels(), tmp_path, "fig")
    png = (tmp_path / "fig.png").read_bytes()
    width, height = struct.unpack(">II", png[16:24])
    assert width > 3 * height  # as drawn: three panels side by side
    data = (tmp_path / "fig_column.pdf").read_bytes()
    box = re.search(rb"/MediaBox \[\s*[\d.]+ [\d.]+ ([\d.]+) ([\d.]+)", data)
    assert box is not None and float(box[2]) > 2 * float(box[1])  # stacked: taller than wide


def test_a_declared_plot_is_drawn_in_the_house_style(tmp_path: Path) -> None:
    """A :class:`Plot` (error bars, a band, reference lines, a hidden spare cell) renders to
    the PNG and both print PDFs, at print size; log₂ and log axes draw (their exponents
    are superscripts, smaller than 7 pt by design)."""
    from reports.figures import Line, Panel, Plot, Series, draw

    curve = Series("PriSMA", [1, 2, 4], [0.3, 0.2, 0.1], err=[0.01, 0.02, 0.01])
    band = Series("SGD", [1, 2, 4], [0.2, 0.15, 0.1], err=[0.01] * 3, band=True, marker="")
    panels = [Panel([curve, band], "ε", "‖∇F‖", "a",
                    lines=(Line(0.1, "chance", half_band=0.01), Line(2, vertical=True)),
                    xticks=(1, 2, 4))] * 4
    assert draw(Plot(panels, columns=3), tmp_path, "declared") == "declared.png"
    logs = Panel([curve], xscale="log2", yscale="log")
    assert draw(Plot([logs]), tmp_path, "logs") == "logs.png"
    assert (tmp_path / "logs_column.pdf").exists()
    for stem, width in (("declared", PRINT_INCHES["double"]),
                        ("declared_column", PRINT_INCHES["single"])):
        page, sizes = pdf_facts(tmp_path / f"{stem}.pdf")
        assert page == pytest.approx(width, abs=0.05) and min(sizes) >= 7.0


@pytest.mark.parametrize(("label", "plain"), [
    (r"$\mathdefault{10^{-2}}$", "10⁻²"), (r"$\mathdefault{2\times10^{3}}$", "2×10³"),
    (r"$\mathdefault{1}$", "1"), (r"$\mathdefault{2^{5}}$", "2⁵"), (r"$\alpha$", r"$\alpha$"),
    ("0.5", "0.5")])
def test_log_tick_labels_in_plain_text(label: str, plain: str) -> None:
    assert plain_log_label(label) == plain


def test_saved_log_axes_are_labelled_without_mathtext(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style()
    fig, ax = plt.subplots()
    ax.plot([1e-3, 1e2], [1, 1e4])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(1e-3, 1e2)
    save_figure(fig, tmp_path, "log")
    labels = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
    assert "10⁻²" in labels and "10³" in labels and not any("$" in t for t in labels)
