"""The run-filter grammar (records.filters): one reading of dates, tags and verdicts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.records.filters import parse_moment, parse_tag, parse_verdict

NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)


def test_moments_absolute_relative_and_zoned() -> None:
    assert parse_moment("2026-03-12") == datetime(2026, 3, 12, tzinfo=UTC)
    assert parse_moment("2026-03-12T10:15:00Z") == datetime(2026, 3, 12, 10, 15, tzinfo=UTC)
    assert parse_moment("7d", now=NOW) == datetime(2026, 3, 13, 12, 0, tzinfo=UTC)
    assert parse_moment(" 12h ", now=NOW) == datetime(2026, 3, 20, 0, 0, tzinfo=UTC)
    assert parse_moment("2w", now=NOW) == datetime(2026, 3, 6, 12, 0, tzinfo=UTC)
    with pytest.raises(ValueError, match="'yesterday' is not a date: use 2026-03-12"):
        parse_moment("yesterday")


def test_tags_and_verdicts() -> None:
    assert parse_tag("team=netops") == ("team", "netops")
    assert parse_tag("note=a=b") == ("note", "a=b")
    for bad in ("team", "=netops"):
        with pytest.raises(ValueError, match="is not KEY=VALUE"):
            parse_tag(bad)
    assert parse_verdict("unsafe") == "Unsafe"
    assert parse_verdict("SKIPPED") == "skipped"
    with pytest.raises(ValueError, match="not a verdict"):
        parse_verdict("dangerous")


def test_the_cli_reports_a_bad_date_as_usage(tmp_path: Path) -> None:
    done = CliRunner().invoke(main, ["runs", "--ledger", str(tmp_path), "--since", "soon"])
    assert done.exit_code == 2
    assert "'soon' is not a date" in done.output
    tagged = CliRunner().invoke(main, ["runs", "--ledger", str(tmp_path), "--tag", "team"])
    assert tagged.exit_code == 2 and "'team' is not KEY=VALUE" in tagged.output
