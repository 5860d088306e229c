"""The generated HTML report in a real browser: headless Chromium (Debian's ``chromium``,
driven by playwright) opens the front page and every page it links from disk, and finds no
missing images, no broken links, no console errors and no failed requests. A full-page
screenshot of each page is kept as a test artifact ($SADDLEBENCH_ARTIFACTS, else
out/test-artifacts/browser/).

The tests skip when playwright or chromium is missing, unless SADDLEBENCH_REQUIRE_TOOLS=1
(as CI sets it), where they fail instead. The whole-site test builds a real results root
first (about a minute); the checker's own tests, on small fake sites, take seconds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import struct
import zlib
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from test_xu2026 import TINY

import bench.experiment
from reports.latex import pdflatex_available
from saddlebench import cli

REPO = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    # Docker gives /dev/shm 64 MB by default: too little for full-page screenshots
    "--disable-dev-shm-usage",
]
INSTALL = ("apt-get install chromium (Debian; or set SADDLEBENCH_CHROMIUM to a Chromium "
           "binary) and pip install -e '.[browser]'")
# followed (opened in the browser) when linked; every other local target is only checked
# for existence (PDFs, .tex, .csv, .json, images, ...)
HTML_SUFFIXES = {".html", ".htm"}


def chromium_path() -> str | None:
    """The Chromium binary: $SADDLEBENCH_CHROMIUM, else Debian's /usr/bin/chromium, else
    ``chromium`` on PATH."""
    given = os.environ.get("SADDLEBENCH_CHROMIUM")
    if given:
        return given if Path(given).is_file() else None
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require_browser() -> str:
    """Chromium's path; skips the test (fails it under SADDLEBENCH_REQUIRE_TOOLS=1) when
    playwright or chromium is missing."""
    missing = []
    if importlib.util.find_spec("playwright") is None:
        missing.append("the playwright package")
    path = chromium_path()
    if path is None:
        missing.append("chromium")
    if missing:
        message = f"needs {' and '.join(missing)}: {INSTALL}"
        if os.environ.get("SADDLEBENCH_REQUIRE_TOOLS") == "1":
            pytest.fail(f"SADDLEBENCH_REQUIRE_TOOLS=1 but this test {message}")
        pytest.skip(message)
    assert path is not None
    return path


def artifacts_dir(name: str) -> Path:
    """A folder for test artifacts: $SADDLEBENCH_ARTIFACTS/NAME, else
    out/test-artifacts/NAME under the repository (git-ignored)."""
    base = os.environ.get("SADDLEBENCH_ARTIFACTS")
    folder = (Path(base) if base else REPO / "out" / "test-artifacts") / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def chromium() -> str:
    """Chromium's path (the tests using it skip, or fail, first when it is missing)."""
    return require_browser()


# -- the checker ---------------------------------------------------------------------------------

# Everything the checker reads off a loaded page, in one evaluation. Lazy images are made
# eager and every image is awaited, so naturalWidth is final.
PAGE_FACTS_JS = """async () => {
  const imgs = [...document.images];
  imgs.forEach(img => { img.loading = "eager"; });
  await Promise.all(imgs.map(img => img.decode().catch(() => null)));
  return {
    broken_images: imgs.filter(img => img.naturalWidth === 0)
                       .map(img => img.getAttribute("src") || "(no src)"),
    images: imgs.length,
    links: [...document.querySelectorAll("a[href], area[href]")]
               .map(a => a.getAttribute("href")),
    ids: [...document.querySelectorAll("[id]")].map(e => e.id)
           .concat([...document.querySelectorAll("a[name]")].map(a => a.name)),
    title: document.title,
  };
}"""


def _screenshot_name(rel: Path) -> str:
    return "__".join(rel.with_suffix("").parts) + ".png"


def _resolve(href: str, page: Path, root: Path) -> tuple[str, Path | None, str]:
    """What a link on ``page`` points at: (kind, target file, fragment), kind one of
    ``external``, ``same-page``, ``local``, ``ignored``."""
    parts = urlsplit(href.strip())
    if parts.scheme in ("http", "https"):
        return "external", None, ""
    if parts.scheme in ("mailto", "tel", "javascript", "data"):
        return "ignored", None, ""
    if parts.scheme == "file":
        return "local", Path(unquote(parts.path)).resolve(), unquote(parts.fragment)
    if parts.scheme or parts.netloc:
        return "external", None, ""
    if not parts.path:
        return "same-page", page, unquote(parts.fragment)
    base = root if parts.path.startswith("/") else page.parent
    target = (base / unquote(parts.path).lstrip("/")).resolve()
    return "local", target, unquote(parts.fragment)


def check_site(index: Path, screenshot_dir: Path, *, root: Path | None = None,
               executable: str | None = None) -> list[str]:
    """Crawl a static HTML site from ``index`` in headless Chromium; the problems found
    (an empty list: the site passes).

    Every HTML page reachable from ``index`` through local links is opened from disk
    (``file://``). On each: console errors, uncaught exceptions, failed requests, attempts
    to load anything from the network, ``<img>``s that did not load (naturalWidth 0), and
    links to local files that do not exist, lie outside ``root`` (default: the index's
    folder), or name an ``#id`` the target page lacks. Non-HTML targets (PDF, .tex, .csv,
    .json, ...) are checked on disk, not opened; external http(s) links are not followed,
    only listed (in ``screenshot_dir/site.json``, with the pages visited and the problems).
    A full-page screenshot of every page goes to ``screenshot_dir`` (the index:
    ``index.png``).
    """
    from playwright.sync_api import sync_playwright

    index = index.resolve()
    root = (root or index.parent).resolve()
    screenshot_dir.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    external: dict[str, list[str]] = {}
    visited: dict[Path, dict[str, Any]] = {}
    wanted_ids: list[tuple[str, Path, str]] = []  # (linking page, target page, id)
    queue: deque[Path] = deque([index])
    queued = {index}

    def rel(path: Path) -> str:
        return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)

    if not index.is_file():
        return [f"{index}: the index does not exist"]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable or chromium_path(),
                                     args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            current: list[str] = []  # problems of the page being loaded

            def on_console(msg: Any) -> None:
                if msg.type == "error":
                    loc = msg.location or {}
                    where = f" ({loc.get('url', '')}:{loc.get('lineNumber', '')})" if loc else ""
                    current.append(f"console error: {msg.text}{where}")

            page.on("console", on_console)
            page.on("pageerror", lambda exc: current.append(f"uncaught exception: {exc}"))
            page.on("requestfailed", lambda req: current.append(
                f"request failed: {req.url} ({req.failure})"))

            def block_network(route: Any) -> None:
                current.append(f"loads a network resource: {route.request.url}")
                route.abort()

            context.route(re.compile(r"^(https?|wss?|ftp)://"), block_network)

            while queue:
                path = queue.popleft()
                name = rel(path)
                current.clear()
                page.goto(path.as_uri(), wait_until="load")
                facts = page.evaluate(PAGE_FACTS_JS)
                page.screenshot(path=str(screenshot_dir / _screenshot_name(Path(name))),
                                full_page=True)
                visited[path] = facts
                page_problems = list(dict.fromkeys(current))  # requestfailed + console dupes
                page_problems += [f"missing image: {src}" for src in facts["broken_images"]]
                for href in facts["links"]:
                    kind, target, fragment = _resolve(href, path, root)
                    if kind == "external":
                        external.setdefault(href, []).append(name)
                    if kind != "local" or target is None:
                        continue  # same-page #anchors are not checked
                    if not target.is_relative_to(root):
                        page_problems.append(f"link leaves the site folder: {href}")
                    if target.is_dir():
                        target = target / "index.html"
                    if not target.is_file():
                        page_problems.append(f"broken link: {href} (no {rel(target)})")
                        continue
                    if target.suffix.lower() in HTML_SUFFIXES:
                        if fragment:
                            wanted_ids.append((name, target, fragment))
                        if target not in queued and target.is_relative_to(root):
                            queued.add(target)
                            queue.append(target)
                problems += [f"{name}: {p}" for p in page_problems]
        finally:
            browser.close()

    for name, target, fragment in wanted_ids:
        if target in visited and fragment not in visited[target]["ids"]:
            problems.append(f"{name}: broken link: {rel(target)}#{fragment} "
                            f"(no id {fragment!r} there)")
    summary = {"index": str(index), "pages": [rel(p) for p in visited],
               "images": {rel(p): f["images"] for p, f in visited.items()},
               "external_links": external, "problems": problems}
    (screenshot_dir / "site.json").write_text(json.dumps(summary, indent=1))
    return problems


# -- the real site -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, chromium: str) -> Iterator[Path]:
    """A small real results root: a tiny xu2026 reproduction, a dp_sgd privacy audit, and
    the whole report rebuilt from it by ``saddlebench report``."""
    tmp = tmp_path_factory.mktemp("site")
    folder = tmp / "experiments" / "xu2026" / "quick"
    folder.mkdir(parents=True)
    for name, doc in TINY.items():
        (folder / name).write_text(yaml.safe_dump(doc))
    out = tmp / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bench.experiment, "EXPERIMENTS", tmp / "experiments")
        # no PDF yet: `report` below rebuilds the whole site, report.pdf included
        assert cli.main(["reproduce", "xu2026", "--out", str(out), "--jobs", "2",
                         "--no-progress", "--no-pdf"]) == 0
    assert cli.main(["audit", "dp_sgd", "--runs", "40", "--out", str(out)]) == 0
    assert cli.main(["report", str(out)]) == 0
    yield out / "report" / "index.html"


# ~64 s on two busy cores (57 s building the site, 6 s in the browser); in the quick suite
# because it is the acceptance test for the report
def test_the_report_site_has_no_broken_images_links_or_errors(site: Path,
                                                               chromium: str) -> None:
    shots = artifacts_dir("browser")
    for old in shots.glob("*.png"):
        old.unlink()
    problems = check_site(site, shots, executable=chromium)
    assert not problems, "\n".join(problems)
    pages = json.loads((shots / "site.json").read_text())["pages"]
    # the front page reaches the paper page and the privacy page
    assert {"index.html", "xu2026/quick/index.html", "privacy/index.html"} <= set(pages)
    assert json.loads((shots / "site.json").read_text())["images"][
        "xu2026/quick/index.html"] >= 5
    png = (shots / "index.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    width, height = struct.unpack(">II", png[16:24])
    assert width >= 800 and height >= 300
    assert len(list(shots.glob("*.png"))) == len(pages)
    if pdflatex_available():  # `report` compiled every table and figure of the site
        assert (site.parent / "report.pdf").stat().st_size > 10_000


# -- the checker can fail ------------------------------------------------------------------------

def tiny_png(width: int = 4, height: int = 3) -> bytes:
    """A valid grey RGB PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))

    rows = b"".join(b"\x00" + b"\x80\x80\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def page(body: str) -> str:
    return f"<!DOCTYPE html><html><head><title>t</title></head><body>{body}</body></html>"


def fake_site(folder: Path, broken: bool) -> Path:
    """index.html -> sub/page.html (an image, a PDF, a link back); with ``broken``, the index
    also has a missing image, a link to a missing page, a missing CSV, an anchor the target
    lacks, a script that logs an error and one that throws."""
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "fig.png").write_bytes(tiny_png())
    (folder / "sub" / "fig.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    (folder / "sub" / "page.html").write_text(page(
        '<h2 id="results">results</h2><img src="fig.png" alt="figure">'
        '<a href="fig.pdf">pdf</a> <a href="../index.html#top">back</a> <a href="#results">'))
    body = ('<h1 id="top">site</h1><a href="sub/page.html">page</a> '
            '<a href="sub/page.html#results">results</a> '
            '<a href="https://example.org/paper">paper</a> <a href="#top">top</a>')
    if broken:
        body += ('<img src="missing.png" alt="gone"> <a href="nowhere.html">gone</a> '
                 '<a href="sub/data.csv">csv</a> <a href="sub/page.html#nosuchid">anchor</a> '
                 '<script>console.error("deliberate console error")</script>'
                 '<script>throw new Error("deliberate exception")</script>')
    (folder / "index.html").write_text(page(body))
    return folder / "index.html"


def test_a_clean_fake_site_passes(tmp_path: Path, chromium: str) -> None:
    shots = tmp_path / "shots"
    assert check_site(fake_site(tmp_path / "site", broken=False), shots,
                      executable=chromium) == []
    summary = json.loads((shots / "site.json").read_text())
    assert summary["pages"] == ["index.html", "sub/page.html"]
    assert summary["external_links"] == {"https://example.org/paper": ["index.html"]}
    assert (shots / "index.png").is_file() and (shots / "sub__page.png").is_file()


def test_the_checker_reports_each_kind_of_problem(tmp_path: Path, chromium: str) -> None:
    problems = check_site(fake_site(tmp_path / "site", broken=True), tmp_path / "shots",
                          executable=chromium)
    text = "\n".join(problems)
    expected = {
        "missing image": r"index\.html: missing image: missing\.png",
        "failed request": r"index\.html: request failed: file://\S*/missing\.png",
        "broken page link": r"index\.html: broken link: nowhere\.html",
        "missing file": r"index\.html: broken link: sub/data\.csv",
        "missing anchor": r"index\.html: broken link: sub/page\.html#nosuchid",
        "console error": r"index\.html: console error: deliberate console error",
        "exception": r"index\.html: uncaught exception: .*deliberate exception",
    }
    for what, pattern in expected.items():
        assert re.search(pattern, text), f"{what} not reported:\n{text}"
    # the broken index does not taint the good page it links
    assert not [p for p in problems if p.startswith("sub/")], text


def test_the_checker_blocks_network_loads_and_flags_links_out_of_the_site(
        tmp_path: Path, chromium: str) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (tmp_path / "outside.csv").write_text("a,b\n")
    (site / "index.html").write_text(page(
        '<img src="https://example.org/logo.png" alt="remote"> '
        '<a href="../outside.csv">outside</a>'))
    problems = check_site(site / "index.html", tmp_path / "shots", executable=chromium)
    text = "\n".join(problems)
    assert "loads a network resource: https://example.org/logo.png" in text
    assert "link leaves the site folder: ../outside.csv" in text


# -- missing tools -------------------------------------------------------------------------------

@pytest.mark.parametrize("require", [None, "1"])
def test_missing_chromium_skips_or_fails_under_require_tools(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, require: str | None) -> None:
    monkeypatch.setenv("SADDLEBENCH_CHROMIUM", str(tmp_path / "no-chromium"))
    if require is None:
        monkeypatch.delenv("SADDLEBENCH_REQUIRE_TOOLS", raising=False)
    else:
        monkeypatch.setenv("SADDLEBENCH_REQUIRE_TOOLS", require)
    outcome = pytest.fail.Exception if require else pytest.skip.Exception
    with pytest.raises(outcome, match="apt-get install chromium"):
        require_browser()


# -- the site's layout: navigation, math, sorting, no raw markup ---------------------------------

# what the layout checks read off a loaded page
LAYOUT_JS = """() => ({
  nav_home: [...document.querySelectorAll("nav.site a.brand")].map(a => a.getAttribute("href")),
  crumbs: [...document.querySelectorAll("ol.crumbs li")].map(li => li.textContent.trim()),
  katex: document.querySelectorAll(".katex").length,
  katex_errors: document.querySelectorAll(".katex-error").length,
  raw: /``|:math:`|:class:`|:func:`|\\\\\\(/.test(document.body.innerText),
})"""


def layout_facts(index: Path, executable: str, pages: list[str]) -> dict[str, dict[str, Any]]:
    """LAYOUT_JS on each page (paths relative to the index's folder)."""
    from playwright.sync_api import sync_playwright

    facts = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        for rel in pages:
            page.goto((index.parent / rel).resolve().as_uri(), wait_until="load")
            facts[rel] = page.evaluate(LAYOUT_JS)
        browser.close()
    return facts


def test_every_page_has_the_navigation_and_no_raw_markup(site: Path, chromium: str) -> None:
    pages = ["index.html", "xu2026/quick/index.html", "privacy/index.html",
             "theory/quick/index.html"]
    facts = layout_facts(site, chromium, pages)
    for rel, f in facts.items():
        depth = rel.count("/")
        assert f["nav_home"] == ["../" * depth + "index.html"], rel  # back to the index
        assert f["crumbs"][0] == "Report" and not f["raw"] and not f["katex_errors"], (rel, f)
    assert facts["xu2026/quick/index.html"]["crumbs"] == ["Report", "Papers", "xu2026", "quick"]
    assert facts["theory/quick/index.html"]["katex"] > 0  # the rate formulas, typeset


# what the navigation checks read off a page at 1,400 px, with every section opened
NAV_JS = """() => {
  const open = [...document.querySelectorAll("details.section[open]")].map(d => d.id);
  document.querySelectorAll("details").forEach(d => { d.open = true; });
  const width = document.documentElement.clientWidth;
  const toc = [...document.querySelectorAll("nav.toc a")].map(a => a.getAttribute("href"));
  return {
    toc: toc,
    toc_missing: toc.filter(h => !h.startsWith("#") || !document.getElementById(h.slice(1))),
    sections: document.querySelectorAll("details.section").length,
    open_at_load: open,
    wide_tables: [...document.querySelectorAll("table")].filter(t => {
        const r = t.getBoundingClientRect(); return r.width > 0 && r.right > width + 1; })
      .map(t => (t.closest("[id]") || {id: "?"}).id),
    page_scrolls_sideways: document.documentElement.scrollWidth > width,
    figures: [...document.images].filter(img => img.closest("figure, p")).length,
  };
}"""


def test_pages_have_contents_figures_and_no_table_wider_than_the_window(site: Path,
                                                                         chromium: str) -> None:
    """At 1,400 px: a paper page lists its sections in a contents box whose every link lands
    on the page, its sections below the claims collapse (the claims table and the bottom
    line stay open above them) and a link into a closed one opens it; no table on any page
    is wider than the window (a wide one scrolls in its own box); every page has a figure
    (the front page: the paper's claims per verdict)."""
    from playwright.sync_api import sync_playwright

    report = site.parent
    pages = sorted(p.relative_to(report).as_posix() for p in report.rglob("index.html")
                   if p.parent != report)
    assert {"xu2026/quick/index.html", "privacy/index.html", "theory/quick/index.html"} <= set(
        pages)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        paper = (report / "xu2026" / "quick" / "index.html").as_uri()
        page.goto(paper, wait_until="load")
        assert page.evaluate("document.getElementById('regime').open") is False
        assert page.evaluate("document.getElementById('verdict-table').offsetHeight") > 0
        page.click("nav.toc a[href='#regime']")
        assert page.evaluate("document.getElementById('regime').open") is True
        detail = page.get_attribute("#verdict-table tbody tr a", "href")  # a claim's detail
        assert detail is not None and detail.startswith("#detail-")
        page.click(f"#verdict-table a[href='{detail}']")
        assert page.evaluate("document.getElementById('claims').open") is True
        facts = {}
        for rel in ["index.html", *pages]:
            page.goto((report / rel).as_uri(), wait_until="load")
            facts[rel] = page.evaluate(NAV_JS)
        browser.close()
    paper_facts = facts["xu2026/quick/index.html"]
    assert len(paper_facts["toc"]) >= 10 and not paper_facts["toc_missing"], paper_facts
    assert paper_facts["sections"] >= 10
    assert set(paper_facts["open_at_load"]) == {"findings", "figures"}
    for rel, f in facts.items():
        assert not f["wide_tables"] and not f["page_scrolls_sideways"], (rel, f)
        assert f["figures"] >= 1, (rel, f)


def test_tables_sort_and_filter_and_math_renders_offline(tmp_path: Path, chromium: str) -> None:
    """One page in the site's layout (static files copied beside it): a click on a header
    sorts numbers by value, the filter hides rows, a rate formula is typeset by the vendored
    KaTeX, and nothing is loaded from the network (check_site blocks it)."""
    from playwright.sync_api import sync_playwright

    from reports.render import write_page

    site = tmp_path / "site"
    rows = [[f"run{i}", f"{v}"] for i, v in enumerate([10, -2, 3.5, 100, 0.25, 7, 8, 9, 11, 12,
                                                       13])]
    write_page("theory.html.j2", site, site, [], scale="quick", results_root="r",
               generated="now", provenance="p", n_suites=1, counts={}, without_rates=[],
               explanation="A bound Õ(n^{-1/3} + (√d/(nε))^{1/2}).",
               tables=[{"title": "t", "note": "", "columns": ["name", "value"], "rows": rows}])
    html = (site / "index.html").read_text()
    html = html.replace('<div class="scroll"><table>',
                        '<div class="scroll"><table class="sortable">')
    (site / "index.html").write_text(html)
    assert check_site(site / "index.html", tmp_path / "shots", executable=chromium) == []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto((site / "index.html").as_uri(), wait_until="load")
        assert page.locator(".katex").count() == 1
        page.locator("table.sortable th", has_text="value").click()
        values = page.eval_on_selector_all("table.sortable tbody tr td:nth-child(2)",
                                           "cells => cells.map(c => c.textContent)")
        assert values == ["-2", "0.25", "3.5", "7", "8", "9", "10", "11", "12", "13", "100"]
        page.fill("input.table-filter", "run3")
        visible = page.eval_on_selector_all("table.sortable tbody tr:not([hidden])",
                                            "rows => rows.length")
        assert visible == 1
        browser.close()
