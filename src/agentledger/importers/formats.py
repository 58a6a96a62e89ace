"""The importer seam: which formats `agentledger import` reads, how each finds its runs and
plans one, and how the format of unnamed input is detected.

Every format plans runs into the same `PlannedRun`, so that the batch path
(`agentledger.importers.batch`) checks and seals them alike: all or nothing, in one process or
several. A new format is a module with a `find` and a `plan` function, named here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.importers.plan import ImportOptions

if TYPE_CHECKING:
    from agentledger.importers.plan import PlannedRun
    from agentledger.importers.run_plan import PlanContext

__all__ = ["DIRECTORY", "FORMATS", "detect_format", "finder", "planner", "resolve_format"]

DIRECTORY = "directory"
FORMATS: dict[str, tuple[str, str, str]] = {
    # name: (module, function finding runs, function planning one)
    DIRECTORY: ("agentledger.importers.run_plan", "", "plan_run"),
    "openhands": ("agentledger.importers.openhands", "find_trajectories", "plan_trajectory"),
    "jsonl": ("agentledger.importers.jsonl", "find_traces", "plan_trace_file"),
    "otel": ("agentledger.importers.otel", "find_otel_traces", "plan_otel_trace"),
    "inspect": ("agentledger.importers.inspect", "find_inspect_samples", "plan_inspect_sample"),
}
"""Every importer, by the name `--format` takes."""

Planner = Callable[[Path, "PlanContext", "str | None"], "PlannedRun"]
Finder = Callable[[Sequence[Path]], list[tuple[Path, str]]]


def planner(name: str) -> Planner:
    """The function planning one run of format `name`."""
    module, _find, plan = FORMATS[name]
    function: Planner = getattr(importlib.import_module(module), plan)
    return function


def finder(name: str) -> Finder | None:
    """The function finding the runs of format `name` (None: the directory layout's)."""
    module, find, _plan = FORMATS[name]
    if not find:
        return None
    function: Finder = getattr(importlib.import_module(module), find)
    return function


def _detect_one(path: Path) -> str:
    if path.is_file():
        if path.suffix == ".eval":
            return "inspect"
        if path.suffix in (".json", ".jsonl"):
            with path.open("rb") as handle:
                head = handle.read(4096)
            if b'"resourceSpans"' in head:
                return "otel"
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
    if any(path.glob("traj_*.json")) or any(path.glob("*/traj_*.json")):
        return "openhands"
    return DIRECTORY


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
