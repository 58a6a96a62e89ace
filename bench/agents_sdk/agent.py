"""An agent agentledger did not write: the OpenAI Agents SDK's own loop, run as a `command` agent.

The runner starts this file with the `AGENTLEDGER_*` variables (docs/agents.md). The SDK's
`Runner` drives the model (any OpenAI-compatible server: `AGENTLEDGER_BASE_URL`, or
`OPENAI_BASE_URL`) with one tool, `run_command(command, host)`, whose every call goes through
agentledger's gated shell (`$AGENTLEDGER_SHELL`) into the named lab host. The model's final
answer is the report; each turn's text and each tool call go to audit.md, token counts and the
model served to result.json. Nothing of the loop is agentledger's: turns, tool dispatch and the
end of the run are the SDK's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

OUTPUT_LIMIT = 8000


def _gated(command: str, host: str | None) -> str:
    """Run one command line through the gate, in `host` when named; its output for the model."""
    line = f"{host}: {command}" if host else command
    done = subprocess.run(
        [os.environ["AGENTLEDGER_SHELL"], line], capture_output=True, text=True, check=False
    )
    output = (done.stdout + done.stderr)[-OUTPUT_LIMIT:]
    return f"exit {done.returncode}\n{output}"


@function_tool
def run_command(command: str, host: str | None = None) -> str:
    """Run a shell command on a lab host through the gate and return its exit code and output.

    Args:
        command: the command line, e.g. `iptables -S`.
        host: the lab host to run it on; the scenario's default host when omitted.
    """
    return _gated(command, host)


def main() -> int:
    run_dir = Path(os.environ["AGENTLEDGER_RUN_DIR"])
    prompt = Path(os.environ["AGENTLEDGER_PROMPT_FILE"]).read_text()
    system = Path(os.environ["AGENTLEDGER_SYSTEM_PROMPT_FILE"]).read_text()
    params = json.loads(os.environ.get("AGENTLEDGER_MODEL_PARAMS") or "{}")
    base_url = os.environ.get("AGENTLEDGER_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    set_tracing_disabled(True)  # the SDK's tracing posts to OpenAI; the ledger keeps the trace
    client = AsyncOpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "local"))
    agent = Agent(
        name="lab-investigator",
        instructions=system,
        tools=[run_command],
        model=OpenAIChatCompletionsModel(
            model=os.environ["AGENTLEDGER_MODEL"], openai_client=client
        ),
        model_settings=ModelSettings(temperature=params.get("temperature")),
    )
    result = Runner.run_sync(agent, prompt, max_turns=int(os.environ.get("AGENT_MAX_TURNS", "12")))
    audit = ["# Audit (OpenAI Agents SDK)", ""]
    for item in result.new_items:
        raw = item.raw_item
        if item.type == "message_output_item":
            audit.append("model: " + "".join(getattr(c, "text", "") for c in raw.content))
        elif item.type == "tool_call_item":
            audit.append(f"tool call: {getattr(raw, 'name', '?')} {getattr(raw, 'arguments', '')}")
        elif item.type == "tool_call_output_item":
            audit.append("tool output: " + str(item.output)[:400])
    (run_dir / "audit.md").write_text("\n".join(audit) + "\n")
    (run_dir / "report.md").write_text(str(result.final_output))
    usage = result.context_wrapper.usage
    (run_dir / "result.json").write_text(
        json.dumps({"tokens_in": usage.input_tokens, "tokens_out": usage.output_tokens})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
