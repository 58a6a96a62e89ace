"""The OpenTelemetry span attributes of a run: one table that the export writes
(`agentledger.store.export_otel`) and the importer reads (`agentledger.importers.otel`), so
that what one writes the other reads back.

GenAI semantic-convention names first (what other tools write and read too), then
agentledger's own, under ``agentledger.``: the facts of a run the conventions have no name for,
and each step's fields (`STEP_ATTRIBUTES`), under ``agentledger.result.`` for the answer a tool's
span also holds. And the wire format's values and attributes, written (`attribute_list`) and
read (`attribute_map`).
"""

from __future__ import annotations

from typing import Any

from agentledger.errors import RecordError

OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
SYSTEM_FINGERPRINT_GENAI = "gen_ai.response.system_fingerprint"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
COST = "gen_ai.usage.cost"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""The range of OTLP's `intValue` (int64)."""

OURS = "agentledger."
"""The prefix of agentledger's own attributes, and of a step's fields."""
RESULT = "agentledger.result."
"""The prefix of the fields of the answer a tool's span holds beside its call."""
EXPORT = "agentledger.export"
EXPORT_VERSION = 2
"""`EXPORT` of the run's span: the importer reads spans of this version back exactly."""
RUN_ID = "agentledger.run_id"
SCENARIO = "agentledger.scenario"
SYSTEM_PROMPT_HASH = "agentledger.system_prompt_hash"
SYSTEM_FINGERPRINT = "agentledger.system_fingerprint"
AGENT_COMMIT = "agentledger.agent.commit"
STARTED_AT = "agentledger.started_at"
ENDED_AT = "agentledger.ended_at"
PROMPT = "agentledger.prompt"
REPORT = "agentledger.report"
COST_USD = "agentledger.cost_usd"
MODEL_CALLS = "agentledger.model_calls"
NOTES = "agentledger.notes"
TIME_ZONE = "agentledger.time_zone"
TEXT = "agentledger.text"
RAW_TYPE = "agentledger.raw_type"
EXIT_CODE = "agentledger.exit_code"
ARGUMENTS_MADE = "agentledger.arguments_made"
"""True where the export made a tool call's arguments up (``{"command": ...}``), not the agent."""

STEP_ATTRIBUTES: dict[str, type | tuple[type, ...]] = {
    "step": int,
    "actor": str,
    "kind": str,
    "raw_type": str,
    "time_zone": str,
    "tool": str,
    "call_id": str,
    "arguments": str,
    "command": str,
    "command_class": str,
    "exit_code": int,
    "cwd": str,
    "cause": int,
    "model": str,
    "tokens_in": int,
    "tokens_out": int,
    "cost_usd": (int, float),
    "text": str,
    # the size and hash of the whole text (the text itself may be a cut of it)
    "content.bytes": int,
    "content.sha256": str,
    "content.truncated": bool,
    "gate.decision": str,
    "gate.decided_by": str,
    "gate.reason": str,
    "gate.policy": str,
}
"""A step's fields after `OURS` (or `RESULT`), in the order written, with the type each is
read back as."""


# -- the wire: OTLP/JSON values and attributes, written and read ----------------------------


def any_value(value: Any) -> dict[str, Any]:
    """A plain value as an OTLP AnyValue (64-bit integers as strings, as OTLP JSON writes)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(item) for item in value]}}
    return {"stringValue": str(value)}


def attribute_list(values: dict[str, Any]) -> list[dict[str, Any]]:
    """`values` as OTLP attributes, those that are None left out."""
    return [
        {"key": key, "value": any_value(value)}
        for key, value in values.items()
        if value is not None
    ]


def plain_value(value: Any) -> Any:
    """An OTLP AnyValue as plain JSON."""
    if not isinstance(value, dict) or len(value) != 1:
        return None
    ((kind, inner),) = value.items()
    if kind == "intValue":
        try:
            return int(inner)
        except (TypeError, ValueError):
            return None
    if kind == "arrayValue":
        return [plain_value(item) for item in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return {
            kv.get("key"): plain_value(kv.get("value")) for kv in (inner or {}).get("values", [])
        }
    return inner


def attribute_map(items: Any, origin: str, where: str) -> dict[str, Any]:
    """OTLP attributes (a list of key and AnyValue) as a dict of plain values."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise RecordError(origin, "expected a list of attributes", field=where)
    out: dict[str, Any] = {}
    for n, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            key = item["key"]
            if key in out:
                # OTLP: attribute keys are unique; which of two values held is unknowable.
                raise RecordError(
                    origin,
                    f"attribute {key!r} is given twice (each key once)",
                    field=f"{where}[{n}]",
                )
            _check_ints(item.get("value"), origin, f"{where}[{n}].value")
            out[key] = plain_value(item.get("value"))
    return out


def _check_ints(value: Any, origin: str, where: str) -> None:
    """Refuse an `intValue` that is not a 64-bit integer (OTLP's int64), in arrays and lists
    too: a count past 64 bits is malformed input, not a number to store."""
    if not isinstance(value, dict) or len(value) != 1:
        return
    ((kind, inner),) = value.items()
    if kind == "intValue" and not isinstance(inner, bool) and isinstance(inner, (int, str)):
        try:
            number = int(inner)
        except ValueError:
            return  # not a number at all: read as unknown (`plain_value`)
        if not INT64_MIN <= number <= INT64_MAX:
            raise RecordError(
                origin,
                f"{inner} does not fit in 64 bits (OTLP's intValue is int64)",
                field=f"{where}.intValue",
            )
    elif kind in ("arrayValue", "kvlistValue") and isinstance(inner, dict):
        for n, item in enumerate(inner.get("values") or []):
            inner_value = (
                item.get("value") if kind == "kvlistValue" and isinstance(item, dict) else item
            )
            _check_ints(inner_value, origin, f"{where}.{kind}.values[{n}]")
