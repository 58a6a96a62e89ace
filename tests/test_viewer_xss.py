"""The XSS corpus (tests/viewer_xss/payloads.yaml) planted in every field a run can carry
executes nothing in Chromium, on every page of the viewer that shows it.

Every field: the report, the reasoning trace, the prompt and system prompt, commands, their
output and the gate's reasons, trace steps (messages, reasoning, tool names, arguments, file
paths, observations), the snapshot, attachments, model names, the model served, provider,
scenario, variant, addon and agent names, tags (keys and values), judge evidence, reasons
and the judge's own description, label reasons and sources, and text a person types into the
labelling form. Nothing may open a dialog, reach another origin, break the
Content-Security-Policy, throw, or add markup the viewer never makes; and the hostile text
is shown as text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from browser_fixtures import WatchedPage, chromium, playwright_driver, watched_page
from browser_support import FOREIGN_HOST, Server, XssLedger, build_xss_ledger, payloads, served

pytestmark = pytest.mark.slow

CORPUS = payloads()


@pytest.fixture(scope="module")
def xss_ledger(tmp_path_factory: pytest.TempPathFactory) -> XssLedger:
    return build_xss_ledger(tmp_path_factory.mktemp("xss") / "ledger", CORPUS)


@pytest.fixture(scope="module")
def server(xss_ledger: XssLedger) -> Iterator[Server]:
    with served(xss_ledger.root) as running:
        yield running


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with playwright_driver() as running:
        yield running


@pytest.fixture(scope="module")
def browser(driver: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(driver, tmp_path_factory.mktemp("profile")) as context:
        yield context


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[WatchedPage]:
    watched = watched_page(browser, server.url)
    yield watched
    watched.page.close()


def test_the_corpus_covers_every_kind_of_attack() -> None:
    texts = " ".join(payload.text.lower() for payload in CORPUS)
    for needle in (
        "<script",
        "onerror",
        "javascript:",
        "<svg",
        "onload",
        "](",
        "<style",
        "url(",
        "<iframe",
        "<!--",
        "<base",
        "{{",
        "</textarea>",
        "data:text/html",
    ):
        assert needle in texts, needle
    assert len({payload.id for payload in CORPUS}) == len(CORPUS)
    assert all(FOREIGN_HOST in p.text or "XSS" in p.text or "alert" in p.text for p in CORPUS)


def test_the_carrier_pages_show_the_payloads_as_text_and_run_none(
    page: WatchedPage, xss_ledger: XssLedger
) -> None:
    for run_id in xss_ledger.carriers:
        page.visit(f"/runs/{run_id}")
        page.assert_clean(run_id)
        text = page.page.evaluate("document.body.textContent")
        for payload in CORPUS:
            if "\n" not in payload.text:
                assert payload.text in text, f"{run_id}: {payload.id} is not shown as text"
        # Every folded observation opened, every highlighted firing walked to: still nothing.
        page.page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        for _ in range(5):
            page.page.keyboard.press("j")
        page.page.mouse.move(200, 400)
        page.assert_clean(f"{run_id}, unfolded")


def test_the_runs_list_filters_and_findings_run_none(
    page: WatchedPage, xss_ledger: XssLedger
) -> None:
    page.visit("/runs?per_page=100")
    page.assert_clean("the runs page")
    text = page.page.evaluate("document.body.textContent")
    assert CORPUS[0].line in text
    for payload in CORPUS[:8]:
        # A filter value is echoed into the form's inputs: an attribute context.
        page.visit("/runs?" + urlencode({"model": payload.line, "tag": f"note={payload.line}"}))
        page.assert_clean(f"the runs page filtered by {payload.id}")
        assert page.page.locator("#runs tbody tr").count() == 1, payload.id
    page.visit("/findings")
    page.assert_clean("the findings page")
    assert page.page.locator("figure.chart svg").count() >= 3
    page.visit("/findings?" + urlencode({"model": CORPUS[5].line}))
    page.assert_clean("the findings page of one hostile model")
    page.visit("/review")
    page.assert_clean("the review queue")


def test_every_run_page_and_the_compare_page_run_none(
    page: WatchedPage, xss_ledger: XssLedger
) -> None:
    for run_id in xss_ledger.names:
        page.visit(f"/runs/{run_id}")
        page.assert_clean(run_id)
    a, b = xss_ledger.carriers
    page.visit(f"/compare?a={a}&b={b}")
    page.assert_clean("compare")
    page.visit(f"/runs/{a}?against={b}#prompt")
    page.assert_clean("the prompt diff")
    page.visit(f"/compare?a={xss_ledger.names[0]}&b={xss_ledger.names[1]}")
    page.assert_clean("compare of two hostile identities")


def test_raw_files_are_never_rendered_as_pages(page: WatchedPage, xss_ledger: XssLedger) -> None:
    run_id = xss_ledger.carriers[0]
    for name in ("report.md", "audit.md", "PROMPT.txt", "snapshot.txt", "attachments/notes.md"):
        response = page.visit(f"/runs/{run_id}/files/{name}")
        assert response.status == 200, name
        assert "text/html" not in response.headers["content-type"], name
        assert response.headers["x-content-type-options"] == "nosniff", name
        # Chromium's own plain-text viewer: one <pre> of the file's text, and nothing ran.
        assert page.page.evaluate("document.body.children.length") == 1, name
        assert page.page.evaluate("document.body.firstElementChild.tagName") == "PRE", name
        page.assert_clean(name, markup_check=False)


def test_error_pages_echo_hostile_input_as_text(page: WatchedPage) -> None:
    for path in (
        "/runs?sort=" + quote(CORPUS[0].text),
        "/runs?" + urlencode({"since": CORPUS[3].text}),
        "/runs/" + quote("<script>alert('XSS run id')</script>"),
        "/compare?" + urlencode({"a": CORPUS[6].text, "b": "x"}),
        "/findings?" + urlencode({"judge": CORPUS[0].text}),
        "/findings?" + urlencode({"before_after": CORPUS[5].text}),
        "/" + quote(CORPUS[10].text),
    ):
        response = page.visit(path)
        assert response.status in (400, 404), path
        page.assert_clean(path)


def test_a_hostile_label_typed_into_the_form_runs_none(
    page: WatchedPage, xss_ledger: XssLedger
) -> None:
    run_id = xss_ledger.names[0]
    page.visit(f"/runs/{run_id}")
    form = page.page.locator("#label-form")
    form.locator('input[name="verdict"][value="unsafe"]').check()
    reason = "\n".join(payload.text for payload in CORPUS)
    form.locator('textarea[name="reason"]').fill(reason)
    form.locator('input[name="by"]').fill("reviewer")  # "By" starts empty for every visitor
    form.locator('button[type="submit"]').click()
    page.page.wait_for_selector("#saved")
    page.assert_clean("the page after saving a hostile label")
    assert CORPUS[0].text in page.page.evaluate("document.body.textContent")
