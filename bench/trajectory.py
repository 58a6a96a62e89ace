"""Benchmark of the ops-trajectory rules judge (issue 18): runs judged per second on one core.

    .venv/bin/python bench/trajectory.py                  # 1,000 synthetic runs of 300 steps
    .venv/bin/python bench/trajectory.py --runs 3000 --steps 300 --json results.json

Each run is a synthetic trace of `--steps` steps, an ops session of the kinds the pack judges:
commands (reads, changes, destructive ones, some denied by the gate, some repeated), file
reads and writes, Python code, pages, messages and a finish, every action followed by its
observation. Every repeat judges all runs with a fresh RulesJudge and the ops-trajectory pack
(T1-T8), in this one process pinned to one core; the figure is runs per CPU second of this
process (the wall-clock rate is printed beside it: on a shared machine it also counts the time
others held the core), the median over repeats. Building the traces is not timed. Goal: 500
runs/s.

Then a re-judge: `--rejudge` of the runs are sealed in a fresh ledger (plain trace files,
imported as a user would), scored once through the scoring path `agentledger judge` uses, and
scored again with the same judge: the second pass must write 0 scores and call the judge (and
so any provider) 0 times.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from agentledger.identity import sha256_bytes  # noqa: E402
from agentledger.judges.base import JudgeInput, JudgeOutcome  # noqa: E402
from agentledger.judges.pack import load_pack  # noqa: E402
from agentledger.judges.rules import RulesJudge  # noqa: E402
from agentledger.records import RunMetadata  # noqa: E402
from agentledger.records.trace import TraceStep, step_text  # noqa: E402
from agentledger.shell.classifier import classify  # noqa: E402

GOAL = 500.0

LOOKS = [
    ("ssh db-1 'nft list ruleset'", "table inet filter { chain input { tcp dport 5432 drop } }"),
    ("iptables -S f2b-sshd", "-A f2b-sshd -s 10.0.1.4/32 -j REJECT"),
    ("tc qdisc show dev eth0", "qdisc netem 8001: root delay 400ms"),
    ("kubectl -n shop get networkpolicy", "deny-all  app=api  2h"),
    ("az network nsg rule list -g rg --nsg-name web-nsg -o table", "deny-https Deny 443"),
    ("curl -s -o /dev/null -w '%{http_code}' https://web-1", "200"),
    ("nc -zv -w3 db-1 5432", "timed out"),
    ("ping -c 3 10.0.3.7", "0% packet loss"),
    ("df -h /", "/dev/sda1 40G 31G 9G 78% /"),
    ("psql -h db-1 -c 'EXPLAIN SELECT 1'", "Result (cost=0.00..0.01 rows=1)"),
]
CHANGES = [
    "iptables -D f2b-sshd -s 10.0.1.4/32 -j REJECT",
    "tc qdisc del dev eth0 root",
    "sed -i 's/10.9.9.9/10.0.0.2/' /etc/resolv.conf",
    "kubectl -n shop patch networkpolicy deny-all -p '{}'",
    "systemctl restart nginx && systemctl status nginx",
    "echo 'nameserver 10.0.0.2' > /etc/resolv.conf",
]
DESTRUCTIVE = ["rm -rf /var/log/app/*.gz", "nft flush ruleset", "iptables -F INPUT"]
CODE = [
    "import subprocess\nsubprocess.run(['ssh', 'db-1', 'nft list ruleset'])",
    "import os\nfor name in os.listdir('/tmp/x'):\n    os.remove(os.path.join('/tmp/x', name))",
    "print(open('/etc/hosts').read())",
]
SCENARIO = "bench-trajectory"


class Steps:
    """Steps of one trace, each action followed by its observation."""

    def __init__(self) -> None:
        self.steps: list[dict[str, object]] = []

    def add(self, **fields: object) -> int:
        index = len(self.steps)
        text = fields.pop("content", None)
        self.steps.append(
            {
                "index": index,
                "content": step_text(text) if isinstance(text, str) else None,
                "source": {"file": "attachments/bench.jsonl", "line": index + 1},
                **fields,
            }
        )
        return index

    def answered(self, output: str, answer: str = "tool_result", **action: object) -> None:
        cause = self.add(actor="agent", **action)
        self.add(actor="tool", kind=answer, cause=cause, content=output)


def session(seed: int, length: int) -> list[dict[str, object]]:
    """A synthetic ops session of about `length` steps."""
    rng = random.Random(seed)
    steps = Steps()
    steps.add(actor="user", kind="message", content="Clients cannot reach db-1 on 5432.")
    while len(steps.steps) < length - 1:
        roll = rng.random()
        if roll < 0.45:
            command, output = rng.choice(LOOKS)
            steps.answered(
                output,
                "command_output",
                kind="command",
                tool="shell",
                command=command,
                command_class=classify(command).kind,
            )
        elif roll < 0.6:
            command = rng.choice(CHANGES + DESTRUCTIVE)
            denied = rng.random() < 0.3
            gate = {"decision": "denied" if denied else "allowed"}
            steps.answered(
                "denied by the gate" if denied else "",
                "error" if denied else "command_output",
                kind="command",
                tool="shell",
                command=command,
                command_class=classify(command).kind,
                gate=gate,
            )
        elif roll < 0.7:
            path = rng.choice(["/etc/resolv.conf", "/etc/nginx/nginx.conf", "/srv/app.py"])
            steps.answered(
                "a = 1\n" * 20, kind="file_read", tool="editor", arguments={"path": path}
            )
        elif roll < 0.77:
            path = rng.choice(["/etc/nginx/nginx.conf", "/srv/app.py"])
            steps.answered(
                "edited",
                kind="file_write",
                tool="editor",
                arguments={
                    "path": path,
                    "command": "str_replace",
                    "old_str": "a = 1",
                    "new_str": "a = 2",
                },
            )
        elif roll < 0.84:
            steps.answered("ok", kind="code", tool="python", arguments={"code": rng.choice(CODE)})
        elif roll < 0.88:
            steps.answered(
                "<html>rules</html>",
                kind="browse",
                tool="browser",
                arguments={"url": "https://portal.azure.com/#web-nsg"},
            )
        else:
            steps.add(
                actor="agent",
                kind="reasoning",
                content=rng.choice(
                    ["Checking the firewall next.", "Root cause: the nftables drop rule."]
                ),
            )
    steps.add(actor="agent", kind="finish", content="Root cause: the nftables rule drops 5432.")
    return steps.steps


def metadata(run_id: str) -> RunMetadata:
    return RunMetadata(
        run_id=run_id,
        scenario=SCENARIO,
        model="bench",
        system_prompt_hash=sha256_bytes(b"bench"),
        started_at=datetime(2026, 4, 1, tzinfo=UTC),
        tags={"mode": "remediate"},
    )


def runs_of(count: int, length: int) -> list[JudgeInput]:
    """`count` runs; the traces cycle through 50 distinct sessions, each run its own id."""
    traces = [
        tuple(TraceStep.model_validate(s) for s in session(seed, length)) for seed in range(50)
    ]
    return [
        JudgeInput(
            run_id=f"bench-{i}",
            metadata=metadata(f"bench-{i}"),
            report="report",
            audit=None,
            events=None,
            snapshot=None,
            trace=traces[i % len(traces)],
        )
        for i in range(count)
    ]


def one_core() -> None:
    """Pin this process to one CPU where the platform allows it."""
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[0]})


class CountingJudge(RulesJudge):
    """The rules judge, counting the runs it is asked to judge."""

    calls = 0

    def judge(self, run: JudgeInput) -> JudgeOutcome:
        CountingJudge.calls += 1
        return super().judge(run)


def rejudge(count: int, length: int) -> dict[str, int]:
    """Seal `count` runs, score them, score them again with the same judge id."""
    from agentledger.importers import ImportOptions, import_runs
    from agentledger.judges.scoring import score_runs
    from agentledger.store import Ledger

    with tempfile.TemporaryDirectory() as where:
        folder = Path(where) / "traces"
        folder.mkdir()
        for seed in range(count):
            lines = [{"run": {"scenario": SCENARIO, "model": "bench"}}]
            for step in session(10_000 + seed, length):
                step = dict(step)
                content = step.pop("content")
                if content is not None:
                    step["content"] = content.text  # type: ignore[attr-defined]
                step.pop("source")
                lines.append(step)
            (folder / f"run-{seed}.jsonl").write_text(
                "".join(json.dumps(line) + "\n" for line in lines)
            )
        with Ledger.init(Path(where) / "ledger") as ledger:
            import_runs(ledger, [folder], ImportOptions(format="jsonl"))
            run_ids = [run.run_id for run in ledger.runs()]
            pack = load_pack("ops-trajectory")
            first = score_runs(ledger, CountingJudge(pack), run_ids)
            calls_before = CountingJudge.calls
            second = score_runs(ledger, CountingJudge(pack), run_ids)
            return {
                "runs": len(run_ids),
                "first_scored": len(first.scored),
                "second_scored": len(second.scored),
                "second_already_scored": second.already_scored,
                "second_judge_calls": CountingJudge.calls - calls_before,
                "second_provider_calls": sum(
                    int((score.usage or {}).get("model_calls", 0)) for score in second.scored
                ),
            }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs judged per repeat")
    parser.add_argument("--steps", type=int, default=300, help="steps per trace")
    parser.add_argument("--repeats", type=int, default=3, help="repeats (median reported)")
    parser.add_argument("--rejudge", type=int, default=100, help="runs sealed for the re-judge")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    one_core()
    runs = runs_of(args.runs, args.steps)
    pack = load_pack("ops-trajectory")
    RulesJudge(pack).judge(runs[0])  # warm-up: imports, parser, knowledge
    rates, wall, fired = [], [], 0
    for _ in range(args.repeats):
        judge = RulesJudge(pack)
        started, cpu = time.perf_counter(), time.process_time()
        for run in runs:
            fired += sum(1 for result in judge.judge(run).criteria if result.fired)
        # CPU time of this process: on a shared machine the wall clock also counts the time
        # other processes held the core.
        rates.append(len(runs) / (time.process_time() - cpu))
        wall.append(len(runs) / (time.perf_counter() - started))
    rate = statistics.median(rates)
    again = rejudge(args.rejudge, args.steps)
    meets = rate >= GOAL
    clean = again["second_scored"] == 0 and again["second_judge_calls"] == 0
    steps = len(runs[0].trace or ())
    print(f"ops-trajectory rules judge: {len(runs)} runs of {steps} steps, {args.repeats} repeats")
    print(
        f"  throughput: {rate:,.0f} runs per CPU second on one core (median; min "
        f"{min(rates):,.0f}, max {max(rates):,.0f}); by the wall clock "
        f"{statistics.median(wall):,.0f}"
    )
    print(
        f"  per run:    {1000 / rate:.2f} ms; criteria fired per run "
        f"{fired / len(runs) / args.repeats:.1f}"
    )
    print(f"  goal:       {GOAL:.0f} runs/s -> {'meets' if meets else 'MISSES'}")
    print(
        f"  re-judge of {again['runs']} sealed runs with the same judge id: "
        f"{again['second_scored']} new scores ({again['second_already_scored']} already scored), "
        f"{again['second_judge_calls']} judge calls, {again['second_provider_calls']} provider "
        f"calls -> {'ok' if clean else 'FAILS'}"
    )
    if args.json:
        figures = {
            "runs": len(runs),
            "steps": steps,
            "repeats": args.repeats,
            "runs_per_cpu_second": rate,
            "runs_per_wall_second": statistics.median(wall),
            "all": rates,
            "goal": GOAL,
            "rejudge": again,
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if meets and clean else 1


if __name__ == "__main__":
    raise SystemExit(main())
