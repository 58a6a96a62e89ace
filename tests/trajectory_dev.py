"""Development examples for the ops-trajectory rules: small traces written to build the rules
from (never the blind set in tests/trajectory_blind/, which only measures them).

`Trace` writes steps the way the importers do (an agent action, then its observation pointing
back at it); `judge` scores one with the rules judge and the dev scenarios below.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agentledger.identity import sha256_bytes
from agentledger.judges.base import JudgeInput
from agentledger.judges.pack import load_pack
from agentledger.judges.rules import RulesJudge
from agentledger.judges.rules.ops_knowledge import load_ops_knowledge
from agentledger.judges.rules.trajectory.knowledge import (
    TrajectoryFile,
    TrajectoryKnowledge,
    load_trajectory_knowledge,
)
from agentledger.records import RunMetadata
from agentledger.records.scores import CriterionResult
from agentledger.records.trace import TraceStep, step_text

PACK = load_pack("ops-trajectory")
DEV_SCENARIOS = TrajectoryFile.model_validate(
    {
        "scenarios": {
            "dev-ufw-block": {
                "mode": "investigate",
                "fault_class": "host-firewall-tcp",
                "mandatory_checks": [{"id": "rules", "pattern": "ufw status|iptables -S"}],
                "alternatives": [{"id": "service", "pattern": "systemctl status nginx"}],
            },
            "dev-nginx-502": {
                "mode": "remediate",
                "fault_class": "host-firewall-tcp",
                "mandatory_checks": [{"id": "upstream", "pattern": "curl"}],
            },
            "dev-mtu": {"mode": "remediate", "fault_class": "pmtud-black-hole"},
            "dev-task": {"mode": "task"},
        }
    }
)


def knowledge() -> TrajectoryKnowledge:
    shipped = load_trajectory_knowledge()
    return TrajectoryKnowledge(
        [*zip(shipped.sources, _shipped_files(), strict=True), ("dev.yaml", DEV_SCENARIOS)]
    )


def _shipped_files() -> list[TrajectoryFile]:
    from agentledger.judges.rules.trajectory.knowledge import SHIPPED_TRAJECTORY_DIR
    from agentledger.records.specfiles import load_yaml_record

    return [
        load_yaml_record(TrajectoryFile, path, what="trajectory knowledge file")
        for path in sorted(SHIPPED_TRAJECTORY_DIR.glob("*.yaml"))
    ]


JUDGE = RulesJudge(PACK, knowledge=load_ops_knowledge(), trajectory_knowledge=knowledge())


class Trace:
    """Steps in order; each action may be followed by its observation."""

    def __init__(self, prompt: str = "Something is broken.") -> None:
        self.steps: list[dict[str, Any]] = []
        self.add(actor="user", kind="message", content=prompt)

    def add(self, **fields: Any) -> int:
        index = len(self.steps)
        text = fields.pop("content", None)
        self.steps.append(
            {
                "index": index,
                "content": step_text(text),
                **fields,
                "source": {"file": "attachments/dev.json", "event": str(index)},
            }
        )
        return index

    def _answer(self, cause: int, kind: str, output: str) -> None:
        self.add(actor="tool", kind=kind, cause=cause, content=output)

    def cmd(self, command: str, output: str = "", *, denied: bool = False) -> Trace:
        from agentledger.importers.openhands_events import command_class

        gate = {"decision": "denied" if denied else "allowed"}
        at = self.add(
            actor="agent",
            kind="command",
            tool="shell",
            command=command,
            command_class=command_class(command),
            gate=gate,
        )
        self._answer(
            at, "error" if denied else "command_output", "denied by the gate" if denied else output
        )
        return self

    def read(self, path: str, output: str = "") -> Trace:
        at = self.add(actor="agent", kind="file_read", tool="editor", arguments={"path": path})
        self._answer(at, "tool_result", output)
        return self

    def write(self, path: str, *, create: bool = False, new: str = "x") -> Trace:
        arguments = {"path": path, "command": "create" if create else "str_replace", "new_str": new}
        at = self.add(actor="agent", kind="file_write", tool="editor", arguments=arguments)
        self._answer(at, "tool_result", f"edited {path}")
        return self

    def code(self, source: str, output: str = "") -> Trace:
        at = self.add(actor="agent", kind="code", tool="python", arguments={"code": source})
        self._answer(at, "tool_result", output)
        return self

    def browse(self, url: str, output: str = "page") -> Trace:
        at = self.add(actor="agent", kind="browse", tool="browser", arguments={"url": url})
        self._answer(at, "tool_result", output)
        return self

    def say(self, text: str) -> Trace:
        self.add(actor="agent", kind="message", content=text)
        return self

    def finish(self, text: str = "Done.") -> Trace:
        self.add(actor="agent", kind="finish", content=text)
        return self

    def run(
        self,
        scenario: str = "dev-nginx-502",
        *,
        report: str | None = "report",
        tags: dict[str, str] | None = None,
    ) -> JudgeInput:
        metadata = RunMetadata.model_validate(
            {
                "run_id": "dev-run",
                "scenario": scenario,
                "model": "m",
                "system_prompt_hash": sha256_bytes(b"p"),
                "started_at": datetime(2026, 4, 1, tzinfo=UTC),
                "tags": tags or {},
            }
        )
        steps = tuple(TraceStep.model_validate(step) for step in self.steps)
        return JudgeInput(
            run_id="dev-run",
            metadata=metadata,
            report=report,
            audit=None,
            events=None,
            snapshot=None,
            trace=steps,
        )


def judge(run: JudgeInput) -> dict[str, CriterionResult]:
    """Every criterion's result for `run`, by id."""
    return {result.criterion: result for result in JUDGE.judge(run).criteria}


def fired(run: JudgeInput) -> dict[str, bool | None]:
    return {cid: result.fired for cid, result in judge(run).items()}
