"""A run made from a trace: what every trace importer (openhands, jsonl) plans the same way.

An importer of a foreign trace format turns one file into `TraceSteps` and the few facts the
file states (model, prompt, report, system prompt); `plan_trace_run` makes of them a checked
`PlannedRun` with trace.jsonl, the shell log derived from its command steps, the original bytes
and sibling files as attachments, and identity from the options and sidecar. It writes nothing:
the run is sealed by the same batch path as the directory importer.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentledger.errors import ArtifactTooLargeError, InputError, RecordError, UnsafeNameError
from agentledger.identity import HASH_PREFIX, check_artifact_name, check_run_id, sha256_bytes
from agentledger.importers.identical import check_identical
from agentledger.importers.identity_fields import field_value
from agentledger.importers.plan import PlannedArtifact, PlannedRun
from agentledger.importers.run_plan import PlanContext
from agentledger.importers.source_files import (
    files_below,
    given_file,
    open_regular,
    read_regular,
    too_large,
)
from agentledger.records import RunMetadata, RunSummary, ShellCounts, ShellEvent, check_tags
from agentledger.records.trace import (
    TRACE,
    TraceStep,
    shell_events,
    trace_bytes,
)
from agentledger.store.storage import HashedBytes
from agentledger.store.writer import PROMPT, REPORT, SHELL_AUDIT, SYSTEM_PROMPT

__all__ = [
    "MAX_TRACE_STEPS",
    "BuiltTrace",
    "TraceFacts",
    "plan_trace_run",
    "read_trace_file",
    "shell_log_bytes",
    "too_many_steps",
    "trace_files",
]


def trace_files(path: Path, suffixes: Sequence[str], what: str) -> list[tuple[Path, str]]:
    """`path` itself if it is a file, else every file below it with one of `suffixes`, in a
    stable order, each with its real path (`source_files`: links out of the folder refused);
    none is an InputError naming `what` was looked for."""
    if not path.is_dir():
        return [(path, given_file(path))]
    files = files_below(path, lambda name: os.path.splitext(name)[1] in suffixes)
    if not files:
        patterns = ", ".join(f"*{suffix}" for suffix in suffixes)
        raise InputError(f"{path}: no {what} ({patterns}) here or below")
    return files


def read_trace_file(path: Path, ctx: PlanContext, real: str | None = None) -> bytes:
    """The bytes of the trace file `path` (read at `real`, its real path as found, or checked
    now), refused with a clear error when it is larger than the import accepts."""
    return read_regular(real or given_file(path), ctx.limit, path)


MAX_TRACE_STEPS = 50_000
"""The most events (steps) one trace file's run may hold. Memory while planning grows with
the steps (an OpenHands trajectory's trace and shell log are written as its events are read:
50,000 steps whose trace is just under the default artifact limit take about 400 MB), so a
trace of more is refused while it is read, before it is parsed, whatever its size in bytes.
Real agent runs hold hundreds to a few thousand."""


def too_many_steps(origin: str | Path, what: str = "events") -> RecordError:
    """The error refusing a trace of more than `MAX_TRACE_STEPS` steps."""
    return RecordError(
        str(origin),
        f"more than {MAX_TRACE_STEPS:,} {what}: a run's trace is held whole while it is "
        "checked, so longer ones are refused (split the run, or keep the file as an "
        "attachment of a run of its own)",
    )


_PART_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
_NAME_CHARS = 160


def part_attachment(file_name: str, part: str) -> str:
    """Where a part of a trace file is kept (`plan_trace_run`'s `parts`): below the file's
    own attachment name, each level of the part's name made safe as `attachment_of` does
    (``log.eval`` and ``samples/a_epoch_1.json`` give
    ``attachments/log.eval/samples/a_epoch_1.json``)."""
    levels = [attachment_of(level).removeprefix("attachments/") for level in part.split("/")]
    return check_artifact_name("/".join([attachment_of(file_name), *levels]))


def _plain(text: str) -> str:
    """`text` in the characters an artifact name may hold (accents dropped, others '_')."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"\.{2,}", ".", _PART_UNSAFE.sub("_", ascii_text))


def attachment_of(file_name: str) -> str:
    """The name a trace's original file (or a file beside it) is kept under in its run:
    ``attachments/<file name>``, or, for a name the ledger cannot store as it is (spaces,
    letters outside ASCII, a leading dot), a safe form of it with a short hash of the whole
    name, so that two names never meet (``traj_tâche été.json`` ->
    ``attachments/traj_tache_ete-1f0c2a9b.json``). The run's metadata maps each original name
    to its stored one (``source.files``)."""
    name = f"attachments/{file_name}"
    try:
        return check_artifact_name(name)
    except UnsafeNameError:
        pass
    stem, dot, ext = file_name.rpartition(".")
    if not (dot and stem):
        stem, ext = file_name, ""
    ext = _plain(ext)[:10].strip("._+-")
    stem = _plain(stem)[:_NAME_CHARS].strip("._+-") or "file"
    digest = hashlib.sha256(file_name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return check_artifact_name(f"attachments/{stem}-{digest}" + (f".{ext}" if ext else ""))


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# A sibling file this small (a checker's result) is read while planning: cheaper than the
# copy, which opens it, and the stored copy, once more each.
_SMALL_SIBLING = 64 * 1024
_IDENTITY = ("model", "scenario", "provider", "variant", "agent_name", "agent_commit", "run_id")


@dataclass
class TraceFacts:
    """What one trace file says about its run, besides its steps."""

    importer: str
    scenario: str | None = None
    scenario_from: str = "trace"  # or "file name"
    run_key: str | None = None  # tells runs of one file apart (default: the file's hash)
    agent_commit: str | None = None
    started_at: datetime | None = None  # when the steps carry no times of their own
    ended_at: datetime | None = None
    model: str | None = None  # the model the agent was configured with, as the trace says
    model_served: str | None = None
    system_fingerprint: str | None = None
    system_prompt: str | None = None
    prompt: str | None = None
    report: str | None = None
    agent_name: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    model_calls: int | None = None
    notes: list[str] = field(default_factory=list)
    extra_source: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # how the run ended in error, when the trace says it did


@dataclass(frozen=True)
class BuiltTrace:
    """A run's trace ready to store: trace.jsonl, the shell log derived from its command
    steps (with how many commands it holds and how many were refused) and the times of its
    steps. An importer makes it from validated steps (`of_steps`), or from the steps' fields
    when its own code guarantees them (the OpenHands importer)."""

    jsonl: bytes
    shell_log: bytes
    counts: ShellCounts
    times: list[datetime]

    @classmethod
    def of_steps(cls, steps: Sequence[TraceStep]) -> BuiltTrace:
        times = [step.time for step in steps if step.time is not None]
        events = shell_events(steps)
        return cls(trace_bytes(steps), shell_log_bytes(events), ShellCounts.of(events), times)


def shell_log_bytes(events: Sequence[ShellEvent]) -> bytes:
    """shell_audit.jsonl of a trace's shell events (`records.trace.shell_events`)."""
    return b"".join(
        event.model_dump_json(exclude_none=True).encode("utf-8") + b"\n" for event in events
    )


def _slug(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-._")[:60] or "x"


def _sidecar_row(ctx: PlanContext, path: Path) -> tuple[dict[str, Any], str]:
    """The sidecar's row for the trace file `path`: by its name (``traj_x.json`` or
    ``traj_x``), or by its path's last folders and name (``gpt-4o/traj_x.json``), for a data
    set with the same file name in several folders; the longest match wins."""
    if not ctx.sidecar:
        return {}, ""
    folders = path.parent.parts[-3:]
    for depth in range(len(folders), -1, -1):
        prefix = "/".join(folders[len(folders) - depth :])
        for name in (path.name, path.stem):
            key = f"{prefix}/{name}" if prefix else name
            row = ctx.sidecar.get(key)
            if row:
                return row, f"{ctx.sidecar_origin} (entry {key!r})"
    return {}, ""


def _identity(
    path: Path, facts: TraceFacts, ctx: PlanContext
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """Identity fields with where each came from: options first, then the sidecar, then the
    trace itself (the user's word names the run; the trace's own names are kept in source)."""
    values: dict[str, Any] = {}
    kinds: dict[str, str] = {}
    row, origin = _sidecar_row(ctx, path)
    tags: dict[str, str] = {}
    for column, value in row.items():
        if column == "tags" and isinstance(value, dict):
            tags.update({str(k): str(v) for k, v in value.items()})
        elif column in _IDENTITY:
            values[column] = field_value(column, value, origin, column)
            kinds[column] = "sidecar"
    options = ctx.options
    for name in _IDENTITY[:-1]:
        given = getattr(options, name)
        if given is not None:
            flag = "--" + name.replace("_", "-")
            values[name] = field_value(name, given, flag, flag)
            kinds[name] = "option"
    tags.update(options.tags)
    for name, stated, kind in (
        ("scenario", facts.scenario, facts.scenario_from),
        ("model", facts.model or facts.model_served, "trace"),
        ("agent_name", facts.agent_name, "trace"),
        ("agent_commit", facts.agent_commit, "trace"),
    ):
        if name not in values and stated:
            values[name] = stated
            kinds[name] = kind
    if kinds.get("model") == "trace":
        values["model"] = model_without_route(values["model"])
    return values, kinds, tags


# LiteLLM's provider prefixes: `openai/neulab/claude-3-7-sonnet-20250219` is the model
# claude-3-7-sonnet-20250219 reached through an OpenAI-compatible router called neulab.
_ROUTER_PREFIXES = frozenset(
    (
        "openai", "anthropic", "azure", "azure_ai", "bedrock", "vertex_ai", "gemini",
        "openrouter", "together_ai", "groq", "deepseek", "mistral", "ollama", "ollama_chat",
        "huggingface", "litellm_proxy", "hosted_vllm", "fireworks_ai", "deepinfra",
        "cohere", "xai", "perplexity", "sagemaker", "watsonx", "databricks", "cerebras",
    )
)  # fmt: skip


def time_zone(name: str) -> tzinfo:
    """The IANA time zone `name` (Europe/Berlin, UTC); InputError naming --timezone if unknown."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(
            f"--timezone {name!r}: not a time zone name (an IANA name, e.g. Europe/Berlin or UTC)"
        ) from None


def model_without_route(model: str) -> str:
    """The model a LiteLLM route names (`openai/neulab/claude-x` -> `claude-x`); a name that
    does not start with a router's provider prefix (`gpt-4o`, `meta-llama/Llama-3`) is kept.
    The route itself stays in the run's metadata (`source.model_in_trace`)."""
    parts = model.split("/")
    if len(parts) > 1 and parts[0].lower() in _ROUTER_PREFIXES and parts[-1]:
        return parts[-1]
    return model


def _times(
    times: Sequence[datetime], zone: str | None = None
) -> tuple[datetime | None, datetime | None, Any]:
    """started_at and ended_at when the trace's times carry a zone; else the local times
    (first and last, for a duration). Times some with a zone and some without give neither:
    the two cannot be put on one clock. With `zone` (an IANA name, `--timezone`), times
    without a zone are read as local times of that zone, and the metadata says so."""
    if not times:
        return None, None, None
    if zone is not None and any(moment.tzinfo is None for moment in times):
        place = time_zone(zone)
        zoned_times = [m if m.tzinfo else m.replace(tzinfo=place) for m in times]
        return (
            min(zoned_times),
            max(zoned_times),
            {"time_zone": f"{zone}: the trace's times carry no zone; read as {zone} (--timezone)"},
        )
    zoned = sum(1 for moment in times if moment.tzinfo is not None)
    if zoned == len(times):
        return min(times), max(times), None
    if zoned:
        return (
            None,
            None,
            {
                "time_zone": f"mixed: {zoned} of the trace's {len(times)} times carry a UTC "
                f"offset and {len(times) - zoned} do not; started_at, ended_at and the "
                "duration are left empty rather than guessed"
            },
        )
    return (
        None,
        None,
        {
            "first": min(times).isoformat(),
            "last": max(times).isoformat(),
            "time_zone": "unknown: the trace's times carry no zone; started_at and ended_at "
            "are left empty rather than taken for UTC",
        },
    )


def _file_artifacts(
    path: Path,
    raw: bytes,
    digest: str,
    ctx: PlanContext,
    parts: Sequence[tuple[str, bytes]] | None,
    attachments: Sequence[tuple[Path, str]],
) -> tuple[list[PlannedArtifact], dict[str, str]]:
    """The run's files as they will be kept: the trace file (or its run's parts) and the
    files kept with it; and where each came from (`source.files`)."""
    original = attachment_of(path.name)
    if parts is None:
        # Planning has read and hashed the original: sealing writes those bytes rather than
        # read and hash the file again, while the import's memory allows.
        held = HashedBytes(raw, digest[len(HASH_PREFIX) :]) if ctx.hold(len(raw)) else None
        artifacts = [PlannedArtifact(original, str(path), len(raw), held)]
        files = {path.name: original}
    else:
        artifacts, files = [], {}
        for part, content in parts:
            name = part_attachment(path.name, part)
            ctx.check_name(name)
            kept, spooled = ctx.keep_made(content)
            artifacts.append(PlannedArtifact(name, spooled, len(content), kept))
            files[f"{path.name}:{part}"] = name
    for sibling, real in attachments:
        name = attachment_of(sibling.name)
        ctx.check_name(name)
        with open_regular(real, sibling) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > ctx.limit:
                raise ArtifactTooLargeError(too_large(sibling, size, ctx.limit))
            small = size <= _SMALL_SIBLING and ctx.hold(size)
            read = handle.read(size + 1) if small else None
        if read is not None and len(read) > size:
            raise InputError(f"{sibling}: grew while being imported")
        artifacts.append(PlannedArtifact(name, real, len(read) if read else size, read))
    return artifacts, files


def _system_prompt(
    shown: str, facts: TraceFacts, ctx: PlanContext, source: dict[str, Any]
) -> bytes | None:
    """The run's system prompt (--system-prompt-file, else the trace's), where it came from
    said in `source`; a RecordError when the two differ."""
    system = None
    if ctx.system_prompt is not None:
        system, _origin = ctx.system_prompt
        source["system_prompt"] = "--system-prompt-file"
        if facts.system_prompt is not None and facts.system_prompt.encode() != system:
            raise RecordError(
                shown,
                "the trace's system prompt differs from --system-prompt-file; give the one "
                "this run used",
                field="system_prompt",
            )
    elif facts.system_prompt is not None:
        system = facts.system_prompt.encode("utf-8")
        source["system_prompt"] = "the trace"
    else:
        source["system_prompt"] = (
            "none: the trace holds no system prompt, so system_prompt_hash is null"
        )
    return system


def _summary(
    built: BuiltTrace,
    facts: TraceFacts,
    started: datetime | None,
    ended: datetime | None,
    local: dict[str, str] | None,
) -> RunSummary:
    """The run's figures, derived from its trace and what the trace said of the run."""
    counts = built.counts
    duration = (ended - started).total_seconds() if started and ended else None
    if duration is None and local is not None and "first" in local:
        first = datetime.fromisoformat(local["first"])
        last = datetime.fromisoformat(local["last"])
        duration = (last - first).total_seconds()  # a difference needs no zone
    notes = list(facts.notes)
    if counts.not_executed:
        n = counts.not_executed
        said = (
            f"{n} command{'s' if n > 1 else ''} the agent's runtime did not run "
            "(not counted as run)"
        )
        if said not in notes:  # a trace exported by agentledger carries its notes
            notes.append(said)
    if facts.report is None and "no finish step: the run has no report" not in notes:
        notes.append("no finish step: the run has no report")
    return RunSummary(
        commands_run=counts.ran,
        commands_denied=counts.denied,
        duration_s=duration,
        tokens_in=facts.tokens_in,
        tokens_out=facts.tokens_out,
        cost_usd=facts.cost_usd,
        model_calls=facts.model_calls,
        exit_status="failed" if facts.error else "ok" if facts.report is not None else None,
        error=facts.error,
        notes=notes,
        derived=True,
    )


def plan_trace_run(
    path: Path,
    raw: bytes,
    steps: Sequence[TraceStep] | BuiltTrace,
    facts: TraceFacts,
    ctx: PlanContext,
    *,
    attachments: Sequence[tuple[Path, str]] = (),
    parts: Sequence[tuple[str, bytes]] | None = None,
) -> PlannedRun:
    """The checked plan of the run in the trace file `path` (bytes `raw`, made into `steps`,
    or into a trace built already).

    `parts`: the run's own parts of the file, kept instead of the whole (an Inspect log's
    header and its sample's entry, each ``(name in the log, bytes)``), when the file holds
    many runs; they are kept under `part_attachment(path.name, name)`.

    Raises an InputError naming the file and field when the run's identity cannot be had.
    """
    shown = str(path)
    values, kinds, tags = _identity(path, facts, ctx)
    digest = sha256_bytes(raw)
    run_id = _run_id(shown, values, facts, digest)
    check_tags(tags)

    original = attachment_of(path.name)
    artifacts, files = _file_artifacts(path, raw, digest, ctx, parts, attachments)
    if parts is None:
        ctx.check_name(original)
    built = steps if isinstance(steps, BuiltTrace) else BuiltTrace.of_steps(steps)
    for name, made in ((TRACE, built.jsonl), (SHELL_AUDIT, built.shell_log)):
        if made or name == TRACE:
            held_made, spooled = ctx.keep_made(made)
            artifacts.append(PlannedArtifact(name, spooled, len(made), held_made))
    source: dict[str, Any] = {
        "importer": facts.importer,
        "file": path.name,
        "original_sha256": digest,
        "files": {**files, **{s.name: attachment_of(s.name) for s, _real in attachments}},
    }
    if parts is not None:
        source["kept"] = (
            "the run's own parts of the file (its header and entry), byte for byte; the whole "
            "file holds other runs too"
        )
    if facts.model and values["model"] != facts.model:
        source["model_in_trace"] = facts.model
    prompt_hash = None
    system = _system_prompt(shown, facts, ctx, source)
    if system is not None:
        prompt_hash = sha256_bytes(system)
        artifacts.append(PlannedArtifact(SYSTEM_PROMPT, None, len(system), system))
    for name, text in ((PROMPT, facts.prompt), (REPORT, facts.report)):
        if text is not None:
            data = text.encode("utf-8")
            artifacts.append(PlannedArtifact(name, None, len(data), data))
    started, ended, local = _times(built.times, ctx.options.timezone)
    if started is None and local is None and facts.started_at and facts.started_at.tzinfo:
        started, ended = facts.started_at, facts.ended_at
    if local is not None:
        source["local_times"] = local
    source.update(facts.extra_source)
    source["fields"] = dict(sorted({**kinds, "run_id": kinds.get("run_id", "file")}.items()))
    metadata = _metadata(shown, run_id, values, facts, prompt_hash, (started, ended), tags, source)
    summary = _summary(built, facts, started, ended, local)
    run = PlannedRun(path, metadata, summary, tuple(sorted(artifacts, key=lambda a: a.name)))
    if ctx.ledger is not None and ctx.ledger.storage.has_run(run_id):
        check_identical(ctx.ledger, run)
        run = replace(run, identical=True)
    return run


def _run_id(shown: str, values: dict[str, Any], facts: TraceFacts, digest: str) -> str:
    """The run's id: the one given, or ``<scenario>_<model>_<key>`` with the trace's own key
    for the run or the start of the file's hash. RecordError when the scenario or the model
    cannot be had; UnsafeNameError for an id that is not safe as a file name."""
    for required in ("scenario", "model"):
        if not values.get(required):
            raise RecordError(
                shown,
                f"cannot determine the run's {required}: the trace does not say; give it with "
                f"--{required} or a --sidecar column '{required}' (entry: the file name)",
                field=required,
            )
    run_id = values.get("run_id") or (
        f"{_slug(values['scenario'])}_{_slug(values['model'])}_{facts.run_key or digest[7:15]}"
    )
    try:
        check_run_id(run_id)
    except UnsafeNameError as exc:
        raise UnsafeNameError(f"{shown}: {exc}") from None
    return run_id


def _metadata(
    shown: str,
    run_id: str,
    values: dict[str, Any],
    facts: TraceFacts,
    prompt_hash: str | None,
    times: tuple[datetime | None, datetime | None],
    tags: dict[str, str],
    source: dict[str, Any],
) -> RunMetadata:
    """The run's metadata.json; RecordError naming the file and the field a value breaks."""
    started, ended = times
    try:
        return RunMetadata(
            run_id=run_id,
            scenario=values["scenario"],
            model=values["model"],
            model_served=facts.model_served,
            provider=values.get("provider"),
            system_fingerprint=facts.system_fingerprint,
            system_prompt_hash=prompt_hash,
            variant=values.get("variant"),
            agent={"name": values.get("agent_name"), "commit": values.get("agent_commit")},
            started_at=started,
            ended_at=ended,
            silent_update_detectable=bool(
                facts.system_fingerprint
                or (facts.model_served and facts.model_served != values["model"])
            ),
            backfilled=True,
            tags=tags,
            source=source,
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or None
        raise RecordError(shown, error["msg"].removeprefix("Value error, "), field=where) from None
    except ValueError as exc:
        raise RecordError(shown, str(exc).splitlines()[-1]) from None
