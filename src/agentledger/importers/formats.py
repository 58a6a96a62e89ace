"""The importer seam: which formats `agentledger import` reads, how each finds its runs and
plans one, and how the format of unnamed input is detected.

Every format plans runs into the same `PlannedRun`, so that the batch path
(`agentledger.importers.batch`) checks and seals them alike: all or nothing, in one process or
several. A new format is a module with a `find` and a `plan` function, named here.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.importers.plan import ImportOptions
from agentledger.importers.source_files import checked_real, files_below, given_file, open_regular
from agentledger.lazy import load

if TYPE_CHECKING:
    from agentledger.importers.plan import PlannedRun
    from agentledger.importers.run_plan import PlanContext

__all__ = [
    "DIRECTORY",
    "FORMATS",
    "detect_format",
    "finder",
    "planner",
    "resolve_format",
    "without_excluded",
]

DIRECTORY = "directory"
FORMATS: dict[str, tuple[str, str, str]] = {
    # name: (module, function finding runs, function planning one)
    DIRECTORY: ("agentledger.importers.run_plan", "", "plan_run"),
    "openhands": ("agentledger.importers.openhands", "find_trajectories", "plan_trajectory"),
    "jsonl": ("agentledger.importers.jsonl", "find_traces", "plan_trace_file"),
    "otel": ("agentledger.importers.otel", "find_otel_traces", "plan_otel_trace"),
    "inspect": ("agentledger.importers.inspect", "find_inspect_samples", "plan_inspect_sample"),
    "promptfoo": (
        "agentledger.importers.promptfoo",
        "find_promptfoo_results",
        "plan_promptfoo_result",
    ),
}
"""Every importer, by the name `--format` takes."""

Planner = Callable[[Path, "PlanContext", "str | None"], "PlannedRun"]
Finder = Callable[[Sequence[Path], int], list[tuple[Path, str]]]
"""Finds the runs under the paths; files it reads whole are refused over the limit (bytes)."""


def planner(name: str) -> Planner:
    """The function planning one run of format `name`."""
    module, _find, plan = FORMATS[name]
    function: Planner = load(f"{module}:{plan}")
    return function


def finder(name: str) -> Finder | None:
    """The function finding the runs of format `name` (None: the directory layout's)."""
    module, find, _plan = FORMATS[name]
    if not find:
        return None
    function: Finder = load(f"{module}:{find}")
    return function


def _detect_one(path: Path) -> str:
    if path.is_file():
        if path.suffix == ".eval":
            return "inspect"
        if path.suffix in (".json", ".jsonl"):
            with open_regular(given_file(path), path) as handle:
                head = handle.read(4096)
            if b'"resourceSpans"' in head:
                return "otel"
            if b'"evalId"' in head and b'"results"' in head:
                return "promptfoo"
            if head.lstrip().startswith(b"{") and b'"eval"' in head:
                return "inspect"
        if path.suffix == ".jsonl":
            return "jsonl"
        if path.suffix == ".json":
            return "openhands"
        raise InputError(
            f"{path}: cannot tell the format of this file; give --format "
            f"({', '.join(sorted(FORMATS))})"
        )
    kinds = _folder_kinds(path)
    if any(path.glob("*/traj_*.json")):
        kinds.setdefault("openhands", []).append(next(path.glob("*/traj_*.json")))
    if not kinds:
        _suggest_deeper(path)
    if len(kinds) > 1:
        shown = "; ".join(
            f"{kind}: {', '.join(p.name for p in files[:3])}{', ...' if len(files) > 3 else ''}"
            for kind, files in sorted(kinds.items())
        )
        raise InputError(
            f"{path}: the folder holds traces of different formats ({shown}); import each with "
            f"--format ({', '.join(sorted(FORMATS))}), which reads only that format's files"
        )
    return next(iter(kinds), DIRECTORY)


def _suggest_deeper(path: Path) -> None:
    """A folder with no run directory at its top but OpenHands trajectories deeper (a data
    set's root above `evaluation/<model>/traj_*.json`): an InputError naming the format,
    rather than the run directory layout's error about the folder itself."""
    if any(_run_files().fullmatch(entry.name) for entry in _entries(path)):
        return
    # Run directories below (the seed's layout): asked before the trajectories are looked
    # for, as it is usually answered by the first folder, where a search for trajectories
    # lists every folder and the folders inside them.
    if any(
        _run_files().fullmatch(entry.name)
        for child in _entries(path)
        if child.is_dir()
        for entry in _entries(child)
    ):
        return
    for pattern in ("*/*/traj_*.json", "*/*/*/traj_*.json"):
        found = next(path.glob(pattern), None)
        if found is not None:
            raise InputError(
                f"{path}: no run directories here, but OpenHands trajectories below it (e.g. "
                f"{found.relative_to(path)}); import them with --format openhands, which reads "
                "the traj_*.json files at any depth"
            )


def _entries(path: Path) -> list[Path]:
    try:
        return list(path.iterdir())
    except OSError:
        return []


# How many of a folder's files are looked into to tell its format.
_DETECT_FILES = 200


def _kept_file(file: Path, root: str, folder: Path, refused: list[InputError]) -> bool:
    """Whether `file` is a regular file the import may read. A link out of the folder, a loop
    or a dangling link is neither read nor counted (its error goes to `refused`): finding the
    runs refuses it, naming it, with the import's other problems."""
    try:
        return os.path.isfile(checked_real(file, root, folder))
    except InputError as exc:
        refused.append(exc)
        return False


def _folder_kinds(path: Path) -> dict[str, list[Path]]:
    """The trace formats of the files at the top of the folder `path`, with files of each:
    ``traj_*.json`` are OpenHands, ``*.eval`` Inspect AI, ``*.json`` and ``*.jsonl`` with
    OTLP spans or an Inspect header those, other ``*.jsonl`` the plain format. Other files
    (and run directories, below the top) say nothing."""
    kinds: dict[str, list[Path]] = {}
    try:
        names = sorted(entry.name for entry in path.iterdir())
    except OSError:
        return kinds
    opening = ("traj_", ".json")
    if not any(n.startswith(opening[0]) and n.endswith(opening[1]) for n in names) and any(
        _run_files().fullmatch(name) for name in names
    ):
        return kinds  # a run directory (the seed's layout): its shell log is no trace file
    root = os.path.realpath(path)
    refused: list[InputError] = []
    files = [
        path / name
        for name in names
        if Path(name).suffix in (".json", ".jsonl", ".eval")
        and not name.startswith(".")
        and _kept_file(path / name, root, path, refused)
    ]
    if refused and not files:
        raise refused[0]  # nothing else here to tell the format by
    trajectories = [p for p in files if p.name.startswith("traj_") and p.suffix == ".json"]
    if trajectories:
        kinds["openhands"] = trajectories
    for file in [p for p in files if not p.name.startswith("traj_")][:_DETECT_FILES]:
        if file.suffix == ".eval":
            kind: str | None = "inspect"
        else:
            try:
                kind = _detect_one(file)
                if kind == "inspect":  # a log's header: {"version": 2, "status": ..., "eval"
                    with file.open("rb") as handle:
                        kind = "inspect" if b'"status"' in handle.read(4096) else None
            except (InputError, OSError):
                kind = None
            if kind == "openhands":  # any .json: only traj_*.json names say OpenHands
                kind = None
        if kind is not None:
            kinds.setdefault(kind, []).append(file)
    return kinds


@functools.cache
def _run_files() -> re.Pattern[str]:
    """The names of a run directory's own files (PROMPT.txt, metadata.json, ...)."""
    from agentledger.importers.layout import DEFAULT_PATTERNS

    globs = [glob for patterns in DEFAULT_PATTERNS.values() for glob in patterns]
    return re.compile("|".join(f"(?:{fnmatch.translate(glob)})" for glob in globs))


# The files each trace format reads in a folder, for --exclude.
_TRACE_GLOBS = {
    "openhands": ("traj_*.json",),
    "jsonl": ("*.jsonl",),
    "otel": ("*.json", "*.jsonl"),
    "inspect": ("*.eval", "*.json"),
    "promptfoo": ("*.json",),
}


def _trace_name(kind: str) -> Callable[[str], bool]:
    """Whether a file name is one format `kind` reads."""
    globs = _TRACE_GLOBS[kind]
    return lambda name: any(fnmatch.fnmatchcase(name, glob) for glob in globs)


def without_excluded(paths: Sequence[Path], kind: str, exclude: re.Pattern[str]) -> list[Path]:
    """`paths` with every folder replaced by the files of format `kind` below it that
    `exclude` (from --exclude globs) does not match, by their path below the folder or their
    name; a file given itself is left out when its name matches. A folder all of whose files
    are excluded is an InputError."""
    kept: list[Path] = []
    for path in paths:
        if not path.is_dir():
            if not exclude.fullmatch(path.name):
                kept.append(path)
            continue
        files = [file for file, _real in files_below(path, _trace_name(kind))]
        left = [
            file
            for file in files
            if not exclude.fullmatch(file.name)
            and not exclude.fullmatch(file.relative_to(path).as_posix())
        ]
        if files and not left:
            raise InputError(f"{path}: every {kind} file here or below is left out by --exclude")
        kept += left if files else [path]  # none at all: the format's own error says so
    return kept


def detect_format(paths: Sequence[Path]) -> str:
    """The format of `paths`: OpenHands for ``.json`` files and folders of ``traj_*.json``,
    jsonl for ``.jsonl`` files, otel for files of OTLP JSON spans (``resourceSpans``), inspect
    for Inspect AI logs (``.eval``, or JSON with an ``eval`` header), else run directories.
    Paths of different formats are refused."""
    found = {path: _detect_one(path) for path in paths}
    kinds = sorted(set(found.values()))
    if len(kinds) > 1:
        shown = "; ".join(f"{path} looks like {kind}" for path, kind in found.items())
        raise InputError(f"the paths hold different formats ({shown}); import them one by one")
    return kinds[0] if kinds else DIRECTORY


def resolve_format(paths: Sequence[Path], options: ImportOptions) -> ImportOptions:
    """`options` with its format named (detected from `paths` when not given)."""
    if options.format is not None:
        if options.format not in FORMATS:
            raise InputError(
                f"unknown import format {options.format!r}; use one of {', '.join(sorted(FORMATS))}"
            )
        chosen = options.format
    elif options.mapping or options.name_pattern:
        chosen = DIRECTORY  # --map and --name-pattern say how run directories are laid out
    else:
        chosen = detect_format(paths)
    if chosen == DIRECTORY:
        for path in paths:
            if path.is_file():
                raise InputError(
                    f"{path}: a file, where the directory importer reads run directories; "
                    "give --format"
                )
    return replace(options, format=chosen)
