"""The Studio end to end in a real browser: Playwright for Python driving Debian's Chromium
against `loomc studio` started as users start it.

Skipped (with the reason) where Playwright or Chromium is absent; in CI (``CI`` set) a missing
one fails instead. Screenshots of every page at 1280 and 390 px are written to
``reports/studio-screens/`` (or ``$LOOMC_STUDIO_SCREENS``) as the test's artifacts.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from replay import ReplayServer
from studiokit import ROOT, StudioProcess, files_holding, make_project

pytestmark = pytest.mark.slow  # a real server and a real browser

CHROMIUM = Path(os.environ.get("LOOMC_CHROMIUM", "/usr/bin/chromium"))
SCREENS = Path(os.environ.get("LOOMC_STUDIO_SCREENS", ROOT / "reports" / "studio-screens"))
WIDTHS = (1280, 390)


def _playwright() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("playwright is not installed (pip install -e '.[dev]')")
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"no Chromium at {CHROMIUM} (scripts/setup --all installs it)")
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    return sync_playwright


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("studio-browser")


@pytest.fixture(scope="module")
def server(folder: Path) -> Iterator[StudioProcess]:
    _playwright()
    process = StudioProcess(make_project(folder / "project"), folder / "server")
    yield process
    process.stop()


@pytest.fixture(scope="module")
def browser(folder: Path) -> Iterator[Any]:
    """One persistent Chromium profile inside ``folder``: its files are scanned for keys too."""
    sync_playwright = _playwright()
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(folder / "chromium-profile"),
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu"],
            headless=True,
            viewport={"width": 1280, "height": 900},
        )
        yield context
        context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    tab = browser.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield tab
    tab.close()
    assert errors == []  # no script error, no CSP violation


def open_tab(page: Any, server: StudioProcess, tab: str, width: int = 1280) -> None:
    """A fresh load of the page at ``tab`` (a goto that changes only the hash would keep the
    last run's trace and receipt on the page)."""
    page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
    page.goto("about:blank")
    page.goto(f"{server.url}/studio/#{tab}")
    page.wait_for_selector("body[data-ready=true]")


def shoot(page: Any, name: str, width: int, full: bool = True) -> None:
    """A full page, or the viewport (the run page: its trace is pinned to the viewport)."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"{name}-{width}.png"), full_page=full)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{name} scrolls sideways at {width} px"


def run_form(page: Any, prompt: str, tier: str, mode: str = "mock") -> None:
    page.select_option("#run-pipeline", "general")
    page.select_option("#run-tier", tier)
    page.select_option("#run-mode", mode)
    page.fill("#prompt", prompt)
    page.click("#run-button")
    wait_for_run(page)


def wait_for_run(page: Any) -> None:
    """Until the run just submitted has finished and shown its receipt (the submit handler
    marks the trace running before the click returns; a finished run's badge leaves it)."""
    # selectors, not wait_for_function: the page's CSP refuses the eval that one needs
    page.wait_for_selector("#trace-state:not(.running)", state="attached", timeout=30_000)
    page.wait_for_selector("#receipt dl", timeout=30_000)


WATCH_STEPS = """() => {
  // every class change of a step, in order (old values kept, so quick changes are not lost)
  const recs = [];
  new MutationObserver((changes) => {
    for (const c of changes) if (c.target.dataset && c.target.dataset.step) recs.push({ node: c.target, old: c.oldValue });
  }).observe(document.getElementById("steps"), { attributes: true, subtree: true, attributeFilter: ["class"], attributeOldValue: true });
  window.__seen = () => recs.map((r, i) => {
    const next = recs.slice(i + 1).find((x) => x.node === r.node);
    return r.node.dataset.step + ":" + (next ? next.old : r.node.className).replace("step ", "");
  });
}"""


def receipt(page: Any) -> dict[str, str]:
    keys = page.eval_on_selector_all("#receipt dt", "n => n.map(x => x.textContent)")
    values = page.eval_on_selector_all("#receipt dd", "n => n.map(x => x.textContent)")
    return dict(zip(keys, values, strict=True))


def test_pipelines_page_draws_each_graph_with_the_checkers_numbers(
    page: Any, server: StudioProcess
) -> None:
    project = page.request.get(f"{server.url}/studio/api/project").json()
    check = page.request.get(f"{server.url}/studio/api/check").json()
    for width in WIDTHS:
        open_tab(page, server, "pipelines", width)
        page.wait_for_selector("#diagnostics li")  # the project's dot policy warns twice
        for pid in ("general@balanced", "code-review@strict"):
            if width > 400:
                page.click(f"#pipeline-list button[data-id='{pid}']")
            else:
                page.select_option("#pick-pipeline", pid)
            shown = next(p for p in project["pipelines"] if p["id"] == pid)
            nodes = page.eval_on_selector_all("#graph g.node", "n => n.map(g => g.dataset.step)")
            assert nodes == [s["id"] for s in shown["steps"]]
            foot = page.eval_on_selector_all(
                "#worst-table tfoot tr:first-child td", "n => n.map(x => x.textContent)"
            )
            assert foot[1] == str(shown["worst"]["calls"])
            assert foot[2].replace(",", "") == str(shown["worst"]["tokens"])
        assert page.locator("#diagnostics > li").count() == len(check["diagnostics"])
        assert page.locator("#diagnostics mark.span").count() == len(check["diagnostics"])
        shoot(page, "pipelines", width)


def test_mock_run_at_balanced_lights_the_steps_in_order(page: Any, server: StudioProcess) -> None:
    hostile = '<img src=x onerror="document.title=`pwned`"><b>bold</b>'
    for width in WIDTHS:
        open_tab(page, server, "run", width)
        page.evaluate(WATCH_STEPS)
        long = " long answer please" if width < 400 else ""  # the project's mock: 80 lines
        run_form(page, f"What is 2+2? {hostile}{long}", "balanced")
        seen = page.evaluate("window.__seen()")
        assert seen[:3] == ["direct:running", "direct:ok", "verify:skipped"], seen
        assert page.text_content("[data-step=direct] .calls").startswith("1 call(s)")
        why = page.text_content("[data-step=verify] .why")  # the skipped step shows its guard
        assert why.startswith("guard is false — guard: when risk >= high or"), why
        shown = receipt(page)
        assert shown["calls"] == "1" and shown["stop reason"] == "direct-answer-accepted"
        stored = page.request.get(f"{server.url}/studio/api/traces/{shown['run id']}").json()
        assert page.text_content("#answer") == stored["result"]["answer"]
        if not long:
            assert '<img src=x onerror="' in stored["result"]["answer"]  # model text, as text
        assert page.title() == "loomc Studio"
        assert page.locator("#answer img, #answer b, #steps img").count() == 0
        assert page.text_content("#budget [data-dim=calls] .lbl") == "calls: 1 / 2"
        if width < 400:  # the trace stays pinned at the bottom while the long answer scrolls
            page.evaluate("document.getElementById('answer').scrollIntoView({block: 'start'})")
            box = page.evaluate(
                "(() => { const r = document.getElementById('trace').getBoundingClientRect();"
                " return [r.bottom, window.innerHeight, document.getElementById('answer')"
                ".getBoundingClientRect().bottom]; })()"
            )
            assert abs(box[0] - box[1]) <= 2 and box[2] > box[1], box
            shoot(page, "run-answer-scrolled", width, full=False)
        page.evaluate("window.scrollTo(0, 0)")
        shoot(page, "run-mock-balanced", width, full=False)


def test_auto_escalates_a_risky_prompt(page: Any, server: StudioProcess) -> None:
    open_tab(page, server, "run")
    page.evaluate(WATCH_STEPS)
    run_form(page, "Review this code for a security vulnerability: eval(input())", "auto")
    decision = page.text_content("#decision")
    assert decision.startswith("auto picked strict: risk high")
    assert "escalation reason: high-risk task" in decision
    started = [s.split(":")[0] for s in page.evaluate("window.__seen()") if s.endswith(":running")]
    assert started == ["direct", "critique", "final"]
    assert receipt(page)["escalated"].startswith("yes: high-risk task")
    assert page.text_content("#budget [data-dim=calls] .lbl") == "calls: 3 / 3"
    shoot(page, "run-auto-escalated", 1280, full=False)


def test_simulation_animates_the_plan_and_stores_nothing(page: Any, server: StudioProcess) -> None:
    before = page.request.get(f"{server.url}/studio/api/traces").json()["runs"]
    open_tab(page, server, "run")
    page.evaluate(WATCH_STEPS)
    run_form(page, "Anything at all", "strict", mode="simulation")
    assert [s for s in page.evaluate("window.__seen()") if s.endswith(":simulated")] == [
        "direct:simulated",
        "critique:simulated",
        "final:simulated",
    ]
    shown = receipt(page)
    assert shown["provider calls made"] == "0" and shown["calls"] == "3"
    assert page.request.get(f"{server.url}/studio/api/traces").json()["runs"] == before
    shoot(page, "run-simulation", 1280, full=False)


def test_stop_cancels_the_run_on_the_server(page: Any, server: StudioProcess) -> None:
    before = page.request.get(f"{server.url}/studio/api/traces").json()["runs"]
    open_tab(page, server, "run")
    page.fill("#prompt", "slow answer please")  # the project's mock waits 3 s on this one
    page.select_option("#run-tier", "lean")
    page.click("#run-button")
    page.wait_for_selector("#steps .step.running")
    page.click("#stop-button")
    page.wait_for_selector("#trace-state:text('stopped')", timeout=5_000)
    assert page.is_enabled("#run-button")
    # the server cancelled the call in flight: past the 3 s the call would have taken, no run
    # finished (nothing stored), and the server still serves
    page.wait_for_timeout(4_000)
    assert page.request.get(f"{server.url}/studio/api/traces").json()["runs"] == before
    assert page.request.get(f"{server.url}/healthz").json()["status"] == "ok"


def test_keyboard_alone_reaches_and_runs_the_form(page: Any, server: StudioProcess) -> None:
    open_tab(page, server, "run")
    page.focus("body")

    def tab_to(element_id: str) -> None:
        for _ in range(40):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.id") == element_id:
                return
        raise AssertionError(f"Tab never reached #{element_id}")

    tab_to("prompt")
    page.keyboard.type("What is the capital of France?")
    tab_to("run-button")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"  # the focus is visible
    page.keyboard.press("Enter")
    wait_for_run(page)
    assert receipt(page)["calls"] == "1"


def test_byok_key_is_in_no_file_and_no_later_page(
    page: Any, server: StudioProcess, folder: Path
) -> None:
    upstream = ReplayServer().start()
    key = "sk-proj-" + secrets.token_urlsafe(24)
    try:
        open_tab(page, server, "run")
        page.select_option("#run-mode", "byok")
        page.fill("#byok-url", upstream.base_url + "/v1")
        page.fill("#byok-models", "* = litellm-usage")
        page.click("#byok-key")
        page.keyboard.type(key)
        page.fill("#prompt", "Say hello")
        page.select_option("#run-tier", "balanced")
        page.click("#run-button")
        wait_for_run(page)
        assert receipt(page)["calls"] == "1"
        assert page.input_value("#byok-key") == ""
        assert key not in page.content()
        run_id = receipt(page)["run id"]
        shoot(page, "run-byok", 1280, full=False)
    finally:
        upstream.stop()
    assert [r["headers"].get("authorization") for r in upstream.requests] == [f"Bearer {key}"]
    open_tab(page, server, "traces")
    page.wait_for_selector(f"#trace-table button[aria-label='open run {run_id}']")
    page.click(f"#trace-table button[aria-label='open run {run_id}']")
    page.wait_for_selector("#trace-detail section")
    assert key not in page.content()
    for path in (
        "/studio/",
        "/studio/api/project",
        "/studio/api/check",
        "/studio/api/traces",
        f"/studio/api/traces/{run_id}",
        "/studio/api/reports",
        "/metrics",
        "/v1/models",
    ):
        assert key[8:] not in page.request.get(f"{server.url}{path}").text(), path
    page.close()
    # every file written during the test: the store (and its WAL), the server's log and
    # output, its TMPDIR and HOME, the project, the browser's own profile
    assert files_holding(key[8:].encode(), folder) == []
    assert files_holding(key[8:20].encode(), folder) == []


CONTRAST = """() => {
  const parse = (c) => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const background = (node) => {
    for (let n = node; n && n.nodeType === 1; n = n.parentElement) {
      if (n instanceof SVGElement && n.tagName === "g") { const r = n.querySelector(":scope > rect"); if (r) { const f = parse(getComputedStyle(r).fill); if (f && f[3] > 0) return f; } }
      const bg = parse(getComputedStyle(n).backgroundColor); if (bg && bg[3] > 0.5) return bg;
    }
    return [255, 255, 255, 1];
  };
  const bad = [];
  let checked = 0;
  for (const node of document.querySelectorAll("body *")) {
    const own = [...node.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim());
    if (!own || node.closest("[hidden]") || node.tagName === "OPTION" || node.tagName === "TITLE") continue;
    const box = node.getBoundingClientRect(); if (!box.width || !box.height) continue;
    const style = getComputedStyle(node); if (style.visibility === "hidden" || style.display === "none") continue;
    const fg = parse(node instanceof SVGElement ? style.fill : style.color);
    const r = ratio(fg, background(node)); checked++;
    if (r < 4.5) bad.push(`${node.tagName}.${node.getAttribute("class") || ""} "${node.textContent.trim().slice(0, 30)}" ${r.toFixed(2)}`);
  }
  return { checked, bad };
}"""


def test_every_text_meets_wcag_aa_contrast(page: Any, server: StudioProcess) -> None:
    open_tab(page, server, "run")
    run_form(page, "Review this code for a security vulnerability: eval(input())", "auto")
    pages = {"run": page.evaluate(CONTRAST)}
    open_tab(page, server, "pipelines")
    page.wait_for_selector("#diagnostics li")
    pages["pipelines"] = page.evaluate(CONTRAST)
    open_tab(page, server, "traces")
    page.wait_for_selector("#trace-table tbody button")
    page.click("#trace-table tbody button")
    page.wait_for_selector("#trace-detail section")
    pages["traces"] = page.evaluate(CONTRAST)
    for width in WIDTHS:
        open_tab(page, server, "traces", width)
        page.wait_for_selector("#trace-table tbody button")
        boxes = page.locator("#trace-table tbody input[type=checkbox]")
        boxes.nth(0).check()
        boxes.nth(1).check()
        page.click("#compare-button")
        page.wait_for_selector("#trace-detail section:nth-child(2)")
        shoot(page, "traces-compare", width)
        open_tab(page, server, "reports", width)
        page.click("#report-list button")
        heading = page.frame_locator("#report-frame").locator("h1")
        assert heading.inner_text() == "evals/mixed-routing.jsonl"  # the eval report itself
        page.frame_locator("#report-frame").locator("svg").first.wait_for()
        page.wait_for_timeout(300)  # let the frame paint before the screenshot
        pages["reports"] = page.evaluate(CONTRAST)
        shoot(page, "reports", width)
    for name, found in pages.items():
        assert found["checked"] > 10, name
        assert found["bad"] == [], f"{name}: {found['bad']}"
