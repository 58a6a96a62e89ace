"""The run filter options shared by `runs`, `export` and (later) every report."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import click

from agentledger.identity import normalize_hash_prefix
from agentledger.records import RUN_KINDS
from agentledger.store import RunFilter

__all__ = ["build_filter", "parse_moment", "run_filter_options"]

F = TypeVar("F", bound=Callable[..., Any])
_RELATIVE = re.compile(r"^(\d+)\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_moment(text: str, *, now: datetime | None = None) -> datetime:
    """A point in time from ``2026-03-12``, ``2026-03-12T10:15:00Z`` or ``7d`` / ``12h`` ago."""
    value = text.strip()
    relative = _RELATIVE.match(value)
    if relative:
        amount, unit = int(relative.group(1)), relative.group(2)
        return (now or datetime.now(UTC)) - timedelta(**{_UNITS[unit]: amount})
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"'{text}' is not a date: use 2026-03-12, 2026-03-12T10:15:00Z, or 7d / 12h / 2w"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class _Moment(click.ParamType):  # type: ignore[type-arg]
    name = "DATE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, datetime):
            return value
        try:
            return parse_moment(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class _HashPrefix(click.ParamType):  # type: ignore[type-arg]
    name = "HASH"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return normalize_hash_prefix(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class _Tag(click.ParamType):  # type: ignore[type-arg]
    name = "KEY=VALUE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        key, sep, tag = str(value).partition("=")
        if not sep or not key:
            self.fail(f"'{value}' is not KEY=VALUE", param, ctx)
        return (key, tag)


def run_filter_options(func: F) -> F:
    """Add the run filter options; the command receives them as keyword arguments."""
    options = [
        click.option("--model", "models", multiple=True, help="Model asked for (repeatable)."),
        click.option("--scenario", "scenarios", multiple=True, help="Scenario id (repeatable)."),
        click.option(
            "--prompt-hash", type=_HashPrefix(), help="System prompt hash or a prefix of it."
        ),
        click.option("--variant", help="Prompt variant name."),
        click.option("--served", "model_served", help="Model the provider said it served."),
        click.option("--commit", "agent_commit", help="Agent commit (prefix ok)."),
        click.option("--since", type=_Moment(), help="Started at or after (date, or 7d)."),
        click.option("--until", type=_Moment(), help="Started before (date, or 7d)."),
        click.option("--tag", "tags", type=_Tag(), multiple=True, help="KEY=VALUE (repeatable)."),
        click.option(
            "--backfilled/--no-backfilled",
            default=None,
            help="Only imported runs / only recorded runs.",
        ),
        click.option(
            "--kind",
            "kinds",
            multiple=True,
            type=click.Choice(RUN_KINDS),
            help="Run kind (repeatable): agent investigations, fixture executions, or runs a "
            "sentinel or variant gate made.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


_VERDICTS = ("Safe", "Uncertain", "Unsafe", "skipped")


def _verdicts(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> Any:
    by_lower = {verdict.lower(): verdict for verdict in _VERDICTS}
    return tuple(by_lower[value.lower()] for value in values)


def score_filter_options(func: F) -> F:
    """Add --judge, --verdict and --fired: select runs by how judges scored them."""
    options = [
        click.option(
            "--judge",
            "scored_by",
            metavar="JUDGE",
            help="Judge id, a prefix of one, or a kind (rules, llm): the scores to look at.",
        ),
        click.option(
            "--verdict",
            "verdicts",
            multiple=True,
            type=click.Choice(_VERDICTS, case_sensitive=False),
            callback=_verdicts,
            help="Runs with this verdict (repeatable).",
        ),
        click.option(
            "--fired",
            multiple=True,
            metavar="CRITERION",
            help="Runs on which this criterion fired (repeatable: all must have fired).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def build_filter(limit: int | None = None, **options: Any) -> RunFilter:
    """The RunFilter for the options added by run_filter_options."""
    return RunFilter(
        models=tuple(options.get("models") or ()),
        scenarios=tuple(options.get("scenarios") or ()),
        prompt_hash=options.get("prompt_hash"),
        variant=options.get("variant"),
        model_served=options.get("model_served"),
        agent_commit=options.get("agent_commit"),
        since=options.get("since"),
        until=options.get("until"),
        tags=tuple(options.get("tags") or ()),
        backfilled=options.get("backfilled"),
        kinds=tuple(options.get("kinds") or ()),
        judge=options.get("scored_by"),
        verdicts=tuple(options.get("verdicts") or ()),
        fired=tuple(options.get("fired") or ()),
        limit=limit,
    )
