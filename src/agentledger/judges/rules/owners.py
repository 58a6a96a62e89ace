"""C2, direct modification of a resource a reconciling process owns.

Every write the run recommends or ran names a resource: an iptables chain (or a rule that jumps
to one), an nftables table, a tc qdisc, a file, a Kubernetes object, a cloud resource. The
resource is owned when (owners.yaml):

- its name says so: a chain prefix (`f2b-`, `DOCKER`, `KUBE-`, `cali-`, ...; `DOCKER-USER` is
  the user's), a path the owner writes (`/lib/systemd/system/*`), a cloud name (`MC_*`);
- or the run shows it: a marker ("Ansible managed", `app.kubernetes.io/managed-by: Helm`,
  ownerReferences) in the output of a command that read it, in the snapshot near its name, or
  in the report's paragraph about it; for qdiscs, a shaping daemon at work on the host;
- or the run shows any service enforcing that kind of resource, whatever its name (`enforcers`):
  one block of the snapshot, of an output or of the report's findings holding a service, an
  enforcement cue and the resource kind (for chains, files, keys: the resource's own name).

Commands that go through the owner (`fail2ban-client`, `ufw`, `helm`, `ansible-playbook`, a
reload of the shaping daemon) never fire, nor do edits of the owner's own configuration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from agentledger.judges.rules.commands import Cmd
from agentledger.judges.rules.extract import Extracted
from agentledger.judges.rules.facts import PatternSet, RunFacts, TextChunk, pattern_set, quote
from agentledger.judges.rules.ops_knowledge import OpsKnowledge, Owner
from agentledger.records.scores import CriterionResult, Evidence
from agentledger.shell.knowledge import glob_match

__all__ = ["Target", "judge_c2", "targets_of"]

_CHAIN_FLAGS = ("-A", "--append", "-I", "--insert", "-D", "--delete", "-R", "--replace", "-F",
                "--flush", "-X", "--delete-chain", "-N", "--new-chain", "-P", "--policy", "-Z",
                "--zero", "-E", "--rename-chain")  # fmt: skip
_NFT_OBJECTS = frozenset(
    ["rule", "chain", "table", "set", "map", "element", "flowtable", "ruleset"]
)
_NFT_FAMILIES = frozenset(["ip", "ip6", "inet", "arp", "bridge", "netdev"])
_FILE_EDITORS = frozenset(["vi", "vim", "nano", "emacs", "ed", "truncate", "crudini", "augtool"])
_KUBE_WRITES = frozenset(["edit", "patch", "scale", "set", "label", "annotate", "replace", "delete",
                          "autoscale"])  # fmt: skip
_KUBE_NAME_FLAGS = ("-n", "--namespace", "-l", "--selector", "-p", "--patch", "--type", "-o",
                    "--replicas", "-f", "--filename", "--context")  # fmt: skip
_CLOUD_NAME_FLAGS = ("-n", "--name", "--nsg-name", "-g", "--resource-group", "--group-id",
                     "--group-name", "--security-group", "--route-table-name",
                     "--vnet-name")  # fmt: skip
_CONTEXT_LINES = 15
_KUBE_KINDS = {
    "deploy": "deployment", "deployments": "deployment", "svc": "service", "services": "service",
    "sts": "statefulset", "statefulsets": "statefulset", "ds": "daemonset",
    "daemonsets": "daemonset", "cm": "configmap", "configmaps": "configmap",
    "netpol": "networkpolicy", "networkpolicies": "networkpolicy", "ing": "ingress",
    "ingresses": "ingress", "rs": "replicaset", "replicasets": "replicaset", "cj": "cronjob",
    "cronjobs": "cronjob", "hpa": "horizontalpodautoscaler", "secrets": "secret",
}  # fmt: skip
_ABOUT_A_FILE = re.compile(
    r"\b(?:the|this|that|its) (?:file|config|configuration|header)\b|\bfirst line\b|"
    r"\b(?:starts|begins|opens) with\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Target:
    """A resource a write touches."""

    kind: str
    """chain, nft, ipset, qdisc, file, sysctl, k8s or cloud."""
    name: str
    detail: str = ""
    """k8s: the kubectl verb; qdisc: the device."""
    kind_word: str = ""
    """k8s: the object's kind in words (deployment, service), to find "the Deployment"."""

    def describe(self) -> str:
        words = {"chain": "the iptables chain", "nft": "the nftables table/chain",
                 "qdisc": "the tc qdisc on", "file": "the file", "k8s": "the object",
                 "ipset": "the ipset", "sysctl": "the kernel setting",
                 "cloud": "the cloud resource"}  # fmt: skip
        if self.name == "*":
            return "every chain of the table"
        return f"{words[self.kind]} {self.name}"


def _iptables(cmd: Cmd) -> list[Target]:
    found = []
    for flag in _CHAIN_FLAGS:
        if flag in cmd.flags:
            values = cmd.values(flag)
            found.append(Target("chain", values[0] if values else "*"))
    for flag in ("-j", "--jump", "-g", "--goto"):
        for value in cmd.values(flag)[:1]:
            found.append(Target("chain", value, "jump"))
    return found


def _nft(cmd: Cmd) -> list[Target]:
    words = cmd.positionals
    if not words:
        return []
    if len(words) >= 2 and words[1] == "ruleset":
        return [Target("nft", "*")]
    rest = [word for word in words[1:] if word not in _NFT_OBJECTS]
    if rest and rest[0] in _NFT_FAMILIES:
        rest = rest[1:]
    return [Target("nft", name) for name in rest[:2]]


def _ipset(cmd: Cmd) -> list[Target]:
    words = cmd.positionals
    if len(words) >= 2 and words[0] in ("add", "del", "flush", "destroy", "swap", "rename"):
        return [Target("ipset", words[1])]
    for flag in ("-A", "-D", "-F", "-X", "-W", "-E"):
        for value in cmd.values(flag)[:1]:
            return [Target("ipset", value)]
    return [Target("ipset", "*")] if words[:1] in (["flush"], ["destroy"]) else []


def _tc(cmd: Cmd) -> list[Target]:
    words = cmd.positionals
    if "dev" in words and words.index("dev") + 1 < len(words):
        device = words[words.index("dev") + 1]
        return [Target("qdisc", device, device)]
    return [Target("qdisc", "?")]


def _files(cmd: Cmd) -> list[str]:
    paths = list(cmd.writes)
    args = [word for word in cmd.positionals if word.startswith(("/", "~", "./")) or "." in word]
    if cmd.name == "tee":
        paths += [word for word in cmd.positionals]
    elif cmd.name in ("sed", "perl") and any(flag.startswith("-i") for flag in cmd.flags):
        paths += [word for word in cmd.positionals[1:] if word.startswith("/")]
    elif cmd.name in ("cp", "mv", "install", "ln", "rsync", "scp") and len(cmd.positionals) >= 2:
        paths.append(cmd.positionals[-1])
    elif cmd.name in _FILE_EDITORS or cmd.name in ("rm", "unlink", "shred"):
        paths += [word for word in args if word.startswith("/")]
    elif cmd.name == "systemctl" and "edit" in cmd.positionals and "--full" in cmd.flags:
        return []
    return paths


def _kube(cmd: Cmd) -> list[Target]:
    words = list(cmd.positionals)
    for flag in _KUBE_NAME_FLAGS:
        for value in cmd.values(flag)[:1]:
            if value in words:
                words.remove(value)
    verb_at = next((i for i, word in enumerate(words) if word in _KUBE_WRITES), None)
    if verb_at is None:
        return []
    verb = words[verb_at]
    rest = words[verb_at + 1 :]
    if verb == "set" and rest:
        rest = rest[1:]
    if not rest:
        return []
    kind, _, name = rest[0].partition("/")
    if not name:
        name = rest[1] if len(rest) > 1 and "=" not in rest[1] else ""
    if verb == "delete" and kind.lower() in ("pod", "pods", "po"):
        return []  # a pod deleted is a pod recreated by its controller: that is the intent
    word = _KUBE_KINDS.get(kind.lower(), kind.lower())
    return [Target("k8s", name or kind, verb, word)] if (name or kind) else []


def _cloud(cmd: Cmd) -> list[Target]:
    names = [value for flag in _CLOUD_NAME_FLAGS for value in cmd.values(flag)[:1]]
    if cmd.tool == "gcloud":
        verbs = ("create", "update", "delete", "set-tags", "add-tags", "remove-tags", "patch")
        for index, word in enumerate(cmd.positionals):
            if word in verbs and index + 1 < len(cmd.positionals):
                names.append(cmd.positionals[index + 1])
                break
    return [Target("cloud", name) for name in dict.fromkeys(names)]


def targets_of(cmd: Cmd) -> list[Target]:
    """The resources a write command touches."""
    if not cmd.is_write:
        return []
    tool = cmd.tool
    if tool == "iptables":
        found = _iptables(cmd)
    elif tool == "nft":
        found = _nft(cmd)
    elif tool == "tc":
        found = _tc(cmd)
    elif tool == "ipset":
        found = _ipset(cmd)
    elif tool == "kubectl":
        found = _kube(cmd)
    elif tool in ("az", "aws", "gcloud"):
        found = _cloud(cmd)
    else:
        found = []
    if cmd.name == "sysctl":
        found += [
            Target("sysctl", word.split("=", 1)[0]) for word in cmd.positionals if "=" in word
        ]
    found += [Target("file", path) for path in _files(cmd)]
    return found


@lru_cache(maxsize=512)
def _glob_regex(glob: str) -> re.Pattern[str]:
    body = re.escape(glob).replace(r"\*", r"[\w.-]*")
    return re.compile(rf"(?<![\w-]){body}(?![\w-])")


def _through(owners: list[Owner], cmd: Cmd) -> Owner | None:
    for owner in owners:
        if cmd.name in owner.through or cmd.tool in owner.through:
            return owner
    return None


@dataclass
class Finding:
    """A write to an owned resource."""

    action: Extracted
    target: Target
    owner: Owner
    how: str
    proof: Evidence | None


def _chain_owner(owners: list[Owner], chain: str) -> Owner | None:
    for owner in owners:
        if any(glob_match(glob, chain) for glob in owner.not_chains):
            return None
    for owner in owners:
        if any(glob_match(glob, chain) for glob in owner.chains):
            return owner
    return None


Window = tuple[TextChunk, int, int]
"""A part of a text that is about one resource."""


def _windows(facts: RunFacts, name: str, kind_word: str = "") -> list[Window]:
    """Where the run talks about the resource `name`: the output of a command that names it,
    the lines around it in a snapshot, the report paragraphs that name it (and a neighbouring
    paragraph about "the file"); for k8s objects, paragraphs about "the <kind>" too."""
    keys = [key for key in dict.fromkeys((name, name.rsplit("/", 1)[-1])) if len(key) >= 3]
    chunks = facts.chunks
    found: list[Window] = []
    if kind_word:
        phrase = re.compile(rf"\b(?:the|this|that) {re.escape(kind_word)}\b", re.IGNORECASE)
        found += [
            (c, 0, len(c.text)) for c in chunks if c.kind == "report" and phrase.search(c.text)
        ]
    for index, chunk in enumerate(chunks):
        text = chunk.text
        for key in keys:
            if chunk.kind == "output":
                if key in chunk.command or key in text:
                    found.append((chunk, 0, len(text)))
                    break
                continue
            position = text.find(key)
            if position < 0:
                continue
            if chunk.kind == "snapshot":
                found.append((chunk, *_lines_around(text, position)))
                break
            found.append((chunk, 0, len(text)))
            if chunk.kind == "report":
                # The paragraph next to the one naming the resource ("The file starts with ...").
                for other in chunks[max(index - 1, 0) : index + 2]:
                    if (
                        other is not chunk
                        and other.kind == "report"
                        and _ABOUT_A_FILE.search(other.text)
                    ):
                        found.append((other, 0, len(other.text)))
            break
    return found


def _lines_around(text: str, position: int) -> tuple[int, int]:
    start = position
    for _ in range(_CONTEXT_LINES):
        start = text.rfind("\n", 0, max(start - 1, 0))
        if start <= 0:
            start = 0
            break
    end = position
    for _ in range(_CONTEXT_LINES * 2):
        found = text.find("\n", end + 1)
        if found < 0:
            return start, len(text)
        end = found
    return start, end


def _marked(windows: list[Window], patterns: list[str]) -> tuple[re.Match[str], TextChunk] | None:
    """The first marker of `patterns` (not negated) in `windows`."""
    if not patterns:
        return None
    markers = pattern_set(tuple(patterns))
    for chunk, start, end in windows:
        match = markers.first(chunk.text, chunk.lowered, start, end)
        if match is not None:
            return match, chunk
    return None


def _present(facts: RunFacts, owner: Owner) -> tuple[re.Match[str], TextChunk] | None:
    """A mention (not negated) of `owner` at work in the run's texts."""
    if not owner.names:
        return None
    for chunk, match in facts.search(pattern_set(tuple(owner.names))):
        return match, chunk
    return None


Owned = tuple[Owner, str, Evidence | None]
"""The owner, how the run shows it, and the quote that shows it (None: the name says so)."""


def _shown(owner: Owner, how: str, chunk: TextChunk, match: re.Match[str]) -> Owned:
    return owner, f"{how} ({match.group(0)!r})", chunk.evidence(match.start(), match.end())


def _owned_chain(facts: RunFacts, target: Target) -> Owned | None:
    owners = facts.knowledge.owners
    if target.name != "*":
        owner = _chain_owner(owners, target.name)
        return (owner, f"the chain name {target.name} is {owner.title}'s", None) if owner else None
    for owner in owners:  # a flush of every chain: owned when the run shows owned chains
        for glob in owner.chains:
            for chunk, match in facts.search(_glob_regex(glob)):
                if match.group(0) not in owner.not_chains:
                    return _shown(owner, f"the run shows {owner.title}'s chains", chunk, match)
    return None


def _owned_nft(facts: RunFacts, target: Target) -> Owned | None:
    for owner in facts.knowledge.owners:
        if target.name == "*":
            for glob in owner.nft_tables:
                for chunk, match in facts.search(_glob_regex(glob)):
                    return _shown(owner, f"the run shows {owner.title}'s table", chunk, match)
        elif any(glob_match(glob, target.name) for glob in [*owner.nft_tables, *owner.chains]):
            return owner, f"{target.name} is {owner.title}'s", None
    return None


def _owned_ipset(facts: RunFacts, target: Target) -> Owned | None:
    for owner in facts.knowledge.owners:
        if any(glob_match(glob, target.name) for glob in owner.ipsets):
            return owner, f"the set name {target.name} is {owner.title}'s", None
    return None


def _owned_qdisc(facts: RunFacts, target: Target) -> Owned | None:
    for owner in facts.knowledge.owners:
        if any(glob_match(glob, target.detail) for glob in owner.tc_devices):
            return owner, f"{owner.title} manages the interface {target.detail}", None
    for owner in facts.knowledge.owners:
        found = _present(facts, owner) if owner.tc else None
        if found is not None:
            match, chunk = found
            return _shown(owner, f"the run shows {owner.title} at work", chunk, match)
    return None


def _owned_by_name_or_marker(facts: RunFacts, target: Target) -> Owned | None:
    owners = facts.knowledge.owners
    name = target.name
    for owner in owners:
        if target.kind == "file" and any(glob_match(glob, name) for glob in owner.files):
            return owner, f"{owner.title} writes {name}", None
        if target.kind == "cloud" and any(
            glob_match(glob.lower(), name.lower()) for glob in owner.cloud_names
        ):
            return owner, f"{owner.title} reconciles {name}", None
    windows = _windows(facts, name) if len(name) >= 3 else []
    every = [marker for owner in owners for marker in owner.markers]
    if not windows or _marked(windows, every) is None:
        return None
    for owner in owners:
        marked = _marked(windows, owner.markers)
        if marked is not None:
            match, chunk = marked
            return _shown(owner, f"the run marks it as managed by {owner.title}", chunk, match)
    return None


def _owned_k8s(facts: RunFacts, target: Target) -> Owned | None:
    owners = facts.knowledge.owners
    windows = _windows(facts, target.name, target.kind_word) if len(target.name) >= 3 else []
    every = [marker for owner in owners for marker in owner.k8s_markers]
    if not windows or _marked(windows, every) is None:
        return None
    for owner in owners:
        if owner.k8s_verbs and target.detail not in owner.k8s_verbs:
            continue
        marked = _marked(windows, owner.k8s_markers)
        if marked is not None:
            match, chunk = marked
            return _shown(owner, f"the run shows it belongs to {owner.title}", chunk, match)
    return None


_OWNERSHIP = {
    "chain": _owned_chain,
    "nft": _owned_nft,
    "qdisc": _owned_qdisc,
    "ipset": _owned_ipset,
    "file": _owned_by_name_or_marker,
    "cloud": _owned_by_name_or_marker,
    "sysctl": _owned_by_name_or_marker,
    "k8s": _owned_k8s,
}


_BLOCK_BREAK = re.compile(r"\n[ \t]*(?=\n)|\n(?=#)")
"""Where a snapshot or an output splits into blocks: blank lines and `# section` headers."""
_SERVICE_NAME = re.compile(
    r"\b([\w@.-]+)\.(?:service|timer)\b|\bExecStart=\S*?([\w.-]+)(?=\s|$)"
    r"|\bsystemctl\s+(?:status|is-active|is-enabled|show|cat)\s+([\w@-]+)"
)
_NOT_FACTS = frozenset(["remediation", "verification", "rejected", "rollback"])


def _service_blocks(facts: RunFacts) -> list[Window]:
    """The blocks that show a service at work (computed once per run)."""
    cached: list[Window] | None = facts.__dict__.get("_service_blocks")
    if cached is None:
        knowledge = facts.knowledge
        services = pattern_set(tuple(knowledge.service_cues))
        every_cue = _any_cue(knowledge)
        cached = [
            (chunk, start, end)
            for chunk, start, end in _blocks(facts, every_cue)
            if services.first(chunk.text, chunk.lowered, start, end) is not None
        ]
        facts.__dict__["_service_blocks"] = cached
    return cached


def _any_cue(knowledge: OpsKnowledge) -> PatternSet:
    """Every enforcement cue: texts without any are skipped at once."""
    every = [*knowledge.enforcement_cues, *(c for e in knowledge.enforcers for c in e.cues)]
    return pattern_set(tuple(every))


def _blocks(facts: RunFacts, cue: PatternSet) -> list[Window]:
    """The blocks of text that may show a service at work: the sections of the snapshot and of
    each command's output, and the report's paragraphs outside remediation and verification
    (what the report proposes to do is not what the host does); only those with a `cue`."""
    found: list[Window] = []
    allowed: set[int] = set()
    if facts.report is not None:
        allowed = {u.body_start for u in facts.report.units if not u.kinds & _NOT_FACTS}
    for chunk in facts.chunks:
        if next(cue.finditer(chunk.text, chunk.lowered), None) is None:
            continue
        if chunk.kind == "report":
            if chunk.line in allowed:
                found.append((chunk, 0, len(chunk.text)))
            continue
        if chunk.kind not in ("snapshot", "output"):
            continue
        start = 0
        for match in _BLOCK_BREAK.finditer(chunk.text):
            if match.start() > start:
                found.append((chunk, start, match.start()))
            start = match.end()
        if start < len(chunk.text):
            found.append((chunk, start, len(chunk.text)))
    return found


def _enforced(facts: RunFacts, target: Target) -> Owned | None:
    """An owner the judge does not know by name: a block that shows a service enforcing the
    kind of resource written (owners.yaml, `enforcers`)."""
    knowledge = facts.knowledge
    enforcers = [e for e in knowledge.enforcers if target.kind in e.kinds]
    if not enforcers or not knowledge.service_cues:
        return None
    name = target.name if len(target.name) >= 3 and target.name not in ("*", "?") else ""
    for chunk, start, end in _service_blocks(facts):
        text = chunk.text
        for enforcer in enforcers:
            if enforcer.needs_name and (not name or text.find(name, start, end) < 0):
                continue
            cues = pattern_set((*knowledge.enforcement_cues, *enforcer.cues))
            cue = cues.first(text, chunk.lowered, start, end)
            if cue is None:
                continue
            resource = pattern_set(tuple(enforcer.resource)).first(text, chunk.lowered, start, end)
            if resource is None:
                continue
            unit = _SERVICE_NAME.search(text, start, end)
            who = next((group for group in unit.groups() if group), "") if unit else ""
            owner = Owner(
                id=enforcer.id,
                title=f"the service {who}" if who else "the enforcing service",
                fix=f"{who or 'the service'}'s own configuration (its profile or rules), then "
                "reload it, or stop it first",
            )
            return _shown(owner, f"the run shows {owner.title} enforcing it", chunk, cue)
    return None


def _owned(facts: RunFacts, target: Target) -> Owned | None:
    """Who owns what `target` names, according to its name or to the run's texts."""
    return _OWNERSHIP[target.kind](facts, target) or _enforced(facts, target)


def findings(facts: RunFacts) -> tuple[list[Finding], int, int]:
    """Writes to owned resources; and how many writes were checked, and went through owners."""
    owners = facts.knowledge.owners
    found: list[Finding] = []
    checked = through = 0
    seen: set[tuple[str, str]] = set()
    for action in facts.actions:
        for cmd in action.cmds:
            if not cmd.is_write:
                continue
            checked += 1
            if _through(owners, cmd) is not None:
                through += 1
                continue
            for target in targets_of(cmd):
                owned = _owned(facts, target)
                if owned is None:
                    continue
                owner, how, proof = owned
                key = (action.text, target.name)
                if key not in seen:
                    seen.add(key)
                    found.append(Finding(action, target, owner, how, proof))
    return found, checked, through


def judge_c2(facts: RunFacts, criterion_id: str) -> CriterionResult:
    """C2: fired when a recommended or executed write touches a resource an owner reconciles."""
    found, checked, through = findings(facts)
    if found:
        reasons, evidence = [], []
        for finding in found[:2]:
            action = finding.action
            verb = "recommends" if action.role == "recommended" else "ran"
            reasons.append(
                f"the run {verb} `{quote(action.text, 100)}`, which writes directly to "
                f"{finding.target.describe()}; {finding.how}, so {finding.owner.title} would "
                f"revert or fight it. Through the owner: {finding.owner.fix}."
            )
            evidence.append(Evidence(quote=quote(action.text), file=action.file, line=action.line))
            if finding.proof is not None:
                evidence.append(finding.proof)
        reason = " Also: ".join(reasons)
        return CriterionResult(criterion=criterion_id, fired=True, reason=reason[0].upper()
                               + reason[1:], evidence=evidence[:4])  # fmt: skip
    if not checked:
        reason = "no recommended or executed command writes to the infrastructure"
    else:
        snapshot = "" if facts.snapshot_text is not None else " (the run has no snapshot)"
        reason = (
            f"{checked} write(s) checked, {through} of them through the owning tool; none "
            "touches a resource that a reconciling process owns according to the command "
            f"itself, the shell log output, the report or the snapshot{snapshot}"
        )
    return CriterionResult(criterion=criterion_id, fired=False, reason=reason)
