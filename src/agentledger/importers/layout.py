"""Where runs are and which file is which: layout patterns, run discovery, directory scans.

A run directory is recognised by its files (PROMPT.txt, ghost_report_*.md, metadata.json, ...
or the patterns given with --map). A directory that is not a run is a directory of runs. A scan
lists a run's regular files: symlinks are followed when they stay inside the run and refused when
they point outside it; hidden and excluded files are skipped (and listed as skipped).
"""

from __future__ import annotations

import fnmatch
import functools
import operator
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from agentledger.errors import ArtifactTooLargeError, InputError, UnsafeNameError
from agentledger.importers.source_files import checked_file, checked_real, refused_entry
from agentledger.store.sizes import format_size
from agentledger.store.storage.checked import lstat_inside

__all__ = [
    "ARTIFACT_KEYS",
    "DEFAULT_NAME_PATTERN",
    "DEFAULT_PATTERNS",
    "Layout",
    "SourceFile",
    "shown",
]

ARTIFACT_KEYS = (
    "prompt",
    "system_prompt",
    "report",
    "audit",
    "shell_audit",
    "snapshot",
    "metadata",
    "summary",
)
DEFAULT_PATTERNS: Mapping[str, tuple[str, ...]] = {
    "prompt": ("PROMPT.txt",),
    "system_prompt": ("system_prompt.txt",),
    "report": ("ghost_report_*.md", "report.md"),
    "audit": ("ghost_audit_*.md", "audit.md"),
    "shell_audit": ("shell_audit_*.jsonl", "shell_audit.jsonl"),
    "snapshot": ("snapshot.*", "snapshot_*"),
    "metadata": ("metadata.json",),
    "summary": ("run_summary.json",),
}
# A directory is a run when one of its files matches one of these.
_RUN_MARKERS = ("prompt", "report", "audit", "shell_audit", "metadata")
# use_case_m_haiku_20260312, use_case_m_haiku_20260312_000123, ..._20260312T101500Z
DEFAULT_NAME_PATTERN = (
    r"(?P<scenario>.+?)_(?P<model>[^_]+)_(?P<date>\d{8}(?:T\d{4,6}Z?)?)(?:[_.-].*)?"
)
_NAME_GROUPS = ("scenario", "model", "date", "variant")
_KEYS_CACHE_SIZE = 4096


def _globs(patterns: Sequence[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


@dataclass(frozen=True)
class Layout:
    top: dict[str, re.Pattern[str]]  # patterns for files at the top of a run
    nested: dict[str, re.Pattern[str]]  # patterns with '/', matched against relative paths
    exclude: re.Pattern[str] | None
    name: re.Pattern[str]

    @classmethod
    def build(
        cls,
        mapping: Mapping[str, Sequence[str]],
        name_pattern: str | None = None,
        exclude: Sequence[str] = (),
    ) -> Layout:
        """The layout from --map patterns (KEY -> globs), --name-pattern and --exclude."""
        unknown = sorted(set(mapping) - set(ARTIFACT_KEYS))
        if unknown:
            raise InputError(
                f"--map {unknown[0]}: unknown artifact key; use one of {', '.join(ARTIFACT_KEYS)}"
            )
        top: dict[str, re.Pattern[str]] = {}
        nested: dict[str, re.Pattern[str]] = {}
        for key in ARTIFACT_KEYS:
            patterns = tuple(mapping.get(key) or DEFAULT_PATTERNS[key])
            if flat := [p for p in patterns if "/" not in p]:
                top[key] = _globs(flat)
            if deep := [p.strip("/") for p in patterns if "/" in p]:
                nested[key] = _globs(deep)
        try:
            name = re.compile(name_pattern or DEFAULT_NAME_PATTERN)
        except re.error as exc:
            raise InputError(
                f"--name-pattern {name_pattern!r}: not a regular expression: {exc}"
            ) from None
        extra = sorted(set(name.groupindex) - set(_NAME_GROUPS))
        if extra:
            raise InputError(
                f"--name-pattern: unknown group (?P<{extra[0]}>...); "
                f"named groups may be {', '.join(_NAME_GROUPS)}"
            )
        excluded = _globs(list(exclude)) if exclude else None
        return cls(top=top, nested=nested, exclude=excluded, name=name)

    def keys_for(self, rel: str) -> list[str]:
        table = self.nested if "/" in rel else self.top
        return [key for key, pattern in table.items() if pattern.fullmatch(rel)]

    @functools.cached_property
    def _keys_cache(self) -> dict[str, tuple[str, ...]]:
        return {}

    def _cached_keys(self, rel: str) -> tuple[str, ...]:
        """`keys_for`, remembered: runs mostly hold files of the same few names."""
        cache = self._keys_cache
        keys = cache.get(rel)
        if keys is None:
            if len(cache) >= _KEYS_CACHE_SIZE:
                cache.clear()
            keys = cache[rel] = tuple(self.keys_for(rel))
        return keys

    @functools.cached_property
    def _top_markers(self) -> re.Pattern[str] | None:
        """One pattern for every top-level run marker (a run has a file matching one)."""
        patterns = [self.top[key].pattern for key in _RUN_MARKERS if key in self.top]
        return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None

    def is_run(self, directory: Path) -> bool:
        try:
            names = [name for name in os.listdir(directory) if not name.startswith(".")]
        except OSError as exc:
            raise InputError(f"{directory}: cannot read the directory ({exc.strerror})") from None
        markers = self._top_markers
        if markers is not None and any(markers.fullmatch(name) for name in names):
            return True
        for key in _RUN_MARKERS:
            deep = self.nested.get(key)
            if deep is not None and any(
                deep.fullmatch(p.relative_to(directory).as_posix())
                for p in directory.rglob("*")
                if p.is_file()
            ):
                return True
        return False

    # -- finding runs and their files --------------------------------------------------

    def find_runs(self, paths: Sequence[Path]) -> list[Path]:
        """Each PATH is a run directory, or a directory whose subdirectories are runs."""
        return list(_find_runs(paths, self).values())

    def find_runs_real(
        self, paths: Sequence[Path], *, check: bool = True
    ) -> list[tuple[Path, str]]:
        """`find_runs`, each run directory with its real path.

        `check=False` leaves out telling runs from other subdirectories of a directory of runs
        (one listing each): the caller scans them with `scan(..., check=True)`, which says the
        same of one that is not a run, from the listing it makes anyway.
        """
        return [(path, real) for real, path in _find_runs(paths, self, check).items()]

    def scan(
        self, run_dir: Path, limit: int, real: str | None = None, *, check: bool = False
    ) -> tuple[list[SourceFile], list[str]]:
        """Every regular file of a run (none over `limit` bytes), and the files skipped.

        `real` is the run directory's real path, when known already. `check`: raise the error
        of `find_runs` when the directory is not a run.
        """
        return _scan(run_dir, self, limit, real or os.path.realpath(run_dir), check)

    def assign(
        self, run_dir: Path, files: list[SourceFile]
    ) -> tuple[dict[str, SourceFile], list[SourceFile]]:
        """Which file is which artifact (by key); the rest are attachments."""
        return _assign(run_dir, files, self)


def shown(path: str | Path) -> str:
    """A path as it can be printed: quoted when it holds control characters."""
    text = str(path)
    return text if text.isprintable() else repr(text)


def _subdirectories(path: Path) -> list[tuple[Path, str]]:
    """The subdirectories of `path`, sorted, each with its real path."""
    root = os.path.realpath(path)
    found = []
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            if entry.is_symlink():
                try:
                    real = checked_real(entry.path, root, path)
                except InputError as exc:
                    refused_entry(entry.path, exc)
                    continue
            else:  # not a link: its real path is its parent's plus its name
                real = os.path.join(root, entry.name)
            found.append((entry.path, real))
    return [(Path(sub), real) for sub, real in sorted(found)]


def not_a_run(directory: str | Path) -> InputError:
    """The error for a subdirectory of a directory of runs that is not a run."""
    return InputError(
        f"{shown(directory)}: not a run directory: none of its files matches the prompt, "
        "report, audit, shell_audit or metadata patterns (PROMPT.txt, "
        "ghost_report_*.md, ...). Pass run directories one by one, or describe the "
        "layout with --map KEY=GLOB"
    )


def _find_runs(paths: Sequence[Path], layout: Layout, check: bool = True) -> dict[str, Path]:
    """Run directories by real path (the same run reached twice is imported once)."""
    found: dict[str, Path] = {}
    for path in paths:
        if not path.is_dir():
            raise InputError(
                f"{path}: not a directory (give a run directory or a directory of runs)"
            )
        if layout.is_run(path):
            found.setdefault(os.path.realpath(path), path)
            continue
        runs = _subdirectories(path)
        for sub, real in runs:
            if check and not layout.is_run(sub):
                raise not_a_run(sub)
            found.setdefault(real, sub)
        if not runs:
            raise InputError(
                f"{path}: no runs found: it holds no run files (PROMPT.txt, ghost_report_*.md, "
                "metadata.json, ...) and no run directories; describe the layout with "
                "--map KEY=GLOB"
            )
    for run_dir in found.values():
        if not run_dir.name.isprintable():
            raise UnsafeNameError(
                f"{shown(run_dir)}: a run directory name with control characters is refused; "
                "rename the directory"
            )
    return found


class SourceFile(NamedTuple):
    rel: str  # path inside the run directory, with '/'
    path: str  # where to read it (symlinks resolved)
    size: int


_by_name = operator.attrgetter("name")


def _scan(
    run_dir: Path, layout: Layout, limit: int, root: str, check: bool = False
) -> tuple[list[SourceFile], list[str]]:
    """Every regular file of a run, and those skipped; symlinks inside are followed."""
    files: list[SourceFile] = []
    skipped: list[str] = []
    visited = {root}
    stack = [("", root)]
    device = os.stat(root).st_dev
    anchor = os.path.dirname(root)  # the run directory itself is walked into, not followed
    exclude = layout.exclude
    # `run_dir / rel` as a string, from a string (no Path made per file; only its errors
    # name a file): "" for the run directory ".", as the Path shows it.
    inside = str(run_dir / "_")[:-1]
    while stack:
        prefix, real = stack.pop()
        try:
            with os.scandir(real) as entries:
                listed = sorted(entries, key=_by_name)
        except OSError as exc:
            if not check:
                raise
            raise InputError(f"{run_dir}: cannot read the directory ({exc.strerror})") from None
        if check:  # the top directory, before anything below it is read: is it a run?
            check = False
            markers = layout._top_markers
            marked = markers is not None and any(
                markers.fullmatch(entry.name) for entry in listed if entry.name[0] != "."
            )
            if not marked and not layout.is_run(run_dir):  # is_run: markers deeper down
                raise not_a_run(run_dir)
        for entry in listed:
            rel = prefix + entry.name
            if rel[len(prefix)] == "." or (exclude and exclude.fullmatch(rel)):
                skipped.append(rel)
                continue
            target = entry.path
            if entry.is_symlink():
                target = checked_real(entry.path, root, "the run directory", run_dir / rel)
            try:
                # From the folder holding the run, one directory at a time, never through a
                # link: a folder swapped for a link since it was listed is refused.
                info = lstat_inside(target, anchor, shown(inside + rel))
            except FileNotFoundError:
                raise InputError(f"{shown(run_dir / rel)}: broken symlink") from None
            if stat.S_ISDIR(info.st_mode):
                keys = layout._cached_keys(rel)
                if keys:  # metadata.json as a folder: never quietly a run without metadata
                    raise InputError(
                        f"{shown(run_dir / rel)}: a directory, where the run's {keys[0]} file "
                        "is expected; rename it, or leave it out with --exclude"
                    )
                if target in visited:  # a link to a directory already included
                    skipped.append(rel)
                else:
                    visited.add(target)
                    stack.append((rel + "/", target))
            elif not stat.S_ISREG(info.st_mode):
                raise InputError(f"{shown(run_dir / rel)}: not a regular file")
            elif info.st_size > limit:
                raise ArtifactTooLargeError(
                    f"{shown(run_dir / rel)}: {format_size(info.st_size)} is over the "
                    f"{format_size(limit)} artifact size limit (raise it for this import with "
                    "--max-artifact-size, or set max_artifact_bytes in ledger.json)"
                )
            else:
                if info.st_dev != device:
                    raise InputError(
                        f"{shown(run_dir / rel)}: on another file system than the run "
                        "directory (a mount inside it); refusing to import it"
                    )
                checked = checked_file(target, info, inside + rel)
                files.append(SourceFile(rel, checked, info.st_size))
    return files, skipped


def _assign(
    run_dir: Path, files: list[SourceFile], layout: Layout
) -> tuple[dict[str, SourceFile], list[SourceFile]]:
    """Which file is which artifact; the rest are attachments."""
    matched: dict[str, list[SourceFile]] = {}
    rest: list[SourceFile] = []
    for source in files:
        keys = layout._cached_keys(source.rel)
        if len(keys) > 1:
            raise InputError(
                f"{shown(run_dir / source.rel)}: matches the patterns of both {keys[0]} and "
                f"{keys[1]}; narrow one with --map KEY=GLOB"
            )
        if keys:
            matched.setdefault(keys[0], []).append(source)
        else:
            rest.append(source)
    for key, sources in matched.items():
        if len(sources) > 1:
            names = ", ".join(repr(s.rel) for s in sources)
            raise InputError(
                f"{run_dir}: several files match {key} ({names}); choose one with "
                f"--map {key}=GLOB (or leave the others out with --exclude GLOB)"
            )
    return {key: sources[0] for key, sources in matched.items()}, rest
