"""`agentledger report`: formats, exit codes, stable JSON, a self-contained escaped HTML page."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentledger.cli import main
from agentledger.store import Ledger
from conftest import WriteRun
from exact_output import normalised
from test_report import add_score

EVIL = "<script>alert(1)</script>"
VOID = {"meta", "br", "hr", "img", "input", "link", "rect", "line", "circle", "polyline"}


@pytest.fixture
def small(ledger: Ledger, write_run: WriteRun) -> Path:
    """Six scored runs: two models (one with a hostile name), three scenarios."""
    for scenario in ("use_case_a", "use_case_b", "use_case_c"):
        add_score(
            ledger, write_run(scenario, "gemini-2.5-flash"), "Unsafe", ("C2",), diagnosis=True
        )
        add_score(ledger, write_run(scenario, EVIL), "Safe", (), diagnosis=scenario != "use_case_c")
    return ledger.root


def report(root: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["report", "--ledger", str(root), *args])


class _Balance(HTMLParser):
    """Checks that every opened element is closed, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()


VERDICTS = """\
Verdicts by model
Rests on 6 scored run(s) of 6 selected; agent runs only (the default; choose with --kind); \
scores by rules-aaaaaaaaaaaa (the most recent judge of these runs;
choose another with --judge). Judge rules-aaaaaaaaaaaa is not checked against human labels: no \
labels yet.

Of 6 judged run(s), 3 Safe (50% [19-81]), 0 Uncertain, 3 Unsafe (50% [19-81]); 0 skipped.
Most often Unsafe: gemini-2.5-flash, 3 of 3 judged runs (100% [44-100]).

Verdict distribution
model                      judged                Safe       Uncertain              Unsafe       \
  skipped  unscored  bar
<script>alert(1)</script>       3  3 (100% [44-100])*  0 (0% [0-56])*      0 (0% [0-56])*  0 \
(0% [0-56])*         0  ████████████████████
gemini-2.5-flash                3      0 (0% [0-56])*  0 (0% [0-56])*  3 (100% [44-100])*  0 \
(0% [0-56])*         0  ░░░░░░░░░░░░░░░░░░░░
all                             6    3 (50% [19-81])*  0 (0% [0-39])*    3 (50% [19-81])*  0 \
(0% [0-39])*         0  ██████████░░░░░░░░░░

Caveats
- directional only: small samples (<script>alert(1)</script> (3 judged), gemini-2.5-flash (3 \
judged)); treat the shares as indications
- Intervals are 95% Wilson intervals. A figure is directional only when it rests on fewer than \
30 runs or its interval is wider than 30 points.
- Safe, Uncertain and Unsafe are shares of judged runs; skipped is a share of scored runs; * \
marks a directional-only figure. Bar: █ Safe ▓ Uncertain ░ Unsafe ·
skipped.
"""
"""`report verdicts` of the six runs, as a terminal shows it (the hostile model name inert)."""


def test_every_kind_in_every_format(small: Path) -> None:
    for kind in ("verdicts", "criteria", "gap", "drift", "trajectory"):
        for fmt in ("text", "md", "json", "html"):
            result = report(small, kind, "--format", fmt)
            assert result.exit_code == 0, (kind, fmt, result.output)
    result = report(small, "verdicts")
    assert "\x1b[" not in result.output
    assert normalised(result.stdout, small) == VERDICTS


def test_markdown_reads_like_the_seed(small: Path) -> None:
    result = report(small, "all", "--format", "md")
    out = result.output
    assert out.startswith("# agentledger report\n")
    assert "## Verdicts by model" in out and "**Caveats**" in out
    assert "| model | judged | Safe | Uncertain | Unsafe | skipped | unscored | bar |" in out
    assert (
        "Diagnosis 83% [44-97] (5 of 6), safe remediation 50% [19-81] (3 of 6): a 33-point gap."
        in out
    )
    assert EVIL not in out and "&lt;script&gt;" in out


def test_json_keys_are_stable(small: Path) -> None:
    head = {"kind", "filter", "judge", "runs_selected", "runs_scored", "warnings"}
    head |= {"runs_not_applicable"}
    head |= {"run_kinds", "run_kinds_by_default", "runs_left_out_by_kind", "judge_checks"}
    expected = {
        "verdicts": head | {"models", "overall"},
        "criteria": head
        | {"criteria", "by_model", "by_scenario", "dominant", "dominant_by_model"}
        | {"signatures", "fires_on", "first_firing_by_model"},
        "gap": head | {"models", "overall"},
        "drift": head
        | {"series", "changes", "criterion", "first_firings", "prompt", "prompt_hashes"}
        | {"before_after"},
        "trajectory": head | {"models", "all", "fired_timelines"},
    }
    for kind, keys in expected.items():
        data = json.loads(report(small, kind, "--format", "json").output)
        assert set(data) == keys, kind
    verdicts = json.loads(report(small, "verdicts", "--format", "json").output)
    gemini = next(m for m in verdicts["models"] if m["group"] == "gemini-2.5-flash")
    assert set(gemini) == {
        "group",
        "judged",
        "scored",
        "unscored",
        "not_applicable",
        "first_seen",
        "counts",
        "shares",
        "directional",
    }
    assert gemini["shares"]["Unsafe"]["k"] == 3 and gemini["shares"]["Unsafe"]["high"] == 1.0
    assert set(gemini["shares"]["Safe"]) == {"k", "n", "share", "low", "high", "directional"}
    every = json.loads(report(small, "all", "--format", "json").output)
    assert [r["kind"] for r in every["reports"]] == [
        "verdicts",
        "criteria",
        "gap",
        "drift",
        "trajectory",
        "judge-validity",
    ]
    assert set(every["reports"][-1]) == {
        "kind",
        "human_labelled_runs",
        "external_labelled_runs",
        "split_id",
        "judges",
    }


COMPARE = """\
Compare A (model=gemini-2.5-flash) with B (model=<script>alert(1)</script>)
Rests on 6 scored run(s) of 6 selected; agent runs only (the default; choose with --kind); \
scores by rules-aaaaaaaaaaaa (the most recent judge of these runs;
choose another with --judge). Judge rules-aaaaaaaaaaaa is not checked against human labels: no \
labels yet.

B is unsafe less often than A on the 3 scenarios both ran: B 0 vs A 3 Unsafe, exact McNemar p = \
0.25 — not significant at these sizes.

Groups
group  filter                           judged                Safe       Uncertain              \
Unsafe         skipped
A      model=gemini-2.5-flash                3      0 (0% [0-56])*  0 (0% [0-56])*  3 (100% \
[44-100])*  0 (0% [0-56])*
B      model=<script>alert(1)</script>       3  3 (100% [44-100])*  0 (0% [0-56])*      0 (0% \
[0-56])*  0 (0% [0-56])*

Exact tests on Unsafe
comparison                   test           counts                                p     verdict
paired (scenarios both ran)  exact McNemar  only_a=3, only_b=0                    0.25  not \
significant
unpaired (all runs)          Fisher exact   a_events=3, a_n=3, b_events=0, b_n=3  0.1   not \
significant

Criteria (fired / assessed)
criterion                   A               B  Fisher p  verdict
C1             0 (0% [0-56])*  0 (0% [0-56])*         1  not significant
C2         3 (100% [44-100])*  0 (0% [0-56])*       0.1  not significant
C3             0 (0% [0-56])*  0 (0% [0-56])*         1  not significant
C4             0 (0% [0-56])*  0 (0% [0-56])*         1  not significant

Paired scenarios
scenario    A       B
use_case_a  Unsafe  Safe
use_case_b  Unsafe  Safe
use_case_c  Unsafe  Safe

Caveats
- directional only: few runs or few shared scenarios; an exact test at these sizes detects only \
large differences
- Intervals are 95% Wilson intervals. A figure is directional only when it rests on fewer than \
30 runs or its interval is wider than 30 points.
- Paired: exact McNemar on the scenarios both groups ran, one run a side (the newest judged), \
counting the discordant pairs. Unpaired: Fisher's exact test on
all judged runs of each group.
"""
"""`report compare` of the two models: the finding, the groups, the exact tests, the criteria,
the paired scenarios and the caveats."""


def test_compare_from_the_command_line(small: Path) -> None:
    result = report(small, "compare", "--a", "model=gemini-2.5-flash", "--b", f"model={EVIL}")
    assert result.exit_code == 0, result.output
    assert normalised(result.stdout, small) == COMPARE
    data = json.loads(
        report(
            small,
            "compare",
            "--a",
            "model=gemini-2.5-flash",
            "--b",
            f"model={EVIL}",
            "--format",
            "json",
        ).output
    )
    assert data["paired_test"]["p_value"] == pytest.approx(0.25)
    assert data["a"]["filter"] == "model=gemini-2.5-flash" and data["event"] == "Unsafe"


def test_html_is_one_self_contained_escaped_page(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    charts = tmp_path / "charts"
    args = ["all", "--format", "html", "-o", str(out), "--charts", str(charts)]
    result = report(small, *args, "--a", "model=gemini-2.5-flash", "--b", f"model={EVIL}")
    assert result.exit_code == 0, result.output
    page = out.read_text()
    parser = _Balance()
    parser.feed(page)
    parser.close()
    assert parser.errors == [] and parser.stack == []
    for tag, attrs in parser.tags:
        assert tag not in ("script", "link", "iframe", "img", "object"), tag
        for name in ("src", "href"):
            value = attrs.get(name) or ""
            assert not re.match(r"\s*(https?:|//)", value), (tag, name, value)
    assert "@import" not in page and "url(" not in page
    assert EVIL not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<svg") >= 6
    for section in ("verdicts", "criteria", "gap", "drift", "compare"):
        assert f'<section id="{section}">' in page
    names = sorted(path.name for path in charts.iterdir())
    assert "verdicts.svg" in names and "compare.svg" in names
    for path in charts.iterdir():
        root = ET.fromstring(path.read_text().split("\n", 1)[1])  # well-formed XML
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert EVIL not in path.read_text()


def test_bad_input_exits_2(small: Path, tmp_path: Path) -> None:
    cases = [
        (["nope"], "'nope' is not one of"),
        (["compare", "--a", "model=x"], "--a FILTER and --b FILTER"),
        (["compare", "--a", "model", "--b", "model=y"], "malformed group filter"),
        (["compare", "--a", "colour=red", "--b", "model=y"], "unknown key 'colour'"),
        (["drift", "--criterion", "C9"], "unknown criterion 'C9'"),
        (["drift", "--before-after", "zz"], "not a sha256 hash"),
        (["verdicts", "--judge", "llm"], "no score of the selected runs is by judge 'llm'"),
        (["verdicts", "-o", str(tmp_path / "missing" / "out.txt")], "cannot write"),
    ]
    for args, message in cases:
        result = report(small, *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)


def test_run_filters_apply(small: Path) -> None:
    data = json.loads(
        report(small, "verdicts", "--model", "gemini-2.5-flash", "--format", "json").output
    )
    assert data["runs_selected"] == 3 and data["filter"] == {"models": ["gemini-2.5-flash"]}


def test_an_empty_ledger_gives_empty_reports(ledger: Ledger, tmp_path: Path) -> None:
    out = tmp_path / "empty.html"
    result = report(ledger.root, "all", "--format", "html", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "no run matches the filter" in out.read_text()
    text = report(ledger.root, "verdicts").output
    assert "Rests on 0 scored run(s) of 0 selected" in text


def test_runs_no_judge_scored_say_so_not_scores_by_none(
    ledger: Ledger, write_run: WriteRun
) -> None:
    write_run("use_case_a", "gemini-2.5-flash")
    text = " ".join(report(ledger.root, "verdicts").output.split())
    assert "scores by no judge: none has scored these runs yet (`agentledger judge`" in text
    assert "scores by none" not in text


def test_markdown_cells_cannot_break_the_table(ledger: Ledger, write_run: WriteRun) -> None:
    add_score(ledger, write_run("use_case_a", "evil|model*"), "Safe")
    out = report(ledger.root, "verdicts", "--format", "md").output
    row = next(line for line in out.splitlines() if line.startswith("| evil"))
    assert row.startswith("| evil\\|model\\* | 1 |")


def test_png_charts_when_cairosvg_is_installed(small: Path, tmp_path: Path) -> None:
    pytest.importorskip("cairosvg", exc_type=ImportError)
    charts = tmp_path / "charts"
    result = report(small, "verdicts", "--charts", str(charts), "--png")
    assert result.exit_code == 0, result.output
    png = charts / "verdicts.png"
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_png_without_cairosvg_is_a_clear_error(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "cairosvg", None)  # as if it were not installed
    result = report(small, "verdicts", "--charts", str(tmp_path / "c"), "--png")
    assert result.exit_code == 2 and normalised(result.stderr, tmp_path) == (
        "Error: PNG charts need cairosvg and the cairo library: pip install "
        "'agentledger[png]' (and the system's libcairo2); or use the SVG files "
        "(import of cairosvg halted; None in sys.modules)\n"
    )
