"""The viewer in a real Chromium, as a new user tries it on the demo ledger: find the runs
where C2 fired on gemini, open one and see the offending command and the report line the judge
quoted highlighted, label runs (mouse and keyboard) and find the labels in `agentledger labels
list`, walk the review queue with `n`, compare two models on one scenario, read the findings;
and the token a viewer off loopback demands.

Every page is watched as the XSS tests watch them (tests/browser_fixtures.py): the demo's own
pages must raise no Content-Security-Policy violation, no page error and no foreign request.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.records.scores import Score
from agentledger.store import Ledger
from browser_fixtures import WatchedPage, chromium, playwright_driver, watched_page
from browser_support import Server, labels_of, served

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo ledger, built once for this module by `agentledger demo`."""
    root = tmp_path_factory.mktemp("viewer-demo") / "demo"
    result = CliRunner().invoke(main, ["demo", str(root)])
    assert result.exit_code == 0, result.output[-2000:]
    return root


@pytest.fixture(scope="module")
def server(demo_root: Path) -> Iterator[Server]:
    with served(demo_root) as running:
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
    watched.assert_clean(f"the last page ({watched.page.url})")
    watched.page.close()


def cli_json(*args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "agentledger", *args, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def _shown_run_ids(page: WatchedPage) -> list[str]:
    return page.page.locator("#runs tbody td.id a").all_inner_texts()


def _filter_gemini_c2(page: WatchedPage) -> None:
    page.visit("/runs")
    page.assert_clean("the runs page")
    form = page.page.locator("#filters")
    form.locator('input[name="model"]').last.fill("gemini-2.5-flash")
    form.locator('input[name="fired"]').last.fill("C2")
    form.get_by_role("button", name="Filter").click()
    page.page.wait_for_url("**/runs?*")


def test_find_the_runs_where_c2_fired_on_gemini(page: WatchedPage, demo_root: Path) -> None:
    _filter_gemini_c2(page)
    query = parse_qs(urlsplit(page.page.url).query)
    assert query["model"] == ["gemini-2.5-flash"] and query["fired"] == ["C2"]
    expected = cli_json(
        "runs", "--ledger", str(demo_root), "--model", "gemini-2.5-flash", "--fired", "C2"
    )
    assert expected, "the demo has runs where C2 fired on gemini"
    assert sorted(_shown_run_ids(page)) == sorted(run["run_id"] for run in expected)
    models = page.page.locator("#runs tbody tr td:nth-child(4)").all_inner_texts()
    assert set(models) == {"gemini-2.5-flash"}
    assert f"of {len(expected)}" in page.page.locator("#count").inner_text()
    page.assert_clean("the filtered runs page")


def _c2_evidence(demo_root: Path, run_id: str) -> list[tuple[str, str]]:
    """(file, quote) of each piece of evidence the judges gave for C2 firing on the run."""
    with Ledger.open(demo_root) as ledger:
        scores = [Score.model_validate_json(text) for text in ledger.index.scores_of(run_id)]
    return [
        (item.file, item.quote)
        for score in scores
        for result in score.criteria
        if result.criterion == "C2" and result.fired
        for item in result.evidence
    ]


def test_open_a_run_and_see_the_firing_highlighted_in_place(
    page: WatchedPage, demo_root: Path
) -> None:
    _filter_gemini_c2(page)
    first = page.page.locator("#runs tbody td.id a").first
    run_id = first.inner_text()
    first.click()
    page.page.wait_for_url(f"**/runs/{run_id}")
    page.assert_clean(run_id)
    evidence = _c2_evidence(demo_root, run_id)
    assert evidence
    hits = page.page.locator(".hit")
    assert hits.count() >= 1
    highlighted = " ".join(hits.all_text_contents())
    shown = [quote for file, quote in evidence if file in ("report.md", "shell_audit.jsonl")]
    assert shown, evidence
    for quote in shown:
        assert quote.strip().splitlines()[0][:40] in highlighted, quote
    # The offending command, highlighted in the shell log or the trace, cited as C2.
    commands = page.page.locator("#shell tr.hit, #trace li.step.hit")
    assert commands.count() >= 1
    assert "C2" in " ".join(commands.all_text_contents())
    if any(file == "report.md" for file, _ in evidence):
        assert page.page.locator("#report li.hit").count() >= 1
    # The evidence link in the score jumps to the highlighted place.
    link = page.page.locator("#scores .evidence a").first
    target = link.get_attribute("href")
    assert target and target.startswith("#")
    assert page.page.locator(f"[id='{target[1:]}']").get_attribute("class") in (
        "hit",
        "step hit",
    )
    # j walks the highlighted evidence: the first one becomes current and is in view.
    page.page.keyboard.press("j")
    current = page.page.locator(".hit.current")
    assert current.count() == 1
    assert current.is_visible()


def test_label_three_runs_and_find_them_in_labels_list(page: WatchedPage, demo_root: Path) -> None:
    _filter_gemini_c2(page)
    run_ids = _shown_run_ids(page)[:3]
    assert len(run_ids) == 3
    for number, run_id in enumerate(run_ids):
        page.visit(f"/runs/{run_id}")
        form = page.page.locator("#label-form")
        if number == 0:
            form.locator('input[name="verdict"][value="unsafe"]').check()
        else:
            page.page.keyboard.press("3")  # the shortcut for Unsafe
            assert form.locator('input[name="verdict"][value="unsafe"]').is_checked()
        criterion = form.locator('select[name="criterion.C2"]')
        if criterion.count():
            criterion.select_option("yes")
        form.locator('input[name="by"]').fill("reviewer-ada")
        form.locator('textarea[name="reason"]').fill(f"flushes the chain, run {number}")
        if number == 2:
            form.locator('textarea[name="reason"]').press("Control+Enter")
        else:
            form.get_by_role("button", name="Save label").click()
        page.page.wait_for_selector("#saved")
        assert "flushes the chain" in page.page.locator("#labels table").inner_text()
        page.assert_clean(f"{run_id} after labelling")
    every = cli_json("labels", "list", "--ledger", str(demo_root))
    for number, run_id in enumerate(run_ids):
        labels = [label for label in every if label["run_id"] == run_id]
        mine = [label for label in labels if label["by"]["name"] == "reviewer-ada"]
        assert len(mine) == 1, labels
        assert mine[0]["verdict"] == "Unsafe"
        assert mine[0]["reason"] == f"flushes the chain, run {number}"


def test_a_stale_form_is_refused_and_writes_nothing(page: WatchedPage, demo_root: Path) -> None:
    run_id = cli_json("runs", "--ledger", str(demo_root), "--scenario", "use_case_a")[0]["run_id"]
    before = labels_of(demo_root, run_id)
    page.visit(f"/runs/{run_id}")
    page.page.locator('#label-form input[name="csrf"]').evaluate("input => input.value = 'x'")
    page.page.locator('#label-form input[name="verdict"][value="safe"]').check()
    page.page.locator("#label-form").get_by_role("button", name="Save label").click()
    page.page.wait_for_load_state()
    assert "CSRF" in page.page.locator("body").inner_text()
    assert labels_of(demo_root, run_id) == before


def test_n_walks_the_review_queue(page: WatchedPage) -> None:
    page.visit("/review")
    queue = page.page.locator("#queue tbody td.id a").all_inner_texts()
    assert len(queue) >= 3
    page.page.keyboard.press("n")
    page.page.wait_for_url("**/runs/*")
    first = urlsplit(page.page.url).path.rsplit("/", 1)[1]
    assert first == queue[0]
    page.page.keyboard.press("n")
    page.page.wait_for_url(lambda url: first not in url)
    second = urlsplit(page.page.url).path.rsplit("/", 1)[1]
    assert second == queue[1]
    # Typing in the labelling form is not a shortcut.
    page.page.locator('#label-form textarea[name="reason"]').type("no n here")
    assert second in page.page.url


def test_compare_two_models_on_one_scenario(page: WatchedPage, demo_root: Path) -> None:
    runs = cli_json("runs", "--ledger", str(demo_root), "--scenario", "use_case_m")
    by_model = {run["model"]: run["run_id"] for run in runs}
    a, b = by_model["gemini-2.5-flash"], by_model["claude-haiku-4-5"]
    page.visit("/runs?scenario=use_case_m&per_page=100")
    page.page.locator(f'#runs input[type="checkbox"][value="{a}"]').check()
    page.page.locator(f'#runs input[type="checkbox"][value="{b}"]').check()
    page.page.get_by_role("button", name="Compare the two checked runs").click()
    page.page.wait_for_url("**/compare?*")
    body = page.page.locator("main").inner_text()
    assert a in body and b in body
    assert page.page.locator("#steps table tbody tr").count() >= 2
    assert page.page.locator(".verdict").count() >= 2
    page.assert_clean("compare")


def test_read_the_findings(page: WatchedPage) -> None:
    page.visit("/findings")
    page.assert_clean("the findings page (inline SVG charts under the CSP)")
    for section in ("verdicts", "criteria", "gap", "drift", "decisions", "sentinels"):
        assert page.page.locator(f"section#{section}").count() == 1, section
    charts = page.page.locator("figure.chart svg")
    assert charts.count() >= 5
    box = charts.first.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 50
    assert "gemini-2.5-flash" in page.page.locator("#verdicts").inner_text()
    # A decision's detail opens from its link; the sentinel history lists the checks.
    page.page.locator("table.decisions td.id a").first.click()
    opened = page.page.locator("details.decision[open]")
    opened.first.wait_for(state="attached", timeout=10_000)  # opened on hashchange, after
    assert opened.count() == 1
    assert page.page.locator("#sentinels table.history tbody tr").count() >= 2
    page.visit("/findings?model=gemini-2.5-flash&criterion=C2")
    assert "C2 first fired on gemini-2.5-flash" in page.page.locator("#drift").inner_text()
    page.assert_clean("the findings of one model")


def test_a_viewer_off_loopback_demands_its_token(
    driver: Any, demo_root: Path, tmp_path: Path
) -> None:
    # 0.0.0.0 is not loopback by the viewer's rule: a token is generated and printed once.
    # The test reaches the server on 127.0.0.1 only.
    with served(demo_root, host="0.0.0.0") as server:
        token = server.token()
        assert token and len(token) >= 32
        assert httpx.get(f"{server.url}/runs").status_code == 401
        wrong = httpx.get(f"{server.url}/runs", headers={"X-Agentledger-Token": "x" * 43})
        assert wrong.status_code == 401
        right = httpx.get(f"{server.url}/runs", headers={"X-Agentledger-Token": token})
        assert right.status_code == 200
        post = httpx.post(f"{server.url}/runs/x/label", data={"verdict": "safe"})
        assert post.status_code == 401
        with chromium(driver, tmp_path / "profile") as context:
            page = watched_page(context, server.url)
            refused = page.visit("/runs")
            assert refused.status == 401
            assert "token" in page.page.locator("body").inner_text()
            opened = page.visit(f"/findings?token={token}")
            assert opened.status == 200
            assert urlsplit(page.page.url).path == "/findings"
            assert "token" not in page.page.url
            assert page.visit("/runs").status == 200  # the cookie carries it from now on
            page.assert_clean("runs with the token")


def test_a_token_given_on_loopback_is_demanded_too(demo_root: Path) -> None:
    with served(demo_root, token="a-token-of-sixteen-plus") as server:
        assert server.token() == "a-token-of-sixteen-plus"
        assert httpx.get(f"{server.url}/runs").status_code == 401
        headers = {"Authorization": "Bearer a-token-of-sixteen-plus"}
        assert httpx.get(f"{server.url}/runs", headers=headers).status_code == 200
