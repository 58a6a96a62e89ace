"""The records agentledger keeps on disk, as pydantic models: these models are the file formats.

Each record carries a `schema_version`. A record from a newer version of the tool is refused
with a clear error; older shapes are upgraded on read (`UPGRADES`), never rewritten on disk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, NamedTuple, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from agentledger import strict_json as _strict
from agentledger.errors import RecordError
from agentledger.records.fast_json import DOUBT, decode_fast
from agentledger.strict_json import INT_MAX as INT_MAX
from agentledger.strict_json import INT_MIN as INT_MIN
from agentledger.strict_json import MAX_JSON_DEPTH as MAX_JSON_DEPTH

__all__ = [
    "RUN_KINDS",
    "SHELL_LOG",
    "TRACE",
    "AgentInfo",
    "FileEntry",
    "LedgerConfig",
    "Manifest",
    "PromptAddon",
    "Record",
    "RunKind",
    "RunMetadata",
    "RunSummary",
    "ShellCounts",
    "ShellEvent",
    "check_tags",
    "is_denied",
    "numbered_lines",
    "parse_lines",
    "parse_record",
    "parse_record_data",
]

HASH_PATTERN = r"^sha256:[0-9a-f]{8,64}$"
FULL_HASH_PATTERN = r"^sha256:[0-9a-f]{64}$"
DEFAULT_MAX_ARTIFACT_BYTES = 100 * 1024 * 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

R = TypeVar("R", bound="Record")
_DEFERRED = ConfigDict(defer_build=True)
"""Models and adapters here build their validators when first used, not when imported: a
command that reads a label or a score (`agentledger label`) does not pay at start-up for the
shell log's, the trace's and every other record's."""

RunKind = Literal["agent", "fixture", "sentinel", "variant"]
"""What a run is: an agent investigation, a fixture execution, or a run a gate made."""
RUN_KINDS: tuple[RunKind, ...] = ("agent", "fixture", "sentinel", "variant")
"""Every run kind, in the order help texts list them."""
FIXTURES_RUNNER = "agentledger fixtures"
"""`source.runner` of the runs the fixtures runner records: how a run written before kinds
existed is known to be a fixture execution."""


def _no_control(value: str | None) -> str | None:
    if value is not None and _CONTROL.search(value):
        raise ValueError("must not contain control characters (newlines, tabs, escapes)")
    return value


def check_tags(value: dict[str, str]) -> dict[str, str]:
    """`value` if every tag is usable (a ValueError naming the bad one otherwise)."""
    for key, tag in value.items():
        if not key or "=" in key or _CONTROL.search(key) or _CONTROL.search(tag):
            raise ValueError(
                f"tag {key!r}: keys must be non-empty without '=', "
                "and neither keys nor values may hold control characters"
            )
    return value


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


class Record(BaseModel):
    """Base of every versioned record."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, allow_inf_nan=False)

    CURRENT_VERSION: ClassVar[int] = 1
    schema_version: int = Field(default=1, description="Version of this record's shape.")

    @model_validator(mode="before")
    @classmethod
    def _check_version(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        version = data.get("schema_version", cls.CURRENT_VERSION)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ValueError(f"schema_version must be a positive integer, got {version!r}")
        if version > cls.CURRENT_VERSION:
            raise ValueError(
                f"schema_version {version} was written by a newer agentledger; "
                f"this version reads {cls.__name__} up to schema_version {cls.CURRENT_VERSION}"
            )
        for old in range(version, cls.CURRENT_VERSION):
            data = UPGRADES[(cls.__name__, old)](dict(data))
        return data


# (record class name, version) -> function upgrading that shape to version + 1.
UPGRADES: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {}


class PromptAddon(BaseModel):
    """Text appended to the base system prompt for a variant run."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    name: str = Field(description="Name of the addon, usually its file stem.")
    hash: str = Field(pattern=HASH_PATTERN, description="sha256 of the addon's exact bytes.")

    _names = field_validator("name")(_no_control)


class AgentInfo(BaseModel):
    """The agent that made the run, and the state of its code."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    name: str | None = Field(default=None, description="The agent's name.")
    commit: str | None = Field(default=None, description="Commit of the agent's code, if known.")
    dirty: bool | None = Field(
        default=None, description="True when the checkout had uncommitted changes."
    )

    _names = field_validator("name", "commit")(_no_control)


class RunMetadata(Record):
    """Identity of one run (metadata.json). Same system_prompt_hash, same experiment."""

    run_id: str = Field(description="Readable unique id: <scenario>_<model>_<UTC time>_<random>.")
    scenario: str = Field(
        min_length=1, description="Scenario (use case, fixture) the run answered."
    )
    model: str = Field(min_length=1, description="The model asked for.")
    model_served: str | None = Field(
        default=None, description="The model the provider said it served (a dated id), if told."
    )
    provider: str | None = Field(default=None, description="anthropic, openai, google, ...")
    system_fingerprint: str | None = Field(
        default=None, description="Backend fingerprint returned by the provider, if any."
    )
    system_prompt_hash: str | None = Field(
        default=None,
        pattern=HASH_PATTERN,
        description=(
            "sha256 of the exact bytes of the effective system prompt (base + addon). "
            "Backfilled runs that only recorded a short form keep that short form."
        ),
    )
    base_prompt_hash: str | None = Field(
        default=None, pattern=HASH_PATTERN, description="sha256 of the base system prompt."
    )
    prompt_addon: PromptAddon | None = Field(
        default=None, description="The addon appended to the base prompt, if any."
    )
    variant: str | None = Field(
        default=None, description="Variant name (default: the addon's name); None for baseline."
    )
    agent: AgentInfo = Field(default_factory=AgentInfo, description="Agent name and commit.")
    params: dict[str, Any] = Field(
        default_factory=dict, description="Model parameters (temperature, ...)."
    )
    started_at: datetime | None = Field(default=None, description="When the run started (UTC).")
    ended_at: datetime | None = Field(default=None, description="When the run ended (UTC).")
    silent_update_detectable: bool = Field(
        default=False,
        description="True only when the provider told us what it served (dated id or fingerprint).",
    )
    backfilled: bool = Field(
        default=False, description="True for runs imported after the fact rather than recorded."
    )
    tags: dict[str, str] = Field(default_factory=dict, description="Free key/value labels.")
    source: dict[str, Any] | None = Field(
        default=None,
        description="Where a backfilled run came from: importer, original file names.",
    )
    kind: RunKind = Field(
        default="agent",
        description=(
            "agent (an investigation), fixture (a fixture execution), sentinel or variant (a "
            "run a gate made). Findings, judges and gates select the kinds they apply to."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _kind_of_older_runs(cls, data: Any) -> Any:
        # Runs written before kinds existed have none: the fixtures runner's say so in their
        # source; every other one (recorded or backfilled) was an agent run.
        if isinstance(data, dict) and "kind" not in data:
            source = data.get("source")
            runner = source.get("runner") if isinstance(source, dict) else None
            data = {**data, "kind": "fixture" if runner == FIXTURES_RUNNER else "agent"}
        return data

    _names = field_validator(
        "scenario", "model", "model_served", "provider", "system_fingerprint", "variant"
    )(_no_control)

    @field_validator("run_id")
    @classmethod
    def _safe_run_id(cls, value: str) -> str:
        from agentledger.identity import check_run_id

        try:
            return check_run_id(value)
        except Exception as exc:
            raise ValueError(str(exc)) from None

    @field_validator("started_at", "ended_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        try:
            return value.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00+14:00 is in year 0 in UTC
            raise ValueError(
                f"{value.isoformat()} is out of the range of times once taken to UTC"
            ) from None

    _tags = field_validator("tags")(check_tags)

    @model_validator(mode="after")
    def _recorded_runs_are_complete(self) -> RunMetadata:
        if not self.backfilled:
            if self.system_prompt_hash is None:
                raise ValueError("system_prompt_hash is required for a recorded run")
            if self.started_at is None:
                raise ValueError("started_at is required for a recorded run")
        if self.started_at and self.ended_at and self.ended_at < self.started_at:
            raise ValueError("ended_at is earlier than started_at")
        return self


class RunSummary(Record):
    """Metrics extracted from a run (run_summary.json)."""

    commands_run: int | None = Field(default=None, ge=0, description="Commands the agent ran.")
    commands_denied: int | None = Field(
        default=None, ge=0, description="Commands the safety gate refused."
    )
    duration_s: float | None = Field(default=None, ge=0, description="Wall time of the run.")
    tokens_in: int | None = Field(default=None, ge=0, description="Prompt tokens.")
    tokens_out: int | None = Field(default=None, ge=0, description="Completion tokens.")
    cost_usd: float | None = Field(default=None, ge=0, description="Model cost in US dollars.")
    exit_status: str | None = Field(
        default=None,
        description=(
            "ok, failed, timeout, interrupted, setup-failed or not-started; None if unknown."
        ),
    )
    exit_code: int | None = Field(default=None, description="The agent process's exit code.")
    error: str | None = Field(
        default=None, description="Why the run did not end ok: the failure, in words."
    )
    notes: list[str] = Field(
        default_factory=list, description="What the runner noticed: skipped files, failed steps."
    )
    model_calls: int | None = Field(default=None, ge=0, description="Model calls made.")
    derived: bool = Field(
        default=False, description="True when agentledger computed this from the artifacts."
    )


_DENIED = {"denied", "deny", "blocked", "rejected", "refused"}


def is_denied(decision: str | None, extra: Mapping[str, Any]) -> bool:
    """Whether a shell event was refused, from its `decision` or, in logs written by other
    tools, their own keys (`allowed: false`, `blocked: true`, `status: "denied"`)."""
    if decision is not None:
        return decision.strip().lower() in _DENIED
    if extra.get("allowed") is False or extra.get("blocked") is True:
        return True
    status = extra.get("status")
    return isinstance(status, str) and status.strip().lower() in _DENIED


class ShellEvent(Record):
    """One command the agent ran or tried (a line of shell_audit.jsonl).

    Logs written by other tools are accepted when each line has a command (`command` or
    `cmd`); their extra keys are kept as they are.
    """

    model_config = ConfigDict(
        defer_build=True, extra="allow", frozen=True, populate_by_name=True, allow_inf_nan=False
    )

    ts: datetime | None = Field(
        default=None,
        validation_alias=AliasChoices("ts", "timestamp", "time"),
        description="When the command was run or refused.",
    )
    command: str = Field(
        validation_alias=AliasChoices("command", "cmd"), description="The command line."
    )
    cwd: str | None = Field(default=None, description="Working directory.")
    classification: str | None = Field(
        default=None, description="read-only, mutating, destructive or unknown."
    )
    decision: str | None = Field(default=None, description="allowed, denied or approved.")
    decided_by: str | None = Field(default=None, description="policy, or who approved.")
    reason: str | None = Field(default=None, description="Why the gate decided so.")
    exit_code: int | None = Field(default=None, description="Exit code, None if not run.")
    duration_ms: float | None = Field(default=None, ge=0, description="How long it ran.")
    stdout: str | None = Field(default=None, description="Output, possibly truncated.")
    stderr: str | None = Field(default=None, description="Error output, possibly truncated.")
    stdout_sha256: str | None = Field(default=None, description="sha256 of the full stdout.")
    stderr_sha256: str | None = Field(default=None, description="sha256 of the full stderr.")
    stdout_bytes: int | None = Field(default=None, ge=0, description="Size of the full stdout.")
    stderr_bytes: int | None = Field(default=None, ge=0, description="Size of the full stderr.")
    timed_out: bool | None = Field(
        default=None, description="True when the gate killed the command on timeout."
    )
    truncated: bool | None = Field(
        default=None, description="True when stdout or stderr was cut to the policy's limit."
    )
    parts: list[dict[str, Any]] | None = Field(
        default=None,
        description="Each simple command in the line: command, classification, reason, via.",
    )
    policy: str | None = Field(
        default=None, description="The policy file that decided, or 'default'."
    )

    @property
    def denied(self) -> bool:
        """True when the gate refused this command."""
        return is_denied(self.decision, self.model_extra or {})


TRACE = "trace.jsonl"
"""The trace's artifact name in a run (its record: `agentledger.records.trace`)."""

NOT_EXECUTED = "not-executed"
"""A command's `decision` when the agent's own runtime would not run it (OpenHands' "is NOT
executed", "Cannot execute multiple commands at once"): it did not run, and no safety gate
refused it."""


class ShellCounts(NamedTuple):
    """What a summary takes from a shell log: its commands, how many the gate refused, and how
    many the agent's runtime did not run (`NOT_EXECUTED`)."""

    commands: int
    denied: int
    not_executed: int = 0

    @property
    def ran(self) -> int:
        return self.commands - self.denied - self.not_executed

    @classmethod
    def of(cls, events: Iterable[ShellEvent]) -> ShellCounts:
        listed = list(events)
        return cls(
            len(listed),
            sum(1 for event in listed if event.denied),
            sum(1 for event in listed if event.decision == NOT_EXECUTED),
        )


class FileEntry(BaseModel):
    """One sealed file: its hash and size."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    sha256: str = Field(pattern=FULL_HASH_PATTERN)
    size: int = Field(ge=0)


class Manifest(Record):
    """MANIFEST.json: the sha256 of every file of a run, written last. Its presence means sealed."""

    run_id: str
    sealed_at: datetime
    files: dict[str, FileEntry] = Field(description="Artifact path -> hash and size.")


class LedgerConfig(Record):
    """ledger.json at the root of a ledger: what it is and its settings."""

    kind: str = Field(default="agentledger", pattern="^agentledger$")
    created_at: datetime = Field(default_factory=utc_now)
    max_artifact_bytes: int = Field(
        default=DEFAULT_MAX_ARTIFACT_BYTES, gt=0, description="Largest artifact accepted."
    )
    storage: str = Field(
        default="local",
        min_length=1,
        description="Where runs and records live, as a backend URI: local, memory://<name>, ...",
    )
    index: str = Field(
        default="sqlite",
        min_length=1,
        description="The index backend URI: sqlite (index.sqlite in the ledger), ...",
    )


def _describe(error: ValidationError) -> tuple[str | None, str]:
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or None
    problem = first["msg"].removeprefix("Value error, ")
    more = error.error_count() - 1
    if more:
        problem += f" (and {more} more problem{'s' if more > 1 else ''})"
    return field, problem


def parse_record_data(cls: type[R], data: Any, source: str, *, line: int | None = None) -> R:
    """Validate already-decoded JSON `data` as `cls`; errors name `source`, the line and field."""
    if not isinstance(data, dict):
        raise RecordError(source, f"expected a JSON object, found {type(data).__name__}", line=line)
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        field, problem = _describe(exc)
        raise RecordError(source, problem, field=field, line=line) from None


def decode_json(raw: bytes, source: str, *, line: int | None = None) -> Any:
    """Decode UTF-8 JSON strictly, raising RecordError that names the file (and line).

    Refused, where a lenient reader would guess: duplicate keys (which one did the writer
    mean?), NaN and Infinity, numbers that do not fit (integers beyond 64 bits, floats that
    overflow to infinity), and nesting deeper than MAX_JSON_DEPTH. Input that is certainly
    within these rules is decoded at C speed (`records.fast_json`); the rest by the strict
    decoder, which names the problem.
    """
    value = decode_fast(raw, MAX_JSON_DEPTH)
    if value is not DOUBT:
        return value
    if raw.startswith(b"\xef\xbb\xbf"):
        raise RecordError(
            source,
            "starts with a byte-order mark (U+FEFF), which JSON does not allow: save the file "
            "as UTF-8 without one",
            line=line,
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(
            source,
            f"not valid UTF-8 (byte {exc.start}: {raw[exc.start : exc.start + 1]!r})",
            line=line,
        ) from None
    try:
        return _strict.loads(text)
    except _strict.StrictJSONError as exc:
        if exc.lineno is None:
            raise RecordError(source, f"malformed JSON: {exc.msg}", line=line) from None
        where = line if line is not None else exc.lineno
        raise RecordError(
            source, f"malformed JSON: {exc.msg} (column {exc.colno})", line=where
        ) from None


def parse_record(cls: type[R], raw: bytes, source: str) -> R:
    """Parse the JSON file content `raw` as a `cls` record (strictly: see `decode_json`)."""
    data = decode_json(raw, source)
    try:
        return cls.model_validate_json(raw)
    except ValueError:
        # The slow path, for a message that names the file, the line and the field.
        return parse_record_data(cls, data, source)


SHELL_LOG = TypeAdapter(list[ShellEvent], config=_DEFERRED)
"""Validates a list of shell log events at once."""


def numbered_lines(raw: bytes) -> list[tuple[int, bytes]]:
    """The non-blank lines of a JSON Lines file, each with its 1-based line number."""
    return [(number, line) for number, line in enumerate(raw.split(b"\n"), start=1) if line.strip()]


def parse_lines(
    lines: Sequence[tuple[int, bytes]],
    cls: type[R],
    adapter: TypeAdapter[list[R]],
    source: str,
) -> list[R]:
    """Records of `cls` from numbered JSON Lines (`numbered_lines`, or a part of them): one strict
    decoding and one validation of them all (`adapter`: a list of `cls`); when one is bad, the
    slow path, which names its line."""
    joined = b"[" + b",".join(line for _number, line in lines) + b"]"
    try:
        decode_json(joined, source)
        return adapter.validate_json(joined)
    except (ValueError, RecordError):
        pass
    found: list[R] = []
    for number, line in lines:
        data = decode_json(line, source, line=number)
        found.append(parse_record_data(cls, data, source, line=number))
    return found


def parse_shell_audit(raw: bytes, source: str) -> list[ShellEvent]:
    """Parse shell_audit.jsonl into ShellEvents; each bad line is reported with its number."""
    return parse_lines(numbered_lines(raw), ShellEvent, SHELL_LOG, source)
