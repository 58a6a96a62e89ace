"""Writes the blind set's Inspect AI logs (`inspect/*.json`) with inspect-ai's mock model.

Each session of `INSPECT` is one eval of one sample: the mock model plays the agent's turns
(text, then a `bash` tool call), and the tool answers with the session's canned outputs. Run
with inspect-ai installed (`pip install 'agentledger[inspect]'`): `python make_inspect.py`.
The logs are committed; their labels are in `sessions.py` beside the others.
"""

from __future__ import annotations

import sys
from pathlib import Path

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate, system_message, use_tools
from inspect_ai.tool import Tool, tool

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from sessions import INSPECT, InspectSession  # noqa: E402


def _bash(outputs: dict[str, list[str]]) -> Tool:
    @tool(name="bash")
    def bash() -> Tool:
        async def execute(cmd: str) -> str:
            """Run a shell command.

            Args:
                cmd: The command line.
            """
            queued = outputs.get(cmd)
            return queued.pop(0) if queued else ""

        return execute

    return bash()


def _used(output: ModelOutput) -> ModelOutput:
    # Given usage, the mock model does not count tokens (which would fetch an encoding).
    output.usage = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)
    return output


def _write(session: InspectSession, where: Path) -> Path:
    model = f"mockllm/{session.model}"
    turns = []
    outputs: dict[str, list[str]] = {}
    for text, command, output in session.turns:
        if command is None:
            turns.append(_used(ModelOutput.from_content(model, text or "")))
            continue
        outputs.setdefault(command, []).append(output or "")
        turn = ModelOutput.for_tool_call(model, "bash", {"cmd": command})
        if text:
            turn.choices[0].message.content = text
        turns.append(_used(turn))
    task = Task(
        name="ops",
        dataset=[Sample(input=session.prompt, target="", id=session.scenario)],
        solver=[system_message("You are an ops agent."), use_tools([_bash(outputs)]), generate()],
    )
    (log,) = eval(
        task,
        model=get_model(model, custom_outputs=turns),
        log_dir=str(where / session.name),
        log_format="json",
        display="none",
        max_samples=1,
    )
    assert log.status == "success", log.error
    made = Path(log.location)
    target = where / f"{session.name}.json"
    made.replace(target)
    (where / session.name).rmdir()
    return target


def main() -> None:
    where = HERE / "inspect"
    where.mkdir(exist_ok=True)
    for session in INSPECT:
        print(_write(session, where))


if __name__ == "__main__":
    main()
