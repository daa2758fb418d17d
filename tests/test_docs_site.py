"""The documentation site as a reader sees it: built with ``mkdocs build --strict``, served on
the loopback and rendered page by page by headless Chromium (Debian's package, which ``./dev``
installs), then read from the browser's DOM.

A probe script added to each page as it is served measures the layout once the page has loaded
(the navigation tabs; boxes whose content is cut off, spills out of the text's column or scrolls
sideways without showing it; words broken inside table cells; entries the table of contents
lists twice), in the browser's window (WIDE) and again in a frame of the page's own width as a
phone's (NARROW), added out of sight; nothing else is changed.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest

import pycurator
import pycurator.aio
import pycurator.aio.menagerie
import pycurator.aio.zklocker
import pycurator.aio.zkrecipes
import pycurator.contrib.opentelemetry
import pycurator.contrib.prometheus
import pycurator.discovery
import pycurator.menagerie
import pycurator.testing
import pycurator.zklocker
import pycurator.zkrecipes

ROOT = Path(__file__).resolve().parent.parent
#: Wide enough for the navigation tabs (Material shows them from 1220 px on).
WIDE = 1280
#: A phone's width (Chromium's window is no narrower than 500 px: a frame this wide is).
NARROW = 390
WINDOW = f"{WIDE},900"
#: The modules of the API reference, by page.
API_PAGES = {
    "/api/pycurator/": [pycurator],
    "/api/aio/": [pycurator.aio],
    "/api/discovery/": [pycurator.discovery],
    "/api/systems/": [
        pycurator.zkrecipes,
        pycurator.menagerie,
        pycurator.zklocker,
        pycurator.aio.zkrecipes,
        pycurator.aio.menagerie,
        pycurator.aio.zklocker,
    ],
    "/api/testing/": [pycurator.testing],
    "/api/contrib/": [pycurator.contrib.prometheus, pycurator.contrib.opentelemetry],
}
#: Languages whose code blocks must come out highlighted.
HIGHLIGHTED = {"python", "py", "sh", "bash", "console", "java", "yaml", "toml", "json", "ini"}
#: Markup that should have been rendered, as it shows in a page's text: an escaped pipe from a
#: table, an escaped entity, a Sphinx role, a reST literal-block marker, a Markdown link.
ESCAPED = re.compile(r"\\\||&(?:lt|gt|amp|quot|#\d+);|:(?:class|meth|func|attr|data|mod):`|\w::$")
UNRENDERED = re.compile(r"\]\(|\*\*|```")

PROBE = b"""<script>
(function () {
  function tabs() {
    var list = document.querySelector(".md-tabs__list");
    var items = Array.from(document.querySelectorAll(".md-tabs__item"));
    var tops = items.map(function (i) { return Math.round(i.getBoundingClientRect().top); });
    var rows = new Set(tops);
    return {
      tabs: items.length,
      tab_rows: rows.size,
      tabs_shown: list !== null && list.getBoundingClientRect().height > 0,
      tabs_cut: list !== null && list.scrollWidth > list.clientWidth,
      header_height: document.querySelector(".md-header").getBoundingClientRect().height
    };
  }
  function describe(el) {
    var classes = typeof el.className === "string" ? el.className.trim().split(/\\s+/) : [];
    var name = [el.tagName.toLowerCase()].concat(classes.filter(Boolean)).join(".");
    return name + ": " + (el.textContent || "").trim().slice(0, 60);
  }
  // Boxes that cut their content off or let it spill out of the text's column (over the side
  // bars, or out of the window); a box that scrolls sideways is measured but not entered (what
  // it holds can be scrolled to), and is "unmarked" if it hides some without an edge shadow.
  function overflow() {
    var content = document.querySelector(".md-content");
    var bounds = content.getBoundingClientRect();
    var cut = [], unmarked = [];
    (function walk(el) {
      for (var child of el.children) {
        var style = getComputedStyle(child);
        if (style.display === "none") continue;
        var box = child.getBoundingClientRect();
        if (box.width > 0 && (box.right > bounds.right + 1 || box.left < bounds.left - 1)) {
          cut.push(describe(child));
          continue;
        }
        var wider = child.clientWidth > 0 && child.scrollWidth > child.clientWidth + 1;
        if (style.overflowX === "auto" || style.overflowX === "scroll") {
          if (wider && style.backgroundImage.indexOf("gradient") < 0) {
            unmarked.push(describe(child));
          }
          continue;
        }
        if (wider && (style.overflowX === "hidden" || style.overflowX === "clip")) {
          cut.push(describe(child));
          continue;
        }
        var found = cut.length;
        walk(child);
        // text spilling out, told of by the innermost box it spills from
        if (cut.length === found && wider && box.left + child.scrollWidth > bounds.right + 1) {
          cut.push(describe(child));
        }
      }
    })(content);
    return {cut: cut, unmarked: unmarked};
  }
  // Words (letters, digits and underscores) laid over two lines in a table's cell.
  function brokenWords() {
    var broken = [];
    document.querySelectorAll(".md-content td, .md-content th").forEach(function (cell) {
      var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (var node = walker.nextNode(); node; node = walker.nextNode()) {
        for (var word of node.data.matchAll(/\\w{2,}/g)) {
          var range = document.createRange();
          range.setStart(node, word.index);
          range.setEnd(node, word.index + word[0].length);
          var lines = Array.from(range.getClientRects()).filter(function (r) { return r.width; });
          if (lines.some(function (r) { return Math.abs(r.top - lines[0].top) > r.height / 2; })) {
            broken.push(word[0]);
          }
        }
      }
    });
    return broken;
  }
  // Entries one list of the table of contents holds twice.
  function tocDuplicates() {
    var twice = [];
    document.querySelectorAll(".md-nav--secondary .md-nav__list").forEach(function (list) {
      var seen = new Set();
      list.querySelectorAll(":scope > li > a").forEach(function (a) {
        var text = a.textContent.trim();
        if (seen.has(text) && twice.indexOf(text) < 0) twice.push(text);
        seen.add(text);
      });
    });
    return twice;
  }
  window.addEventListener("load", function () {
    var root = document.documentElement;
    var layout = Object.assign(tabs(), overflow(), {
      page_scrolls_sideways: root.scrollWidth > root.clientWidth,
      broken_words: brokenWords(),
      toc_duplicates: tocDuplicates()
    });
    // the frame's load comes before its page's: both are in when the browser reads the DOM
    window.top.document.body.setAttribute(
      "data-layout-" + window.innerWidth, JSON.stringify(layout));
  });
})();
</script>
</body>"""
#: The page again, as wide as a phone and out of sight (the query keeps it from framing itself).
FRAME = f"""<iframe src="?narrow" width="{NARROW}" height="900"
  style="position: absolute; left: -10000px; top: 0; border: 0"></iframe>
</body>""".encode()


@dataclass
class Page:
    """What a rendered page holds, read from its DOM."""

    path: str
    ids: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)
    #: Text nodes outside code blocks, each with whether it is inside inline code.
    texts: list[tuple[str, bool]] = field(default_factory=list)
    #: Highlighted blocks: (language, number of highlighted tokens, text).
    blocks: list[tuple[str, int, str]] = field(default_factory=list)
    #: Code blocks left without a highlighter.
    bare_blocks: int = 0
    #: What the probe measured, by the width of the window or frame it measured in.
    layouts: dict[int, dict[str, Any]] = field(default_factory=dict)


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}


class _Reader(html.parser.HTMLParser):
    def __init__(self, page: Page) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.stack: list[tuple[str, str]] = []  # (tag, class)
        self.block: list[Any] | None = None  # [language, tokens, depth, text] of the open block

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        classes = values.get("class", "")
        if "id" in values:
            self.page.ids.add(values["id"])
        if tag == "a" and "href" in values:
            self.page.links.append(values["href"])
        if tag == "body":
            for name, value in values.items():
                if name.startswith("data-layout-"):
                    self.page.layouts[int(name.removeprefix("data-layout-"))] = json.loads(value)
        if tag == "div" and "highlight" in classes.split() and self.block is None:
            language = next((c[9:] for c in classes.split() if c.startswith("language-")), "")
            self.block = [language, 0, len(self.stack), ""]
        elif tag == "span" and self.block is not None and classes:
            self.block[1] += 1
        elif tag == "pre" and self.block is None:
            self.page.bare_blocks += 1
        if tag not in VOID:
            self.stack.append((tag, classes))

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            if self.stack.pop()[0] == tag:
                break
        if self.block is not None and len(self.stack) <= self.block[2]:
            self.page.blocks.append((self.block[0], self.block[1], self.block[3]))
            self.block = None

    def handle_data(self, data: str) -> None:
        if self.block is not None:
            self.block[3] += data
        tags = {tag for tag, _ in self.stack}
        if tags & {"script", "style", "pre", "svg"} or not data.strip():
            return
        self.page.texts.append((data, bool(tags & {"code", "kbd"})))


def read_page(path: str, dom: str) -> Page:
    page = Page(path)
    _Reader(page).feed(dom)
    return page


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the built site; adds the layout probe to each page, and to a page asked for
    without a query, the frame that shows it again as wide as a phone."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = Path(self.translate_path(self.path))
        page = path / "index.html" if path.is_dir() else path
        if page.suffix != ".html" or not page.is_file():
            super().do_GET()
            return
        probe = PROBE if urlsplit(self.path).query else PROBE.replace(b"</body>", FRAME)
        body = page.read_bytes().replace(b"</body>", probe, 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as ``./dev test`` builds it."""
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    handler = functools.partial(_Handler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="docs-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def render(url: str) -> str:
    """The DOM of ``url`` once loaded, as headless Chromium serializes it."""
    browser = shutil.which("chromium")
    assert browser is not None, "no chromium: ./dev test installs it (apt-get install chromium)"
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        result = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                f"--window-size={WINDOW}",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0 and "<body" in result.stdout, result.stderr[-2000:]
    return result.stdout


@pytest.fixture(scope="module")
def pages(site: Path, base_url: str) -> dict[str, Page]:
    """Every page of the site (404 aside), rendered, by its path."""
    folders = [i.parent.relative_to(site).as_posix() for i in site.rglob("index.html")]
    paths = sorted("/" if f == "." else f"/{f}/" for f in folders)
    with ThreadPoolExecutor(max_workers=2) as pool:
        doms = list(pool.map(lambda p: render(base_url + p), paths))
    return {path: read_page(path, dom) for path, dom in zip(paths, doms, strict=True)}


def test_every_page_of_the_navigation_is_rendered(pages: dict[str, Page]) -> None:
    assert {"/", "/cli/", "/asyncio/", *API_PAGES} <= set(pages)
    assert len(pages) >= 21


def test_no_page_shows_escaped_or_unrendered_markup(pages: dict[str, Page]) -> None:
    found = [
        (path, text.strip()[:80])
        for path, page in pages.items()
        for text, in_code in page.texts
        if ESCAPED.search(text.strip()) or (not in_code and UNRENDERED.search(text))
    ]
    assert found == []


def test_every_internal_link_resolves_to_a_page_and_an_anchor(
    pages: dict[str, Page], site: Path
) -> None:
    broken = []
    for path, page in pages.items():
        for href in page.links:
            target = urlsplit(urljoin(f"http://site{path}", href))
            if target.netloc != "site":
                continue
            if target.path in pages:
                if target.fragment and target.fragment not in pages[target.path].ids:
                    broken.append((path, href))
            elif not (site / target.path.lstrip("/")).is_file():
                broken.append((path, href))
    assert broken == []


def test_code_blocks_are_highlighted(pages: dict[str, Page]) -> None:
    blocks = [(path, lang, tokens) for path, p in pages.items() for lang, tokens, _ in p.blocks]
    assert sum(1 for _, lang, _ in blocks if lang == "python") >= 20
    assert [
        (path, lang) for path, lang, tokens in blocks if lang in HIGHLIGHTED and not tokens
    ] == []
    assert [path for path, page in pages.items() if page.bare_blocks] == []


def test_the_navigation_is_one_row_of_tabs(pages: dict[str, Page]) -> None:
    for path, page in pages.items():
        layout = page.layouts[WIDE]
        assert layout["tabs"] >= 5, path
        assert layout["tabs_shown"] and layout["tab_rows"] == 1 and not layout["tabs_cut"], path
        assert layout["header_height"] <= 64, path


def test_every_page_is_measured_wide_and_as_wide_as_a_phone(pages: dict[str, Page]) -> None:
    assert {path: sorted(page.layouts) for path, page in pages.items()} == {
        path: [NARROW, WIDE] for path in pages
    }
    assert not any(page.layouts[NARROW]["tabs_shown"] for page in pages.values())


def found(pages: dict[str, Page], key: str) -> list[tuple[str, int, Any]]:
    """What the probe listed under ``key``, by page and width."""
    return [
        (path, width, item)
        for path, page in pages.items()
        for width, layout in sorted(page.layouts.items())
        for item in layout[key]
    ]


def test_no_text_is_cut_off_or_spills_out_of_its_column(pages: dict[str, Page]) -> None:
    assert found(pages, "cut") == []
    assert [
        (path, width)
        for path, page in pages.items()
        for width, layout in page.layouts.items()
        if layout["page_scrolls_sideways"]
    ] == []


def test_code_and_tables_too_wide_for_the_page_show_that_they_scroll(
    pages: dict[str, Page],
) -> None:
    assert found(pages, "unmarked") == []


def test_no_word_is_broken_across_lines_in_a_table(pages: dict[str, Page]) -> None:
    assert found(pages, "broken_words") == []


def test_no_table_of_contents_lists_an_entry_twice(pages: dict[str, Page]) -> None:
    assert found(pages, "toc_duplicates") == []


@pytest.mark.parametrize("path", list(API_PAGES))
def test_the_api_reference_has_an_entry_for_every_public_name(
    pages: dict[str, Page], path: str
) -> None:
    missing = [
        f"{module.__name__}.{name}"
        for module in API_PAGES[path]
        for name in module.__all__
        if f"{module.__name__}.{name}" not in pages[path].ids
    ]
    assert missing == []


def test_the_api_reference_renders_docstrings_written_for_sphinx(pages: dict[str, Page]) -> None:
    page = pages["/api/pycurator/"]
    # roles: links to the entries they name
    assert "#pycurator.LockLostError" in page.links
    assert "#pycurator.InterProcessSemaphoreV2" in page.links
    # a literal block: Leadership's example, highlighted
    assert any(
        lang == "python" and tokens and "def lead(leadership):" in text
        for lang, tokens, text in page.blocks
    )
    # a "#:" comment: the attribute's docstring
    texts = " ".join(text for text, _ in pages["/api/testing/"].texts)
    assert "Generous bound for anything" in texts


def test_the_search_index_covers_the_api_reference(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text())
    locations = {doc["location"] for doc in index["docs"]}
    assert "api/pycurator/#pycurator.InterProcessMutex.acquire" in locations
    assert "api/aio/#pycurator.aio.InterProcessMutex.acquire" in locations
