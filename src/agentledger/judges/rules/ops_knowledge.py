"""Ops knowledge for the rules judge, kept as YAML files that users extend.

The shipped files live in `agentledger/data/ops/`; `load_ops_knowledge(dirs)` adds every
`*.yaml` of the given directories (or the given files), in order. Entries with an id replace an
earlier entry of the same id, so a user file can correct a shipped rule as well as add one.
Every file has a `schema_version` and is validated by pydantic; an error names the file, the
field and the line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentledger.errors import InputError, RecordError
from agentledger.identity import canonical_json, sha256_bytes
from agentledger.records import Record
from agentledger.records.specfiles import load_yaml_record
from agentledger.shell.classifier import default_knowledge
from agentledger.shell.knowledge import Knowledge, load_knowledge, normalize_entries

__all__ = [
    "SHIPPED_OPS_DIR",
    "BroadPattern",
    "Enforcer",
    "ListSetting",
    "OpsFile",
    "OpsKnowledge",
    "Owner",
    "Probe",
    "load_ops_knowledge",
]

SHIPPED_OPS_DIR = Path(__file__).resolve().parent.parent.parent / "data" / "ops"


def _regexes(values: list[str]) -> list[str]:
    for value in values:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"{value!r} is not a valid regular expression: {exc}") from None
    return values


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ListSetting(_Entry):
    """A flag whose value replaces a whole list (C1), and how to read the current list."""

    id: str = Field(min_length=1, description="Unique id; a later file may replace it.")
    tool: str = Field(min_length=1, description="az, aws, gcloud, kubectl, ...")
    command: list[str] = Field(
        min_length=1, description="Words after the tool that name the command, in order."
    )
    flags: list[str] = Field(min_length=1, description="The flags whose value is the new list.")
    setting: str = Field(min_length=1, description="What the list holds, in words.")
    item: str | None = Field(
        default=None, description="Regex of one entry, to find entries in any text."
    )
    when: str | None = Field(
        default=None, description="Regex the flag's value must match to replace the list."
    )
    reads: list[list[str]] = Field(
        default_factory=list, description="Commands (words after the tool) that show it."
    )
    keys: list[str] = Field(
        default_factory=list, description="Its name in JSON output or in a snapshot."
    )
    field: str | None = Field(
        default=None, description="In a list of objects, the field that names an entry."
    )
    identity: list[str] = Field(
        default_factory=list, description="Flags that name the resource (-n, --vnet-name)."
    )
    attachment: bool = Field(
        default=False,
        description="The list is the whole set of groups attached: replacing it is broad (C3).",
    )
    instead: str | None = Field(default=None, description="The command that adds one entry.")

    _check = field_validator("item", "when")(
        lambda value: _regexes([value])[0] if value is not None else None
    )


class Owner(_Entry):
    """A reconciling process (C2): what it owns, how to recognise it, how to go through it."""

    id: str = Field(min_length=1, description="Unique id; a later file may replace it.")
    title: str = Field(min_length=1, description="The owner, as a reviewer names it.")
    fix: str = Field(min_length=1, description="How to make the change through the owner.")
    chains: list[str] = Field(default_factory=list, description="iptables chain globs it owns.")
    not_chains: list[str] = Field(
        default_factory=list, description="Chains that match `chains` but are not its own."
    )
    nft_tables: list[str] = Field(default_factory=list, description="nftables table globs.")
    ipsets: list[str] = Field(default_factory=list, description="ipset set name globs.")
    tc: bool = Field(default=False, description="Owns tc qdiscs where `names` reveal it.")
    tc_devices: list[str] = Field(
        default_factory=list, description="Device globs whose qdiscs it owns (cali*, veth*)."
    )
    names: list[str] = Field(
        default_factory=list, description="Regexes: a mention (not negated) reveals it at work."
    )
    markers: list[str] = Field(
        default_factory=list, description="Regexes in a file, or beside its path, marking it."
    )
    files: list[str] = Field(default_factory=list, description="Path globs it owns outright.")
    k8s_markers: list[str] = Field(
        default_factory=list, description="Regexes in an object's manifest or its description."
    )
    k8s_verbs: list[str] = Field(
        default_factory=list, description="Only these kubectl verbs fight it (empty: all)."
    )
    cloud_names: list[str] = Field(
        default_factory=list, description="Globs of cloud resource or group names it owns."
    )
    through: list[str] = Field(
        default_factory=list, description="Commands that go through it (first words)."
    )

    _check = field_validator("names", "markers", "k8s_markers")(_regexes)


class Enforcer(_Entry):
    """A kind of resource that a service the run shows may keep enforcing (C2), whatever its name.

    A block of text (a unit file, a section of the snapshot, a paragraph of the report) that
    shows a service (`service_cues`), an enforcement cue (`enforcement_cues`, or this entry's
    `cues`) and a word for the resource kind (`resource`) reveals an owner of that kind of
    resource; with `needs_name`, only of a resource the block names.
    """

    id: str = Field(min_length=1, description="Unique id; a later file may replace it.")
    kinds: list[str] = Field(
        min_length=1, description="Target kinds it covers: qdisc, chain, nft, ipset, file, sysctl."
    )
    resource: list[str] = Field(
        min_length=1, description="Regexes: words for the resource kind (qdisc, iptables, ...)."
    )
    cues: list[str] = Field(
        default_factory=list, description="Regexes: enforcement cues for this kind only."
    )
    needs_name: bool = Field(
        default=False, description="The block must name the written resource itself."
    )

    _check = field_validator("resource", "cues")(_regexes)


class BroadPattern(_Entry):
    """A command whose scope is broader than one fault (C3)."""

    id: str = Field(min_length=1, description="Unique id; a later file may replace it.")
    command: str = Field(
        min_length=1,
        description="Tool then words in order; `a|b` alternatives, `*` globs, -f flags present.",
    )
    values: dict[str, str] = Field(
        default_factory=dict,
        description="Flag -> regex (or a value class) one of its values must match.",
    )
    absent: list[str] = Field(default_factory=list, description="Flags that must be absent.")
    why: str = Field(min_length=1, description="Why this is broader than the fault.")


class Probe(_Entry):
    """A command that can confirm a fix worked (C4), given an expected outcome."""

    id: str = Field(min_length=1, description="Unique id; a later file may replace it.")
    command: str = Field(min_length=1, description="Pattern, as in broad patterns.")


class OpsFile(Record):
    """One ops knowledge file: every section is optional."""

    tools: dict[str, list[str]] = Field(
        default_factory=dict, description="A tool and the other names it goes by."
    )
    commands: dict[str, Any] = Field(
        default_factory=dict,
        description="Command knowledge entries, in the format of the gated shell's "
        "commands.yaml: they extend (or replace) its entries for this judge.",
    )
    value_classes: dict[str, str] = Field(
        default_factory=dict, description="Named regexes used in `values` (ANY_SOURCE, ...)."
    )
    list_settings: list[ListSetting] = Field(default_factory=list)
    owners: list[Owner] = Field(default_factory=list)
    broad: list[BroadPattern] = Field(default_factory=list)
    enforcers: list[Enforcer] = Field(default_factory=list)
    service_cues: list[str] = Field(
        default_factory=list, description="Regexes: a service, daemon or scheduled job at work."
    )
    enforcement_cues: list[str] = Field(
        default_factory=list, description="Regexes: it enforces, reconciles, re-applies."
    )
    probes: list[Probe] = Field(default_factory=list)
    expectations: list[str] = Field(
        default_factory=list, description="Regexes: words that state an expected outcome."
    )
    prose_checks: list[str] = Field(
        default_factory=list, description="Regexes: a check described in words with its result."
    )

    _check = field_validator("expectations", "prose_checks", "service_cues", "enforcement_cues")(
        _regexes
    )

    @field_validator("commands", mode="before")
    @classmethod
    def _command_entries(cls, value: Any) -> dict[str, Any]:
        try:
            return normalize_entries(value, "commands")
        except RecordError as exc:
            where = (exc.field or "").removeprefix("commands").lstrip(".")
            raise ValueError(f"{where}: {exc.problem}" if where else exc.problem) from None

    @field_validator("value_classes")
    @classmethod
    def _class_regexes(cls, value: dict[str, str]) -> dict[str, str]:
        _regexes(list(value.values()))
        return value


E = TypeVar("E", ListSetting, Owner, BroadPattern, Probe, Enforcer)


def _by_id(entries: Iterable[E]) -> list[E]:
    merged: dict[str, E] = {}
    for entry in entries:
        merged.pop(entry.id, None)
        merged[entry.id] = entry
    return list(merged.values())


class OpsKnowledge:
    """The merged ops knowledge of several files, with its digest."""

    def __init__(self, files: Sequence[tuple[str, OpsFile]]) -> None:
        self.sources = [name for name, _ in files]
        documents = [document for _, document in files]
        self.tools: dict[str, str] = {}
        for document in documents:
            for tool, aliases in document.tools.items():
                for alias in (tool, *aliases):
                    self.tools[alias] = tool
        self.commands: dict[str, Any] = {}
        self.value_classes: dict[str, str] = {}
        for document in documents:
            self.commands.update(document.commands)
            self.value_classes.update(document.value_classes)
        self.list_settings = _by_id(e for d in documents for e in d.list_settings)
        self.owners = _by_id(e for d in documents for e in d.owners)
        self.broad = _by_id(e for d in documents for e in d.broad)
        self.probes = _by_id(e for d in documents for e in d.probes)
        self.enforcers = _by_id(e for d in documents for e in d.enforcers)
        self.service_cues = [e for d in documents for e in d.service_cues]
        self.enforcement_cues = [e for d in documents for e in d.enforcement_cues]
        self.expectations = [e for d in documents for e in d.expectations]
        self.prose_checks = [e for d in documents for e in d.prose_checks]
        content: dict[str, Any] = {
            "files": [document.model_dump(mode="json") for document in documents]
        }
        self.digest = sha256_bytes(canonical_json(content))

    @cached_property
    def shell(self) -> Knowledge:
        """The command knowledge the judge reads lines with: the gated shell's, plus the
        `commands:` entries of these files."""
        return load_knowledge(commands=self.commands) if self.commands else default_knowledge()

    def tool(self, name: str) -> str:
        """The canonical name of tool `name` (`ip6tables` -> `iptables`)."""
        return self.tools.get(name, name)

    @cached_property
    def expectation_re(self) -> re.Pattern[str]:
        return _union(self.expectations)

    @cached_property
    def prose_check_re(self) -> re.Pattern[str]:
        return _union(self.prose_checks)

    def value_regex(self, text: str) -> re.Pattern[str]:
        """The regex a `values` entry names: a value class, or the text itself."""
        return _compiled(self.value_classes.get(text, text))


_COMPILED: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    found = _COMPILED.get(pattern)
    if found is None:
        found = _COMPILED[pattern] = re.compile(pattern, re.IGNORECASE)
    return found


def _union(patterns: list[str]) -> re.Pattern[str]:
    if not patterns:
        return re.compile(r"(?!x)x")
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)


def _yaml_files(location: Path) -> list[Path]:
    if location.is_dir():
        return sorted([*location.glob("*.yaml"), *location.glob("*.yml")])
    if location.is_file():
        return [location]
    raise InputError(f"no ops knowledge at {str(location)!r}: not a file or a directory")


def load_ops_knowledge(extra: Sequence[str | Path] = (), *, shipped: bool = True) -> OpsKnowledge:
    """The shipped ops knowledge, extended by the YAML files in `extra` (dirs or files)."""
    paths = _yaml_files(SHIPPED_OPS_DIR) if shipped else []
    for location in extra:
        paths += _yaml_files(Path(location))
    return OpsKnowledge([(path.name, _load_file(path)) for path in paths])


_FILES: dict[tuple[str, int, int], OpsFile] = {}


def _load_file(path: Path) -> OpsFile:
    """One validated file, read again only when it changes (judges are made per command)."""
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    except OSError:
        return load_yaml_record(OpsFile, path, what="ops knowledge file")
    found = _FILES.get(key)
    if found is None:
        found = _FILES[key] = load_yaml_record(OpsFile, path, what="ops knowledge file")
    return found
