"""Finding OpenHands trajectories (``traj_<task>.json``) and the other files of their task,
counting a large one's events before it is parsed, and decoding its events a chunk at a
time; `agentledger.importers.openhands` reads them."""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from agentledger.errors import InputError
from agentledger.importers.run_plan import PlanContext
from agentledger.importers.source_files import checked_real, files_below, given_file
from agentledger.importers.trace_runs import MAX_TRACE_STEPS, too_many_steps
from agentledger.records import DEFAULT_MAX_ARTIFACT_BYTES, MAX_JSON_DEPTH
from agentledger.records.fast_json import list_marks

__all__ = [
    "PREFIX",
    "Doubt",
    "check_event_count",
    "find_trajectories",
    "scenario_of",
    "siblings",
    "streamed_events",
    "task_files",
]

PREFIX = "traj_"
"""What a trajectory file's name starts with."""


def scenario_of(path: Path) -> str:
    """The task a trajectory file answers: ``traj_<task>.json`` gives ``<task>``."""
    stem = path.stem
    return stem[len(PREFIX) :] if stem.startswith(PREFIX) and len(stem) > len(PREFIX) else stem


def find_trajectories(
    paths: Sequence[Path], limit: int = DEFAULT_MAX_ARTIFACT_BYTES
) -> list[tuple[Path, str]]:
    """Every trajectory under `paths` (files given, or ``traj_*.json`` in directories), with
    its real path, in a stable order."""
    found: list[tuple[Path, str]] = []
    seen: set[str] = set()
    beside: list[Path] = []
    for path in paths:
        if not path.is_dir():
            real = given_file(path)
            if _beside_a_trajectory(path):
                beside.append(path)
            elif real not in seen:
                seen.add(real)
                found.append((path, real))
            continue
        files = files_below(path, lambda name: name.startswith(PREFIX) and name.endswith(".json"))
        if not files:
            raise InputError(
                f"{path}: no OpenHands trajectory (traj_*.json) here or below; give the "
                "trajectory files themselves, or another --format"
            )
        for file, real in files:
            if real not in seen:
                seen.add(real)
                found.append((file, real))
    if beside and not found:
        raise InputError(
            f"{beside[0]}: kept with the trajectory beside it "
            f"({PREFIX}{beside[0].name.partition('_')[2]}), not a trajectory itself; give the "
            "trajectory (or its folder)"
        )
    return found


def _beside_a_trajectory(path: Path) -> bool:
    """Whether the file `path` is one of the files kept with a trajectory beside it
    (``eval_<task>.json`` beside ``traj_<task>.json``): given with it, as ``folder/*.json``
    gives them, it is no trajectory of its own."""
    kind, sep, rest = path.name.partition("_")
    return (
        bool(sep and rest) and kind + sep != PREFIX and (path.parent / f"{PREFIX}{rest}").is_file()
    )


# A file smaller than this cannot hold enough events to matter: it is parsed at once.
_COUNT_FROM_BYTES = 1 << 20


def check_event_count(raw: bytes, origin: str) -> None:
    """Refuse a trajectory of more than `MAX_TRACE_STEPS` events, counted by a streaming
    parser (ijson) that stops there, before the file is parsed whole: parsed, a million
    events take gigabytes (orjson builds every event at once). For a trajectory decoded
    whole (`streamed_events` counts the others' events in its scan)."""
    if len(raw) < _COUNT_FROM_BYTES:
        return
    import ijson  # type: ignore[import-untyped, unused-ignore]

    prefix = "history.item" if raw.lstrip()[:1] == b"{" else "item"
    try:
        for count, _event in enumerate(ijson.items(raw, prefix, use_float=True), start=1):
            if count > MAX_TRACE_STEPS:
                raise too_many_steps(origin)
    except ijson.JSONError:
        return  # malformed: the strict parser says where


class Doubt(Exception):
    """The streamed decoding cannot vouch for a chunk of events: the file is decoded whole."""


_SPACE = re.compile(rb"[ \t\r\n]*")
_CHUNK_BYTES = 1 << 20  # how many bytes of events are decoded at once (or one larger event)
_CHUNK_EVENTS = 1024


def streamed_events(raw: bytes, origin: str) -> tuple[Iterator[Any], dict[str, Any]] | None:
    """The events of the trajectory `raw`, decoded a chunk at a time, and its metadata; None
    when only decoding the file whole can tell (`records.decode_json`: a doubt of the strict
    scan, no event, or no C scan). The iterator raises `Doubt` where a chunk is not strict
    JSON. A trajectory of more than `MAX_TRACE_STEPS` events is refused (from 1 MB, as
    `check_event_count` does), counted by the scan."""
    start = _SPACE.match(raw).end()  # type: ignore[union-attr]  # matches the empty string
    first = raw[start : start + 1]
    if first not in (b"[", b"{"):
        return None
    marks = list_marks(raw, MAX_JSON_DEPTH, first == b"{")
    if marks is None or (len(marks) == 2 and not raw[marks[0] + 1 : marks[1]].strip()):
        return None
    count = len(marks) - 1
    if count > MAX_TRACE_STEPS and len(raw) >= _COUNT_FROM_BYTES:
        raise too_many_steps(origin)
    meta: dict[str, Any] = {}
    if first == b"{":
        try:
            rest = orjson.loads(raw[: marks[0]] + b"[]" + raw[marks[-1] + 1 :])
        except orjson.JSONDecodeError:
            return None
        found = rest.get("metadata")
        meta = found if isinstance(found, dict) else {}
    return _chunks(raw, marks), meta


def _chunks(raw: bytes, marks: memoryview) -> Iterator[Any]:
    """The events between `marks` (`fast_json.list_marks`), decoded by orjson a chunk at a
    time; `Doubt` when it refuses one (the strict decoder then says why, or takes it)."""
    view = memoryview(raw)
    count = len(marks) - 1
    first = 0
    while first < count:
        # The events up to the last mark within _CHUNK_BYTES (at least one, at most _CHUNK_EVENTS).
        within = bisect_right(marks, marks[first] + _CHUNK_BYTES, first + 1, count + 1) - 1
        end = max(first + 1, min(within, first + _CHUNK_EVENTS))
        chunk = bytearray(b"[")
        chunk += view[marks[first] + 1 : marks[end]]
        chunk += b"]"
        try:
            events = orjson.loads(chunk)
        except orjson.JSONDecodeError:
            raise Doubt from None
        del chunk
        if len(events) != end - first:  # pragma: no cover (the scan counted its commas)
            raise Doubt
        yield from events
        first = end


def task_files(folder: Path) -> dict[str, list[str]]:
    """The files of `folder` named ``<kind>_<rest>`` (no ``_`` in the kind), by ``<rest>``;
    links among them too (`siblings` checks where they point), and FIFOs, devices and sockets
    (refused when read, as the directory importer refuses them: never skipped unsaid)."""
    by_rest: dict[str, list[str]] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            _kind, sep, rest = entry.name.partition("_")
            if sep and rest and (entry.is_symlink() or not entry.is_dir(follow_symlinks=False)):
                by_rest.setdefault(rest, []).append(entry.name)
    return by_rest


def siblings(path: Path, task: str, ctx: PlanContext | None = None) -> list[tuple[Path, str]]:
    """Other files of the same task in the trajectory's folder: ``<kind>_<task>.json``, each
    with its real path. A link among them must stay inside the folder (`source_files`).

    The folder is listed once per import (`ctx`): a flat folder of a thousand trajectories
    would otherwise be listed a thousand times."""
    if not path.name.startswith(PREFIX):
        return []
    folder = path.parent
    by_rest = task_files(folder) if ctx is None else ctx.per_folder("openhands", folder, task_files)
    names = by_rest.get(f"{task}{path.suffix}", ())
    root = os.path.realpath(folder)
    return [
        (folder / name, checked_real(folder / name, root, folder))
        for name in sorted(names)
        if name != path.name
    ]
