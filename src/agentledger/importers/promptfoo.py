"""promptfoo results (``promptfoo eval -o results.json``, or ``promptfoo export eval``): a run per
output, and promptfoo's grades, ratings and comments as labels.

Each result (one test case on one provider) becomes a run: the prompt promptfoo sent as the
user's message, the provider's output as the finish (the report), its token counts and cost;
the scenario is the test's description (else ``promptfoo``), the model the provider's
(``openai:chat:gpt-4o`` gives ``gpt-4o``; another provider its label or id). A result whose
output came from agentledger's own promptfoo provider (``metadata.agentledger_run_id``) is a
run already: it is not made twice, and its labels go to that run.

Labels (`promptfoo_labels`), source ``promptfoo``: each assertion promptfoo graded, as a
criterion (``pf.<metric or type>``) that fired when the assertion failed, with the grader's
reasons; a person's rating in promptfoo's viewer (an assertion of type ``human``) as a label
of source ``promptfoo:human`` with its pass or fail and the comment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentledger.errors import RecordError
from agentledger.importers.plan import PlannedRun
from agentledger.importers.run_plan import PlanContext
from agentledger.importers.source_files import given_file, read_regular
from agentledger.importers.trace_runs import TraceFacts, plan_trace_run, trace_files
from agentledger.records import DEFAULT_MAX_ARTIFACT_BYTES, decode_json
from agentledger.records.trace import STEPS, step_text_fields

__all__ = [
    "FORMAT",
    "find_promptfoo_results",
    "plan_promptfoo_result",
    "promptfoo_run_id",
    "read_results",
]

FORMAT = "promptfoo"
_SEPARATOR = "#result="
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_CRITERION = re.compile(r"[^A-Za-z0-9_.-]+")
RUN_ID_KEY = "agentledger_run_id"


def read_results(raw: bytes, origin: str) -> list[dict[str, Any]]:
    """The results of a promptfoo output file (``{"evalId", "results": {"results": [...]}}``,
    or the inner ``{"version", "results": [...]}``)."""
    data = decode_json(raw, origin)
    inner = data.get("results") if isinstance(data, dict) else None
    if isinstance(inner, dict):
        inner = inner.get("results")
    if not isinstance(inner, list):
        raise RecordError(origin, "expected promptfoo's results: {'results': {'results': [...]}}")
    for number, result in enumerate(inner):
        if not isinstance(result, dict):
            raise RecordError(origin, "expected a result object", field=f"results[{number}]")
    return inner


def linked_run(result: dict[str, Any]) -> str | None:
    """The agentledger run the result's output came from (its promptfoo provider), if any."""
    for holder in (result.get("response") or {}, result):
        metadata = holder.get("metadata") if isinstance(holder, dict) else None
        if isinstance(metadata, dict) and isinstance(metadata.get(RUN_ID_KEY), str):
            return str(metadata[RUN_ID_KEY])
    return None


def find_promptfoo_results(
    paths: Sequence[Path], limit: int = DEFAULT_MAX_ARTIFACT_BYTES
) -> list[tuple[Path, str]]:
    """One entry per result that is not a run already (``file#result=N``); a file over
    `limit` bytes is refused before it is read, and links out of the folder are refused."""
    found: list[tuple[Path, str]] = []
    for path in paths:
        for file, real in trace_files(path, (".json",), "promptfoo results file"):
            results = read_results(read_regular(real, limit, file), str(file))
            for number, result in enumerate(results):
                if linked_run(result) is None:
                    found.append(
                        (
                            Path(f"{file}{_SEPARATOR}{number}"),
                            f"{real}{_SEPARATOR}{number}",
                        )
                    )
    return found


def _model(provider: Any) -> str | None:
    if isinstance(provider, str):
        provider = {"id": provider}
    if not isinstance(provider, dict):
        return None
    ident = provider.get("id")
    if isinstance(ident, str) and ident and not ident.startswith(("file:", "python:", "exec:")):
        return ident.rsplit(":", 1)[-1] or ident
    label = provider.get("label")
    return label if isinstance(label, str) and label else ident if isinstance(ident, str) else None


def _scenario(result: dict[str, Any]) -> str:
    test = result.get("testCase") or {}
    description = test.get("description") if isinstance(test, dict) else None
    return description if isinstance(description, str) and description.strip() else "promptfoo"


def _slug(text: str) -> str:
    return _SLUG.sub("-", text).strip("-._")[:60] or "x"


def promptfoo_run_id(result: dict[str, Any], number: int) -> str | None:
    """The run id a result is imported as (its own id, or its linked run's)."""
    linked = linked_run(result)
    if linked is not None:
        return linked
    model = _model(result.get("provider"))
    if model is None:
        return None
    key = result.get("id") if isinstance(result.get("id"), str) else f"row{number}"
    return f"{_slug(_scenario(result))}_{_slug(model)}_{_slug(str(key))[:12]}"


def _output(response: Any) -> str | None:
    output = response.get("output") if isinstance(response, dict) else None
    if output is None or isinstance(output, str):
        return output
    import json

    return json.dumps(output, ensure_ascii=False)


def plan_promptfoo_result(path: Path, ctx: PlanContext, real: str | None = None) -> PlannedRun:
    """The checked plan of one result (``file#result=N``) of a promptfoo output file."""
    file_name, _, number_text = str(path).partition(_SEPARATOR)
    file = Path(file_name)
    at = real.partition(_SEPARATOR)[0] if real else given_file(file)
    raw, results = ctx.latest(
        "promptfoo-file", Path(at), lambda _at: _read_file(file, read_regular(at, ctx.limit, file))
    )
    number = int(number_text)
    result = results[number]
    where = f"results[{number}]"
    prompt = (result.get("prompt") or {}).get("raw")
    response = result.get("response") or {}
    output = _output(response)
    error = result.get("error") if not result.get("success") else None
    facts = TraceFacts(importer=FORMAT, scenario=_scenario(result), scenario_from="trace")
    facts.model = _model(result.get("provider"))
    facts.prompt = prompt if isinstance(prompt, str) else None
    facts.report = output
    usage = response.get("tokenUsage") or result.get("tokenUsage") or {}
    if isinstance(usage, dict):
        facts.tokens_in = usage.get("prompt") if type(usage.get("prompt")) is int else None
        facts.tokens_out = usage.get("completion") if type(usage.get("completion")) is int else None
    cost = result.get("cost")
    facts.cost_usd = float(cost) if type(cost) in (int, float) and cost >= 0 else None
    if isinstance(response.get("error"), str):
        facts.error = response["error"][:2000]
    if isinstance(error, str) and error and not facts.error:
        facts.notes.append(f"promptfoo: {error[:500]}")
    facts.run_key = _slug(str(result.get("id") or f"row{number}"))[:12]
    facts.extra_source = {"promptfoo": {"eval": _eval_id(raw), "result": result.get("id")}}
    source = {"file": f"{file.name}", "event": str(result.get("id") or number)}
    values: list[dict[str, Any]] = []
    if facts.prompt is not None:
        values.append(
            {
                "index": 0,
                "actor": "user",
                "kind": "message",
                "source": source,
                "content": step_text_fields(facts.prompt),
            }
        )
    if output is not None:
        values.append(
            {
                "index": len(values),
                "actor": "agent",
                "kind": "finish",
                "model": facts.model,
                "tokens_in": facts.tokens_in,
                "tokens_out": facts.tokens_out,
                "source": source,
                "content": step_text_fields(output),
            }
        )
    try:
        steps = STEPS.validate_python(values)
    except ValueError as exc:
        raise RecordError(str(file), str(exc).splitlines()[0], field=where) from None
    part = [(f"result-{number}.json", _result_bytes(result))]
    return plan_trace_run(file, raw, steps, facts, ctx, parts=part)


def _eval_id(raw: bytes) -> str | None:
    match = re.search(rb'"evalId"\s*:\s*"([^"]{1,200})"', raw[:4096])
    return match[1].decode("utf-8", "replace") if match else None


def _result_bytes(result: dict[str, Any]) -> bytes:
    import json

    return json.dumps(result, ensure_ascii=False, indent=1).encode("utf-8", "surrogatepass") + b"\n"


def _read_file(file: Path, raw: bytes) -> tuple[bytes, list[dict[str, Any]]]:
    return raw, read_results(raw, str(file))


def criterion_of(component: dict[str, Any], position: int) -> str:
    """The criterion id of one graded assertion: ``pf.<metric, or type>``."""
    assertion = component.get("assertion") or {}
    name = assertion.get("metric") or assertion.get("type") or f"assert{position}"
    return ("pf." + _CRITERION.sub("-", str(name)).strip("-."))[:32]


def graded(result: dict[str, Any]) -> tuple[list[tuple[str, bool, str]], dict[str, Any] | None]:
    """A result's graded assertions (criterion, passed, reason), the innermost of each (a
    python assertion's own components), and a person's rating (its ``human`` component)."""
    grading = result.get("gradingResult")
    if not isinstance(grading, dict):
        return [], None
    found: dict[str, tuple[str, bool, str]] = {}
    human = None

    def walk(components: Any) -> None:
        nonlocal human
        for position, component in enumerate(components or []):
            if not isinstance(component, dict):
                continue
            assertion = component.get("assertion") or {}
            if assertion.get("type") == "human":
                human = component
                continue
            inner = component.get("componentResults")
            if inner:
                walk(inner)
                continue
            criterion = criterion_of(component, position)
            found.setdefault(
                criterion,
                (criterion, bool(component.get("pass")), str(component.get("reason") or "")),
            )

    walk(grading.get("componentResults"))
    return list(found.values()), human
