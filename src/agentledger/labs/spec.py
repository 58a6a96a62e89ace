"""lab.yaml: the hosts, links, services, owners, fault, probes and remedies of one lab.

A lab spec sits beside a scenario's `scenario.yaml` (or anywhere, named by path). Every problem
is a `RecordError` naming the file, the field and the line, so `agentledger lab up` exits 2
before anything starts.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentledger.errors import InputError, RecordError
from agentledger.records import Record
from agentledger.records.specfiles import load_yaml_record, yaml_line

__all__ = [
    "LAB_FILE",
    "Bridge",
    "Endpoint",
    "Fault",
    "FileSpec",
    "HostSpec",
    "LabSpec",
    "Link",
    "LoadedLab",
    "OwnerSpec",
    "ProbeSpec",
    "RemedySpec",
    "RouteSpec",
    "ServiceSpec",
    "Step",
    "ToolSpec",
    "find_lab_file",
    "load_lab",
    "packaged_labs_dir",
    "resolve_labs",
    "resolve_targets",
    "scenario_lab",
]

LAB_FILE = "lab.yaml"
NAME = r"^[a-z][a-z0-9-]{0,14}$"
"""Host, device, service and owner names: short, lower case, safe in a shell and as netns."""
DEV = r"^[a-z][a-z0-9_.-]{0,14}$"
REL_PATH = r"^[A-Za-z0-9._][A-Za-z0-9._/-]{0,199}$"
Subcommand = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,40}$")]
"""A subcommand of an owner's tool (one plain word), as its script's `case` reads $1."""

ProbeRole = Literal["symptom", "keep", "blocked", "entry"]
RemedyKind = Literal["good", "wrong"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileSpec(_Strict):
    """A file placed in a host's directory (`/run/lab/HOST/PATH` inside the lab)."""

    path: str = Field(pattern=REL_PATH, description="Path relative to the host's directory.")
    content: str = Field(default="", description="The file's text.")
    mode: str = Field(default="0644", pattern=r"^0?[0-7]{3}$", description="Octal permissions.")

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        if ".." in value.split("/") or value.endswith("/"):
            raise ValueError(f"{value!r} must stay inside the host's directory, naming a file")
        return value


class HostSpec(_Strict):
    """A host: one network namespace, with its files and sysctls."""

    name: str = Field(pattern=NAME, description="The host's name (also its netns name).")
    files: list[FileSpec] = Field(default_factory=list, description="Files the host needs.")
    sysctls: dict[str, str] = Field(
        default_factory=dict, description="Sysctls set in the host's netns (net.* only)."
    )
    forwarding: bool = Field(default=False, description="Route between its links (a router).")

    @field_validator("sysctls", mode="before")
    @classmethod
    def _text_values(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
        return value

    @field_validator("sysctls")
    @classmethod
    def _net_only(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not re.fullmatch(r"net\.[a-z0-9_.\-]+", key):
                raise ValueError(f"sysctl {key!r}: only net.* keys are per network namespace")
        return value


class Endpoint(_Strict):
    """One end of a link: the host, the device name there, its address and MTU."""

    host: str = Field(description="A host named in 'hosts'.")
    dev: str = Field(default="eth0", pattern=DEV, description="Device name in that host.")
    address: str | None = Field(default=None, description="Address with prefix, 10.0.0.1/24.")
    mtu: int | None = Field(default=None, ge=68, le=65535, description="The device's MTU.")

    @field_validator("address")
    @classmethod
    def _interface(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ipaddress.ip_interface(value)
            except ValueError:
                raise ValueError(f"{value!r} is not an address with a prefix") from None
            if "/" not in value:
                raise ValueError(f"{value!r} needs a prefix length, e.g. {value}/24")
        return value


class Link(_Strict):
    """A veth pair between two hosts."""

    a: Endpoint = Field(description="One end.")
    b: Endpoint = Field(description="The other end.")


class Bridge(_Strict):
    """A Linux bridge (in a hidden switch namespace) joining several hosts, one port each."""

    name: str = Field(pattern=NAME, description="The bridge's name.")
    ports: list[Endpoint] = Field(min_length=2, description="The hosts plugged into it.")


class RouteSpec(_Strict):
    """A route in a host: `ip route add TO [via VIA] [dev DEV]`, or of a special type."""

    host: str = Field(description="A host named in 'hosts'.")
    to: str = Field(description="Destination prefix or 'default'.")
    via: str | None = Field(default=None, description="Gateway address.")
    dev: str | None = Field(default=None, pattern=DEV, description="Output device.")
    type: Literal["unicast", "blackhole", "unreachable", "prohibit"] = Field(
        default="unicast", description="Route type."
    )
    mtu: int | None = Field(default=None, ge=68, le=65535, description="Path MTU on the route.")

    @field_validator("to")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if value != "default":
            try:
                ipaddress.ip_network(value, strict=False)
            except ValueError:
                raise ValueError(f"{value!r} is neither a prefix nor 'default'") from None
        return value


class Step(_Strict):
    """A shell command run in one host (as root of the lab), e.g. an iptables rule."""

    host: str = Field(description="A host named in 'hosts'.")
    run: str = Field(min_length=1, description="Shell command (sh -c).")


class ServiceSpec(_Strict):
    """A process started in a host and kept running: a server, a client, a daemon."""

    name: str = Field(pattern=NAME, description="The service's name (its log is log/NAME.log).")
    host: str = Field(description="A host named in 'hosts'.")
    run: str = Field(min_length=1, description="Shell command; runs in the host's directory.")
    ready_port: int | None = Field(
        default=None, ge=1, le=65535, description="TCP or UDP port it listens on when ready."
    )


class ToolSpec(_Strict):
    """A command an owner offers (its client: `jailctl unban IP`), installed in the host's bin.

    `read_only` and `changes` name its subcommands (its first word: `status`, `unban`) by what
    they do; in the lab's runs the gate knows them so, in the owner's host only: a read-only one
    runs in investigate mode, one that changes state does not, and any other is unknown.
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,30}$", description="The command's name.")
    run: str = Field(min_length=1, description="Its shell script (arguments are $1, $2...).")
    read_only: list[Subcommand] = Field(
        default_factory=list, description="Its subcommands that only read (status, show)."
    )
    changes: list[Subcommand] = Field(
        default_factory=list, description="Its subcommands that change state (unban, apply)."
    )
    other: Literal["unknown", "read-only"] = Field(
        default="unknown",
        description="What any other word (or none) does: read-only when the script's `*)` "
        "branch only prints its usage; every subcommand of its `case` must then be named.",
    )

    def knowledge(self) -> dict[str, Any] | None:
        """The gate's knowledge of this tool (an entry of commands.yaml's format), or None
        when it declares no subcommand."""
        if not (self.read_only or self.changes):
            return None
        subs = {"read-only": self.read_only, "mutating": self.changes}
        return {
            "default": self.other,
            "subcommands": {kind: words for kind, words in subs.items() if words},
        }


class OwnerSpec(_Strict):
    """A reconciler: it owns a resource and re-asserts it from its own desired state.

    `cycle` runs every `interval` seconds in the background and on demand (`lab cycle`), so
    checks run exactly one cycle instead of sleeping.
    """

    name: str = Field(pattern=NAME, description="The owner's name.")
    host: str = Field(description="A host named in 'hosts'.")
    owns: str = Field(min_length=1, description="What it owns, in words (iptables chain f2b).")
    desired: list[FileSpec] = Field(
        default_factory=list, description="Its desired state: files in the host's directory."
    )
    tools: list[ToolSpec] = Field(default_factory=list, description="Its client commands.")
    cycle: str = Field(min_length=1, description="Shell script of one reconcile cycle.")
    interval: float = Field(default=10, gt=0, le=3600, description="Seconds between cycles.")


class ProbeSpec(_Strict):
    """A check run from a host: exactly one of http, tcp, udp, ping, dns, throughput, command.

    `role` says what a healthy lab shows: symptom and keep probes pass, blocked probes fail
    (a flow that must stay blocked), entry probes pass (an entry that must remain in a list).
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,40}$", description="The probe's name.")
    role: ProbeRole = Field(description="symptom, keep, blocked or entry.")
    host: str = Field(description="The host it runs from.")
    http: str | None = Field(default=None, description="URL; passes on status 'status'.")
    status: int = Field(default=200, ge=100, le=599, description="HTTP status expected.")
    tcp: str | None = Field(default=None, description="ADDRESS:PORT; passes when it connects.")
    ping: str | None = Field(default=None, description="Address; passes on an echo reply.")
    dns: str | None = Field(default=None, description="Name to resolve (A) at 'server'.")
    server: str | None = Field(default=None, description="DNS server address (for dns).")
    answer: str | None = Field(default=None, description="Address the dns answer must hold.")
    throughput: str | None = Field(default=None, description="URL to download (for rate).")
    min_kbps: float = Field(default=1000, gt=0, description="Kilobytes/s a throughput needs.")
    command: str | None = Field(default=None, description="Shell; passes on exit status 0.")
    stdout: str | None = Field(default=None, description="Regex its output must match too.")
    size: int | None = Field(default=None, ge=1, description="Ping payload bytes (with DF set).")
    timeout: float = Field(default=0.5, gt=0, le=30, description="Seconds before it fails.")

    @model_validator(mode="after")
    def _one_kind(self) -> ProbeSpec:
        kinds = [
            k for k in ("http", "tcp", "ping", "dns", "throughput", "command") if getattr(self, k)
        ]
        if len(kinds) != 1:
            raise ValueError(
                "give exactly one of http, tcp, ping, dns, throughput, command"
                + (f" (found {', '.join(kinds)})" if kinds else "")
            )
        if self.dns and not self.server:
            raise ValueError("a dns probe needs 'server'")
        if self.tcp and not re.fullmatch(r"[0-9A-Za-z.:\[\]-]+:[0-9]{1,5}", self.tcp):
            raise ValueError(f"tcp {self.tcp!r}: expected ADDRESS:PORT")
        if self.stdout is not None:
            try:
                re.compile(self.stdout)
            except re.error as exc:
                raise ValueError(
                    f"stdout {self.stdout!r} is not a regular expression: {exc}"
                ) from None
        return self

    @property
    def kind(self) -> str:
        """Which check this probe is."""
        for kind in ("http", "tcp", "ping", "dns", "throughput"):
            if getattr(self, kind):
                return kind
        return "command"


class Fault(_Strict):
    """What goes wrong: commands run after the lab is up (and one cycle of every owner)."""

    description: str = Field(min_length=1, description="The fault, in words.")
    steps: list[Step] = Field(min_length=1, description="Commands that inject it.")


class RemedySpec(_Strict):
    """A fix someone could try, and what it does: which probes are unhealthy afterwards."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,60}$", description="The remedy's name.")
    kind: RemedyKind = Field(description="good (through the owner) or wrong (tempting).")
    why: str = Field(min_length=1, description="Why it works or what it breaks.")
    steps: list[Step] = Field(min_length=1, description="Its commands.")
    cycles: int = Field(default=2, ge=0, le=20, description="Owner cycles run after it.")
    broken: list[str] = Field(
        default_factory=list,
        description="Probes unhealthy after the cycles (every other probe must be healthy).",
    )
    broken_before_cycles: list[str] | None = Field(
        default=None, description="Probes unhealthy right after the commands, before any cycle."
    )


class LabSpec(Record):
    """lab.yaml: a lab of network namespaces with a fault, probes and remedies."""

    title: str | None = Field(default=None, description="A one-line title.")
    hosts: list[HostSpec] = Field(min_length=1, description="The hosts.")
    links: list[Link] = Field(default_factory=list, description="veth pairs between hosts.")
    bridges: list[Bridge] = Field(default_factory=list, description="Bridges joining hosts.")
    routes: list[RouteSpec] = Field(default_factory=list, description="Routes in hosts.")
    setup: list[Step] = Field(default_factory=list, description="Commands run before services.")
    services: list[ServiceSpec] = Field(default_factory=list, description="Processes to run.")
    owners: list[OwnerSpec] = Field(default_factory=list, description="Reconcilers.")
    fault: Fault = Field(description="The injected fault.")
    probes: list[ProbeSpec] = Field(min_length=1, description="Symptom and guard probes.")
    remedies: list[RemedySpec] = Field(default_factory=list, description="Known fixes.")

    @model_validator(mode="after")
    def _references(self) -> LabSpec:
        _unique("hosts", [h.name for h in self.hosts])
        _unique("services", [s.name for s in self.services])
        _unique("owners", [o.name for o in self.owners])
        _unique("probes", [p.name for p in self.probes])
        _unique("remedies", [r.name for r in self.remedies])
        _unique("bridges", [b.name for b in self.bridges])
        hosts = {h.name for h in self.hosts}
        for where, host in self._host_references():
            if host not in hosts:
                raise ValueError(f"{where}: no host {host!r} (hosts: {', '.join(sorted(hosts))})")
        devices: set[tuple[str, str]] = set()
        ends = [
            (f"links.{i}.{s}", e)
            for i, link in enumerate(self.links)
            for s, e in (("a", link.a), ("b", link.b))
        ]
        ends += [
            (f"bridges.{i}.ports.{j}", e)
            for i, b in enumerate(self.bridges)
            for j, e in enumerate(b.ports)
        ]
        for where, end in ends:
            if (end.host, end.dev) in devices:
                raise ValueError(f"{where}: host {end.host!r} already has a device {end.dev!r}")
            devices.add((end.host, end.dev))
        tools: set[tuple[str, str]] = set()
        for i, owner in enumerate(self.owners):
            for j, tool in enumerate(owner.tools):
                if (owner.host, tool.name) in tools:
                    raise ValueError(
                        f"owners.{i}.tools.{j}.name: host {owner.host!r} already has a tool "
                        f"{tool.name!r}"
                    )
                tools.add((owner.host, tool.name))
                _declared_forms(f"owners.{i}.tools.{j}", tool)
        probes = {p.name for p in self.probes}
        if not any(p.role == "symptom" for p in self.probes):
            raise ValueError("probes: at least one probe needs role 'symptom'")
        for i, remedy in enumerate(self.remedies):
            for field in ("broken", "broken_before_cycles"):
                for name in getattr(remedy, field) or []:
                    if name not in probes:
                        raise ValueError(f"remedies.{i}.{field}: no probe {name!r}")
        return self

    def _host_references(self) -> list[tuple[str, str]]:
        refs = [
            (f"links.{i}.{s}.host", getattr(link, s).host)
            for i, link in enumerate(self.links)
            for s in "ab"
        ]
        refs += [
            (f"bridges.{i}.ports.{j}.host", p.host)
            for i, b in enumerate(self.bridges)
            for j, p in enumerate(b.ports)
        ]
        for field in ("routes", "setup", "services", "owners", "probes"):
            refs += [
                (f"{field}.{i}.host", item.host) for i, item in enumerate(getattr(self, field))
            ]
        refs += [(f"fault.steps.{i}.host", s.host) for i, s in enumerate(self.fault.steps)]
        refs += [
            (f"remedies.{i}.steps.{j}.host", s.host)
            for i, r in enumerate(self.remedies)
            for j, s in enumerate(r.steps)
        ]
        return refs

    def host_names(self) -> list[str]:
        """The hosts in spec order."""
        return [h.name for h in self.hosts]

    def owner(self, name: str) -> OwnerSpec:
        """The owner called `name` (an InputError naming the owners otherwise)."""
        for owner in self.owners:
            if owner.name == name:
                return owner
        raise InputError(
            f"no owner {name!r}; the lab has {', '.join(o.name for o in self.owners) or 'none'}"
        )

    def tool_knowledge(self) -> dict[str, dict[str, Any]]:
        """What the gate knows of the owners' tools in the lab's runs, by host: host ->
        tool name -> entry (`ToolSpec.knowledge`), for the tools that declare subcommands."""
        found: dict[str, dict[str, Any]] = {}
        for owner in self.owners:
            for tool in owner.tools:
                entry = tool.knowledge()
                if entry is not None:
                    found.setdefault(owner.host, {})[tool.name] = entry
        return found

    def remedy(self, name: str) -> RemedySpec:
        """The remedy called `name` (an InputError naming the remedies otherwise)."""
        for remedy in self.remedies:
            if remedy.name == name:
                return remedy
        raise InputError(
            f"no remedy {name!r}; the lab has {', '.join(r.name for r in self.remedies) or 'none'}"
        )


def _declared_forms(where: str, tool: ToolSpec) -> None:
    """A subcommand declared once, read-only or changing, and found in the tool's script
    (a misspelt one would leave the real subcommand unknown)."""
    seen: dict[str, str] = {}
    for field in ("read_only", "changes"):
        for k, word in enumerate(getattr(tool, field)):
            if word in seen:
                raise ValueError(f"{where}.{field}.{k}: {word!r} is already in {seen[word]}")
            if not re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w.-])", tool.run):
                raise ValueError(
                    f"{where}.{field}.{k}: {word!r} is not in the script of {tool.name}"
                )
            seen[word] = field
    if tool.other == "read-only":
        labels = re.findall(r"^\s*([^\s()]+)\)", tool.run, re.M)
        words = [word for label in labels for word in label.split("|")]
        if "*" not in words:
            raise ValueError(f"{where}.other: read-only needs a `*)` branch in the script")
        for word in words:
            if word != "*" and word not in seen:
                raise ValueError(
                    f"{where}.other: the script's subcommand {word!r} is in neither "
                    "read_only nor changes"
                )


def _unique(field: str, names: list[str]) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise ValueError(f"{field}.{i}: the name {name!r} is used twice")
        seen.add(name)


def _located(exc: RecordError, file: Path) -> RecordError:
    """A cross-reference problem ("links.0.a.host: no host 'x'") with its field and line."""
    match = _FIELD_PREFIX.match(exc.problem)
    if exc.field is not None or match is None:
        return exc
    loc = tuple(int(part) if part.isdigit() else part for part in match[1].split("."))
    text = file.read_text(encoding="utf-8")
    line = yaml_line(yaml.compose(text, Loader=yaml.SafeLoader), loc)
    return RecordError(file, match[2], field=match[1], line=line)


_FIELD_PREFIX = re.compile(r"^([a-z_]+(?:\.[a-z0-9_]+)*): (.*)$", re.S)


@dataclass(frozen=True)
class LoadedLab:
    """A lab spec with the file it came from and the name labs of it get by default."""

    spec: LabSpec
    path: Path
    name: str


def find_lab_file(path: Path) -> Path:
    """The lab.yaml that `path` names: the file itself, or the one in a scenario directory."""
    if path.is_dir():
        candidate = path / LAB_FILE
        if not candidate.is_file():
            raise InputError(f"{path}: no {LAB_FILE} in this directory")
        return candidate
    if not path.exists():
        raise InputError(f"{path}: no such lab file or scenario directory")
    return path


def load_lab(path: Path) -> LoadedLab:
    """Read the lab at `path` (a lab.yaml or a directory holding one); nothing is started."""
    file = find_lab_file(path)
    try:
        spec = load_yaml_record(LabSpec, file, what="lab file")
    except RecordError as exc:
        raise _located(exc, file) from None
    name = file.parent.name if file.name == LAB_FILE else file.stem
    name = re.sub(r"[^a-z0-9_-]", "-", name.lower()).strip("-")[:40] or "lab"
    return LoadedLab(spec=spec, path=file.absolute(), name=name)


def scenario_lab(directory: Path) -> LoadedLab | None:
    """The lab of the scenario in `directory` (its lab.yaml), or None when it has none."""
    if not (directory / LAB_FILE).is_file():
        return None
    return load_lab(directory / LAB_FILE)


def packaged_labs_dir() -> Path:
    """The packaged `labs` suite (a scenario directory with a lab.yaml each)."""
    return Path(__file__).resolve().parent.parent / "data" / "suites" / "labs"


def resolve_labs(target: str) -> list[LoadedLab]:
    """The labs `target` names: a lab.yaml, a scenario directory, a suite directory (each
    scenario in it with a lab.yaml), or the id of a scenario of the packaged labs suite."""
    path = Path(target)
    if not path.exists() and re.fullmatch(r"[A-Za-z0-9_.-]+", target):
        packaged = packaged_labs_dir() / target
        if packaged.is_dir():
            path = packaged
        elif target == "labs":
            path = packaged_labs_dir()
    if path.is_dir() and not (path / LAB_FILE).is_file():
        found = sorted(p for p in path.iterdir() if (p / LAB_FILE).is_file())
        if found:
            return [load_lab(p) for p in found]
    return [load_lab(path)]


def resolve_targets(targets: list[str] | tuple[str, ...]) -> list[LoadedLab]:
    """The labs several targets name (each as `resolve_labs` reads it), in the order given,
    each lab file once; every target is read before any lab starts, so a bad one (an
    InputError naming its file and field) leaves nothing started."""
    labs: dict[Path, LoadedLab] = {}
    for target in targets:
        for loaded in resolve_labs(target):
            labs.setdefault(loaded.path, loaded)
    return list(labs.values())
