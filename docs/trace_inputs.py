"""The foreign traces docs/traces.md imports, made offline: OTLP JSON spans of a small agent
instrumented with the OpenTelemetry SDK, and an Inspect AI log of inspect-ai's mock model.

The spans are made at every docs build, with fixed ids and times so that the output shown does
not change. An Inspect log holds the time it was made and random ids, and the run id holds the
log's hash, so the log is made once and kept in the tests' data:

    .venv/bin/python docs/trace_inputs.py inspect tests/data/inspect/security_guide.eval
    .venv/bin/python docs/trace_inputs.py otel agent_spans.json
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

# 2026-03-12T10:15:00Z, in nanoseconds since the epoch
T0 = 1_773_310_500_000_000_000
SECOND = 1_000_000_000


def _hex_ids(value: Any) -> Any:
    """OTLP JSON writes ids in hex (protobuf's JSON mapping writes base64)."""
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex()
            if k in ("traceId", "spanId", "parentSpanId")
            else _hex_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(item) for item in value]
    return value


def _agent(tracer: Any, start: int, task: str, command: str, output: str, answer: str) -> None:
    """One run of a small instrumented agent: a model call, a shell command, the answer."""
    from opentelemetry import trace

    messages = json.dumps
    agent = tracer.start_span(
        "invoke_agent ghost",
        start_time=start,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ghost"},
    )
    with trace.use_span(agent, end_on_exit=False):
        chat = tracer.start_span(
            "chat gpt-4o",
            start_time=start + SECOND,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.usage.input_tokens": 1200,
                "gen_ai.usage.output_tokens": 30,
                "gen_ai.system_instructions": "You are Ghost, a network forensics agent.",
                "gen_ai.input.messages": messages(
                    [{"role": "user", "parts": [{"type": "text", "content": task}]}]
                ),
                "gen_ai.output.messages": messages(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "Checking."}]}]
                ),
            },
        )
        chat.end(end_time=start + 3 * SECOND)
        tool = tracer.start_span(
            "execute_tool shell",
            start_time=start + 4 * SECOND,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "shell",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": messages({"command": command}),
                "gen_ai.tool.call.result": output,
            },
        )
        tool.end(end_time=start + 5 * SECOND)
        final = tracer.start_span(
            "chat gpt-4o",
            start_time=start + 6 * SECOND,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 1300,
                "gen_ai.usage.output_tokens": 50,
                "gen_ai.output.messages": messages(
                    [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
                ),
            },
        )
        final.end(end_time=start + 9 * SECOND)
    agent.end(end_time=start + 10 * SECOND)


def otel_spans(path: Path) -> Path:
    """Two runs of the instrumented agent, exported by the SDK as one OTLP JSON file."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class Seeded(IdGenerator):
        """Ids from a counter's hash (the SDK's are random): the same file at every build."""

        def __init__(self) -> None:
            self.count = 0

        def _next(self, digits: int) -> int:
            self.count += 1
            return int(hashlib.sha256(f"ghost-{self.count}".encode()).hexdigest()[:digits], 16)

        def generate_span_id(self) -> int:
            return self._next(16)

        def generate_trace_id(self) -> int:
            return self._next(32)

    exporter = InMemorySpanExporter()
    # A resource of its own: the SDK's default one holds a random service.instance.id.
    provider = TracerProvider(resource=Resource({"service.name": "ghost"}), id_generator=Seeded())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("ghost")
    _agent(
        tracer,
        T0,
        "Packets to 10.0.0.7 are dropped.",
        "iptables -L INPUT -n",
        "Chain INPUT (policy ACCEPT)\nDROP all -- 10.0.0.7 0.0.0.0/0",
        "Root cause: a DROP rule for 10.0.0.7 in INPUT.",
    )
    _agent(
        tracer,
        T0 + 3600 * SECOND,
        "SSH to the bastion is refused.",
        "iptables -F INPUT",
        "",
        "Flushed INPUT; SSH works again.",
    )
    document = MessageToDict(encode_spans(exporter.get_finished_spans()))
    path.write_text(json.dumps(_hex_ids(document), indent=1) + "\n")
    return path


def inspect_log(path: Path) -> Path:
    """An Inspect AI log of two samples answered by inspect-ai's mock model with a bash tool."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, system_message, use_tools
    from inspect_ai.tool import Tool, tool

    @tool
    def bash() -> Tool:
        async def execute(cmd: str) -> str:
            """Run a shell command.

            Args:
                cmd: The command line.
            """
            return "Chain INPUT (policy ACCEPT)\nDROP all -- 10.0.0.7"

        return execute

    def used(output: ModelOutput) -> ModelOutput:
        # Given usage, the mock model does not count tokens (which would fetch an encoding).
        output.usage = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)
        return output

    outputs = [
        used(ModelOutput.for_tool_call("mockllm/model", "bash", {"cmd": "iptables -L INPUT -n"})),
        used(ModelOutput.from_content("mockllm/model", "Root cause: a DROP rule for 10.0.0.7")),
    ] * 2
    task = Task(
        dataset=[
            Sample(input="SSH is refused.", target="DROP", id="ssh"),
            Sample(input="Packets drop.", target="DROP", id="drop"),
        ],
        solver=[system_message("You are Ghost."), use_tools([bash()]), generate()],
        scorer=includes(),
        name="security_guide",
    )
    with tempfile.TemporaryDirectory() as logs:
        (log,) = eval(
            task,
            model=get_model("mockllm/model", custom_outputs=outputs),
            log_dir=logs,
            display="none",
            max_samples=1,
        )
        if log.status != "success":
            raise SystemExit(f"the mock evaluation failed: {log.error}")
        path.write_bytes(Path(log.location).read_bytes())
    return path


if __name__ == "__main__":
    makers = {"otel": otel_spans, "inspect": inspect_log}
    if len(sys.argv) != 3 or sys.argv[1] not in makers:
        raise SystemExit(__doc__)
    print(makers[sys.argv[1]](Path(sys.argv[2])))
