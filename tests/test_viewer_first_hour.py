"""The viewer's rough edges a newcomer met: judges told apart in the runs table, a run without
a shell log, run-id prefixes in URLs, the review page's command, findings at scale."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from agentledger import Ledger, RunMetadata
from agentledger.report.sections import Table
from conftest import WriteRun
from viewer_support import store_score, viewer_client


def test_two_judges_of_one_kind_are_told_apart_by_id(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    store_score(ledger, run_id, "Safe", judge="rules")
    store_score(ledger, run_id, "Uncertain", judge="rules", judge_id="rules-4668cb5b16c9")
    page = viewer_client(ledger).get("/runs").text
    shown = re.findall(
        r'<span class="judged" title="([^"]+)"><span class="id">([^<]+)</span>', page
    )
    assert sorted(shown) == [
        ("rules-000000000005", "rules-000000"),
        ("rules-4668cb5b16c9", "rules-4668cb"),
    ]


def test_a_run_without_a_shell_log_says_so_not_none(ledger: Ledger) -> None:
    metadata = RunMetadata(
        run_id="chat_only_run",
        scenario="chat",
        model="gpt-4o",
        started_at=datetime(2026, 3, 1, tzinfo=UTC),
        backfilled=True,
    )
    with ledger.new_run(metadata) as run:
        run.add_text("report.md", "Wrote the page.\n")
    page = viewer_client(ledger).get("/runs/chat_only_run").text
    assert "None / None" not in page
    assert (
        '<dt>commands run / denied</dt><dd><span class="muted">not recorded (the run has no '
        "shell log)</span></dd>" in page
    )


def test_a_run_url_takes_a_prefix_of_the_id_as_the_cli_does(
    ledger: Ledger, write_run: WriteRun
) -> None:
    first = write_run("use_case_m", "gemini-2.5-flash")
    write_run("use_case_m", "claude-haiku-4-5")
    client = viewer_client(ledger)
    page = client.get(f"/runs/{first[:-3]}")
    assert page.status_code == 200 and f"<h1>{first}</h1>" in page.text
    both = client.get("/runs/use_case_m_")
    assert both.status_code == 404 and "matches several runs" in both.text


def test_the_review_page_gives_the_agreement_command_as_it_runs(
    ledger: Ledger, write_run: WriteRun
) -> None:
    store_score(ledger, write_run(), "Unsafe")
    page = viewer_client(ledger).get("/review").text
    assert "<code>agentledger agreement --a judge:ID --b labels:human</code>" in page


def test_a_long_table_shows_its_first_rows_and_folds_the_rest() -> None:
    from agentledger.viewer.app import _environment

    table = Table("By scenario", ["scenario", "C1"], [[f"s{n:03}", "0/1"] for n in range(290)])
    html = (
        _environment()
        .from_string('{% from "_macros.html" import table_of %}{{ table_of(table) }}')
        .render(table=table)
    )
    head, _, folded = html.partition('<details class="more-rows">')
    assert head.count("<tr><td>") == 25 and "s024" in head and "s025" not in head
    assert folded.startswith("<summary>265 more rows of 290</summary>")
    assert folded.count("<tr><td>") == 265


def test_a_run_a_pack_does_not_apply_to_shows_why_not_as_skipped(
    ledger: Ledger, write_run: WriteRun
) -> None:
    browsing, failed = write_run("web_task", "gpt-4o"), write_run("use_case_m", "gpt-4o")
    why = "pack ops-trajectory does not apply: its trace holds no command, code or file write"
    store_score(ledger, browsing, "not-applicable", criteria=[], skipped_reason=why)
    nothing = "nothing ran: the gated shell could not start any of the 2 command(s)"
    store_score(ledger, failed, "skipped", criteria=[], skipped_reason=nothing)
    client = viewer_client(ledger)
    page = client.get(f"/runs/{browsing}").text
    assert f'<p class="muted">{why}</p>' in page and "skipped: pack" not in page
    assert f'<p class="muted">skipped: {nothing}</p>' in client.get(f"/runs/{failed}").text


def test_the_review_queue_narrows_to_a_model_and_a_scenario(
    ledger: Ledger, write_run: WriteRun
) -> None:
    runs = {
        (scenario, model): write_run(scenario, model)
        for scenario in ("use_case_m", "use_case_q")
        for model in ("gpt-4o", "claude-haiku-4-5")
    }
    client = viewer_client(ledger)

    def queued(query: str) -> set[str]:
        page = client.get(f"/review{query}")
        assert page.status_code == 200, page.text
        table = page.text.partition('id="queue"')[2].partition("</table>")[0]
        return set(re.findall(r'<td class="id"><a href="/runs/([^"?]+)\?review=1">', table))

    assert queued("") == set(runs.values())
    assert queued("?model=gpt-4o") == {runs["use_case_m", "gpt-4o"], runs["use_case_q", "gpt-4o"]}
    assert queued("?model=gpt-4o&scenario=use_case_q") == {runs["use_case_q", "gpt-4o"]}
    assert queued("?scenario=no_such_scenario") == set()
    page = client.get("/review?model=gpt-4o&page=1").text
    assert 'name="model" value="gpt-4o"' in page and '<option value="claude-haiku-4-5">' in page
    hostile = client.get('/review?model="><script>alert(1)</script>').text
    assert "<script>alert(1)" not in hostile
