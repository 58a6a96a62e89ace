"""Agents instrumented by real libraries, each calling a local OpenAI-compatible server and
exporting with the OTLP HTTP exporter to a running `agentledger collect`: a run each, with its
steps, the model asked for and served, and the system prompt's hash.

The three attribute dialects: OpenInference (openinference-instrumentation-openai), OpenLLMetry
(opentelemetry-instrumentation-openai) and the GenAI conventions (Pydantic AI)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli.app import main
from agentledger.identity import sha256_bytes
from agentledger.records.trace import parse_trace
from collect_support import RunningCollector, collecting, tracer_provider, wait_for_runs
from llm_server import SERVED_SUFFIX, LLMServer, Reply

pytestmark = pytest.mark.slow

SYSTEM = "You are an ops agent. Use the shell tool read-only, then report the root cause."
TASK = "Users see packet loss on eth0. Find out why."
COMMAND = "tc qdisc show dev eth0"
OUTPUT = "qdisc netem 8001: root refcnt 2 limit 1000 loss 30%"
SHELL_TOOL = {
    "type": "function",
    "function": {
        "name": "shell",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCollector]:
    root = tmp_path_factory.mktemp("collect") / "ledger"
    with collecting(root, "--settle", "0.3") as collector:
        yield collector


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as started:
        started.reply(Reply(tool_calls=[{"name": "shell", "arguments": {"command": COMMAND}}]))
        yield started


def _run_of(running: RunningCollector, scenario: str) -> tuple[str, Any, list[Any]]:
    deadline_runs = wait_for_runs(running.ledger, 1)
    for _ in range(100):
        with Ledger.open(running.ledger) as ledger:
            found = [run for run in ledger.runs() if run.scenario == scenario]
            if found:
                (run,) = found
                stored = ledger.load(run.run_id)
                steps = parse_trace(ledger.read_bytes(run.run_id, "trace.jsonl"), "t")
                return run.run_id, stored, steps
        wait_for_runs(running.ledger, len(deadline_runs) + 1, timeout=0.3)
    log = running.log.read_text()
    raise AssertionError(f"no run of {scenario}; collect said: {log}")


def _check_run(running: RunningCollector, scenario: str, *, served: bool = True) -> list[Any]:
    run_id, stored, steps = _run_of(running, scenario)
    metadata = stored.metadata
    assert metadata.model == "gpt-4o"
    assert metadata.model_served == ("gpt-4o" + SERVED_SUFFIX["openai"] if served else None)
    assert metadata.system_prompt_hash == sha256_bytes(SYSTEM.encode())
    assert stored.summary.tokens_in is not None and stored.summary.tokens_in >= 1200
    commands = [step for step in steps if step.kind == "command"]
    assert [step.command for step in commands] == [COMMAND]
    assert commands[0].command_class == "read-only"
    outputs = [step for step in steps if step.kind == "command_output"]
    assert outputs and OUTPUT in (outputs[0].content.text if outputs[0].content else "")
    assert stored.summary.commands_run == 1
    result = CliRunner().invoke(main, ["show", "--ledger", str(running.ledger), run_id, "--trace"])
    assert result.exit_code == 0 and COMMAND in result.output, result.output
    return steps


def _openai_agent(server: LLMServer, tracer: Any, tool_span: Any = None) -> None:
    """A small agent on the OpenAI SDK: ask, run the shell tool it asks for, ask again."""
    import openai

    with openai.OpenAI(base_url=server.url + "/v1", api_key="local") as client:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": TASK},
        ]
        first = client.chat.completions.create(
            model="gpt-4o", messages=messages, tools=[SHELL_TOOL]
        )  # type: ignore[arg-type]
        call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        command = json.loads(call.function.arguments)["command"]  # type: ignore[union-attr]
        if tool_span is not None:
            tool_span(tracer, command, OUTPUT)
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": OUTPUT})
        client.chat.completions.create(model="gpt-4o", messages=messages, tools=[SHELL_TOOL])  # type: ignore[arg-type]


def test_openai_sdk_under_openinference(running: RunningCollector, server: LLMServer) -> None:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    provider = tracer_provider(running.endpoint, "oi-agent")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("oi-agent")

    def tool_span(tracer: Any, command: str, output: str) -> None:
        with tracer.start_as_current_span("shell") as span:
            span.set_attribute("openinference.span.kind", "TOOL")
            span.set_attribute("tool.name", "shell")
            span.set_attribute("input.value", json.dumps({"command": command}))
            span.set_attribute("output.value", output)

    try:
        with tracer.start_as_current_span("agent") as root:
            root.set_attribute("openinference.span.kind", "AGENT")
            _openai_agent(server, tracer, tool_span)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    steps = _check_run(running, "oi-agent")
    assert [s.kind for s in steps if s.kind == "message"] == ["message", "message"]


# The instrumentation still declares a class-based pydantic config, which pydantic deprecates.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_openai_sdk_under_openllmetry(running: RunningCollector, server: LLMServer) -> None:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    provider = tracer_provider(running.endpoint, "openllmetry-agent")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("openllmetry-agent")
    try:
        with tracer.start_as_current_span("agent.workflow") as root:
            root.set_attribute("traceloop.span.kind", "workflow")
            root.set_attribute("traceloop.entity.name", "openllmetry-agent")
            _openai_agent(server, tracer)  # tool calls only in the model's messages
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    steps = _check_run(running, "openllmetry-agent")
    command = next(s for s in steps if s.kind == "command")
    assert command.call_id == "call_0" and command.arguments == {"command": COMMAND}


def test_pydantic_ai_agent(running: RunningCollector, server: LLMServer) -> None:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = tracer_provider(running.endpoint, "pydantic-agent")

    def shell(command: str) -> str:
        """Run a read-only shell command."""
        assert command == COMMAND
        return OUTPUT

    async def run_agent() -> Any:
        # The client is closed in the loop that opened its connections.
        async with AsyncOpenAI(base_url=server.url + "/v1", api_key="local") as client:
            model = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(openai_client=client))
            agent = Agent(model, system_prompt=SYSTEM, tools=[shell])
            agent.instrument = InstrumentationSettings(tracer_provider=provider)
            return await agent.run(TASK)

    try:
        answer = asyncio.run(run_agent())
    finally:
        provider.shutdown()
    assert answer.output.startswith("Root cause")
    steps = _check_run(running, "pydantic-agent")
    assert steps[-1].kind == "message" and "Root cause" in (steps[-1].content.text or "")


def test_openai_agents_sdk_through_its_opentelemetry_bridge(
    running: RunningCollector, server: LLMServer
) -> None:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_trace_processors,
    )
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    provider = tracer_provider(running.endpoint, "agents-sdk")
    set_trace_processors([])  # the SDK's own exporter (to OpenAI's servers) off
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)

    @function_tool
    def shell(command: str) -> str:
        """Run a read-only shell command."""
        assert command == COMMAND
        return OUTPUT

    async def run_agent() -> Any:
        # The client is closed in the loop that opened its connections.
        async with AsyncOpenAI(base_url=server.url + "/v1", api_key="local") as client:
            model = OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)
            agent = Agent(name="ops", instructions=SYSTEM, model=model, tools=[shell])
            return await Runner.run(agent, TASK)

    try:
        answer = asyncio.run(run_agent())
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    assert answer.final_output.startswith("Root cause")
    # The bridge's spans name the model configured, not the one the answer names.
    _check_run(running, "agents-sdk", served=False)


def test_a_span_processor_seals_runs_in_the_agents_own_process(
    tmp_path: Path, server: LLMServer
) -> None:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from agentledger.collector.processor import LedgerSpanProcessor

    ledger = tmp_path / "ledger"
    processor = LedgerSpanProcessor(ledger)
    provider = TracerProvider(resource=Resource.create({"service.name": "in-process"}))
    provider.add_span_processor(processor)  # type: ignore[arg-type]

    def shell(command: str) -> str:
        """Run a read-only shell command."""
        return OUTPUT

    async def run_agent() -> Any:
        from openai import AsyncOpenAI

        async with AsyncOpenAI(base_url=server.url + "/v1", api_key="local") as client:
            model = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(openai_client=client))
            agent = Agent(model, system_prompt=SYSTEM, tools=[shell])
            agent.instrument = InstrumentationSettings(tracer_provider=provider)
            return await agent.run(TASK)

    asyncio.run(run_agent())
    (run_id,) = processor.sealed_runs  # sealed when the agent's root span ended
    provider.shutdown()
    with Ledger.open(ledger) as opened:
        stored = opened.load(run_id)
        steps = parse_trace(opened.read_bytes(run_id, "trace.jsonl"), "t")
    assert stored.metadata.scenario == "in-process"
    assert stored.metadata.model_served == "gpt-4o" + SERVED_SUFFIX["openai"]
    assert stored.metadata.system_prompt_hash == sha256_bytes(SYSTEM.encode())
    assert [s.command for s in steps if s.kind == "command"] == [COMMAND]
