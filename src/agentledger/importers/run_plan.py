"""Planning one run: read a run directory, check it, and gather its identity and metrics.

`plan_run` reads every file a run's identity or metrics come from once, checks the shell log,
names each file as the ledger will store it, and compares a run already in the ledger with
what the import would write. It writes nothing.
"""

from __future__ import annotations

import operator
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentledger.errors import (
    InputError,
    RecordError,
    UnsafeNameError,
)
from agentledger.identity import HASH_PREFIX, check_artifact_name, sha256_bytes
from agentledger.importers.identical import check_identical
from agentledger.importers.identity_fields import (
    Claim,
    Identity,
    claim_metadata,
    claim_tags,
    day,
    field_value,
    safe_run_id,
    summary_values_of,
    text_value,
)
from agentledger.importers.layout import (
    Layout,
    SourceFile,
    shown,
)
from agentledger.importers.plan import ImportOptions, PlannedArtifact, PlannedRun
from agentledger.importers.shell_log import check_shell_log
from agentledger.records import (
    RunMetadata,
    RunSummary,
    decode_json,
    parse_record_data,
)
from agentledger.store.ledger import Ledger
from agentledger.store.storage.checked import open_source
from agentledger.store.storage.local.fs import write_fd
from agentledger.store.writer import (
    AUDIT,
    PROMPT,
    REPORT,
    SHELL_AUDIT,
    SYSTEM_PROMPT,
    derived_values,
)

__all__ = ["IMPORTER", "PlanContext", "plan_run", "read_source"]

IMPORTER = "directory"
_CANONICAL = {
    "prompt": PROMPT,
    "system_prompt": SYSTEM_PROMPT,
    "report": REPORT,
    "audit": AUDIT,
    "shell_audit": SHELL_AUDIT,
}
# A run's own identity and metrics records are not copied as files: the ledger writes its own
# metadata.json and run_summary.json, and keeps the originals' JSON in metadata.source.
_ORIGINALS = {"metadata": "original_metadata", "summary": "original_summary"}
_WEAK = ("directory name", "file names")
_FILE_DATE = re.compile(r"(?<!\d)(20\d{6})(?!\d)")
_OPTION_FIELDS = ("model", "scenario", "provider", "agent_name", "agent_commit", "variant")
_READ_CHUNK = 1 << 16
_SAFE_NAMES_SIZE = 4096
HELD_BYTES = 256 * 1024 * 1024
"""How many bytes of files read while planning one process's share of an import may be kept
for sealing, rather than read (and hashed) again then; the rest is copied from its path."""
MADE_HELD_BYTES = 512 * 1024 * 1024
"""How many bytes of files planning makes (a trace's trace.jsonl and shell log) one process
may keep in memory until sealing; the rest wait in a spool directory (`PlanContext.keep_made`),
so that an import of any size plans in bounded memory."""
SPOOL_PREFIX = "agentledger-spool-"

_artifact_name = operator.attrgetter("name")


def _artifacts(
    run_dir: Path,
    assigned: dict[str, SourceFile],
    attachments: list[SourceFile],
    check_name: Callable[[str], object] = check_artifact_name,
) -> tuple[list[PlannedArtifact], dict[str, str]]:
    """The ledger's name for every file, and the mapping kept as provenance."""
    named: list[tuple[str, SourceFile]] = []
    mapping: dict[str, str] = {}
    for key, source in sorted(assigned.items()):
        if key in _ORIGINALS:
            mapping[source.rel] = f"metadata.json source.{_ORIGINALS[key]}"
            continue
        if key == "snapshot":
            suffixes = Path(source.rel).suffixes
            tar = suffixes[-2:-1] == [".tar"]
            named.append(("snapshot" + "".join(suffixes[-2:] if tar else suffixes[-1:]), source))
        else:
            named.append((_CANONICAL[key], source))
    named += [("attachments/" + source.rel, source) for source in attachments]
    artifacts: list[PlannedArtifact] = []
    for name, source in named:
        try:
            check_name(name)
        except UnsafeNameError as exc:
            raise UnsafeNameError(
                f"{shown(run_dir / source.rel)}: cannot be stored: {exc}"
            ) from None
        artifacts.append(PlannedArtifact(name=name, path=source.path, size=source.size))
        mapping[source.rel] = name
    return artifacts, mapping


def _check_names(run_dir: Path, artifacts: list[PlannedArtifact]) -> None:
    """Refuse two files that would land on the same artifact name (or inside one another)."""
    by_name: dict[str, PlannedArtifact] = {}
    for artifact in artifacts:
        if artifact.name in by_name:
            raise InputError(
                f"{run_dir}: {by_name[artifact.name].path} and {artifact.path} would both be "
                f"stored as {artifact.name!r}; leave one out with --exclude GLOB"
            )
        by_name[artifact.name] = artifact
    for name in by_name:
        parent = name.rpartition("/")[0]
        while parent:
            if parent in by_name:
                raise InputError(
                    f"{run_dir}: {by_name[parent].path} would be stored as {parent!r}, which "
                    f"{name!r} needs as a directory; leave one out with --exclude GLOB"
                )
            parent = parent.rpartition("/")[0]


# -- planning one run ------------------------------------------------------------------------


@dataclass
class PlanContext:
    """What every run of one import is planned with: the layout, the options and the sidecar,
    read once; the ledger to compare runs already stored with."""

    layout: Layout
    options: ImportOptions
    limit: int
    sidecar: dict[str, dict[str, Any]]
    sidecar_origin: str
    system_prompt: tuple[bytes, str] | None  # from --system-prompt-file: bytes, origin
    ledger: Ledger | None
    unchecked: bool = False  # whether the run directories may not be runs (scan checks them)
    _options: tuple[list[tuple[str, Claim]], list[tuple[str, Claim]]] | RecordError | None = None
    _safe_names: set[str] = field(default_factory=set)
    _held: int = 0
    _made: int = 0
    spool: str | None = None  # the spool directory, once a made file had to wait there
    _spooled: int = 0
    _per_folder: dict[tuple[str, Any], Any] = field(default_factory=dict)

    def per_folder(self, key: str, folder: Path, make: Callable[[Path], Any]) -> Any:
        """`make(folder)`, made once per folder for this import (`key` names what is made): a
        format's index of the files beside its runs, rather than a listing for every run."""
        slot = (key, folder)
        if slot not in self._per_folder:
            self._per_folder[slot] = make(folder)
        return self._per_folder[slot]

    def latest(self, key: str, path: Path, make: Callable[[Path], Any]) -> Any:
        """`make(path)`, made again only when `path` changes (`key` names what is made): what
        the runs of one file share (an Inspect log's samples), kept for the next run while
        they come in a row, and only the latest file's."""
        slot = ("latest", key)
        made = self._per_folder.get(slot)
        if made is None or made[0] != path:
            made = self._per_folder[slot] = (path, make(path))
        return made[1]

    def hold(self, size: int) -> bool:
        """Whether `size` more bytes read while planning may be kept until sealing (counted
        against `HELD_BYTES` if so)."""
        if self._held + size > HELD_BYTES:
            return False
        self._held += size
        return True

    def keep_made(self, data: bytes) -> tuple[bytes | None, str | None]:
        """Keep `data`, a file planning made, until sealing: in memory while `MADE_HELD_BYTES`
        allows, else in a file of the spool directory (a private one in the system's temporary
        directory, `$TMPDIR`, removed with the plan). Gives (the bytes, None) or (None, the
        spooled file's path)."""
        if self._made + len(data) <= MADE_HELD_BYTES:
            self._made += len(data)
            return data, None
        if self.spool is None:
            self.spool = tempfile.mkdtemp(prefix=SPOOL_PREFIX)
        self._spooled += 1
        path = os.path.join(self.spool, str(self._spooled))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                write_fd(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:
            raise InputError(
                f"cannot keep a planned file in the spool directory {self.spool}: "
                f"{exc.strerror or exc}; free some space there or point TMPDIR elsewhere"
            ) from None
        return None, path

    def option_claims(self) -> tuple[list[tuple[str, Claim]], list[tuple[str, Claim]]]:
        """What the options say (fields, then tags): the same for every run, made once."""
        if self._options is None:
            try:
                claims = []
                for name in _OPTION_FIELDS:
                    value = getattr(self.options, name)
                    if value is not None:
                        flag = "--" + name.replace("_", "-")
                        claim = Claim(text_value(value, flag, flag), flag, flag, "option")
                        claims.append((name, claim))
                tags = [
                    (key, Claim(value, f"--tag {key}", "--tag", "option"))
                    for key, value in sorted(self.options.tags.items())
                ]
                self._options = (claims, tags)
            except RecordError as exc:
                self._options = exc
        if isinstance(self._options, RecordError):
            raise self._options
        return self._options

    def check_name(self, name: str) -> None:
        """check_artifact_name, remembering the names that passed (most repeat across runs)."""
        if name not in self._safe_names:
            check_artifact_name(name)
            if len(self._safe_names) >= _SAFE_NAMES_SIZE:
                self._safe_names.clear()
            self._safe_names.add(name)


def _decode_json(raw: bytes, origin: str) -> Any:
    """records.decode_json(raw, origin): strict (duplicate keys, NaN, numbers that do not fit,
    depth), and the message names file and line."""
    return decode_json(raw, origin)


def read_source(path: str | Path, size: int = _READ_CHUNK, *, found: bool = False) -> bytes:
    """The bytes of a file; `size`, its size as scanned, sizes the first read. `found`: `path`
    is the checked path of a file found in the folder imported (`layout`), read only if it is
    still the regular file that was checked (`open_source`)."""
    try:
        fd = open_source(path) if found else os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            chunks = []
            want = size + 1
            while chunk := os.read(fd, want):
                chunks.append(chunk)
                want = _READ_CHUNK
        finally:
            os.close(fd)
    except OSError as exc:
        raise InputError(f"{shown(path)}: cannot read ({exc.strerror})") from None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _identity(
    run_dir: Path, assigned: dict[str, SourceFile], raw_metadata: bytes | None, ctx: PlanContext
) -> tuple[Identity, Any]:
    """Identity claims from metadata.json, the sidecar, options, then the weak sources.

    Returns the claims and the run's own metadata.json as decoded JSON (None if it has none).
    """
    identity = Identity()
    original: Any = None
    if raw_metadata is not None:
        origin = shown(f"{run_dir}/{assigned['metadata'].rel}")
        original = _decode_json(raw_metadata, origin)
        claim_metadata(identity, original, origin)
    name = run_dir.name
    row = ctx.sidecar.get(name) if ctx.sidecar else None
    if row:
        origin = f"{ctx.sidecar_origin} (entry {name!r})"
        for column, value in row.items():
            if column == "tags":
                claim_tags(identity, value, origin, column, "sidecar")
            elif column != "system_prompt_file":
                checked = field_value(column, value, origin, column)
                identity.claim(column, Claim(checked, origin, column, "sidecar"))
    claims, tags = ctx.option_claims()
    for field_name, claim in claims:
        identity.claim(field_name, claim)
    for key, claim in tags:
        identity.tag(key, claim)

    named = ctx.layout.name.fullmatch(name)
    for group, value in (named.groupdict() if named else {}).items():
        field_name = "started_at" if group == "date" else group
        try:
            checked = field_value(field_name, value, name, group)
        except RecordError:  # a weak source that does not parse says nothing
            continue
        identity.claim(
            field_name, Claim(checked, "directory name", group, "directory name"), weak=True
        )
    dates = sorted(
        token
        for key in ("report", "audit", "shell_audit")
        if key in assigned
        for token in _FILE_DATE.findall(assigned[key].rel.rpartition("/")[2])
    )
    for token in dates[:1]:
        try:
            moment = day(token)
        except ValueError:
            continue
        identity.claim("started_at", Claim(moment, "file names", "date", "file names"), weak=True)
    return identity, original


def _system_prompt(
    run_dir: Path, assigned: dict[str, SourceFile], ctx: PlanContext
) -> tuple[bytes, str, str, bool] | None:
    """The run's system prompt: bytes, origin, provenance, whether it is the run's own file."""
    found: list[tuple[bytes, str, str, bool]] = []
    own = assigned.get("system_prompt")
    if own is not None:
        found.append(
            (
                read_source(own.path, own.size, found=True),
                shown(f"{run_dir}/{own.rel}"),
                "system_prompt.txt",
                True,
            )
        )
    row = ctx.sidecar.get(run_dir.name) or {}
    if row.get("system_prompt_file"):
        label = "system_prompt_file"
        relative = text_value(row[label], ctx.sidecar_origin, label)
        path = Path(ctx.sidecar_origin).parent / relative
        found.append((read_source(path), str(path), f"sidecar {label}", False))
    if ctx.system_prompt is not None:
        data, origin = ctx.system_prompt
        found.append((data, origin, "--system-prompt-file", False))
    for other in found[1:]:
        if other[0] != found[0][0]:
            raise InputError(
                f"{run_dir}: the system prompt {found[0][1]} differs from {other[1]}; "
                "give the one this run used"
            )
    return found[0] if found else None


def _check_prompt_hash(identity: Identity, prompt: bytes, origin: str, kind: str) -> None:
    """The prompt's full hash replaces a short form, unless the short form contradicts it."""
    full = sha256_bytes(prompt)
    declared = identity.claims.get("system_prompt_hash")
    if declared is not None and not full.startswith(declared.value):
        raise RecordError(
            declared.origin,
            f"says {declared.value.removeprefix(HASH_PREFIX)}, but the system prompt {origin} "
            f"hashes to {full.removeprefix(HASH_PREFIX)[:16]}...: it is not the prompt this run "
            "used",
            field=declared.label,
        )
    identity.claim("system_prompt_hash", Claim(full, origin, "sha256", kind))


def _run_id(run_dir: Path, identity: Identity, source: dict[str, Any]) -> str:
    run_id: str | None = identity.get("run_id")
    unsafe = identity.unsafe_run_id
    if unsafe is not None:
        if run_id is None:
            raise UnsafeNameError(
                f"{unsafe.origin}, field '{unsafe.label}': {unsafe.value!r} is not a safe run id "
                "(letters, digits, '.', '_' and '-' only, no '..'); give this run another id "
                "with a --sidecar column 'run_id' (the original file is kept as it is)"
            )
        source["original_run_id"] = unsafe.value
    if run_id is None:
        run_id = run_dir.name
        if not safe_run_id(run_id):
            raise UnsafeNameError(
                f"{run_dir}: the directory name {run_id!r} is not a safe run id (letters, "
                "digits, '.', '_' and '-' only, no '..'); give the run an id with a --sidecar "
                "column 'run_id' or a run_id in its metadata.json"
            )
    return run_id


def _metadata(
    run_dir: Path, identity: Identity, source: dict[str, Any], has_metadata: bool, ctx: PlanContext
) -> RunMetadata:
    for required in ("scenario", "model"):
        if identity.get(required) is None:
            said = "its metadata.json does not say" if has_metadata else "it has no metadata.json"
            named = ctx.layout.name.fullmatch(run_dir.name)
            pattern = (
                "the name pattern has no such group"
                if named
                else f"the directory name {run_dir.name!r} does not match the name pattern"
            )
            raise RecordError(
                run_dir,
                f"cannot determine the run's {required}: {said} and {pattern}. Give it with "
                f"--{required}, a --sidecar column '{required}', or a --name-pattern with a "
                f"(?P<{required}>...) group",
                field=required,
            )
    run_id = _run_id(run_dir, identity, source)
    fields = {name: claim.kind for name, claim in identity.claims.items()}
    fields.setdefault("run_id", "directory name")
    source["fields"] = dict(sorted(fields.items()))
    value = {name: claim.value for name, claim in identity.claims.items()}.get
    data: dict[str, Any] = {
        "run_id": run_id,
        "scenario": value("scenario"),
        "model": value("model"),
        "model_served": value("model_served"),
        "provider": value("provider"),
        "system_fingerprint": value("system_fingerprint"),
        "system_prompt_hash": value("system_prompt_hash"),
        "base_prompt_hash": value("base_prompt_hash"),
        "prompt_addon": value("prompt_addon"),
        "variant": value("variant"),
        "agent": {
            "name": value("agent_name"),
            "commit": value("agent_commit"),
            "dirty": value("agent_dirty"),
        },
        "params": value("params") or {},
        "started_at": value("started_at"),
        "ended_at": value("ended_at"),
        "silent_update_detectable": bool(value("silent_update_detectable")),
        "backfilled": True,
        "tags": {key: claim.value for key, claim in sorted(identity.tags.items())},
        "source": dict(sorted(source.items())),
    }
    try:
        return parse_record_data(RunMetadata, data, str(run_dir))
    except RecordError as exc:
        parts = (exc.field or "").split(".")
        name = f"agent_{parts[-1]}" if parts[0] == "agent" else parts[0]
        claim = identity.claims.get(name) or identity.tags.get(parts[-1])
        if claim is None:
            raise
        raise RecordError(claim.origin, exc.problem, field=claim.label) from None


def _summary(
    run_dir: Path,
    assigned: dict[str, SourceFile],
    raw_summary: bytes | None,
    identity: Identity,
    metadata: RunMetadata,
) -> tuple[RunSummary, dict[str, Any], bytes | None]:
    """The run's own run_summary.json where it says something, gaps filled from the artifacts.

    Returns the summary, its provenance (where each figure came from, and the run's own
    run_summary.json as decoded JSON) and the shell log's bytes (None without one).
    """
    shell = assigned.get("shell_audit")
    counts = None
    shell_log = None
    if shell is not None:
        shell_log = read_source(shell.path, shell.size, found=True)
        counts = check_shell_log(shell_log, shown(f"{run_dir}/{shell.rel}"))
    derived = derived_values(metadata, counts)
    values: dict[str, Any] = {}
    original: Any = None
    if raw_summary is not None:
        origin = shown(f"{run_dir}/{assigned['summary'].rel}")
        original = _decode_json(raw_summary, origin)
        values = summary_values_of(original, origin)
    provenance = {name: "run_summary.json" for name in values}
    filled_from = {"commands_run": "shell audit", "commands_denied": "shell audit"}
    if identity.kind("started_at") not in _WEAK:  # a day read from a name is no start time
        filled_from["duration_s"] = "metadata times"
    for name, kind in filled_from.items():
        if name not in values and derived[name] is not None:
            values[name] = derived[name]
            provenance[name] = kind
    values["derived"] = "run_summary.json" not in provenance.values()
    sources: dict[str, Any] = {}
    if provenance:
        sources["summary"] = dict(sorted(provenance.items()))
    if original is not None:
        sources["original_summary"] = original
    return RunSummary.model_validate(values), sources, shell_log


def plan_run(run_dir: Path, ctx: PlanContext, real: str | None = None) -> PlannedRun:
    """The checked plan of the run in `run_dir` (`real`: its real path, when already known).

    Raises an InputError naming the file and field at the first problem.
    """
    files, skipped = ctx.layout.scan(run_dir, ctx.limit, real, check=ctx.unchecked)
    assigned, attachments = ctx.layout.assign(run_dir, files)
    # The run's own records are read once: for identity, metrics, and their hashes.
    originals = {
        key: read_source(assigned[key].path, assigned[key].size, found=True)
        for key in _ORIGINALS
        if key in assigned
    }
    identity, original_metadata = _identity(run_dir, assigned, originals.get("metadata"), ctx)
    artifacts, mapping = _artifacts(run_dir, assigned, attachments, ctx.check_name)
    source: dict[str, Any] = {
        "importer": IMPORTER,
        "directory": run_dir.name,
        "files": dict(sorted(mapping.items())),
    }
    if skipped:
        source["skipped"] = sorted(skipped)
    if original_metadata is not None:
        source["original_metadata"] = original_metadata
    if originals:
        # Their JSON is kept key for key; these hashes tie it to the exact original bytes.
        source["original_sha256"] = {
            assigned[key].rel: sha256_bytes(raw) for key, raw in sorted(originals.items())
        }
    prompt = _system_prompt(run_dir, assigned, ctx)
    if prompt is not None:
        data, origin, kind, from_run = prompt
        _check_prompt_hash(identity, data, origin, kind)
        source["system_prompt"] = kind
        if not from_run:
            artifacts.append(PlannedArtifact(SYSTEM_PROMPT, None, len(data), data))
    _check_names(run_dir, artifacts)
    metadata = _metadata(run_dir, identity, source, "metadata" in assigned, ctx)
    summary, sources, shell_log = _summary(
        run_dir, assigned, originals.get("summary"), identity, metadata
    )
    if sources:
        merged = dict(sorted({**(metadata.source or {}), **sources}.items()))
        metadata = metadata.model_copy(update={"source": merged})
    if shell_log is not None:
        # Read and checked already: kept, so that writing does not read it again.
        artifacts = [
            PlannedArtifact(a.name, a.path, a.size, shell_log) if a.name == SHELL_AUDIT else a
            for a in artifacts
        ]
    run = PlannedRun(run_dir, metadata, summary, tuple(sorted(artifacts, key=_artifact_name)))
    if ctx.ledger is not None and ctx.ledger.storage.has_run(metadata.run_id):
        check_identical(ctx.ledger, run)
        run = replace(run, identical=True)
    return run
