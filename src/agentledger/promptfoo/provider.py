"""A promptfoo provider (``id: file://…/provider.py``) that runs a Python agent while
agentledger records it, seals the run, and answers with the agent's output and the run id.

    providers:
      - id: file:///…/agentledger/promptfoo/provider.py
        label: ops-agent
        config:
          agent: my_agent.py:investigate   # or package.module:function
          ledger: .agentledger
          scenario: packet-loss            # default: the test's description
          model: gpt-4o
          system_prompt_file: system_prompt.txt   # or system_prompt: "..."

The agent is called as ``agent(run, prompt, vars)``, `run` the `agentledger.Recording` of this
call (its ``message``, ``tool_call``, ``command`` and ``report``); what it returns (a string)
is the output promptfoo grades, and the run's report when it recorded none. The answer's
``metadata.agentledger_run_id`` names the sealed run, and tokens the agent recorded are
promptfoo's ``tokenUsage``. An agent that raises gives promptfoo an ``error`` and a run sealed
``failed``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentledger.errors import AgentLedgerError, InputError
from agentledger.runner.recording import record

__all__ = ["call_api", "load_agent"]


def load_agent(spec: str, base: Path | None = None) -> Callable[..., Any]:
    """The function `spec` names: ``file.py:function`` (relative to `base`) or
    ``package.module:function``."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise InputError(f"agent {spec!r}: expected file.py:function or module:function")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_absolute() and base is not None:
            path = base / path
        module_name = f"_agentledger_promptfoo_agent_{abs(hash(str(path.resolve())))}"
        loaded = sys.modules.get(module_name)
        if loaded is None:
            found = importlib.util.spec_from_file_location(module_name, path)
            if found is None or found.loader is None or not path.is_file():
                raise InputError(f"agent {spec!r}: no such file {path}")
            loaded = importlib.util.module_from_spec(found)
            sys.modules[module_name] = loaded
            found.loader.exec_module(loaded)
    else:
        try:
            loaded = importlib.import_module(target)
        except ImportError as exc:
            raise InputError(f"agent {spec!r}: cannot import {target}: {exc}") from None
    function = getattr(loaded, name, None)
    if not callable(function):
        raise InputError(f"agent {spec!r}: {name} is not a function of {target}")
    return function  # type: ignore[no-any-return]


def _system_prompt(config: Mapping[str, Any]) -> str:
    if isinstance(config.get("system_prompt"), str):
        return str(config["system_prompt"])
    path = config.get("system_prompt_file")
    if isinstance(path, str):
        return Path(path).read_text(encoding="utf-8")
    raise InputError("the provider's config needs system_prompt or system_prompt_file")


def call_api(prompt: str, options: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
    """promptfoo's entry point: run the configured agent on `prompt`, recorded and sealed."""
    config = options.get("config") or {}
    variables = dict((context or {}).get("vars") or {})
    try:
        agent = load_agent(str(config.get("agent", "")), Path.cwd())
        test = (context or {}).get("test") or {}
        scenario = config.get("scenario") or test.get("description") or "promptfoo"
        model = config.get("model")
        if not isinstance(model, str) or not model:
            raise InputError("the provider's config needs the model the agent asks for")
        recording = record(
            config.get("ledger") or ".agentledger",
            scenario=str(scenario),
            model=model,
            system_prompt=_system_prompt(config),
            agent_name=config.get("agent_name") or options.get("label"),
            tags={"source": "promptfoo"},
        )
    except (AgentLedgerError, OSError) as exc:
        return {"error": f"agentledger provider: {exc}"}
    try:
        with recording as run:
            output = agent(run, prompt, variables)
            if isinstance(output, str) and not run.has_report:
                run.report(output)
    except Exception as exc:  # the run is sealed failed; promptfoo shows the error
        return {
            "error": f"the agent failed: {type(exc).__name__}: {exc}",
            "metadata": {"agentledger_run_id": recording.run_id},
        }
    answer: dict[str, Any] = {
        "output": output if isinstance(output, str) else str(output),
        "metadata": {"agentledger_run_id": recording.run_id},
    }
    tokens = [step for step in recording.steps if step.tokens_in is not None]
    if tokens:
        prompt_tokens = sum(step.tokens_in or 0 for step in tokens)
        completion = sum(step.tokens_out or 0 for step in tokens)
        answer["tokenUsage"] = {
            "prompt": prompt_tokens,
            "completion": completion,
            "total": prompt_tokens + completion,
        }
    return answer
