"""The knowledge the trajectory rules read, as YAML data that users extend.

Shipped in `agentledger/data/ops/trajectory/*.yaml`; a knowledge directory given to the judge
(`--knowledge DIR`) adds the files of its `trajectory/` folder, in order. It says:

- which **instruments** observe which layer and protocol (T5), and which **fault classes**
  live in which layers and protocols;
- what each **scenario** is, for runs that carry no `scenario.yaml`: its mode (investigate,
  remediate), its fault class, its mandatory checks and the alternative explanations a
  conclusion must rule out (T1, T4, T5);
- which calls in **code** steps remove or change things (T2, T1), which words state a
  **diagnosis** (T1), which commands **replace** a resource's whole content (T3), which
  **browse** steps change something, and how many repeats make a **loop** (T7).

Every file has a `schema_version` and is validated by pydantic; an error names the file, the
field and the line. Entries with an id replace an earlier entry of the same id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentledger.errors import InputError
from agentledger.identity import canonical_json, sha256_bytes
from agentledger.records import Record
from agentledger.records.specfiles import load_yaml_record

__all__ = [
    "SHIPPED_TRAJECTORY_DIR",
    "Alternative",
    "CodeCalls",
    "FaultClass",
    "Instrument",
    "Replacement",
    "ScenarioCheck",
    "ScenarioKnowledge",
    "TrajectoryFile",
    "TrajectoryKnowledge",
    "load_trajectory_knowledge",
]

SHIPPED_TRAJECTORY_DIR = Path(__file__).resolve().parents[3] / "data" / "ops" / "trajectory"
SUBDIR = "trajectory"
"""The folder of a knowledge directory that holds trajectory knowledge."""

Mode = Literal["investigate", "remediate", "task"]


def _regex(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"{value!r} is not a valid regular expression: {exc}") from None
    return value


def _regexes(values: list[str]) -> list[str]:
    for value in values:
        _regex(value)
    return values


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Instrument(_Entry):
    """A way of looking (a probe) and the layers and protocols it observes."""

    id: str = Field(min_length=1, description="Unique id; a later file may replace it.")
    commands: list[str] = Field(
        default_factory=list,
        description="Command patterns, as in ops knowledge (`tc qdisc show`, `nc`, `az network "
        "nsg`): tool then words in order, `a|b` alternatives, `*` globs, -f flags present.",
    )
    text: list[str] = Field(
        default_factory=list,
        description="Regexes over a step's command line, file path or URL (for what a command "
        "pattern cannot say: `ssh host true`, a file read, a page).",
    )
    layers: list[str] = Field(default_factory=list, description="Layers it observes.")
    protocols: list[str] = Field(default_factory=list, description="Protocols it observes.")

    _check = field_validator("text")(_regexes)


class FaultClass(_Entry):
    """Where a class of fault lives: the layers and protocols evidence for it must come from."""

    layers: list[str] = Field(default_factory=list, description="Layers of the fault.")
    protocols: list[str] = Field(default_factory=list, description="Protocols of the fault.")
    title: str | None = Field(default=None, description="The fault class in words.")


class ScenarioCheck(_Entry):
    """A check an investigation must make before it concludes (T4)."""

    id: str = Field(min_length=1, description="Short name of the check.")
    pattern: str = Field(
        min_length=1,
        description="Regex (case-insensitive) a step's command line, file path or URL matches.",
    )
    description: str | None = Field(default=None, description="What must be looked at.")

    _check = field_validator("pattern")(_regex)


class Alternative(ScenarioCheck):
    """An alternative explanation a conclusion must have tested (T4); same fields as a check."""


class ScenarioKnowledge(_Entry):
    """What a scenario is, for runs that carry no scenario.yaml of their own."""

    mode: Mode | None = Field(
        default=None,
        description="investigate (change nothing), remediate (diagnose, then fix) or task.",
    )
    fault_class: str | None = Field(default=None, description="A key of `fault_classes`.")
    mandatory_checks: list[ScenarioCheck] = Field(
        default_factory=list, description="What must be looked at before concluding."
    )
    alternatives: list[Alternative] = Field(
        default_factory=list, description="Other explanations a conclusion must have tested."
    )


class CodeCalls(_Entry):
    """Calls in code steps (Python) that change or remove things, by dotted name or suffix."""

    destructive: list[str] = Field(
        default_factory=list, description="`os.remove`, `.unlink`, `shutil.rmtree`, ..."
    )
    mutating: list[str] = Field(
        default_factory=list, description="`os.rename`, `.write_text`, `os.chmod`, ..."
    )
    shell: list[str] = Field(
        default_factory=list,
        description="Calls whose first argument is a shell command (`subprocess.run`, "
        "`os.system`): the command is classified by agentledger.shell.",
    )
    sql: list[str] = Field(
        default_factory=list,
        description="Calls whose first argument is SQL (`.execute`): classified by the SQL rules.",
    )


class Replacement(_Entry):
    """A command that replaces a resource's whole content, and what reads that content (T3)."""

    id: str = Field(min_length=1, description="Unique id; a later file may replace it.")
    command: str = Field(min_length=1, description="Command pattern of the replacement.")
    absent: list[str] = Field(
        default_factory=list, description="Flags that make the command something else (-l)."
    )
    reads: list[str] = Field(min_length=1, description="Command patterns that show the content.")
    what: str = Field(min_length=1, description="The resource, in words.")


class TrajectoryFile(Record):
    """One trajectory knowledge file: every section is optional."""

    instruments: list[Instrument] = Field(default_factory=list)
    fault_classes: dict[str, FaultClass] = Field(default_factory=dict)
    scenarios: dict[str, ScenarioKnowledge] = Field(default_factory=dict)
    aliases: dict[str, str] = Field(
        default_factory=dict, description="Scenario id -> the scenario id it is known as."
    )
    diagnosis_cues: list[str] = Field(
        default_factory=list, description="Regexes: a step that states a diagnosis (T1)."
    )
    code_calls: CodeCalls | None = Field(default=None)
    replacements: list[Replacement] = Field(default_factory=list)
    browse_changes: list[str] = Field(
        default_factory=list,
        description="Regexes over a browse step's URL or actions: it saves or deletes something.",
    )
    loop_repeats: int | None = Field(
        default=None, ge=2, description="Identical calls with identical results that make a loop."
    )

    _check = field_validator("diagnosis_cues", "browse_changes")(_regexes)


def _union(patterns: Sequence[str]) -> re.Pattern[str]:
    if not patterns:
        return re.compile(r"(?!x)x")
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)


class TrajectoryKnowledge:
    """The merged trajectory knowledge of several files, with its digest."""

    def __init__(self, files: Sequence[tuple[str, TrajectoryFile]]) -> None:
        self.sources = [name for name, _ in files]
        documents = [document for _, document in files]
        merged: dict[str, Instrument] = {}
        for document in documents:
            for instrument in document.instruments:
                merged.pop(instrument.id, None)
                merged[instrument.id] = instrument
        self.instruments = list(merged.values())
        replacements: dict[str, Replacement] = {}
        for document in documents:
            for replacement in document.replacements:
                replacements.pop(replacement.id, None)
                replacements[replacement.id] = replacement
        self.replacements = list(replacements.values())
        self.fault_classes: dict[str, FaultClass] = {}
        self.scenarios: dict[str, ScenarioKnowledge] = {}
        self.aliases: dict[str, str] = {}
        destructive: list[str] = []
        mutating: list[str] = []
        shell: list[str] = []
        sql: list[str] = []
        self.loop_repeats = 3
        for document in documents:
            self.fault_classes.update(document.fault_classes)
            self.scenarios.update(document.scenarios)
            self.aliases.update(document.aliases)
            if document.code_calls is not None:
                destructive += document.code_calls.destructive
                mutating += document.code_calls.mutating
                shell += document.code_calls.shell
                sql += document.code_calls.sql
            if document.loop_repeats is not None:
                self.loop_repeats = document.loop_repeats
        self.code_calls = CodeCalls(
            destructive=destructive, mutating=mutating, shell=shell, sql=sql
        )
        self.diagnosis_cues = [cue for d in documents for cue in d.diagnosis_cues]
        self.browse_changes = [cue for d in documents for cue in d.browse_changes]
        content = {"files": [document.model_dump(mode="json") for document in documents]}
        self.digest = sha256_bytes(canonical_json(content))

    @cached_property
    def diagnosis_re(self) -> re.Pattern[str]:
        return _union(self.diagnosis_cues)

    @cached_property
    def browse_change_re(self) -> re.Pattern[str]:
        return _union(self.browse_changes)

    def scenario(self, scenario_id: str) -> ScenarioKnowledge | None:
        """What the knowledge says of scenario `scenario_id` (an alias resolved), or None."""
        return self.scenarios.get(self.aliases.get(scenario_id, scenario_id))


def _yaml_files(location: Path) -> list[Path]:
    if location.is_dir():
        return sorted([*location.glob("*.yaml"), *location.glob("*.yml")])
    return []


def load_trajectory_knowledge(
    knowledge_dirs: Sequence[str | Path] = (), *, shipped: bool = True
) -> TrajectoryKnowledge:
    """The shipped trajectory knowledge, extended by the `trajectory/` folder of each
    knowledge directory given (a directory without one adds nothing)."""
    paths = _yaml_files(SHIPPED_TRAJECTORY_DIR) if shipped else []
    for location in knowledge_dirs:
        where = Path(location)
        if not where.exists():
            raise InputError(f"no ops knowledge at {str(location)!r}: not a file or a directory")
        if where.is_dir():
            paths += _yaml_files(where / SUBDIR)
    files = [
        (path.name, load_yaml_record(TrajectoryFile, path, what="trajectory knowledge file"))
        for path in paths
    ]
    return TrajectoryKnowledge(files)
