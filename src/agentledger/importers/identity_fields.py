"""Identity fields of an imported run, gathered from every source that states them.

A run's identity can come from its own metadata.json (in the seed's shape or the ledger's), a
sidecar file keyed by directory name, command-line options, the directory name and dates in file
names. Sources that state a field must agree: a run's own metadata is evidence and is never
overwritten. The directory name and file names are weak sources: they only fill gaps.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from agentledger.errors import InputError, RecordError, UnsafeNameError
from agentledger.identity import HASH_PREFIX, check_run_id
from agentledger.records import RunMetadata, RunSummary, decode_json, parse_record_data

__all__ = [
    "SIDECAR_FIELDS",
    "Claim",
    "Identity",
    "check_schema_version",
    "claim_metadata",
    "claim_tags",
    "day",
    "field_value",
    "load_sidecar",
    "safe_run_id",
    "summary_values",
    "summary_values_of",
    "text_value",
]

_TEXT_FIELDS = (
    "run_id",
    "scenario",
    "model",
    "model_served",
    "provider",
    "system_fingerprint",
    "variant",
    "agent_name",
    "agent_commit",
)
_HASH_FIELDS = ("system_prompt_hash", "base_prompt_hash")
_HEX_8_64 = re.compile(r"[0-9a-f]{8,64}")
_DAY = re.compile(r"\d{8}")
_DAY_TIME = re.compile(r"\d{8}T\d{4,6}Z?")
_TIME_FIELDS = ("started_at", "ended_at")
_BOOL_FIELDS = ("silent_update_detectable", "agent_dirty")
_DICT_FIELDS = ("params", "prompt_addon")
_KNOWN = (*_TEXT_FIELDS, *_HASH_FIELDS, *_TIME_FIELDS, *_BOOL_FIELDS, *_DICT_FIELDS)
# the seed's names for ledger fields
_METADATA_ALIASES = {"use_case": "scenario", "ghost_agent_commit": "agent_commit"}
_METADATA_IGNORED = {"schema_version", "backfilled", "source"}
_SIDECAR_KEYS = ("directory", "dir")
SIDECAR_FIELDS = (*_TEXT_FIELDS, *_HASH_FIELDS, *_TIME_FIELDS, "system_prompt_file", "tags")
# names runners use in their run_summary.json -> RunSummary fields
_SUMMARY_ALIASES = {
    "commands_run": "commands_run",
    "commands_executed": "commands_run",
    "total_commands": "commands_run",
    "commands_denied": "commands_denied",
    "denied_commands": "commands_denied",
    "commands_blocked": "commands_denied",
    "duration_s": "duration_s",
    "duration_seconds": "duration_s",
    "tokens_in": "tokens_in",
    "input_tokens": "tokens_in",
    "prompt_tokens": "tokens_in",
    "tokens_out": "tokens_out",
    "output_tokens": "tokens_out",
    "completion_tokens": "tokens_out",
    "cost_usd": "cost_usd",
    "exit_status": "exit_status",
    "exit_code": "exit_code",
}


class Claim(NamedTuple):
    """One source's statement of one field."""

    value: Any
    origin: str  # the file or option, for messages
    label: str  # the field's name in that source
    kind: str  # provenance kept in the run: metadata.json, sidecar, option, directory name, ...


class Identity:
    """Identity fields of one run as each source states them; sources must agree."""

    def __init__(self) -> None:
        self.claims: dict[str, Claim] = {}
        self.tags: dict[str, Claim] = {}
        self.unsafe_run_id: Claim | None = None

    def claim(self, name: str, claim: Claim, *, weak: bool = False) -> None:
        """Record a source's value; a weak one only fills a gap, a strong one must agree."""
        held = self.claims.get(name)
        if held is None:
            self.claims[name] = claim
        elif not weak:
            merged = _agree(name, held.value, claim.value)
            if merged is None:
                raise _conflict(held, claim)
            self.claims[name] = Claim(merged, held.origin, held.label, held.kind)

    def tag(self, key: str, claim: Claim) -> None:
        held = self.tags.get(key)
        if held is not None and held.value != claim.value:
            raise _conflict(held, claim)
        self.tags.setdefault(key, claim)

    def get(self, name: str) -> Any:
        claim = self.claims.get(name)
        return claim.value if claim else None

    def kind(self, name: str) -> str | None:
        claim = self.claims.get(name)
        return claim.kind if claim else None


def _agree(name: str, held: Any, new: Any) -> Any:
    """The merged value when two sources agree, else None."""
    if held == new:
        return held
    # a short form (8 hex digits) agrees with any full hash it is a prefix of
    if (
        name in _HASH_FIELDS
        and isinstance(held, str)
        and isinstance(new, str)
        and (held.startswith(new) or new.startswith(held))
    ):
        return max(held, new, key=len)
    return None


def _conflict(held: Claim, new: Claim) -> RecordError:
    advice = (
        "a run's own metadata is evidence and is never overwritten: drop the option or "
        "correct the sidecar"
        if held.kind == "metadata.json"
        else "give one value"
    )
    where = new.origin if new.label == new.origin else f"{new.origin}, field '{new.label}',"
    return RecordError(
        held.origin,
        f"says {held.value!r}, but {where} gives {new.value!r}; {advice}",
        field=held.label,
    )


def text_value(value: Any, origin: str, label: str) -> str:
    """A non-empty string, stripped."""
    if not isinstance(value, str) or not value.strip():
        found = "an empty string" if isinstance(value, str) else type(value).__name__
        raise RecordError(origin, f"expected a non-empty string, found {found}", field=label)
    return value.strip()


def _prompt_hash(value: Any, origin: str, label: str) -> str:
    text = text_value(value, origin, label).lower().removeprefix(HASH_PREFIX)
    if not _HEX_8_64.fullmatch(text):
        raise RecordError(
            origin,
            "expected a sha256 hash (8 to 64 hex digits, optionally prefixed sha256:), "
            f"found {value!r}",
            field=label,
        )
    return HASH_PREFIX + text


def day(text: str) -> datetime:
    """``strptime(text, "%Y%m%d")`` at UTC, without its cost for 8 ASCII digits."""
    if len(text) == 8 and text.isascii() and text.isdigit():
        return datetime(int(text[:4]), int(text[4:6]), int(text[6:]), tzinfo=UTC)
    return datetime.strptime(text, "%Y%m%d").replace(tzinfo=UTC)


def _time(value: Any, origin: str, label: str) -> datetime:
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            raise RecordError(
                origin, f"expected a time, found {value!r} seconds (out of range)", field=label
            ) from None
    text = text_value(value, origin, label)
    try:
        if _DAY.fullmatch(text):
            return day(text)
        if _DAY_TIME.fullmatch(text):
            digits = text.rstrip("Z")
            fmt = "%Y%m%dT%H%M%S" if len(digits) == 15 else "%Y%m%dT%H%M"
            return datetime.strptime(digits, fmt).replace(tzinfo=UTC)
        moment = datetime.fromisoformat(text)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):  # 0001-01-01T00:00+14:00 is in year 0 in UTC
        raise RecordError(
            origin,
            f"expected an ISO 8601 time (2026-03-12T10:15:00Z), found {value!r}",
            field=label,
        ) from None


def _bool(value: Any, origin: str, label: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise RecordError(origin, f"expected true or false, found {value!r}", field=label)


def field_value(name: str, value: Any, origin: str, label: str) -> Any:
    """`value` checked and converted for identity field `name`; errors name origin and label."""
    if name in _TEXT_FIELDS:
        return text_value(value, origin, label)
    if name in _HASH_FIELDS:
        return _prompt_hash(value, origin, label)
    if name in _TIME_FIELDS:
        return _time(value, origin, label)
    if name in _BOOL_FIELDS:
        return _bool(value, origin, label)
    if not isinstance(value, dict):
        raise RecordError(origin, f"expected an object, found {type(value).__name__}", field=label)
    return value


def claim_tags(identity: Identity, tags: Any, origin: str, label: str, kind: str) -> None:
    if not isinstance(tags, dict):
        raise RecordError(
            origin, f"expected an object of tags, found {type(tags).__name__}", field=label
        )
    for key, value in tags.items():
        if not isinstance(value, str | int | float | bool):
            raise RecordError(origin, "tag values must be strings", field=f"{label}.{key}")
        text = str(value).lower() if isinstance(value, bool) else str(value)
        identity.tag(str(key), Claim(text, origin, f"{label}.{key}", kind))


def check_schema_version(
    data: dict[str, Any], record: type[RunMetadata | RunSummary], origin: str
) -> None:
    """Refuse a record written by a newer agentledger, naming the file and field."""
    version = data.get("schema_version")
    if version is None:
        return
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RecordError(
            origin, f"expected a positive integer, found {version!r}", field="schema_version"
        )
    if version > record.CURRENT_VERSION:
        raise RecordError(
            origin,
            f"schema_version {version} was written by a newer agentledger; this version reads "
            f"{record.__name__} up to schema_version {record.CURRENT_VERSION}",
            field="schema_version",
        )


def safe_run_id(run_id: str) -> bool:
    try:
        check_run_id(run_id)
    except UnsafeNameError:
        return False
    return True


def claim_metadata(identity: Identity, data: Any, origin: str) -> None:
    """Claims from a run's own metadata.json (keys it does not map are kept in `source`)."""
    if not isinstance(data, dict):
        raise RecordError(origin, f"expected a JSON object, found {type(data).__name__}")
    check_schema_version(data, RunMetadata, origin)
    for key, value in data.items():
        name = _METADATA_ALIASES.get(key, key)
        if value is None or key in _METADATA_IGNORED:
            continue
        if key == "tags":
            claim_tags(identity, value, origin, key, "metadata.json")
        elif key == "agent":
            if not isinstance(value, dict):
                raise RecordError(origin, "expected an object (name, commit, dirty)", field=key)
            for part in ("name", "commit", "dirty"):
                if value.get(part) is not None:
                    sub, label = f"agent_{part}", f"agent.{part}"
                    checked = field_value(sub, value[part], origin, label)
                    identity.claim(sub, Claim(checked, origin, label, "metadata.json"))
        elif name in _KNOWN:
            claim = Claim(field_value(name, value, origin, key), origin, key, "metadata.json")
            if name == "run_id" and not safe_run_id(claim.value):
                # kept in the original metadata.json; another id may be given for the ledger
                identity.unsafe_run_id = claim
                continue
            identity.claim(name, claim)


def _sidecar_rows(raw: bytes, path: Path) -> list[tuple[str, dict[str, Any]]]:
    origin = str(path)
    rows: list[tuple[str, dict[str, Any]]] = []
    if path.suffix.lower() == ".csv":
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise RecordError(origin, f"not valid UTF-8 (byte {exc.start})") from None
        reader = csv.DictReader(io.StringIO(text))
        key = next((k for k in _SIDECAR_KEYS if k in (reader.fieldnames or [])), None)
        if key is None:
            raise RecordError(
                origin, "the CSV needs a 'directory' column naming each run directory"
            )
        for number, row in enumerate(reader, start=2):
            if None in row:
                raise RecordError(origin, "more cells than columns", line=number)
            directory = (row.pop(key) or "").strip()
            if not directory:
                raise RecordError(origin, "empty directory name", line=number, field=key)
            values: dict[str, Any] = {}
            for column, cell in row.items():
                if cell is None or not cell.strip():
                    continue
                if column.startswith("tag:"):
                    values.setdefault("tags", {})[column[4:]] = cell.strip()
                else:
                    values[column] = cell.strip()
            rows.append((directory, values))
        return rows
    if path.suffix.lower() != ".json":
        raise InputError(f"{path}: a sidecar is a .csv or .json file")
    data = decode_json(raw, origin)
    if isinstance(data, dict):
        for directory, values in data.items():
            if not isinstance(values, dict):
                raise RecordError(origin, "expected an object of identity fields", field=directory)
            rows.append((directory, dict(values)))
    elif isinstance(data, list):
        for number, item in enumerate(data):
            key = next((k for k in _SIDECAR_KEYS if isinstance(item, dict) and k in item), None)
            if key is None:
                raise RecordError(origin, "each entry needs a 'directory'", field=f"[{number}]")
            values = dict(item)
            rows.append((str(values.pop(key)), values))
    else:
        raise RecordError(origin, "expected an object keyed by directory name, or a list")
    return rows


def load_sidecar(path: Path) -> dict[str, dict[str, Any]]:
    """Identity fields per run directory name, from a CSV (column 'directory') or JSON file."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the sidecar ({exc.strerror})") from None
    table: dict[str, dict[str, Any]] = {}
    for directory, values in _sidecar_rows(raw, path):
        for column in values:
            if column not in SIDECAR_FIELDS:
                raise RecordError(
                    path,
                    f"unknown field for {directory!r}; known: {', '.join(SIDECAR_FIELDS)}, tag:KEY",
                    field=column,
                )
        if directory in table:
            raise RecordError(path, f"directory {directory!r} appears twice", field="directory")
        table[directory] = values
    return table


def summary_values(raw: bytes, origin: str) -> dict[str, Any]:
    """The RunSummary fields a runner's run_summary.json states (its other keys are ignored)."""
    return summary_values_of(decode_json(raw, origin), origin)


def summary_values_of(data: Any, origin: str) -> dict[str, Any]:
    """`summary_values` of run_summary.json decoded already."""
    if not isinstance(data, dict):
        raise RecordError(origin, f"expected a JSON object, found {type(data).__name__}")
    check_schema_version(data, RunSummary, origin)
    values: dict[str, Any] = {}
    labels: dict[str, str] = {}
    for key, value in data.items():
        name = _SUMMARY_ALIASES.get(key)
        if name is None or value is None:
            continue
        if name in values and values[name] != value:
            raise RecordError(
                origin, f"says {value!r} but {labels[name]} says {values[name]!r}", field=key
            )
        values[name] = value
        labels[name] = key
    try:
        parse_record_data(RunSummary, values, origin)
    except RecordError as exc:
        label = labels.get((exc.field or "").split(".")[0], exc.field)
        raise RecordError(origin, exc.problem, field=label) from None
    return values
