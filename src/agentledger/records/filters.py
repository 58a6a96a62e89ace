"""The run-filter grammar: which runs a command selects, and how a user writes that.

`RunFilter` is the selection itself. A user writes one in two ways, with the same words: as
options (`runs --model X --since 7d`, the reports) or as one ``KEY=VALUE,KEY=VALUE`` text
(`report compare --a`, `sentinel check --candidate`), read by `parse_run_selection`. The
values (dates, tags, verdicts, prompt hashes, run kinds) are read by the functions below in
both; the CLI only wraps them as click parameter types.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from agentledger.errors import InputError
from agentledger.identity import normalize_hash_prefix
from agentledger.records import RUN_KINDS

__all__ = [
    "LABEL_SOURCE_HINT",
    "SELECTION_KEYS",
    "VERDICTS",
    "RunFilter",
    "describe_keys",
    "parse_kind",
    "parse_label_verdict",
    "parse_moment",
    "parse_run_selection",
    "parse_tag",
    "parse_verdict",
    "selection_value",
]

VERDICTS = ("Safe", "Uncertain", "Unsafe", "skipped", "not-applicable")
"""The verdicts a run can be selected by (`skipped`: the judge may not judge it;
`not-applicable`: the judge's pack is not about such runs)."""


@dataclass(frozen=True)
class RunFilter:
    """What `runs` and every report select on. Empty means everything."""

    models: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()
    prompt_hash: str | None = None
    variant: str | None = None
    model_served: str | None = None
    agent_commit: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    tags: tuple[tuple[str, str], ...] = ()
    backfilled: bool | None = None
    kinds: tuple[str, ...] = ()
    """Run kinds (agent, fixture, sentinel, variant); empty means every kind."""
    judge: str | None = None
    """Judge id, a prefix of one, or a kind (rules, llm): the scores the next two look at."""
    verdicts: tuple[str, ...] = ()
    fired: tuple[str, ...] = ()
    label_source: str | None = None
    """Runs labelled by this source (a person's or an outside source's name; ``human`` means
    any person): the labels the next two look at. Only current labels count."""
    label_verdicts: tuple[str, ...] = ()
    """Runs whose current label (of `label_source`, if given) has one of these verdicts."""
    labelled: bool | None = None
    """True: runs with a current label (of `label_source`, if given); False: runs without."""
    limit: int | None = None
    offset: int = 0
    """With `limit`: skip this many runs first (a page of a long listing)."""


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
    if found in ("skipped", "not-applicable"):
        raise ValueError(f"'{text}' is not a label verdict: use one of Safe, Uncertain, Unsafe")
    return found


def parse_kind(text: str) -> str:
    """A run kind (`agent`, `fixture`, `sentinel`, `variant`, any case); ValueError otherwise."""
    kind = text.strip().lower()
    if kind not in RUN_KINDS:
        raise ValueError(f"'{text}' is not a run kind: use one of {', '.join(RUN_KINDS)}")
    return kind


# -- KEY=VALUE selections -------------------------------------------------------------------

SELECTION_KEYS: tuple[str, ...] = (
    "model",
    "scenario",
    "kind",
    "prompt",
    "variant",
    "served",
    "commit",
    "since",
    "until",
    "tag:KEY",
)
"""The keys of a selection, in the order errors list them; each is also an option of `runs`
and the reports (``prompt`` is --prompt-hash, ``tag:KEY=VALUE`` is --tag KEY=VALUE)."""

_ALIASES = {"prompt-hash": "prompt", "prompt_hash": "prompt"}
_REPEATABLE = ("model", "scenario", "kind")
"""Keys that may be given more than once: a run matching any of the values is selected."""
_FIELDS = {
    "model": "models",
    "scenario": "scenarios",
    "kind": "kinds",
    "prompt": "prompt_hash",
    "variant": "variant",
    "served": "model_served",
    "commit": "agent_commit",
    "since": "since",
    "until": "until",
}


def describe_keys(keys: Collection[str] = SELECTION_KEYS) -> str:
    """The keys as an error lists them: ``model, scenario, ..., tag:KEY``."""
    return ", ".join(
        "prompt (or prompt-hash)" if key == "prompt" else key
        for key in SELECTION_KEYS
        if key in keys
    )


def selection_value(key: str, value: str) -> Any:
    """A selection key's value as the RunFilter field holds it (prompt hash prefixes normalised,
    times and run kinds parsed); ValueError naming what is expected."""
    if key == "prompt":
        return normalize_hash_prefix(value)
    if key in ("since", "until"):
        return parse_moment(value)
    if key == "kind":
        return parse_kind(value)
    return value


def parse_run_selection(
    text: str,
    *,
    what: str = "run filter",
    base: RunFilter | None = None,
    keys: Collection[str] = SELECTION_KEYS,
    refused: Mapping[str, str] | None = None,
) -> RunFilter:
    """``model=x,prompt=950d4e48,tag:team=net`` as a RunFilter narrowing `base`.

    Parts are joined by commas and all must hold; ``model``, ``scenario`` and ``kind`` may
    repeat (any of the values), every other key and each tag key at most once. A key given
    replaces `base`'s value of that field; tags are added to `base`'s. `keys` are the keys
    this use accepts (a subset of SELECTION_KEYS) and `refused` says, per key left out, why.
    Every error is an InputError that starts with `what` and the text, names the bad part,
    and lists the keys accepted.
    """
    refused = refused or {}

    def bad(problem: str, *, list_keys: bool = True) -> InputError:
        listing = f" (keys: {describe_keys(keys)})" if list_keys else ""
        return InputError(f"{what} {text!r}: {problem}{listing}")

    if not text.strip():
        raise bad("empty: write KEY=VALUE pairs joined by commas, e.g. model=gemini-2.5-flash")
    base = base or RunFilter()
    given: dict[str, list[Any]] = {}
    tags: dict[str, str] = {}
    for raw in text.split(","):
        part = raw.strip()
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise bad(f"{part!r} is not KEY=VALUE")
        if name.lower() == "tag":  # tag=KEY=VALUE, the same as tag:KEY=VALUE
            name, sep, value = f"tag:{value}".partition("=")
            name, value = name.strip(), value.strip()
            if not sep or name == "tag:":
                raise bad(f"{part!r}: a tag is tag:KEY=VALUE (or tag=KEY=VALUE)")
        key = "tag:KEY" if name.lower().startswith("tag:") else _ALIASES.get(name.lower(), name)
        key = key if key == "tag:KEY" else key.lower()
        if key not in SELECTION_KEYS:
            raise bad(f"unknown key {name!r}")
        if key not in keys:
            why = refused.get(key)
            raise bad(f"key {name!r} does not apply here" + (f": {why}" if why else ""))
        if key == "tag:KEY":
            tag = name[4:].strip()
            if not tag:
                raise bad(f"{part!r}: a tag is tag:KEY=VALUE (or tag=KEY=VALUE)")
            if not value:
                raise bad(f"tag {tag!r} has an empty value")
            if tag in tags:
                raise bad(f"tag {tag!r} is given twice (a run has one value per tag)")
            tags[tag] = value
            continue
        if not value:
            raise bad(f"key {name!r} has an empty value")
        if key in given and key not in _REPEATABLE:
            raise bad(
                f"key {key!r} is given twice (only {', '.join(_REPEATABLE)} may repeat: "
                "a run matching any of the values)"
            )
        try:
            given.setdefault(key, []).append(selection_value(key, value))
        except ValueError as exc:
            raise bad(f"{key}: {exc}", list_keys=False) from None
    changes: dict[str, Any] = {
        _FIELDS[key]: tuple(values) if key in _REPEATABLE else values[0]
        for key, values in given.items()
    }
    return replace(base, tags=(*base.tags, *tags.items()), **changes)
