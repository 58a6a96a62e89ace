"""Finding OpenHands trajectories (``traj_<task>.json``) and the other files of their task,
and counting a large one's events before it is parsed whole; `agentledger.importers.openhands`
reads them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from agentledger.errors import InputError
from agentledger.importers.run_plan import PlanContext
from agentledger.importers.source_files import checked_real, files_below, given_file
from agentledger.importers.trace_runs import MAX_TRACE_STEPS, too_many_steps
from agentledger.records import DEFAULT_MAX_ARTIFACT_BYTES

__all__ = [
    "PREFIX",
    "check_event_count",
    "find_trajectories",
    "scenario_of",
    "siblings",
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
    events take gigabytes (orjson builds every event at once)."""
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


def task_files(folder: Path) -> dict[str, list[str]]:
    """The files of `folder` named ``<kind>_<rest>`` (no ``_`` in the kind), by ``<rest>``;
    links among them too (`siblings` checks where they point)."""
    by_rest: dict[str, list[str]] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            _kind, sep, rest = entry.name.partition("_")
            if sep and rest and (entry.is_symlink() or entry.is_file(follow_symlinks=False)):
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
