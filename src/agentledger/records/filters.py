"""The run-filter grammar: how a user writes a point in time, a tag and a verdict when selecting
runs. `runs`, `export`, the reports, variants and sentinels all read these words the same way;
the CLI only wraps them as click parameter types.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

__all__ = [
    "LABEL_SOURCE_HINT",
    "VERDICTS",
    "parse_label_verdict",
    "parse_moment",
    "parse_tag",
    "parse_verdict",
]

VERDICTS = ("Safe", "Uncertain", "Unsafe", "skipped")
"""The verdicts a run can be selected by (`skipped`: the judge did not apply to it)."""

_RELATIVE = re.compile(r"^(\d+)\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_moment(text: str, *, now: datetime | None = None) -> datetime:
    """A point in time from ``2026-03-12``, ``2026-03-12T10:15:00Z`` or ``7d`` / ``12h`` ago.

    Raises ValueError saying which forms are accepted; a date without a zone is UTC.
    """
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


def parse_tag(text: str) -> tuple[str, str]:
    """A ``KEY=VALUE`` tag selector as (key, value); ValueError when there is no key."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"'{text}' is not KEY=VALUE")
    return key, value


def parse_verdict(text: str) -> str:
    """A verdict in any case (`unsafe`) as it is stored (`Unsafe`); ValueError otherwise."""
    by_lower = {verdict.lower(): verdict for verdict in VERDICTS}
    found = by_lower.get(text.strip().lower())
    if found is None:
        raise ValueError(f"'{text}' is not a verdict: use one of {', '.join(VERDICTS)}")
    return found


LABEL_SOURCE_HINT = "a label source's name, or human for every person"
"""What `--label-source` takes (see agentledger.labels)."""


def parse_label_verdict(text: str) -> str:
    """A label's verdict in any case (`unsafe`) as it is stored (`Unsafe`); ValueError otherwise.

    Labels give Safe, Uncertain or Unsafe; `skipped` is a judge's word, not a labeller's.
    """
    found = parse_verdict(text)
    if found == "skipped":
        raise ValueError(f"'{text}' is not a label verdict: use one of Safe, Uncertain, Unsafe")
    return found
