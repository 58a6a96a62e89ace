"""The run-filter grammar (records.filters): one reading of dates, tags, verdicts and kinds, and
one KEY=VALUE selection for compare's groups and sentinel candidates."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from agentledger.errors import InputError
from agentledger.gates.sentinels.select import candidate_filter
from agentledger.records.filters import (
    SELECTION_KEYS,
    RunFilter,
    parse_kind,
    parse_moment,
    parse_run_selection,
    parse_tag,
    parse_verdict,
)

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


# -- KEY=VALUE selections (report compare --a/--b, sentinel check --candidate) ---------------


def test_parse_group() -> None:
    parsed = parse_run_selection(
        "model=gemini-2.5-flash,prompt=950D4E48,variant=variant-a,tag:team=net",
        what="group filter",
    )
    assert parsed.models == ("gemini-2.5-flash",)
    assert parsed.prompt_hash == "sha256:950d4e48"
    assert parsed.variant == "variant-a" and parsed.tags == (("team", "net"),)
    base = RunFilter(scenarios=("use_case_b",), tags=(("sample", "true"),))
    narrowed = parse_run_selection("model=x", what="group filter", base=base)
    assert narrowed.scenarios == ("use_case_b",) and narrowed.tags == (("sample", "true"),)
    for bad in ("", "model", "colour=red", "prompt=xyz", "model=a,,"):
        with pytest.raises(InputError, match="group filter"):
            parse_run_selection(bad, what="group filter")


def test_every_key_of_the_grammar() -> None:
    parsed = parse_run_selection(
        "model=a, model=b ,scenario=s1,kind=Agent,kind=fixture,prompt-hash=sha256:AB,"
        "served=a-2025,commit=7f55,since=2026-03-01,until=2026-03-20T12:00:00Z,"
        "tag:team=net,tag=note=x=y,Variant=v1"
    )
    assert parsed == RunFilter(
        models=("a", "b"),
        scenarios=("s1",),
        kinds=("agent", "fixture"),
        prompt_hash="sha256:ab",
        model_served="a-2025",
        agent_commit="7f55",
        since=datetime(2026, 3, 1, tzinfo=UTC),
        until=datetime(2026, 3, 20, 12, 0, tzinfo=UTC),
        tags=(("team", "net"), ("note", "x=y")),
        variant="v1",
    )
    assert parse_run_selection("prompt=ab").prompt_hash == "sha256:ab"
    # A key given replaces the base's value; tags add to the base's.
    base = RunFilter(models=("old",), variant="w", tags=(("env", "ci"),))
    narrowed = parse_run_selection("model=new,tag:team=net", base=base)
    assert narrowed.models == ("new",) and narrowed.variant == "w"
    assert narrowed.tags == (("env", "ci"), ("team", "net"))


def _error(text: str, **options: Any) -> str:
    with pytest.raises(InputError) as caught:
        parse_run_selection(text, what="--a", **options)
    return str(caught.value)


def test_a_bad_key_is_named_with_the_valid_ones() -> None:
    message = _error("model=x,colour=red")
    assert message == (
        "--a 'model=x,colour=red': unknown key 'colour' (keys: model, scenario, kind, "
        "prompt (or prompt-hash), variant, served, commit, since, until, tag:KEY)"
    )
    assert "is not KEY=VALUE (keys: model," in _error("model=x,oops")
    assert "'' is not KEY=VALUE" in _error("model=x,,")
    assert "empty: write KEY=VALUE pairs" in _error("  ")
    assert "a tag is tag:KEY=VALUE" in _error("tag:=x")
    assert "a tag is tag:KEY=VALUE" in _error("tag=team")


def test_a_key_left_out_of_a_use_says_why() -> None:
    message = _error("model=x,scenario=s", keys=("model",), refused={"scenario": "the suite's"})
    assert message == (
        "--a 'model=x,scenario=s': key 'scenario' does not apply here: the suite's (keys: model)"
    )


def test_duplicate_keys() -> None:
    assert "key 'variant' is given twice (only model, scenario, kind may repeat" in _error(
        "variant=a,variant=b"
    )
    assert "key 'prompt' is given twice" in _error("prompt=ab,prompt-hash=cd")
    assert "key 'since' is given twice" in _error("since=7d,since=2026-01-01")
    assert "tag 'team' is given twice" in _error("tag:team=a,tag=team=b")
    # Repeatable keys select any of their values.
    assert parse_run_selection("scenario=a,scenario=b").scenarios == ("a", "b")


def test_empty_values() -> None:
    for text, key in (("model=", "model"), ("model=x,variant= ", "variant"), ("since=", "since")):
        assert f"key {key!r} has an empty value (keys: model," in _error(text)
    assert "tag 'team' has an empty value" in _error("tag:team=")


def test_bad_values_say_what_is_expected() -> None:
    assert _error("kind=robot") == (
        "--a 'kind=robot': kind: 'robot' is not a run kind: use one of agent, fixture, "
        "sentinel, variant"
    )
    assert "since: 'soon' is not a date: use 2026-03-12" in _error("since=soon")
    assert "prompt: 'xyz' is not a sha256 hash" in _error("prompt=xyz")
    assert parse_kind("SENTINEL") == "sentinel"
    with pytest.raises(ValueError, match="'robot' is not a run kind"):
        parse_kind("robot")


def test_the_keys_are_the_options_of_runs_and_the_reports() -> None:
    """One set of keys: each KEY of a selection is also an option of `runs` and `report`."""
    options = {"prompt": "--prompt-hash", "tag:KEY": "--tag"}
    for command in ("runs", "report"):
        done = CliRunner().invoke(main, [command, "--help"], terminal_width=200)
        for key in SELECTION_KEYS:
            assert options.get(key, f"--{key}") in done.output, (command, key)


def test_compare_groups_and_sentinel_candidates_share_the_grammar(ledger: Ledger) -> None:
    done = CliRunner().invoke(
        main,
        ["report", "compare", "--ledger", str(ledger.root), "--a", "model=x", "--b", "kind=robot"],
    )
    assert done.exit_code == 2
    assert "group filter 'kind=robot': kind: 'robot' is not a run kind" in done.output
    assert candidate_filter("model=x,variant=v").variant == "v"
    with pytest.raises(InputError, match="--candidate 'model=x,variant=a,variant=b': key"):
        candidate_filter("model=x,variant=a,variant=b")
    with pytest.raises(InputError, match="key 'kind' does not apply here: a sentinel counts"):
        candidate_filter("model=x,kind=agent")
