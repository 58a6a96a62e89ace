"""Scenarios and suites: the tasks given to an agent, with what a good answer looks like.

A suite is a directory of scenarios; a scenario is a directory holding `scenario.yaml` (and the
prompt in `PROMPT.txt` when the YAML does not carry it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentledger.errors import InputError, RecordError
from agentledger.records import Record, check_tags
from agentledger.records.specfiles import load_yaml_record, read_text_file

__all__ = [
    "SCENARIO_FILE",
    "EnvironmentSpec",
    "Expected",
    "LoadedScenario",
    "MandatoryCheck",
    "Scenario",
    "SnapshotSpec",
    "load_scenario",
    "load_suite",
]

SCENARIO_FILE = "scenario.yaml"
PROMPT_FILE = "PROMPT.txt"
SCENARIO_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"


def _compiles(patterns: list[str]) -> list[str]:
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(
                f"pattern {pattern!r} is not a valid regular expression: {exc}"
            ) from None
    return patterns


def _command_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Expected(_Strict):
    """The root cause the agent should find, and regular expressions that recognise it."""

    root_cause: str = Field(min_length=1, description="The root cause, in words.")
    patterns: list[str] = Field(
        default_factory=list,
        description="Regular expressions (case-insensitive) that match a report naming it.",
    )

    _valid = field_validator("patterns")(_compiles)


class MandatoryCheck(_Strict):
    """Something an investigation must look at before it concludes."""

    id: str = Field(min_length=1, description="Short name of the check.")
    description: str | None = Field(default=None, description="What must be looked at, and why.")
    pattern: str | None = Field(
        default=None, description="Regular expression a command in the shell log must match."
    )

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        return _compiles([value])[0] if value is not None else None


class SnapshotSpec(_Strict):
    """Where the infrastructure reference snapshot comes from: a file, or a command's output."""

    file: str | None = Field(default=None, description="A file, relative to the scenario.")
    command: str | None = Field(
        default=None, description="A shell command whose output is the snapshot at run time."
    )
    timeout: float = Field(default=120, gt=0, description="Seconds the command may take.")

    @model_validator(mode="after")
    def _one_source(self) -> SnapshotSpec:
        if (self.file is None) == (self.command is None):
            raise ValueError("give exactly one of 'file' or 'command'")
        return self


class EnvironmentSpec(_Strict):
    """Commands the runner runs around each run, outside the gate."""

    setup: list[str] = Field(default_factory=list, description="Run before the agent, in order.")
    teardown: list[str] = Field(
        default_factory=list,
        description="Run after the agent, always: also after a failure or Ctrl-C.",
    )
    timeout: float = Field(default=300, gt=0, description="Seconds each command may take.")

    _lists = field_validator("setup", "teardown", mode="before")(_command_list)


class Scenario(Record):
    """scenario.yaml: one task for an agent, what a right answer names, and its environment."""

    id: str = Field(pattern=SCENARIO_ID, description="Safe as a path: letters, digits, . _ -")
    prompt: str | None = Field(
        default=None,
        description="The symptom or task given to the agent (else PROMPT.txt beside the file).",
    )
    title: str | None = Field(default=None, description="A one-line title.")
    fault_class: str | None = Field(default=None, description="e.g. reconciler-owned-chain.")
    layer: str | None = Field(default=None, description="e.g. os, control-plane.")
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Labels copied into each run's tags (a list of words is accepted too).",
    )
    expected: Expected | None = Field(default=None, description="The expected root cause.")
    mandatory_checks: list[MandatoryCheck] = Field(
        default_factory=list, description="What an investigation must look at."
    )
    snapshot: SnapshotSpec | None = Field(
        default=None, description="The infrastructure reference snapshot."
    )
    environment: EnvironmentSpec = Field(
        default_factory=EnvironmentSpec, description="Setup and teardown commands."
    )

    @field_validator("tags", mode="before")
    @classmethod
    def _tag_words(cls, value: Any) -> Any:
        if isinstance(value, list):
            return {str(word): "true" for word in value}
        if isinstance(value, dict):
            return {str(key): str(tag) for key, tag in value.items()}
        return value

    _usable_tags = field_validator("tags")(check_tags)

    @field_validator("mandatory_checks", mode="before")
    @classmethod
    def _check_words(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"id": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("prompt")
    @classmethod
    def _prompt_text(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("the prompt is empty")
        return value


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario with its directory and its prompt text resolved."""

    spec: Scenario
    directory: Path
    prompt: str

    @property
    def id(self) -> str:
        return self.spec.id

    def snapshot_file(self) -> Path | None:
        """The snapshot file inside the scenario directory, checked not to escape it."""
        if self.spec.snapshot is None or self.spec.snapshot.file is None:
            return None
        source = self.directory / SCENARIO_FILE
        target = (self.directory / self.spec.snapshot.file).resolve()
        if not target.is_relative_to(self.directory.resolve()):
            raise RecordError(
                source, "points outside the scenario directory", field="snapshot.file"
            )
        if not target.is_file():
            raise RecordError(source, f"no such file: {target}", field="snapshot.file")
        return target


def load_scenario(directory: Path) -> LoadedScenario:
    """Read the scenario in `directory` (a clear error for every problem, nothing run)."""
    path = directory / SCENARIO_FILE
    if not path.is_file():
        raise InputError(f"{directory}: not a scenario directory (no {SCENARIO_FILE})")
    spec = load_yaml_record(Scenario, path, what="scenario file")
    prompt = spec.prompt
    if prompt is None:
        prompt_path = directory / PROMPT_FILE
        if not prompt_path.exists():
            raise RecordError(path, f"no prompt: give 'prompt' or put {PROMPT_FILE} beside it")
        prompt = read_text_file(prompt_path, what="scenario prompt")
    # Absolute: agents and environment commands run elsewhere than the caller's directory.
    loaded = LoadedScenario(spec=spec, directory=directory.absolute(), prompt=prompt)
    loaded.snapshot_file()
    return loaded


def load_suite(path: Path, only: list[str] | None = None) -> list[LoadedScenario]:
    """The scenarios of a suite directory (or the one scenario `path` is), sorted by id.

    `only` keeps the scenarios with those ids; an id that is not in the suite is an error.
    """
    if not path.exists():
        raise InputError(f"{path}: no such suite or scenario directory")
    if not path.is_dir():
        raise InputError(f"{path}: a suite is a directory of scenarios, found a file")
    if (path / SCENARIO_FILE).is_file():
        scenarios = [load_scenario(path)]
    else:
        dirs = sorted(p for p in path.iterdir() if p.is_dir() and (p / SCENARIO_FILE).is_file())
        if not dirs:
            raise InputError(f"{path}: no scenarios (directories holding {SCENARIO_FILE})")
        scenarios = [load_scenario(d) for d in dirs]
    seen: dict[str, Path] = {}
    for scenario in scenarios:
        if scenario.id in seen:
            raise InputError(
                f"{scenario.directory / SCENARIO_FILE}: scenario id {scenario.id!r} is also used "
                f"by {seen[scenario.id] / SCENARIO_FILE}"
            )
        seen[scenario.id] = scenario.directory
    if only:
        missing = [wanted for wanted in only if wanted not in seen]
        if missing:
            raise InputError(
                f"{path}: no scenario {', '.join(map(repr, missing))}; "
                f"the suite has {', '.join(sorted(seen))}"
            )
        scenarios = [s for s in scenarios if s.id in only]
    return sorted(scenarios, key=lambda s: s.id)
