"""The viewer's pages through the ASGI test client: runs (filters, sorting, paging, bad
parameters), a run with its evidence highlighted, compare, review, findings, raw files."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from agentledger import Ledger, RunMetadata
from agentledger.gates.decisions import DecisionStore
from agentledger.identity import sha256_bytes
from agentledger.labels import LabelStore
from agentledger.labels.entry import make_label
from agentledger.records.decisions import Decision, new_decision_id
from agentledger.records.trace import TraceStep, step_text, trace_bytes
from conftest import WriteRun
from viewer_support import csrf_of, store_score, viewer_client


def run_ids_shown(page: str) -> list[str]:
    """The run ids of the runs table, in order."""
    return re.findall(r'<td class="id"><a href="/runs/([^"]+)">', page)


@pytest.fixture
def runs(ledger: Ledger, write_run: WriteRun) -> dict[str, str]:
    made = {
        "gemini_m": write_run("use_case_m", "gemini-2.5-flash", tags={"team": "net"}),
        "haiku_m": write_run("use_case_m", "claude-haiku-4-5", addon=b"Always verify.\n"),
        "gemini_k": write_run("use_case_k", "gemini-2.5-flash", kind="fixture"),
    }
    store_score(ledger, made["gemini_m"], "Unsafe")
    store_score(ledger, made["haiku_m"], "Safe")
    return made


# -- the runs page -----------------------------------------------------------------------------


def test_the_runs_page_lists_every_run_newest_first_with_its_verdicts(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    response = viewer_client(ledger).get("/runs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    assert run_ids_shown(page) == [runs["gemini_k"], runs["haiku_m"], runs["gemini_m"]]
    assert "Runs 1 to 3 of 3" in page
    assert 'class="verdict v-unsafe">Unsafe' in page and 'class="verdict v-safe">Safe' in page


def test_the_home_page_sends_to_the_runs(ledger: Ledger) -> None:
    response = viewer_client(ledger).get("/")
    assert response.status_code == 303 and response.headers["location"] == "/runs"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("model=gemini-2.5-flash", ["gemini_k", "gemini_m"]),
        ("model=gemini-2.5-flash&model=claude-haiku-4-5&kind=agent", ["haiku_m", "gemini_m"]),
        ("scenario=use_case_k", ["gemini_k"]),
        ("tag=team%3Dnet", ["gemini_m"]),
        ("kind=fixture", ["gemini_k"]),
        ("verdict=unsafe", ["gemini_m"]),
        ("judge=rules&verdict=Safe", ["haiku_m"]),
        ("fired=C2", ["gemini_m"]),
        ("select=model%3Dgemini-2.5-flash%2Cscenario%3Duse_case_m", ["gemini_m"]),
        ("select=model%3Dgemini-2.5-flash&scenario=use_case_k", ["gemini_k"]),
        ("model=&scenario=&labelled=", ["gemini_k", "haiku_m", "gemini_m"]),
        ("model=nobody", []),
    ],
)
def test_the_filters_in_the_url_select_the_runs(
    ledger: Ledger, runs: dict[str, str], query: str, expected: list[str]
) -> None:
    page = viewer_client(ledger).get(f"/runs?{query}").text
    assert run_ids_shown(page) == [runs[name] for name in expected]
    if not expected:
        assert "No runs match." in page


def test_a_prompt_hash_prefix_and_the_label_filters_select_runs(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    haiku_hash = ledger.index.get(runs["haiku_m"]).system_prompt_hash  # type: ignore[union-attr]
    client = viewer_client(ledger)
    page = client.get(f"/runs?prompt={haiku_hash.removeprefix('sha256:')[:8]}").text
    assert run_ids_shown(page) == [runs["haiku_m"]]
    LabelStore(ledger).write([make_label(runs["gemini_m"], "alice", verdict="Unsafe")])
    assert run_ids_shown(client.get("/runs?labelled=yes").text) == [runs["gemini_m"]]
    assert runs["gemini_m"] not in run_ids_shown(client.get("/runs?labelled=no").text)
    page = client.get("/runs?label_source=human&label_verdict=unsafe").text
    assert run_ids_shown(page) == [runs["gemini_m"]]
    assert "alice" in page


def test_the_form_shows_the_filters_given(ledger: Ledger, runs: dict[str, str]) -> None:
    page = viewer_client(ledger).get("/runs?model=gemini-2.5-flash&verdict=Unsafe").text
    assert '<input name="model" value="gemini-2.5-flash" list="models"' in page
    assert 'name="verdict" value="Unsafe" checked' in page


def test_runs_are_paged_and_sorted(ledger: Ledger, write_run: WriteRun) -> None:
    made = [write_run("use_case_m", f"model-{n}") for n in range(7)]
    client = viewer_client(ledger)
    first = client.get("/runs?per_page=3").text
    assert run_ids_shown(first) == made[::-1][:3]
    assert "page 1 of 3" in first and "Runs 1 to 3 of 7" in first
    next_link = re.search(r'<a href="([^"]+)" rel="next">', first)
    assert next_link and "page=2" in next_link.group(1)
    second = client.get(next_link.group(1).replace("&amp;", "&")).text
    assert run_ids_shown(second) == made[::-1][3:6]
    last = client.get("/runs?per_page=3&page=3").text
    assert run_ids_shown(last) == [made[0]] and 'rel="next"' not in last
    assert "Runs 7 to 7 of 7" in last and "page 3 of 3" in last  # a short page: no count
    beyond = client.get("/runs?per_page=3&page=9").text
    assert run_ids_shown(beyond) == []
    assert "of 7" in beyond  # past the end: counted
    exact = client.get("/runs?per_page=7").text
    assert "Runs 1 to 7 of 7" in exact and 'rel="next"' not in exact
    by_model = client.get("/runs?sort=model&order=asc&per_page=3").text
    assert run_ids_shown(by_model) == made[:3]
    by_model_desc = client.get("/runs?sort=model&order=desc&per_page=2").text
    assert run_ids_shown(by_model_desc) == [made[6], made[5]]
    assert 'aria-sort="descending"' in by_model_desc


def test_the_sort_links_keep_the_filters(ledger: Ledger, runs: dict[str, str]) -> None:
    page = viewer_client(ledger).get("/runs?model=gemini-2.5-flash&sort=model&order=asc").text
    link = re.search(r'<a href="([^"]*sort=model[^"]*)">model', page)
    assert link is not None
    assert "model=gemini-2.5-flash" in link.group(1) and "order=desc" in link.group(1)


@pytest.mark.parametrize(
    ("query", "named", "says"),
    [
        ("bogus=1", "bogus", "unknown here"),
        ("since=yesterday", "since", "is not a date"),
        ("until=2026-13-45", "until", "is not a date"),
        ("verdict=maybe", "verdict", "is not a verdict"),
        ("label_verdict=skipped", "label_verdict", "is not a label verdict"),
        ("kind=robot", "kind", "is not a run kind"),
        ("prompt=zzzz", "prompt", "prompt"),
        ("tag=novalue", "tag", "is not KEY=VALUE"),
        ("labelled=perhaps", "labelled", "use yes or no"),
        ("variant=a&variant=b", "variant", "given more than once"),
        ("page=0", "page", "is not a page number"),
        ("page=two", "page", "is not a page number"),
        ("page=99999999999999999999", "page", "is above"),
        ("per_page=9999", "per_page", "a number from 1 to 500"),
        ("sort=colour", "sort", "sort by one of"),
        ("order=up", "order", "use asc or desc"),
        ("select=model", "select", "is not KEY=VALUE"),
        ("select=judge%3Drules", "select", "unknown key"),
    ],
)
def test_a_bad_parameter_is_a_400_that_names_it(
    ledger: Ledger, runs: dict[str, str], query: str, named: str, says: str
) -> None:
    response = viewer_client(ledger).get(f"/runs?{query}")
    assert response.status_code == 400
    message = re.search(r'<p class="message">(.*?)</p>', response.text, re.S)
    assert message is not None
    assert f"parameter &#39;{named}&#39;" in message.group(1)
    assert says in message.group(1)


# -- a run -------------------------------------------------------------------------------------


def test_a_run_shows_its_identity_report_shell_log_and_scores(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    run_id = runs["gemini_m"]
    page = viewer_client(ledger).get(f"/runs/{run_id}").text
    assert f"<h1>{run_id}</h1>" in page
    meta = ledger.load(run_id).metadata
    assert meta.system_prompt_hash in page
    assert "<code>team=net</code>" in page
    assert "Root cause: tc qdisc on eth0 drops 30% of packets." in page
    assert "Checked iptables first, then tc." in page  # the reasoning
    assert "$ tc qdisc del dev eth0 root" in page
    assert 'class="gate-denied">denied' in page
    assert "rules-000000000005" in page and "deletes the qdisc a daemon owns" in page
    assert "No decision read this run." in page


def test_each_firing_is_highlighted_where_its_evidence_stands(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    page = viewer_client(ledger).get(f"/runs/{runs['gemini_m']}").text
    # The report line the judge quoted, and the shell log line of the command.
    assert '<li id="report-L2" class="hit">' in page
    assert '<tr id="shell-L2" class="hit">' in page
    assert '<tr id="shell-L1">' in page  # a line nobody cited stays plain
    assert '<a href="#report-L2">report.md:2</a>' in page
    assert '<a href="#shell-L2">shell_audit.jsonl:2</a>' in page
    assert page.count("◀ C2 fired (rules-000000000005)") == 2


def test_evidence_without_a_line_is_placed_on_the_line_holding_its_quote(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run(report="# Report\nAll fine.\nRemediation: flush the chain.\n")
    store_score(
        ledger,
        run_id,
        criteria=[
            {
                "criterion": "C3",
                "fired": True,
                "reason": "too broad",
                "evidence": [
                    {"quote": "flush the chain...", "file": "report.md"},
                    {"quote": "not in the report", "file": "report.md"},
                    {"quote": "a file the page does not show", "file": "attachments/x.log"},
                ],
            }
        ],
    )
    page = viewer_client(ledger).get(f"/runs/{run_id}").text
    assert '<li id="report-L3" class="hit">' in page
    assert '<a href="#report-L3">report.md</a>' in page
    assert page.count("(not shown here)") == 2


def test_a_trace_is_a_timeline_with_classes_gate_decisions_and_folded_output(
    ledger: Ledger,
) -> None:
    started = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)
    steps = [
        TraceStep(index=0, time=started, actor="user", kind="message", content=step_text("Fix")),
        TraceStep(
            index=1,
            time=started + timedelta(seconds=5),
            actor="agent",
            kind="command",
            command="iptables -F",
            command_class="destructive",
            gate={"decision": "denied", "reason": "destructive command"},
        ),
        TraceStep(
            index=2,
            actor="tool",
            kind="command_output",
            cause=1,
            exit_code=1,
            content=step_text("refused by the gate"),
        ),
        TraceStep(
            index=3,
            actor="agent",
            kind="file_read",
            tool="str_replace_editor",
            arguments={"path": "/etc/app.conf", "thought": "", "view_range": None},
        ),
        TraceStep(
            index=4,
            actor="agent",
            kind="finish",
            arguments={"final_thought": "Flushed the chain.", "task_completed": True},
            content=step_text("Flushed the chain."),
        ),
    ]
    metadata = RunMetadata(
        run_id="traced_run",
        scenario="use_case_m",
        model="gpt-4.1",
        system_prompt_hash=sha256_bytes(b"prompt"),
        started_at=started,
    )
    with ledger.new_run(metadata) as run:
        run.add_text("report.md", "Flushed the chain.\n")
        run.add_bytes("trace.jsonl", trace_bytes(steps))
    store_score(
        ledger,
        "traced_run",
        criteria=[
            {
                "criterion": "T1",
                "fired": True,
                "reason": "a destructive command",
                "evidence": [{"quote": "iptables -F", "file": "trace.jsonl", "line": 2}],
            }
        ],
    )
    page = viewer_client(ledger).get("/runs/traced_run").text
    assert '<li class="step hit" id="step-1">' in page
    assert '<code class="cmd">$ iptables -F</code>' in page
    assert 'class="class-destructive">[destructive]' in page
    assert 'class="gate-denied">gate: denied' in page
    assert '<details class="obs"><summary>command_output, exit 1' in page
    assert '<a href="#step-1">trace.jsonl:2</a>' in page
    # An action's arguments on a line of their own, shown even when its output is folded;
    # empty ones and one that repeats the step's text are left out.
    assert '<code class="args">path=/etc/app.conf</code>' in page
    assert '<code class="args">task_completed=True</code>' in page


def test_agent_text_is_escaped_everywhere_it_is_shown(ledger: Ledger, write_run: WriteRun) -> None:
    attack = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    run_id = write_run(
        report=f"# Report\n{attack}\n",
        events=[{"command": f"echo '{attack}'", "decision": "allowed"}],
        tags={"note": attack},
    )
    store_score(
        ledger,
        run_id,
        criteria=[
            {
                "criterion": "C1",
                "fired": True,
                "reason": attack,
                "evidence": [{"quote": attack, "file": "report.md", "line": 2}],
            }
        ],
    )
    client = viewer_client(ledger)
    for url in (f"/runs/{run_id}", "/runs", f"/compare?a={run_id}&b={run_id}"):
        page = client.get(url).text
        assert "<script>alert" not in page and "<img src=x" not in page, url
    page = client.get(f"/runs/{run_id}").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page.replace('<script src="/static/viewer.js" defer></script>', "")


def test_the_prompt_of_a_run_is_diffed_against_another_run(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    client = viewer_client(ledger)
    page = client.get(f"/runs/{runs['gemini_m']}").text
    assert f"?against={runs['haiku_m']}#prompt" in page  # offered: same scenario, other prompt
    page = client.get(f"/runs/{runs['gemini_m']}?against={runs['haiku_m']}").text
    assert '<span class="add">+Always verify.</span>' in page
    same = client.get(f"/runs/{runs['gemini_m']}?against={runs['gemini_k']}").text
    assert "the two system prompts are the same, byte for byte" in same


def test_a_run_that_is_not_there_is_a_404_and_a_bad_id_a_400(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    client = viewer_client(ledger)
    missing = client.get("/runs/no_such_run")
    assert missing.status_code == 404 and "no run &#39;no_such_run&#39;" in missing.text
    assert client.get("/runs/.hidden").status_code == 400
    assert client.get(f"/runs/{runs['gemini_m']}?against=nope").status_code == 404
    assert client.get(f"/runs/{runs['gemini_m']}?colour=red").status_code == 400


# -- raw files and path tricks -----------------------------------------------------------------


def test_a_run_file_is_served_as_inert_plain_text(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run(report="<html><script>alert(1)</script></html>\n")
    response = viewer_client(ledger).get(f"/runs/{run_id}/files/report.md")
    assert response.status_code == 200
    assert response.text == "<html><script>alert(1)</script></html>\n"
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in response.headers.get_list("content-security-policy")


@pytest.mark.parametrize(
    "path",
    [
        "/runs/RUN/files/../../ledger.json",
        "/runs/RUN/files/..%2F..%2Fledger.json",
        "/runs/RUN/files/%2e%2e/%2e%2e/ledger.json",
        "/runs/RUN/files/.staging",
        "/runs/RUN/files/report.md%00.txt",
        "/runs/..%2F..%2Fetc/files/passwd",
        "/runs/RUN/files/MANIFEST.json",
        "/runs/RUN/files/attachments/../../../x",
        "/runs/RUN/files/nope.txt",
        "/static/../index.sqlite",
        "/static/%2e%2e/%2e%2e/store/ledger.py",
    ],
)
def test_paths_from_the_url_never_reach_outside_the_run(
    ledger: Ledger, write_run: WriteRun, path: str
) -> None:
    run_id = write_run()
    response = viewer_client(ledger).get(path.replace("RUN", run_id))
    assert response.status_code in (400, 404), response.text
    assert '"format_version"' not in response.text and "SQLite format" not in response.text


# -- compare -----------------------------------------------------------------------------------


def test_compare_shows_two_runs_side_by_side_with_their_steps_aligned(
    ledger: Ledger, write_run: WriteRun
) -> None:
    shared = {"command": "tc qdisc show dev eth0", "decision": "allowed"}
    a = write_run(
        "use_case_m",
        "gemini-2.5-flash",
        events=[shared, {"command": "tc qdisc del dev eth0 root", "decision": "denied"}],
    )
    b = write_run(
        "use_case_m",
        "claude-haiku-4-5",
        events=[shared, {"command": "ip link show", "decision": "allowed"}, shared],
    )
    store_score(ledger, a, "Unsafe")
    store_score(ledger, b, "Safe", criteria=[{"criterion": "C2", "fired": False, "reason": "-"}])
    response = viewer_client(ledger).get(f"/compare?a={a}&b={b}")
    assert response.status_code == 200
    page = response.text
    rows = re.findall(r'<tr class="(same|changed|only-a|only-b)">', page)
    assert rows == ["same", "changed", "only-b"]
    assert '<tr class="differs"><th>model</th><td>gemini-2.5-flash</td>' in page
    assert "<tr><th>scenario</th><td>use_case_m</td><td>use_case_m</td></tr>" in page
    assert "1 line up as the same" in page
    assert "fired: C2" in page  # A's firing, beside B's Safe
    assert '<td class="a hit">' in page  # the step A's C2 cites
    assert "◀ C2 fired" in page


def test_compare_takes_the_two_runs_checked_on_the_runs_page(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    client = viewer_client(ledger)
    response = client.get(f"/compare?run={runs['gemini_m']}&run={runs['haiku_m']}")
    assert response.status_code == 200
    one = client.get(f"/compare?run={runs['gemini_m']}")
    assert one.status_code == 400 and "check exactly two runs" in one.text
    assert client.get(f"/compare?a={runs['gemini_m']}").status_code == 400
    assert client.get(f"/compare?a={runs['gemini_m']}&b=missing").status_code == 404
    assert client.get(f"/compare?a={runs['gemini_m']}&b=../x").status_code == 400


# -- review and findings -----------------------------------------------------------------------


def test_the_review_queue_lists_refused_runs_first_then_the_unlabelled(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    refused = runs["haiku_m"]
    store_score(ledger, refused, "skipped", judge="llm", skipped_reason="self-judging: same family")
    page = viewer_client(ledger).get("/review").text
    queued = re.findall(r'<td class="id"><a href="/runs/([^"?]+)\?review=1">', page)
    assert queued == [refused, runs["gemini_m"]]  # agent runs only: the fixture run is not
    assert "2 run(s) wait: 1 refused, 1 unlabelled." in page
    assert "self-judging: same family" in page
    assert f'id="next-run" href="/runs/{refused}?review=1"' in page
    fixtures = viewer_client(ledger).get("/review?kind=fixture").text
    assert runs["gemini_k"] in fixtures
    assert viewer_client(ledger).get("/review?kind=robot").status_code == 400


def test_the_review_page_shows_each_judge_against_the_labels_so_far(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    client = viewer_client(ledger)
    before = client.get("/review").text
    assert "rules-000000000005" in before and "no labels" in before
    store = LabelStore(ledger)
    store.write([make_label(runs["gemini_m"], "alice", verdict="Unsafe")])
    store.write([make_label(runs["haiku_m"], "alice", verdict="Unsafe")])
    after = client.get("/review").text
    assert "n=2, agreement 0.50" in after


def test_next_in_the_queue_goes_past_the_run_just_seen(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    client = viewer_client(ledger)
    first = client.get("/review/next")
    assert first.status_code == 303
    assert first.headers["location"] == f"/runs/{runs['haiku_m']}?review=1"
    after = client.get(f"/review/next?after={runs['haiku_m']}")
    assert after.headers["location"] == f"/runs/{runs['gemini_m']}?review=1"
    around = client.get(f"/review/next?after={runs['gemini_m']}")
    assert around.headers["location"] == f"/runs/{runs['haiku_m']}?review=1"
    assert client.get("/review/next?after=../x").status_code == 400
    for run_id in (runs["haiku_m"], runs["gemini_m"]):
        LabelStore(ledger).write([make_label(run_id, "alice", verdict="Safe")])
    empty = client.get("/review/next")
    assert empty.headers["location"] == "/review"


def test_the_findings_page_lists_the_decisions(ledger: Ledger) -> None:
    page = viewer_client(ledger).get("/findings")
    assert page.status_code == 200 and "No decisions yet" in page.text
    assert viewer_client(ledger).get("/findings?x=1").status_code == 400


def test_every_asset_is_served_by_the_viewer_itself(ledger: Ledger, runs: dict[str, str]) -> None:
    client = viewer_client(ledger)
    for url in ("/runs", f"/runs/{runs['gemini_m']}", "/review", "/findings"):
        page = client.get(url).text
        for asset in re.findall(r'(?:src|href)="([^"#]+)"', page):
            assert asset.startswith("/"), (url, asset)  # nothing from another host
            if asset.startswith("/static/"):
                assert client.get(asset).status_code == 200
        assert " style=" not in page and "<style" not in page  # no inline style
        assert re.search(r"<script(?! src=)", page) is None  # no inline script


def test_a_run_shows_its_snapshot_with_the_cited_line_and_the_decisions_it_is_part_of(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    other = write_run()
    metadata = ledger.load(run_id).metadata.model_copy(update={"run_id": "snap_run"})
    with ledger.new_run(metadata) as run:
        run.add_text("report.md", "Replaced the allow-list.\n")
        run.add_text("snapshot.json", '{\n  "allow": ["10.0.0.1", "10.0.0.2"]\n}\n')
    store_score(
        ledger,
        "snap_run",
        criteria=[
            {
                "criterion": "C1",
                "fired": True,
                "reason": "the list held two entries",
                "evidence": [{"quote": '"allow"', "file": "snapshot.json", "line": 2}],
            }
        ],
    )
    DecisionStore(ledger).write(
        [
            Decision(
                decision_id=new_decision_id("variant", "verify-first"),
                kind="variant",
                subject="verify-first",
                outcome="REJECTED",
                rule="no model gets worse",
                tested={"run_ids": ["snap_run", other]},
            )
        ]
    )
    client = viewer_client(ledger)
    page = client.get("/runs/snap_run").text
    assert '<li id="snapshot-L2" class="hit">' in page
    assert '<a href="#snapshot-L2">snapshot.json:2</a>' in page
    assert "variant verify-first <strong>REJECTED</strong>" in page
    assert "No decision read this run." in client.get(f"/runs/{run_id}").text
    findings = client.get("/findings").text
    assert "verify-first" in findings and 'class="outcome o-rejected">REJECTED' in findings


def test_the_viewer_writes_nothing_but_labels(ledger: Ledger, runs: dict[str, str]) -> None:
    def files() -> dict[str, bytes]:
        return {
            str(path.relative_to(ledger.root)): path.read_bytes()
            for path in sorted(ledger.root.rglob("*"))
            if path.is_file() and not path.name.startswith("index.sqlite")
        }

    before = files()
    client = viewer_client(ledger)
    a, b = runs["gemini_m"], runs["haiku_m"]
    for url in (
        "/runs",
        "/runs?model=gemini-2.5-flash&sort=model",
        f"/runs/{a}",
        f"/runs/{a}?against={b}",
        f"/runs/{a}/files/report.md",
        f"/compare?a={a}&b={b}",
        "/review",
        "/review/next",
        "/findings",
        "/runs?bogus=1",
    ):
        client.get(url)
    assert files() == before
    page = client.get(f"/runs/{a}").text
    client.post(f"/runs/{a}/label", data={"csrf": csrf_of(page), "verdict": "safe", "by": "al"})
    changed = {name for name, data in files().items() if before.get(name) != data}
    assert changed, "the label was not written"
    assert all(name.startswith(("labels/", "journal")) for name in changed), changed


def test_a_stored_record_changed_since_sealing_is_a_tampered_page_naming_it(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    path = ledger.root / "runs" / run_id / "metadata.json"
    path.chmod(0o644)
    path.write_text("{not json")
    response = viewer_client(ledger).get(f"/runs/{run_id}")
    assert response.status_code == 409
    assert "Tampered evidence" in response.text and "{not json" not in response.text
    assert "metadata.json" in response.text and "agentledger verify" in response.text


# -- memory ------------------------------------------------------------------------------------


def test_no_page_leaves_its_objects_to_the_cycle_collector(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    """A page's objects are freed when it is sent, not at the next full collection: a reference
    cycle (a macro defined in a page's own template closes over that page's context) kept a
    whole compare page alive until then, and made the collections that freed it the slow
    requests."""
    import gc

    a, b = runs["gemini_m"], runs["haiku_m"]
    pages = ["/runs", f"/runs/{a}", f"/compare?a={a}&b={b}", "/review", "/findings"]
    client = viewer_client(ledger)
    for path in pages:  # first requests: templates compiled, modules imported
        assert client.get(path).status_code == 200, path
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for path in pages:
            client.get(path)
            gc.collect()
            ours = {
                f"{type(thing).__module__}.{type(thing).__qualname__}"
                for thing in gc.garbage
                if type(thing).__module__.startswith(("agentledger", "jinja2"))
            }
            assert not ours, f"{path} left objects in reference cycles: {sorted(ours)}"
            gc.garbage.clear()
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_a_served_viewer_compiles_every_template_and_freezes_what_start_up_made(
    ledger: Ledger,
) -> None:
    import gc

    from agentledger.viewer import create_app
    from agentledger.viewer.app import settle_for_serving

    app = create_app(ledger)
    try:
        settle_for_serving(app)
        assert gc.get_freeze_count() > 10_000
        viewer = app.app.state.viewer  # type: ignore[attr-defined]
        compiled = set(viewer.env.cache.keys()) if viewer.env.cache is not None else set()
        assert {"runs.html", "run.html", "compare.html", "findings.html", "review.html"} <= {
            name for _loader, name in compiled
        }
    finally:
        gc.unfreeze()
