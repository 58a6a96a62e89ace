"""Agent files: a small TOML file that says what the agent is and how to run it.

```toml
name = "ghost"
kind = "command"                 # command | python | llm | replay
command = ["python3", "agent.py"]
system_prompt = "system_prompt.txt"
checkout = "."                   # git checkout whose commit is recorded
timeout = 600

[model]
provider = "anthropic"
name = "claude-haiku-4-5"
params = { temperature = 0 }
```

Relative paths are relative to the agent file's directory.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentledger.errors import RecordError
from agentledger.records import Record
from agentledger.records.specfiles import load_toml_record

__all__ = ["AgentSpec", "LoadedAgent", "ModelSpec", "load_agent"]

AgentKind = Literal["command", "python", "llm", "replay"]


class ModelSpec(BaseModel):
    """The model an agent asks for, and how to reach it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str = Field(
        min_length=1, description="anthropic, openai, google, scripted or replay."
    )
    name: str = Field(min_length=1, description="The model asked for (overridden by --model).")
    params: dict[str, Any] = Field(
        default_factory=dict, description="Passed to the model: temperature, max_tokens, ..."
    )
    base_url: str | None = Field(
        default=None, description="Endpoint of an OpenAI-compatible server (vLLM, Ollama, ...)."
    )
    api_key_env: str | None = Field(
        default=None, description="Environment variable holding the API key, if not the default."
    )
    responses: str | None = Field(
        default=None, description="scripted provider: file of queued answers (JSON, JSONL, YAML)."
    )
    recordings: str | None = Field(
        default=None, description="replay provider: directory of recorded responses."
    )
    request_timeout: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        allow_inf_nan=False,
        description="Seconds one request to the provider may take [default: 600].",
    )
    retries: int | None = Field(
        default=None, ge=0, le=20, description="Retries of a failed model call [default: 4]."
    )


class AgentSpec(Record):
    """An agent file (TOML): name, kind, system prompt, model, checkout, timeout."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$", description="Agent name.")
    kind: AgentKind = Field(description="command, python, llm or replay.")
    description: str | None = Field(default=None, description="What the agent does.")
    system_prompt: str = Field(description="File holding the base system prompt.")
    model: ModelSpec = Field(description="The model asked for.")
    command: list[str] | None = Field(
        default=None, description="command kind: the executable and its arguments."
    )
    entry: str | None = Field(
        default=None, description="python kind: 'module:function', called with a context."
    )
    python_path: list[str] = Field(
        default_factory=lambda: ["."],
        description="python kind: directories searched for the module.",
    )
    recordings: str | None = Field(
        default=None, description="replay kind: directory of recorded outputs."
    )
    checkout: str | None = Field(
        default=".", description="The agent's git checkout, for its commit and dirty state."
    )
    timeout: float = Field(default=600, gt=0, description="Seconds a run may take.")
    policy: str | None = Field(
        default=None, description="Gate policy file (default: the packaged investigate policy)."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="command kind: extra environment variables."
    )
    tools: bool = Field(
        default=False,
        description="llm kind: a tool-calling loop (run_command, read_file, finish) through "
        "the gated shell, for the openai and anthropic providers.",
    )
    max_turns: int = Field(
        default=30, ge=1, le=500, description="llm kind with tools: model turns before giving up."
    )

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return shlex.split(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _kind_needs(self) -> AgentSpec:
        needs = {"command": "command", "python": "entry", "replay": "recordings"}.get(self.kind)
        if needs and not getattr(self, needs):
            raise ValueError(f"a {self.kind} agent needs '{needs}'")
        if self.command is not None and not self.command:
            raise ValueError("'command' is empty")
        if self.entry is not None:
            module, sep, func = self.entry.partition(":")
            if not (module and sep and func.isidentifier()):
                raise ValueError(f"'entry' must look like module:function, found {self.entry!r}")
        return self


@dataclass(frozen=True)
class LoadedAgent:
    """An agent file with its paths resolved against the file's directory."""

    spec: AgentSpec
    path: Path

    @property
    def directory(self) -> Path:
        return self.path.parent

    def resolve(self, relative: str) -> Path:
        """A path named in the agent file, relative to the file's directory."""
        return (self.directory / Path(relative).expanduser()).resolve()

    def file(self, relative: str, field: str) -> Path:
        """A file named in the agent file; an error naming the field when it does not exist."""
        target = self.resolve(relative)
        if not target.is_file():
            raise RecordError(self.path, f"no such file: {target}", field=field)
        return target

    def directory_at(self, relative: str, field: str) -> Path:
        """A directory named in the agent file; an error naming the field when absent."""
        target = self.resolve(relative)
        if not target.is_dir():
            raise RecordError(self.path, f"no such directory: {target}", field=field)
        return target


def load_agent(path: Path) -> LoadedAgent:
    """Read and check an agent file: the files and directories it names must exist."""
    spec = load_toml_record(AgentSpec, path, what="agent file")
    agent = LoadedAgent(spec=spec, path=path.resolve())
    agent.file(spec.system_prompt, "system_prompt")
    if spec.policy:
        agent.file(spec.policy, "policy")
    if spec.recordings:
        agent.directory_at(spec.recordings, "recordings")
    if spec.model.responses:
        agent.file(spec.model.responses, "model.responses")
    if spec.model.recordings:
        agent.directory_at(spec.model.recordings, "model.recordings")
    return agent
