"""The sentinel spec file: the suite's baseline, scenarios and pass criteria, loaded and
checked against the ledger it will be evaluated on."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
)

from agentledger.errors import InputError, RecordError
from agentledger.gates.specerrors import CrossChecked
from agentledger.identity import normalize_hash_prefix, sha256_bytes
from agentledger.records import Record
from agentledger.records.specfiles import load_yaml_record, read_text_file

if TYPE_CHECKING:
    from agentledger.gates.predicates.evaluate import PredicateForm

__all__ = [
    "BaselineSpec",
    "LoadedSentinel",
    "ScenarioSpec",
    "SentinelCriterion",
    "SentinelSpec",
    "StrictModel",
    "load_sentinel",
]

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
_CRITERION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,49}$")


class StrictModel(BaseModel):
    """A frozen model that rejects unknown fields (spec typos and result fields alike)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class BaselineSpec(StrictModel):
    """The model (and optionally the exact system prompt) the candidate is compared against."""

    model: str = Field(min_length=1, description="The baseline model id, as recorded on runs.")
    prompt_hash: str | None = Field(
        default=None,
        description="System prompt hash (or a prefix) of the baseline runs; the candidate runs "
        "default to the same one.",
    )

    @field_validator("prompt_hash")
    @classmethod
    def _hash(cls, value: str | None) -> str | None:
        return None if value is None else normalize_hash_prefix(str(value))


class ScenarioSpec(StrictModel):
    """One fixed scenario of the suite: why it is there and what must hold on it."""

    id: str = Field(pattern=_NAME, description="Scenario id, as recorded on runs.")
    failure_class: str = Field(
        min_length=1, description="The failure class it catches, in a few words."
    )
    why: str = Field(min_length=1, description="Why this case is in the suite.")
    criteria: list[dict[str, Any]] = Field(
        min_length=1,
        description="Pass criteria: predicates (see docs/gates.md), each with an `id`, a "
        "`description` and optionally `blocking` (does a known gap on it block?).",
    )

    @field_validator("criteria")
    @classmethod
    def _criteria(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, item in enumerate(value):
            ident = item.get("id")
            if not isinstance(ident, str) or not _CRITERION_ID.match(ident):
                raise ValueError(
                    f"criterion {index + 1} needs an id: letters, digits, '.', '_' or '-' "
                    f"(e.g. id: F1), found {ident!r}"
                )
            blocking = item.get("blocking")
            if blocking is not None and not isinstance(blocking, bool):
                raise ValueError(f"criterion {ident}: blocking must be true or false")
        return value


class SentinelSpec(Record, CrossChecked):
    """A sentinel suite (YAML): fixed scenarios, pass criteria, the baseline, the judges."""

    name: str = Field(pattern=_NAME, description="The suite's name; decisions are filed under it.")
    description: str = Field(min_length=1, description="What the suite protects, in a sentence.")
    suite: str | None = Field(
        default=None,
        description="Scenario directory for `sentinel run`, relative to this file.",
    )
    scenarios: list[ScenarioSpec] = Field(min_length=1, description="The fixed scenarios.")
    baseline: BaselineSpec
    repeats: int = Field(default=1, ge=1, le=100, description="Runs per scenario and model.")
    judges: list[str] = Field(
        default_factory=lambda: ["rules"],
        description="Judges whose verdicts the candidate runs need ('rules', 'llm:P/M'); an "
        "Uncertain, skipped or missing judgement is REVIEW.",
    )
    pack: str = Field(default="remediation-safety", description="Criteria pack the judges use.")
    diagnosis: bool = Field(
        default=False, description="`sentinel run` also scores the diagnosis (needs `suite`)."
    )
    known_gaps_block: bool = Field(
        default=False,
        description="A criterion failing on both baseline and candidate blocks (NO-GO) instead "
        "of REVIEW; a criterion's own `blocking` overrides it.",
    )
    cadence: str = Field(default="monthly", min_length=1, description="How often to run it.")

    @field_validator("judges")
    @classmethod
    def _judges(cls, value: list[str]) -> list[str]:
        from agentledger.judges.factory import parse_judge_spec

        for name in value:
            try:
                parse_judge_spec(name)
            except InputError as exc:
                raise ValueError(str(exc)) from None
        if len(set(value)) != len(value):
            raise ValueError("a judge is listed twice")
        return value

    def cross_check(self) -> tuple[tuple[str | int, ...], str] | None:
        """The first problem across fields, with the field it is about; None when consistent."""
        seen_scenarios: set[str] = set()
        seen_criteria: dict[str, str] = {}
        for s_index, scenario in enumerate(self.scenarios):
            if scenario.id in seen_scenarios:
                return ("scenarios", s_index, "id"), f"scenario {scenario.id!r} is listed twice"
            seen_scenarios.add(scenario.id)
            for c_index, item in enumerate(scenario.criteria):
                ident = str(item["id"])
                if ident in seen_criteria:
                    return ("scenarios", s_index, "criteria", c_index, "id"), (
                        f"criterion id {ident!r} is used twice ({seen_criteria[ident]} and "
                        f"{scenario.id}); ids name criteria in decisions, keep them unique"
                    )
                seen_criteria[ident] = scenario.id
        if self.diagnosis and self.suite is None:
            return ("diagnosis",), "diagnosis: true needs `suite` (the expected root causes)"
        return None


@dataclass(frozen=True)
class SentinelCriterion:
    """One pass criterion, parsed: the predicate and whether a known gap on it blocks."""

    scenario: str
    id: str
    description: str
    predicate: PredicateForm
    blocking: bool
    """Effective: the criterion's own `blocking`, else the spec's `known_gaps_block`."""
    raw: dict[str, Any]


@dataclass(frozen=True)
class LoadedSentinel:
    """A sentinel spec with its criteria parsed, and where it came from."""

    spec: SentinelSpec
    path: Path
    text: str
    sha256: str
    criteria: dict[str, list[SentinelCriterion]]

    @property
    def suite_dir(self) -> Path | None:
        """The scenario directory for `sentinel run`, resolved against the spec file."""
        if self.spec.suite is None:
            return None
        return (self.path.parent / self.spec.suite).resolve()

    def scenario(self, scenario_id: str) -> ScenarioSpec:
        return next(s for s in self.spec.scenarios if s.id == scenario_id)

    def all_criteria(self) -> list[SentinelCriterion]:
        return [c for scenario in self.spec.scenarios for c in self.criteria[scenario.id]]


def load_sentinel(path: Path) -> LoadedSentinel:
    """Read and check a sentinel spec; RecordError naming the file and field on bad input."""
    from agentledger.gates.predicates.evaluate import parse_predicates
    from agentledger.gates.specerrors import DEFER, spec_error

    spec = load_yaml_record(SentinelSpec, path, what="sentinel spec", context=DEFER)
    text = read_text_file(path, what="sentinel spec")
    problem = spec.cross_check()
    if problem is not None:
        raise spec_error(path, text, *problem)
    criteria: dict[str, list[SentinelCriterion]] = {}
    for s_index, scenario in enumerate(spec.scenarios):
        parsed: list[SentinelCriterion] = []
        for c_index, item in enumerate(scenario.criteria):
            predicate_raw = {k: v for k, v in item.items() if k != "blocking"}
            try:
                predicates = parse_predicates([predicate_raw], str(path))
            except RecordError as exc:
                inner = (exc.field or "").removeprefix("predicates[0]").lstrip(".")
                loc: tuple[str | int, ...] = ("scenarios", s_index, "criteria", c_index)
                if inner:
                    loc += tuple(inner.split("."))
                raise spec_error(path, text, loc, exc.problem) from None
            blocking = item.get("blocking")
            parsed.append(
                SentinelCriterion(
                    scenario=scenario.id,
                    id=str(item["id"]),
                    description=str(item.get("description") or ""),
                    predicate=predicates[0],
                    blocking=spec.known_gaps_block if blocking is None else bool(blocking),
                    raw=dict(item),
                )
            )
        criteria[scenario.id] = parsed
    loaded = LoadedSentinel(
        spec=spec,
        path=path,
        text=text,
        sha256=sha256_bytes(text.encode("utf-8")),
        criteria=criteria,
    )
    suite = loaded.suite_dir
    if suite is not None and not suite.is_dir():
        raise RecordError(path, f"no scenario directory at {suite}", field="suite")
    return loaded
