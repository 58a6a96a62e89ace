"""Deterministic synthetic runs of realistic size for the benchmarks.

One `RunSpec` per run index: identity (scenario, model, prompt version, commit, times) and
content (six files, about 20 KB together). Everything derives from (seed, index), so any
subset can be generated in any order, in any process, and always gives the same bytes.

Two renderings of the same runs:

- `write_seed_run`: a directory in the seed's layout, for `agentledger import`:
  ``use_case_m_haiku_20260312_000123/{PROMPT.txt, ghost_report_20260312.md,
  ghost_audit_20260312.md, shell_audit_20260312.jsonl, metadata.json, run_summary.json}``
  with the seed's short metadata.json (8-hex prompt hash, ghost_agent_commit, ...).
- `seal_runs`: recorded runs written through the library (RunWriter + Ledger.seal_batch), with
  full identity (full prompt hash, model served, agent, times), for the 100,000-run index.

The prompt hash of a run in the seed rendering is the first 8 hex digits of its full hash in the
library rendering, so `runs --model X --prompt-hash P` selects the same runs in both.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

DEFAULT_SEED = 20260312
GENERATOR_VERSION = 1

# (model asked for, short name used in directory names, provider, served id or None, weight)
MODELS: tuple[tuple[str, str, str, str | None, float], ...] = (
    ("claude-haiku-4-5", "haiku", "anthropic", "claude-haiku-4-5-20251001", 0.28),
    ("gemini-2.5-flash", "gemini", "google", None, 0.24),
    ("gpt-4o", "gpt4o", "openai", "gpt-4o-2024-11-20", 0.16),
    ("claude-sonnet-4-5", "sonnet", "anthropic", "claude-sonnet-4-5-20250929", 0.13),
    ("o3-mini", "o3mini", "openai", "o3-mini-2025-01-31", 0.11),
    ("gemini-2.5-pro", "geminipro", "google", None, 0.08),
)
SCENARIOS = tuple(f"use_case_{letter}" for letter in "abcdefghijklmnopqrstuvwxyz")
# Prompt versions: base prompt revisions, each with a baseline and a few addon variants.
BASE_VERSIONS = 30
ADDONS = ("variant-a", "variant-b", "variant-c")
FIRST_DAY = datetime(2025, 10, 1, tzinfo=UTC)
DAYS = 182
AGENT_COMMITS = 40

_WORDS = (
    "nginx upstream timeout iptables rule chain drop accept eth0 qdisc netem latency packet "
    "loss route table gateway resolv.conf dns resolver systemd unit daemon config reload "
    "journal kernel conntrack socket listen port 443 8080 tls certificate expiry vm disk "
    "inode mount fstab cgroup memory pressure oom killer process pid cron job logrotate "
    "azure nsg subnet vnet load balancer probe health check backend pool replica pod "
    "deployment namespace service endpoint kubelet container image registry firewall "
    "policy mtu fragmentation arp neighbour cache bgp peer interface bond vlan sysctl "
    "somaxconn backlog retransmit syn cookie ephemeral range keepalive proxy header "
    "the a of to and in is was on for with that this it as by from at which after before "
    "observed confirmed likely because therefore however symptom root cause remediation "
    "evidence hypothesis checked verified unchanged restored reverted owned managed"
)
_VOCAB = tuple(_WORDS.split())
_COMMANDS = (
    "systemctl status {svc}",
    "journalctl -u {svc} --since '-1h' --no-pager",
    "ss -tlnp",
    "ip route show table all",
    "ip -s link show eth0",
    "tc qdisc show dev eth0",
    "iptables -L -n -v --line-numbers",
    "cat /etc/resolv.conf",
    "dig +short {host}",
    "curl -sv --max-time 5 https://{host}/health",
    "df -h",
    "free -m",
    "ps aux --sort=-%mem | head -20",
    "cat /etc/{svc}/{svc}.conf",
    "sysctl net.core.somaxconn",
    "kubectl get pods -n {ns} -o wide",
    "kubectl describe svc {svc} -n {ns}",
    "az network nsg rule list -g rg-{ns} --nsg-name nsg-{svc}",
    "grep -n upstream /etc/nginx/nginx.conf",
    "tail -n 200 /var/log/{svc}/error.log",
)
_DENIED_COMMANDS = (
    "systemctl restart {svc}",
    "iptables -F",
    "tc qdisc del dev eth0 root",
    "sed -i 's/timeout 5s/timeout 60s/' /etc/{svc}/{svc}.conf",
    "kubectl delete pod -n {ns} -l app={svc}",
    "rm -rf /var/log/{svc}/*.log",
)
_SERVICES = ("nginx", "haproxy", "postgres", "redis", "coredns", "envoy", "chronyd", "sshd")
_NAMESPACES = ("prod", "staging", "edge", "payments", "ingest")
_HOSTS = ("api.internal", "db.internal", "auth.example.com", "cdn.example.net")


@dataclass(frozen=True)
class PromptVersion:
    """One effective system prompt: a base revision, optionally with an addon."""

    base: int
    addon: str | None
    system_prompt_hash: str  # "sha256:<64 hex>"
    base_prompt_hash: str
    addon_hash: str | None

    @property
    def short(self) -> str:
        return self.system_prompt_hash[7:15]


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@cache
def prompt_versions(seed: int = DEFAULT_SEED) -> tuple[PromptVersion, ...]:
    """Every prompt version the synthetic runs use (BASE_VERSIONS x (1 + len(ADDONS)))."""
    versions = []
    for base in range(BASE_VERSIONS):
        base_text = f"You are Ghost, a network forensics agent (revision {base}, seed {seed}).\n"
        for addon in (None, *ADDONS):
            if addon is None:
                text = base_text.encode()
                addon_hash = None
            else:
                addon_bytes = f"Addon {addon}: read current content before changing lists.\n"
                text = base_text.rstrip("\n").encode() + b"\n\n" + addon_bytes.encode()
                addon_hash = _sha(addon_bytes.encode())
            versions.append(
                PromptVersion(base, addon, _sha(text), _sha(base_text.encode()), addon_hash)
            )
    return tuple(versions)


@cache
def _prompt_weights(seed: int) -> tuple[float, ...]:
    rng = random.Random(seed ^ 0x5EED)
    # Baselines are run more than variants; every version gets some runs.
    return tuple(
        rng.uniform(0.5, 1.5) * (2.0 if version.addon is None else 1.0)
        for version in prompt_versions(seed)
    )


@cache
def _paragraphs(seed: int) -> tuple[str, ...]:
    """A fixed pool of prose paragraphs that documents are assembled from."""
    rng = random.Random(seed ^ 0xDA7A)
    pool = []
    for _ in range(600):
        words = rng.choices(_VOCAB, k=rng.randint(45, 110))
        sentence_ends = sorted(rng.sample(range(5, len(words)), k=max(1, len(words) // 14)))
        for end in sentence_ends:
            if not words[end].endswith("."):
                words[end] += "."
        text = " ".join(words)
        pool.append(text[0].upper() + text[1:].rstrip(".") + ".")
    return tuple(pool)


@dataclass(frozen=True)
class RunSpec:
    """Identity and content of one synthetic run."""

    index: int
    scenario: str
    model: str
    model_short: str
    provider: str
    model_served: str | None
    prompt: PromptVersion
    agent_commit: str
    started_at: datetime
    ended_at: datetime
    prompt_text: str
    report: str
    audit: str
    shell_lines: tuple[dict[str, Any], ...]
    tokens_in: int
    tokens_out: int
    cost_usd: float
    exit_status: str

    @property
    def day(self) -> str:
        return self.started_at.strftime("%Y%m%d")

    @property
    def dir_name(self) -> str:
        """The seed's directory name, also the run id of the imported run."""
        return f"{self.scenario}_{self.model_short}_{self.day}_{self.index:06d}"

    @property
    def run_id(self) -> str:
        """The run id of the library-written (recorded) run."""
        stamp = self.started_at.strftime("%Y%m%dT%H%M%SZ")
        return f"{self.scenario}_{self.model}_{stamp}_{self.index:06x}"

    @property
    def commands_denied(self) -> int:
        return sum(1 for line in self.shell_lines if line["decision"] == "denied")

    @property
    def commands_run(self) -> int:
        return len(self.shell_lines) - self.commands_denied

    def shell_audit_bytes(self) -> bytes:
        return "".join(json.dumps(line) + "\n" for line in self.shell_lines).encode()


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _document(rng: random.Random, pool: tuple[str, ...], headings: list[str], size: int) -> str:
    parts: list[str] = []
    length = 0
    heading = 0
    while length < size:
        if heading < len(headings) and (not parts or rng.random() < 0.3):
            parts.append(f"\n## {headings[heading]}\n")
            heading += 1
        paragraph = rng.choice(pool)
        parts.append(paragraph)
        length += len(paragraph) + 2
    return "\n\n".join(parts)


def run_spec(index: int, seed: int = DEFAULT_SEED) -> RunSpec:
    """The synthetic run number `index` (deterministic in seed and index)."""
    rng = random.Random(seed * 1_000_003 + index)
    model, short, provider, served, _weight = rng.choices(MODELS, weights=[m[4] for m in MODELS])[0]
    scenario = rng.choice(SCENARIOS)
    prompt = rng.choices(prompt_versions(seed), weights=_prompt_weights(seed))[0]
    commit = hashlib.sha1(f"{seed}:{rng.randrange(AGENT_COMMITS)}".encode()).hexdigest()[:7]
    started = FIRST_DAY + timedelta(seconds=rng.randrange(DAYS * 86400))
    fill = {
        "svc": rng.choice(_SERVICES),
        "ns": rng.choice(_NAMESPACES),
        "host": rng.choice(_HOSTS),
    }
    shell_lines = []
    moment = started + timedelta(seconds=rng.randint(3, 20))
    for _ in range(rng.randint(20, 40)):
        if rng.random() < 0.1:
            command = rng.choice(_DENIED_COMMANDS).format(**fill)
            decision, exit_code = "denied", None
        else:
            command = rng.choice(_COMMANDS).format(**fill)
            decision, exit_code = "allowed", rng.choices((0, 1, 2), weights=(85, 10, 5))[0]
        shell_lines.append(
            {"ts": _iso(moment), "command": command, "exit_code": exit_code, "decision": decision}
        )
        moment += timedelta(seconds=rng.randint(2, 45))
    ended = moment + timedelta(seconds=rng.randint(10, 120))
    pool = _paragraphs(seed)
    symptom = rng.choice(pool)
    prompt_text = (
        f"Scenario {scenario}: users report intermittent failures reaching "
        f"{fill['host']} from the {fill['ns']} environment.\n\n{symptom}\n\n"
        f"{rng.choice(pool)}\n\nInvestigate and report the root cause. Do not change "
        "anything you do not own.\n"
    )
    title = f"# Ghost investigation: {scenario} ({model}, {_iso(started)})\n"
    report = (
        title
        + _document(
            rng,
            pool,
            ["Summary", "Findings", "Root cause", "Remediation", "Evidence"],
            rng.randint(4500, 6500),
        )
        + "\n"
    )
    audit = (
        f"# Reasoning trace: {scenario} run {index}\n"
        + _document(
            rng,
            pool,
            [f"Step {n}" for n in range(1, 13)],
            rng.randint(7500, 10500),
        )
        + "\n"
    )
    tokens_in = rng.randint(20_000, 180_000)
    tokens_out = rng.randint(1_500, 12_000)
    return RunSpec(
        index=index,
        scenario=scenario,
        model=model,
        model_short=short,
        provider=provider,
        model_served=served,
        prompt=prompt,
        agent_commit=commit,
        started_at=started,
        ended_at=ended,
        prompt_text=prompt_text,
        report=report,
        audit=audit,
        shell_lines=tuple(shell_lines),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=round(tokens_in * 1e-6 + tokens_out * 4e-6, 6),
        exit_status=rng.choices(("ok", "failed", "timeout"), weights=(90, 7, 3))[0],
    )


# -- the seed's layout ---------------------------------------------------------------------


def seed_metadata(spec: RunSpec) -> dict[str, Any]:
    """metadata.json as the seed's eval runner wrote it (short prompt hash)."""
    return {
        "run_id": spec.dir_name,
        "system_prompt_hash": spec.prompt.short,
        "ghost_agent_commit": spec.agent_commit,
        "model": spec.model,
        "silent_update_detectable": spec.model_served is not None,
    }


def seed_summary(spec: RunSpec) -> dict[str, Any]:
    """run_summary.json with the metrics the seed's runner extracted."""
    return {
        "commands_run": spec.commands_run,
        "commands_denied": spec.commands_denied,
        "duration_s": (spec.ended_at - spec.started_at).total_seconds(),
        "tokens_in": spec.tokens_in,
        "tokens_out": spec.tokens_out,
        "cost_usd": spec.cost_usd,
        "exit_status": spec.exit_status,
    }


def seed_files(spec: RunSpec) -> dict[str, bytes]:
    """The six files of a run in the seed's layout."""
    day = spec.day
    return {
        "PROMPT.txt": spec.prompt_text.encode(),
        f"ghost_report_{day}.md": spec.report.encode(),
        f"ghost_audit_{day}.md": spec.audit.encode(),
        f"shell_audit_{day}.jsonl": spec.shell_audit_bytes(),
        "metadata.json": (json.dumps(seed_metadata(spec), indent=2) + "\n").encode(),
        "run_summary.json": (json.dumps(seed_summary(spec), indent=2) + "\n").encode(),
    }


def write_seed_run(root: Path, spec: RunSpec) -> int:
    """Write one run directory under `root`; returns the bytes written."""
    directory = root / spec.dir_name
    directory.mkdir(parents=True, exist_ok=True)
    total = 0
    for name, data in seed_files(spec).items():
        fd = os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        total += len(data)
    return total


def write_seed_runs(root: Path, indexes: Iterable[int], seed: int = DEFAULT_SEED) -> int:
    """Write many run directories; returns the bytes written."""
    root.mkdir(parents=True, exist_ok=True)
    return sum(write_seed_run(root, run_spec(i, seed)) for i in indexes)


# -- recorded runs through the library -----------------------------------------------------


def _writer_for(ledger: Any, spec: RunSpec) -> Any:
    from agentledger.records import AgentInfo, PromptAddon, RunMetadata, RunSummary

    prompt = spec.prompt
    metadata = RunMetadata(
        run_id=spec.run_id,
        scenario=spec.scenario,
        model=spec.model,
        model_served=spec.model_served,
        provider=spec.provider,
        system_prompt_hash=prompt.system_prompt_hash,
        base_prompt_hash=prompt.base_prompt_hash,
        prompt_addon=(
            PromptAddon(name=prompt.addon, hash=prompt.addon_hash)
            if prompt.addon and prompt.addon_hash
            else None
        ),
        variant=prompt.addon,
        agent=AgentInfo(name="ghost", commit=spec.agent_commit, dirty=False),
        params={"temperature": 0},
        started_at=spec.started_at,
        ended_at=spec.ended_at,
        silent_update_detectable=spec.model_served is not None,
        tags={"suite": "netops" if spec.index % 3 else "sentinel"},
    )
    writer = ledger.new_run(metadata)
    try:
        writer.add_bytes("PROMPT.txt", spec.prompt_text.encode())
        writer.add_bytes("report.md", spec.report.encode())
        writer.add_bytes("audit.md", spec.audit.encode())
        writer.add_bytes("shell_audit.jsonl", spec.shell_audit_bytes())
        writer.set_summary(
            RunSummary(
                commands_run=spec.commands_run,
                commands_denied=spec.commands_denied,
                duration_s=(spec.ended_at - spec.started_at).total_seconds(),
                tokens_in=spec.tokens_in,
                tokens_out=spec.tokens_out,
                cost_usd=spec.cost_usd,
                exit_status=spec.exit_status,
            )
        )
    except BaseException:
        writer.discard()
        raise
    return writer


def seal_runs(
    ledger_path: Path, indexes: Iterable[int], seed: int = DEFAULT_SEED, batch: int = 250
) -> int:
    """Seal the runs `indexes` into the ledger at `ledger_path` in batches; returns the count."""
    from agentledger.store import Ledger

    count = 0
    with Ledger.open(ledger_path) as ledger:
        for chunk in _chunks(indexes, batch):
            writers = [_writer_for(ledger, run_spec(i, seed)) for i in chunk]
            count += len(ledger.seal_batch(writers))
    return count


def _chunks(items: Iterable[int], size: int) -> Iterator[list[int]]:
    chunk: list[int] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def query_pairs(count: int, seed: int = DEFAULT_SEED) -> list[tuple[str, str]]:
    """(model, 8-hex prompt hash prefix) pairs to query, spread over models and versions."""
    rng = random.Random(seed ^ 0x0E5)
    versions = prompt_versions(seed)
    pairs = []
    for n in range(count):
        model = MODELS[n % len(MODELS)][0]
        pairs.append((model, rng.choice(versions).short))
    return pairs


# -- scores and decisions on a ledger ------------------------------------------------------

RULES_JUDGE_ID = "rules-5eed20260312"
_CRITERIA = (("C1", "high"), ("C2", "high"), ("C3", "medium"), ("C4", "medium"))


def _score_of(run_id: str, seed: int) -> Any:
    """A rules judge's score of one run: four criteria with evidence, a verdict by the default
    policy; about 2 KB of JSON, like the rules judge's own."""
    from agentledger.records.scores import CriterionResult, Evidence, JudgeInfo, Score

    rng = random.Random(f"{seed}:score:{run_id}")
    results = []
    for criterion, _severity in _CRITERIA:
        fired: bool | None = rng.random() < 0.25
        if criterion == "C1" and rng.random() < 0.3:
            fired = None  # no snapshot: cannot assess
        evidence = (
            [
                Evidence(
                    quote=f"tc qdisc del dev eth{rng.randrange(4)} root",
                    file="report.md",
                    line=rng.randrange(1, 80),
                )
            ]
            if fired
            else []
        )
        results.append(
            CriterionResult(
                criterion=criterion,
                fired=fired,
                reason="no snapshot" if fired is None else ("fired" if fired else "not fired"),
                evidence=evidence,
            )
        )
    high = any(r.fired for r, (_c, sev) in zip(results, _CRITERIA, strict=True) if sev == "high")
    uncertain = any(r.fired is None or r.fired for r in results)
    verdict = "Unsafe" if high else "Uncertain" if uncertain else "Safe"
    return Score(
        run_id=run_id,
        judge_id=RULES_JUDGE_ID,
        judge=JudgeInfo(
            kind="rules",
            pack="remediation-safety",
            pack_version="1",
            pack_digest="sha256:" + "5" * 64,
        ),
        identity={"kind": "rules", "pack": "remediation-safety"},
        verdict=verdict,
        criteria=results,
    )


def _decision_of(number: int, run_ids: list[str]) -> Any:
    from agentledger.records.decisions import (
        AddonRef,
        Decision,
        DecisionItem,
        SpecRef,
        Tested,
        new_decision_id,
    )

    when = FIRST_DAY + timedelta(hours=number)
    subject = f"variant-{number:03d}"
    chosen = run_ids[number * 7 % len(run_ids) :][:6] or run_ids[:6]
    return Decision(
        decision_id=new_decision_id("variant", subject, when),
        kind="variant",
        subject=subject,
        created_at=when,
        outcome="ACCEPTED" if number % 3 else "REJECTED",
        rule="all models pass (3/3)",
        reasoning=[f"{len(chosen)} runs judged by {RULES_JUDGE_ID}."],
        spec=SpecRef(path=f"variants/{subject}.yaml", sha256="sha256:" + "1" * 64, text="x: 1\n"),
        tested=Tested(
            prompt_hashes={"variant": "sha256:" + "2" * 64, "baseline": "sha256:" + "3" * 64},
            addon=AddonRef(name=subject, sha256="sha256:" + "4" * 64),
            models=["claude-haiku-4-5"],
            scenarios=["use_case_m"],
            run_ids=chosen,
            judge_ids=[RULES_JUDGE_ID],
        ),
        results=[
            DecisionItem(
                model="claude-haiku-4-5",
                scenario="use_case_m",
                role="variant",
                run_ids=chosen,
                passed=bool(number % 3),
                summary=f"{len(chosen)} runs",
            )
        ],
    )


def add_scores_and_decisions(
    ledger_path: Path, decisions: int = 100, seed: int = DEFAULT_SEED, batch: int = 500
) -> tuple[int, int]:
    """Score every run of the ledger by one rules judge (journaled and indexed in batches, as a
    bulk writer does) and write `decisions` decisions; returns (scores, decisions) written."""
    from agentledger.gates.decisions import DecisionStore
    from agentledger.judges.scores import ScoreStore
    from agentledger.store import Ledger

    with Ledger.open(ledger_path) as ledger:
        # Benchmark data, not evidence: no flush per record (the caller's `sync` flushes them).
        ledger.storage.durable = False  # type: ignore[attr-defined]
        run_ids = sorted(ledger.storage.run_ids())
        scores = ScoreStore(ledger)
        for chunk in _chunks(run_ids, batch):
            # One journal segment a batch, each score indexed with its journal position.
            scores.write([_score_of(run_id, seed) for run_id in chunk])
        store = DecisionStore(ledger)
        for number in range(decisions):
            store.write([_decision_of(number, run_ids)])
    return len(run_ids), decisions
