"""The findings page through the ASGI client: the report's sections with their charts (the
same figures `agentledger report` gives), narrowed by the runs filters; every decision, with
what superseded it; the sentinel history with its flags; bad parameters refused by name."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape
from html.parser import HTMLParser
from typing import Any

import pytest

from agentledger.analysis import build_reports
from agentledger.gates.decisions import DecisionStore
from agentledger.gates.sentinels.history import SILENT_UPDATE
from agentledger.records.decisions import Decision, new_decision_id
from agentledger.records.filters import RunFilter
from agentledger.report.sections import sections
from agentledger.store import Ledger
from agentledger.store.index import RunIndex
from viewer_support import store_score, viewer_client

T0 = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)
EVIL = "<script>alert('findings')</script>"


class _Markup(HTMLParser):
    """Every element of a page: (tag, attributes, inside an SVG chart)."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None], bool]] = []
        self.svg_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "svg":
            self.svg_depth += 1
        self.elements.append((tag, dict(attrs), self.svg_depth > 0))

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.svg_depth -= 1


def markup(page: str) -> list[tuple[str, dict[str, str | None], bool]]:
    parser = _Markup()
    parser.feed(page)
    return parser.elements


def _text(page: str) -> str:
    """The page's text as a reader sees it: tags dropped, entities decoded, spaces folded."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", page)))


@pytest.fixture
def judged(ledger: Ledger, write_run: Any) -> Ledger:
    """Six runs of two models on two scenarios, each scored by one rules judge."""
    verdicts = {
        "gemini-2.5-flash": ["Unsafe", "Unsafe", "Safe"],
        "claude-haiku-4-5": ["Safe", "Safe", "Uncertain"],
    }
    for model, answers in verdicts.items():
        for number, verdict in enumerate(answers):
            run_id = write_run(scenario=f"use_case_{'mk'[number % 2]}", model=model)
            store_score(ledger, run_id, verdict)
    return ledger


def test_the_page_shows_every_report_section_as_the_report_command_computes_it(
    judged: Ledger,
) -> None:
    response = viewer_client(judged).get("/findings")
    assert response.status_code == 200
    page = response.text
    expected = sections(build_reports("all", judged.index, RunFilter(), ledger=judged))
    assert [s.kind for s in expected] == [
        "verdicts",
        "criteria",
        "gap",
        "drift",
        "trajectory",
        "judge-validity",
    ]
    text = _text(page)
    for section in expected:
        assert f'<section class="report-section" id="{section.kind}">' in page
        assert section.title in text
        for paragraph in section.summary:
            assert " ".join(paragraph.split()) in text, paragraph
        for table in section.tables:
            for row in table.rows:
                for cell in row:
                    # as a reader sees it: runs of spaces in a cell show as one
                    assert " ".join(cell.split()) in text, (section.kind, table.title, cell)
    assert "Of 6 judged run(s), 3 Safe" in text


def test_the_charts_are_inline_svg_without_script_or_style(judged: Ledger) -> None:
    page = viewer_client(judged).get("/findings").text
    elements = markup(page)
    charts = [attrs for tag, attrs, _ in elements if tag == "svg"]
    assert len(charts) >= 5
    assert page.count('<figure class="chart"') == len(charts)
    for tag, attrs, in_svg in elements:
        if not in_svg:
            continue
        assert tag != "script" and tag != "foreignobject", tag
        for name in attrs:
            assert name != "style" and not name.startswith("on"), (tag, name)
            assert name not in ("href", "xlink:href"), (tag, name)
    svg = next(attrs for tag, attrs, _ in elements if tag == "svg")
    assert svg["font-size"] == "12" and svg["role"] == "img"


def test_the_runs_filters_narrow_what_the_reports_rest_on(judged: Ledger) -> None:
    client = viewer_client(judged)
    page = client.get("/findings?model=gemini-2.5-flash").text
    assert "Rests on 3 scored run(s) of 3 selected" in page
    assert "Of 3 judged run(s), 1 Safe" in _text(page)
    assert 'href="/runs?model=gemini-2.5-flash"' in page
    both = client.get("/findings?model=gemini-2.5-flash&model=claude-haiku-4-5").text
    assert "Rests on 6 scored run(s) of 6 selected" in both
    selection = client.get("/findings?select=model%3Dclaude-haiku-4-5&scenario=use_case_m").text
    assert "Rests on 2 scored run(s) of 2 selected" in selection


def test_drift_options_reach_the_drift_report(judged: Ledger) -> None:
    page = viewer_client(judged).get("/findings?criterion=C2").text
    assert "When C2 first fired" in page
    assert "C2 first fired on gemini-2.5-flash" in page


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("bogus=1", "'bogus'"),
        ("sort=model", "'sort'"),
        ("judge=nope", "judge 'nope'"),
        ("judge=a&judge=b", "'judge'"),
        ("since=not-a-date", "'since'"),
        ("kind=robot", "'kind'"),
        ("verdict=maybe", "'verdict'"),
        ("before_after=zz", "'zz' is not a sha256 hash"),
        ("select=colour%3Dblue", "'select'"),
    ],
)
def test_a_bad_parameter_is_refused_by_name(judged: Ledger, query: str, named: str) -> None:
    response = viewer_client(judged).get(f"/findings?{query}")
    assert response.status_code == 400, response.text
    assert named in _text(response.text)


def _decision(kind: str, subject: str, outcome: str, when: datetime, **fields: Any) -> Decision:
    return Decision.model_validate(
        {
            "decision_id": new_decision_id(kind, subject, when),
            "kind": kind,
            "subject": subject,
            "created_at": when,
            "outcome": outcome,
            "rule": f"the rule of {subject}",
            **fields,
        }
    )


def _sentinel(outcome: str, when: datetime, served: str, failing: list[str]) -> Decision:
    return _decision(
        "sentinel",
        "netops-sentinel",
        outcome,
        when,
        reasoning=[f"{len(failing)} criteria failed"],
        extra={
            "candidate_model": "gemini-2.5-flash",
            "served_models": [served],
            "candidate_prompt_hashes": ["sha256:" + "a" * 64],
            "latest_run_at": when.isoformat(),
            "failing_criteria": failing,
        },
    )


def test_decisions_newest_first_with_what_superseded_them(judged: Ledger) -> None:
    store = DecisionStore(judged)
    first = _decision("variant", "variant-a", "REJECTED", T0)
    store.write([first])
    second = _decision(
        "variant", "variant-a", "ACCEPTED", T0 + timedelta(days=1), supersedes=first.decision_id
    )
    store.write([second])
    page = viewer_client(judged).get("/findings").text
    assert page.index(f'id="decision-{second.decision_id}"') < page.index(
        f'id="decision-{first.decision_id}"'
    )
    row = page[page.index(f'id="decision-{first.decision_id}"') :].split("</tr>")[0]
    assert second.decision_id in row and "REJECTED" in row
    assert f'<details class="decision" id="detail-{second.decision_id}">' in page
    assert "the rule of variant-a" in page


def test_the_sentinel_history_flags_a_change_nothing_recorded_explains(judged: Ledger) -> None:
    store = DecisionStore(judged)
    store.write([_sentinel("GO", T0, "gemini-2.5-flash", [])])
    store.write([_sentinel("NO-GO", T0 + timedelta(days=7), "gemini-2.5-flash", ["use_case_m/C2"])])
    page = viewer_client(judged).get("/findings").text
    history = page[page.index('<section id="sentinels">') :]
    assert "netops-sentinel: 2 checks" in history
    assert "use_case_m/C2" in history
    assert '<p class="flag silent"><strong>FLAG</strong>' in history
    assert SILENT_UPDATE in _text(history)


def test_an_explained_change_is_a_note_not_a_flag(judged: Ledger) -> None:
    store = DecisionStore(judged)
    store.write([_sentinel("GO", T0, "gemini-2.5-flash-001", [])])
    store.write([_sentinel("NO-GO", T0 + timedelta(days=7), "gemini-2.5-flash-002", ["x/C2"])])
    history = viewer_client(judged).get("/findings").text.split('<section id="sentinels">')[1]
    assert '<p class="flag note"><strong>note</strong>' in history
    assert "the served model changed" in history
    assert "FLAG" not in history


def test_agent_text_on_the_page_is_escaped(ledger: Ledger, write_run: Any) -> None:
    run_id = write_run(model=EVIL, scenario=f"s{EVIL}")
    store_score(ledger, run_id, "Unsafe")
    DecisionStore(ledger).write([_decision("sentinel", "suite-x", "GO", T0, reasoning=[EVIL],
                                           extra={"candidate_model": EVIL})])  # fmt: skip
    page = viewer_client(ledger).get(f"/findings?model={EVIL}").text
    assert EVIL not in page
    assert EVIL in _text(page)
    scripts = [attrs for tag, attrs, _ in markup(page) if tag == "script"]
    assert scripts == [{"src": "/static/viewer.js", "defer": None}]


def test_an_empty_ledger_says_what_would_fill_the_page(ledger: Ledger) -> None:
    response = viewer_client(ledger).get("/findings")
    assert response.status_code == 200
    assert "No decisions yet" in response.text
    assert "No sentinel checks yet" in response.text


def test_the_findings_page_writes_nothing(judged: Ledger) -> None:
    before = sorted(p.relative_to(judged.root) for p in judged.root.rglob("*") if p.is_file())
    viewer_client(judged).get("/findings?criterion=C2")
    after = sorted(p.relative_to(judged.root) for p in judged.root.rglob("*") if p.is_file())
    changed = [p for p in after if p not in before]
    assert [p for p in changed if not str(p).startswith("index.sqlite")] == []


def test_the_judge_choices_are_every_judge_with_a_score(judged: Ledger) -> None:
    run_id = judged.index.query(RunFilter(limit=1))[0].run_id
    store_score(judged, run_id, "Safe", judge="llm")
    ids = judged.index.judge_ids()
    assert ids == sorted(tally.judge_id for tally in judged.index.judges_of(RunFilter()))
    assert len(ids) == 2
    assert RunIndex.judge_ids(judged.index) == ids  # the default other backends inherit
    page = viewer_client(judged).get("/findings").text
    for judge_id in ids:
        assert f'<option value="{judge_id}">' in page


def test_every_id_on_the_page_is_unique(judged: Ledger) -> None:
    """The section links (#criteria, #drift, ...) land on their sections."""
    page = viewer_client(judged).get("/findings").text
    ids = [attrs["id"] for _, attrs, _ in markup(page) if attrs.get("id")]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
