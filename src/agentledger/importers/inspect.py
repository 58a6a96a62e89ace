"""Inspect AI logs (``.eval`` and ``.json``): one run per sample and epoch.

The logs are read with inspect-ai's own reader (the optional extra ``agentledger[inspect]``),
never by reverse-engineering the format. A sample's messages become steps: the system message
and user messages, each assistant message (its text, then each tool call: a shell command when
its arguments hold a ``cmd`` or ``command`` string), and each tool message (the call's result,
or an error). The sample's scores are kept in ``source.scores`` as the log's own labels.

Identity: the model asked for (the eval's), the model served (the sample output's), the task and
sample id as the scenario, the log's git revision as the agent's commit, the system message as
the system prompt (hashed), the first user message as the prompt, the last assistant text as
the report; the sample's start and end times (UTC).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import zipfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentledger.errors import ArtifactTooLargeError, InputError, RecordError
from agentledger.identity import sha256_bytes
from agentledger.importers.openhands_events import command_class
from agentledger.importers.plan import PlannedRun
from agentledger.importers.run_plan import PlanContext
from agentledger.importers.source_files import (
    check_json_containers,
    given_file,
    open_regular,
    read_regular,
    too_large,
)
from agentledger.importers.trace_runs import (
    TraceFacts,
    attachment_of,
    part_attachment,
    plan_trace_run,
    trace_files,
)
from agentledger.records import DEFAULT_MAX_ARTIFACT_BYTES, decode_json
from agentledger.records.trace import STEPS, step_text_fields
from agentledger.store.sizes import format_size
from agentledger.strict_json import INT_MAX, INT_MIN

__all__ = ["FORMAT", "find_inspect_samples", "plan_inspect_sample"]

FORMAT = "inspect"
_SEPARATOR = "#sample="
# What a run id cannot hold of a sample id (`trace_runs._slug` makes it '-').
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9._-]")
_EPOCH = "#epoch="


def _read_log(path: Path) -> Any:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise InputError(
            f"{path}: reading Inspect AI logs needs inspect-ai: pip install 'agentledger[inspect]'"
        ) from None
    try:
        return read_eval_log(str(path))
    except Exception as exc:  # the reader's own errors are many and undocumented
        raise InputError(f"{path}: not a readable Inspect AI log ({exc})") from None


def _check_log_size(real: str, file: Path, limit: int) -> None:
    """Refuse a log over `limit` bytes, or a zipped log (``.eval``) whose entries unpack to
    more: the bytes are counted as they are unpacked, since the sizes a zip states are only
    claims, so a zip bomb is refused after `limit` bytes, before the log is parsed. The log's
    JSON (a ``.json`` log, each ``.json`` entry of a zipped one) is checked first
    (`_check_json`), since inspect-ai's own reader takes the last of two keys."""
    with open_regular(real, file) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise ArtifactTooLargeError(too_large(file, size, limit))
        if not zipfile.is_zipfile(handle):
            handle.seek(0)
            _check_json(handle.read(), str(file))
            return
        handle.seek(0)
        with contextlib.suppress(ImportError):
            # What inspect-ai compresses its logs with (zstd), which zipfile reads once it is
            # imported (before Python 3.14); inspect-ai imports it itself, later.
            import zipfile_zstd  # type: ignore[import-not-found, import-untyped, unused-ignore]  # noqa: F401
        unpacked = 0
        try:
            with zipfile.ZipFile(handle) as log:
                for info in log.infolist():
                    chunks: list[bytes] = []
                    with log.open(info) as member:
                        while chunk := member.read(_UNPACK_CHUNK):
                            unpacked += len(chunk)
                            chunks.append(chunk)
                            if unpacked > limit:
                                raise ArtifactTooLargeError(
                                    f"{file}: its entries unpack to more than "
                                    f"{format_size(limit)} (at {info.filename!r}), the artifact "
                                    "size limit (raise it for this import with "
                                    "--max-artifact-size)"
                                )
                    if info.filename.endswith(".json"):
                        _check_json(b"".join(chunks), f"{file}, entry {info.filename}")
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
            raise InputError(f"{file}: not a readable Inspect AI log ({exc})") from None


_UNPACK_CHUNK = 1 << 20


def _check_json(raw: bytes, where: str) -> None:
    """Refuse a key given twice in an object and an integer past 64 bits, naming `where`, as
    every record does (`decode_json`). NaN and Infinity are let through: inspect-ai writes
    them as constants (a metric of one sample has no stderr), so they are its JSON."""
    check_json_containers(raw, where)
    try:
        decode_json(raw, where)
    except RecordError:
        try:
            json.loads(raw, object_pairs_hook=_once, parse_int=_int64)
        except _Too as exc:
            raise RecordError(where, f"malformed JSON: {exc}") from None
        except ValueError:
            return  # no JSON at all: inspect-ai's reader says what it makes of it


class _Too(ValueError):
    """A key given twice, or an integer too large: what `_check_json` refuses."""


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise _Too(f"duplicate key {key!r} in an object (each key once)")
        value[key] = item
    return value


def _int64(text: str) -> int:
    value = int(text)
    if not INT_MIN <= value <= INT_MAX:
        raise _Too(f"the number {text} does not fit in 64 bits")
    return value


def find_inspect_samples(
    paths: Sequence[Path], limit: int = DEFAULT_MAX_ARTIFACT_BYTES
) -> list[tuple[Path, str]]:
    """One entry per sample and epoch of every log under `paths` (``log#sample=ID#epoch=N``)."""
    found: list[tuple[Path, str]] = []
    for path in paths:
        for file, real in trace_files(path, (".eval", ".json"), "Inspect AI log"):
            _check_log_size(real, file, limit)
            log = _read_log(Path(real))
            if not log.samples:
                raise InputError(
                    f"{file}: no samples in this log (written with log_samples=False?): "
                    "nothing to import"
                )
            for sample in log.samples:
                key = f"{_SEPARATOR}{sample.id}{_EPOCH}{sample.epoch}"
                found.append((Path(f"{file}{key}"), f"{real}{key}"))
    return found


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content or None
    texts = [getattr(part, "text", None) for part in content or []]
    joined = "\n".join(t for t in texts if isinstance(t, str))
    return joined or None


def _steps(sample: Any, attachment: str, facts: TraceFacts) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    calls: dict[str, int] = {}
    for number, message in enumerate(sample.messages or []):
        base: dict[str, Any] = {
            "index": len(steps),
            "source": {"file": attachment, "event": f"message {number}"},
            "raw_type": f"message:{message.role}",
        }
        text = _text(message.content)
        if message.role == "system":
            facts.system_prompt = facts.system_prompt or text
            steps.append(
                {
                    **base,
                    "actor": "environment",
                    "kind": "message",
                    "content": step_text_fields(text),
                }
            )
        elif message.role == "user":
            facts.prompt = facts.prompt or text
            steps.append(
                {**base, "actor": "user", "kind": "message", "content": step_text_fields(text)}
            )
        elif message.role == "assistant":
            model = getattr(message, "model", None)
            if text is not None or not message.tool_calls:
                facts.report = text if text is not None else facts.report
                steps.append(
                    {
                        **base,
                        "actor": "agent",
                        "kind": "message",
                        "model": model,
                        "content": step_text_fields(text),
                    }
                )
            for call in message.tool_calls or []:
                arguments = call.arguments if isinstance(call.arguments, dict) else None
                command = next(
                    (
                        arguments[key]
                        for key in ("cmd", "command")
                        if arguments and isinstance(arguments.get(key), str)
                    ),
                    None,
                )
                calls[call.id] = len(steps)
                steps.append(
                    {
                        **base,
                        "index": len(steps),
                        "actor": "agent",
                        "kind": "command" if command is not None else "tool_call",
                        "tool": call.function,
                        "call_id": call.id,
                        "arguments": json.loads(json.dumps(arguments, default=str))
                        if arguments
                        else None,
                        "command": command,
                        "command_class": command_class(command) if command else None,
                        "model": model,
                    }
                )
        elif message.role == "tool":
            cause = calls.get(message.tool_call_id or "")
            error = getattr(message, "error", None)
            was_command = cause is not None and steps[cause]["kind"] == "command"
            kind = "error" if error else ("command_output" if was_command else "tool_result")
            shown = text if not error else f"{getattr(error, 'message', error)}"
            steps.append(
                {
                    **base,
                    "actor": "tool",
                    "kind": kind,
                    "tool": message.function,
                    "call_id": message.tool_call_id,
                    "cause": cause,
                    "content": step_text_fields(shown),
                }
            )
        else:
            steps.append({**base, "actor": "environment", "kind": "other"})
    return steps


def _scores(sample: Any, notes: list[str]) -> dict[str, Any]:
    """The sample's scores as JSON. A score that is NaN or infinite (inspect-ai writes them as
    constants; strict JSON has none) is kept as no score (null), and `notes` says which."""
    out: dict[str, Any] = {}
    odd: list[str] = []
    for name, score in (sample.scores or {}).items():
        fields = {"value": score.value, "answer": score.answer, "explanation": score.explanation}
        out[name] = json.loads(json.dumps(fields, default=str), parse_constant=_no_number)
        if _has_none_for_constant(fields["value"]):
            odd.append(str(name))
    if odd:
        notes.append(
            f"score {', '.join(repr(name) for name in odd)} of sample {sample.id} is NaN or "
            "infinite, which is no number: kept as no score (null)"
        )
    return out


def _no_number(_constant: str) -> None:
    """NaN, Infinity and -Infinity read as null (no score), never as a float."""
    return None


def _has_none_for_constant(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(map(_has_none_for_constant, value.values()))
    if isinstance(value, list | tuple):
        return any(map(_has_none_for_constant, value))
    return False


def plan_inspect_sample(path: Path, ctx: PlanContext, real: str | None = None) -> PlannedRun:
    """The checked plan of one sample and epoch (``log#sample=ID#epoch=N``) of an Inspect log."""
    file_name, _, key = str(path).partition(_SEPARATOR)
    sample_id, _, epoch = key.rpartition(_EPOCH)
    file = Path(file_name)
    at = Path(real.partition(_SEPARATOR)[0] if real else given_file(file))
    # The samples of a log come in a row: it is read and parsed once for all of them.
    raw = ctx.latest("inspect-bytes", at, lambda f: read_regular(str(f), ctx.limit, file))
    log = ctx.latest("inspect-log", at, _read_log)
    sample = next(
        (s for s in log.samples or [] if str(s.id) == sample_id and str(s.epoch) == epoch), None
    )
    if sample is None:
        raise InputError(f"{file}: no sample {sample_id!r} (epoch {epoch})")
    facts = TraceFacts(importer=FORMAT, agent_name="inspect")
    parts = _sample_parts(at, sample, ctx)
    values = _steps(
        sample,
        part_attachment(file.name, parts[-1][0]) if parts else attachment_of(file.name),
        facts,
    )
    try:
        steps = STEPS.validate_python(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise RecordError(
            str(file), f"sample {sample_id}: {first['msg']}", field=f"step {where}"
        ) from None
    eval_spec = log.eval
    facts.model = eval_spec.model
    facts.model_served = getattr(sample.output, "model", None) or None
    facts.scenario, facts.scenario_from = f"{eval_spec.task}-{sample_id}", "log"
    revision = getattr(eval_spec, "revision", None)
    facts.agent_commit = getattr(revision, "commit", None) or None
    facts.run_key = f"e{epoch}-{sha256_bytes(raw)[7:15]}"
    if _UNSAFE_ID.search(sample_id):  # "a b" and "a-b" would give one run id: the id's hash
        facts.run_key += f"-{sha256_bytes(sample_id.encode('utf-8', 'surrogatepass'))[7:13]}"
    facts.started_at = _when(getattr(sample, "started_at", None))
    facts.ended_at = _when(getattr(sample, "completed_at", None))
    usage = list((sample.model_usage or {}).values())
    if usage:
        facts.tokens_in = sum(u.input_tokens or 0 for u in usage)
        facts.tokens_out = sum(u.output_tokens or 0 for u in usage)
        costs = [u.total_cost for u in usage if u.total_cost is not None]
        facts.cost_usd = sum(costs) if costs else None
    facts.extra_source.update(
        {
            "task": eval_spec.task,
            "sample_id": sample_id,
            "epoch": int(epoch),
            "eval_id": getattr(eval_spec, "eval_id", None),
            "scores": _scores(sample, facts.notes),
        }
    )
    if getattr(sample, "error", None) is not None:
        facts.error = f"the sample ended with an error: {sample.error.message}"[:_ERROR_CHARS]
    elif getattr(log, "status", None) == "error":
        facts.notes.append("the log's evaluation ended with status error")
    return plan_trace_run(file, raw, steps, facts, ctx, parts=parts)


def _sample_parts(file: Path, sample: Any, ctx: PlanContext) -> list[tuple[str, bytes]] | None:
    """A sample's own part of its log, kept instead of the whole log (which holds every other
    sample too): of an ``.eval`` log (a zip), the log's header and the sample's entry, their
    bytes as in the log; of a ``.json`` log (one document), the document without its samples
    and the sample, each written out as JSON. None when the log holds this sample only, or
    its parts cannot be told."""
    entry = f"samples/{sample.id}_epoch_{sample.epoch}.json"
    if file.suffix == ".json":
        header, samples = ctx.latest("inspect-json-parts", file, _json_parts)
        own = samples.get((str(sample.id), str(sample.epoch)))
        if own is None or len(samples) < 2:
            return None
        return [("header.json", header), (entry, own)]
    if file.suffix != ".eval":
        return None
    try:
        with zipfile.ZipFile(file) as log:
            names = set(log.namelist())
            if entry not in names:
                return None
            header = [name for name in ("header.json", "_journal/start.json") if name in names]
            return [(name, log.read(name)) for name in (*header[:1], entry)]
    except (OSError, zipfile.BadZipFile):
        return None


def _json_parts(file: Path) -> tuple[bytes, dict[tuple[str, str], bytes]]:
    """A ``.json`` log without its samples, and each sample (by id and epoch), as JSON."""
    try:
        document = json.loads(file.read_bytes())
    except (OSError, ValueError):
        return b"", {}
    if not isinstance(document, dict) or not isinstance(document.get("samples"), list):
        return b"", {}
    samples = {
        (str(item.get("id")), str(item.get("epoch"))): _json(item)
        for item in document["samples"]
        if isinstance(item, dict)
    }
    return _json({k: v for k, v in document.items() if k != "samples"}), samples


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8", "surrogatepass") + b"\n"


_ERROR_CHARS = 2000


def _when(value: Any) -> datetime | None:
    """A sample's time (inspect-ai gives datetimes, or ISO strings in older logs)."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return value if isinstance(value, datetime) else None
