"""The run filter options shared by `runs`, `export` and the reports, as click parameter types.

The grammar itself (RunFilter, dates, tags, verdicts, run kinds, and the KEY=VALUE selections
whose keys are these options' names) is `agentledger.records.filters`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import click

from agentledger.cli.common import stacked
from agentledger.identity import normalize_hash_prefix
from agentledger.records import RUN_KINDS
from agentledger.records.filters import (
    LABEL_SOURCE_HINT,
    VERDICTS,
    RunFilter,
    parse_label_verdict,
    parse_moment,
    parse_tag,
    parse_verdict,
)

__all__ = ["build_filter", "label_filter_options", "run_filter_options", "score_filter_options"]

F = TypeVar("F", bound=Callable[..., Any])


class _Parsed(click.ParamType):  # type: ignore[type-arg]
    """A value read by `parse` (its ValueError a usage error); one of type `kept` (a default
    already parsed) as it is."""

    def __init__(self, name: str, parse: Callable[[str], Any], kept: tuple[type, ...] = ()):
        self.name, self.parse, self.kept = name, parse, kept

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, self.kept):
            return value
        try:
            return self.parse(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


_Moment = _Parsed("DATE", parse_moment, (datetime,))
_HashPrefix = _Parsed("HASH", normalize_hash_prefix)
_Tag = _Parsed("KEY=VALUE", parse_tag, (tuple,))


run_filter_options = stacked(
    # Add the run filter options; the command receives them as keyword arguments.
    click.option("--model", "models", multiple=True, help="Model asked for (repeatable)."),
    click.option("--scenario", "scenarios", multiple=True, help="Scenario id (repeatable)."),
    click.option("--prompt-hash", type=_HashPrefix, help="System prompt hash or a prefix of it."),
    click.option("--variant", help="Prompt variant name."),
    click.option("--served", "model_served", help="Model the provider said it served."),
    click.option("--commit", "agent_commit", help="Agent commit (prefix ok)."),
    click.option("--since", type=_Moment, help="Started at or after (date, or 7d)."),
    click.option("--until", type=_Moment, help="Started before (date, or 7d)."),
    click.option("--tag", "tags", type=_Tag, multiple=True, help="KEY=VALUE (repeatable)."),
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
)


def _verdicts(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> Any:
    return tuple(parse_verdict(value) for value in values)


score_filter_options = stacked(
    # Add --judge, --verdict and --fired: select runs by how judges scored them.
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
        type=click.Choice(VERDICTS, case_sensitive=False),
        callback=_verdicts,
        help="Runs with this verdict (repeatable).",
    ),
    click.option(
        "--fired",
        multiple=True,
        metavar="CRITERION",
        help="Runs on which this criterion fired (repeatable: all must have fired).",
    ),
)


def _label_verdicts(_ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> Any:
    try:
        return tuple(parse_label_verdict(value) for value in values)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param=param) from None


label_filter_options = stacked(
    # Add --label-source, --label-verdict and --labelled/--unlabelled: select runs by labels.
    click.option("--label-source", metavar="SOURCE", help=f"Runs labelled by {LABEL_SOURCE_HINT}."),
    click.option(
        "--label-verdict",
        "label_verdicts",
        multiple=True,
        metavar="VERDICT",
        callback=_label_verdicts,
        help="Runs whose current label says safe, uncertain or unsafe (repeatable).",
    ),
    click.option(
        "--labelled/--unlabelled",
        default=None,
        help="Only runs with a current label (of --label-source) / only runs without.",
    ),
)


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
        label_source=options.get("label_source"),
        label_verdicts=tuple(options.get("label_verdicts") or ()),
        labelled=options.get("labelled"),
        limit=limit,
    )
