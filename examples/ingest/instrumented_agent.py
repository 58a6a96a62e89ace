"""A small ops agent on the OpenAI SDK (or Pydantic AI), traced by the instrumentation you name,
exporting its spans over OTLP/HTTP to `agentledger collect`.

    agentledger collect &                                   # http://127.0.0.1:4318/v1/traces
    OPENAI_BASE_URL=http://localhost:8000/v1 python instrumented_agent.py openinference
    python instrumented_agent.py openllmetry | pydantic-ai | genai

The model is any OpenAI-compatible server ($OPENAI_BASE_URL, $OPENAI_API_KEY). The agent asks,
runs the read-only shell command the model asks for (here: a canned output), and asks again.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

SYSTEM = "You are an ops agent. Use the shell tool read-only, then report the root cause."
TASK = "Users see packet loss on eth0. Find out why."
ENDPOINT = os.environ.get("COLLECT_ENDPOINT", "http://127.0.0.1:4318/v1/traces")
SHELL = {
    "type": "function",
    "function": {
        "name": "shell",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}


def shell(command: str) -> str:
    """Run a read-only shell command (canned here)."""
    return "qdisc netem 8001: root refcnt 2 limit 1000 loss 30%"


def openai_agent(tracer: Any, tool_span: bool) -> None:
    import openai

    client = openai.OpenAI()
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    first = client.chat.completions.create(model="gpt-4o", messages=messages, tools=[SHELL])
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    command = json.loads(call.function.arguments)["command"]  # type: ignore[union-attr]
    if tool_span:  # OpenInference: the tool's own span
        with tracer.start_as_current_span("shell") as span:
            span.set_attribute("openinference.span.kind", "TOOL")
            span.set_attribute("tool.name", "shell")
            span.set_attribute("input.value", json.dumps({"command": command}))
            output = shell(command)
            span.set_attribute("output.value", output)
    else:
        output = shell(command)
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    answer = client.chat.completions.create(model="gpt-4o", messages=messages, tools=[SHELL])
    sys.stdout.write(f"{answer.choices[0].message.content}\n")
    client.close()


def main(dialect: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": f"{dialect}-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=ENDPOINT)))
    tracer = provider.get_tracer("ops-agent")
    if dialect == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
        with tracer.start_as_current_span("agent") as root:
            root.set_attribute("openinference.span.kind", "AGENT")
            openai_agent(tracer, tool_span=True)
    elif dialect == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as Traceloop

        Traceloop().instrument(tracer_provider=provider)
        with tracer.start_as_current_span("ops.workflow") as root:
            root.set_attribute("traceloop.span.kind", "workflow")
            openai_agent(tracer, tool_span=False)  # tool calls are in the messages
    elif dialect == "pydantic-ai":
        from openai import AsyncOpenAI
        from pydantic_ai import Agent
        from pydantic_ai.models.instrumented import InstrumentationSettings
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        async def run() -> None:
            async with AsyncOpenAI() as client:
                model = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(openai_client=client))
                agent = Agent(model, system_prompt=SYSTEM, tools=[shell])
                agent.instrument = InstrumentationSettings(tracer_provider=provider)
                sys.stdout.write(f"{(await agent.run(TASK)).output}\n")

        asyncio.run(run())
    else:
        raise SystemExit(f"unknown dialect {dialect!r}: openinference, openllmetry, pydantic-ai")
    provider.shutdown()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "openinference")
