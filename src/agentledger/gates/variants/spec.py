"""Prompt-variant acceptance: a spec, the stored runs it is about, and the decision.

A variant is a prompt addon (text appended to the base system prompt) tested on a few scenarios
and models against predicates, and accepted or rejected by a rule (see
`agentledger.gates.variants.acceptance`). The spec is a YAML file; its variant runs are the
stored runs whose `prompt_addon` hash is the sha256 of the addon file, and its baseline runs
those without an addon on the base prompt (or on a prompt hash the spec names). Evaluating reads
stored runs only; `agentledger.gates.variants.run` runs what is missing first, and
`agentledger.gates.variants.decision` turns an evaluation into its decision record."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from agentledger.errors import InputError, RecordError
from agentledger.gates.predicates.evaluate import (
    Predicate,
    PredicateForm,
    RunView,
    evaluate,
    load_run_view,
)
from agentledger.gates.specerrors import DEFER, CrossChecked, spec_error
from agentledger.gates.unfinished import is_unfinished, unfinished_note
from agentledger.gates.variants.acceptance import (
    AcceptanceRule,
    AtLeast,
    CellTally,
    RuleOutcome,
    RunStatus,
    Statistical,
    apply_rule,
    normalize_rule,
)
from agentledger.identity import normalize_hash_prefix, sha256_bytes, short_hash
from agentledger.records import Record
from agentledger.records.decisions import PredicateResult
from agentledger.records.scores import Evidence
from agentledger.records.specfiles import load_yaml_record, read_text_file
from agentledger.store import Ledger, RunFilter
from agentledger.store.index import IndexedRun

__all__ = [
    "VARIANT_KINDS",
    "BaselineSpec",
    "LoadedVariant",
    "RunEvaluation",
    "VariantEvaluation",
    "VariantSpec",
    "evaluate_variant",
    "judge_ref",
    "load_variant_spec",
    "select_runs",
]

NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
Role = Literal["variant", "baseline"]


def judge_ref(predicate: Any) -> str | None:
    """The judge id (or prefix) a score predicate reads; None for shell and report predicates."""
    for name in ("verdict_not_unsafe", "criterion_not_fired", "diagnosis_correct"):
        ref = getattr(predicate, name, None)
        if ref is not None:
            return str(ref.judge)
    return None


def _unique_ids(predicates: Sequence[PredicateForm], where: str) -> None:
    seen: set[str] = set()
    for predicate in predicates:
        if predicate.id is not None:
            if predicate.id in seen:
                raise ValueError(
                    f"predicate id {predicate.id!r} is used twice {where}; ids name predicates "
                    "in decisions, keep them unique"
                )
            seen.add(predicate.id)


class BaselineSpec(BaseModel):
    """Which runs the variant is compared with: the base prompt, or a named prompt hash."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base: bool = Field(
        default=False,
        description=(
            "Runs without an addon on the base prompt: their system_prompt_hash (or "
            "base_prompt_hash) is the base_prompt_hash the variant runs record."
        ),
    )
    prompt_hash: str | None = Field(
        default=None,
        description="Runs without an addon whose system_prompt_hash starts with this (hex).",
    )

    @field_validator("prompt_hash")
    @classmethod
    def _hex(cls, value: str | None) -> str | None:
        return None if value is None else normalize_hash_prefix(str(value))

    @model_validator(mode="before")
    @classmethod
    def _short_forms(cls, value: Any) -> Any:
        if value == "base":
            return {"base": True}
        if isinstance(value, str):
            raise ValueError(f"expected 'base' or {{prompt_hash: HEX}}, found {value!r}")
        return value

    @model_validator(mode="after")
    def _one(self) -> BaselineSpec:
        if self.base == (self.prompt_hash is not None):
            raise ValueError("give exactly one of 'base' or 'prompt_hash'")
        return self

    def describe(self) -> str:
        if self.prompt_hash:
            return f"runs without an addon on prompt {short_hash(self.prompt_hash)}"
        return "runs without an addon on the base prompt"


class VariantSpec(Record, CrossChecked):
    """A prompt variant to accept or reject (a YAML file, `agentledger variant`)."""

    name: str = Field(pattern=NAME, description="The variant's name (letters, digits, . _ -).")
    description: str = Field(default="", description="What the addon asks of the agent, and why.")
    addon: str = Field(min_length=1, description="The addon text file, relative to the spec file.")
    suite: str | None = Field(
        default=None,
        description="Scenario suite directory (relative to the spec) for `variant run`.",
    )
    scenarios: list[str] = Field(min_length=1, description="Scenario ids the variant is tested on.")
    models: list[str] = Field(min_length=1, description="Models that must run it.")
    repeats: int = Field(default=1, ge=1, le=1000, description="Runs per model and scenario.")
    baseline: BaselineSpec = Field(
        default_factory=lambda: BaselineSpec(base=True),
        description="'base' (default) or {prompt_hash: HEX}.",
    )
    predicates: list[Predicate] = Field(
        default_factory=list, description="Predicates every run of every scenario must pass."
    )
    scenario_predicates: dict[str, list[Predicate]] = Field(
        default_factory=dict, description="Scenario id -> predicates only its runs must pass."
    )
    acceptance: AcceptanceRule = Field(
        description="all_models, {at_least: {k, of}} or {statistical: {alpha, min_repeats}}."
    )
    judges: list[str] | None = Field(
        default=None,
        description=(
            "Judges `variant run` scores unjudged runs with, as on the command line (rules, "
            "llm:PROVIDER/MODEL) [default: rules, when a predicate reads a rules judge]."
        ),
    )

    @field_validator("judges")
    @classmethod
    def _judge_specs(cls, value: list[str] | None) -> list[str] | None:
        from agentledger.judges.factory import parse_judge_spec

        for name in value or ():
            try:
                parse_judge_spec(name)
            except InputError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("scenarios", "models")
    @classmethod
    def _unique_names(cls, value: list[str]) -> list[str]:
        for item in value:
            if not isinstance(item, str) or not item.strip() or re.search(r"[\x00-\x1f]", item):
                raise ValueError(f"{item!r} is not a name")
        if len(set(value)) != len(value):
            raise ValueError("names must be unique")
        return value

    @field_validator("acceptance", mode="before")
    @classmethod
    def _rule_forms(cls, value: Any) -> Any:
        return normalize_rule(value)

    @field_validator("predicates")
    @classmethod
    def _predicate_ids(cls, value: list[PredicateForm]) -> list[PredicateForm]:
        _unique_ids(value, "in predicates")
        return value

    def cross_check(self) -> tuple[tuple[str | int, ...], str] | None:
        """The first problem across fields, with the field it is about; None when consistent."""
        for scenario, own in self.scenario_predicates.items():
            try:
                _unique_ids(
                    [*self.predicates, *own], f"for {scenario} (predicates + scenario_predicates)"
                )
            except ValueError as exc:
                return ("scenario_predicates", scenario), str(exc)
        for scenario in self.scenario_predicates:
            if scenario not in self.scenarios:
                return ("scenario_predicates", scenario), (
                    f"scenario_predicates names {scenario}, not in scenarios "
                    f"({', '.join(self.scenarios)})"
                )
        for index, scenario in enumerate(self.scenarios):
            if not self.predicates and not self.scenario_predicates.get(scenario):
                return ("scenarios", index), (
                    f"no predicates for {scenario}: give 'predicates' (for every scenario) "
                    "or 'scenario_predicates'"
                )
        rule = self.acceptance
        if isinstance(rule, AtLeast) and rule.of != len(self.models):
            return ("acceptance", "at_least", "of"), (
                f"'of' is {rule.of} but the spec lists {len(self.models)} models"
            )
        if isinstance(rule, Statistical) and self.repeats < rule.min_repeats:
            return ("repeats",), (
                f"repeats ({self.repeats}) is below the statistical rule's min_repeats "
                f"({rule.min_repeats}): the test could never be run"
            )
        return None


@dataclass(frozen=True)
class LoadedVariant:
    """A checked variant spec, with its file, its addon, and its parsed predicates."""

    spec: VariantSpec
    path: Path
    text: str
    sha256: str
    addon_path: Path
    addon_text: str
    addon_hash: str
    predicates: dict[str, list[PredicateForm]]
    """Scenario id -> every predicate its runs must pass (common ones first)."""

    def suite_dir(self, override: Path | None = None) -> Path:
        """The scenario suite for `variant run`: --suite, else the spec's `suite`."""
        if override is not None:
            return override
        if self.spec.suite is None:
            raise RecordError(
                self.path, "no suite to run the scenarios from: add 'suite' or pass --suite",
                field="suite",
            )  # fmt: skip
        suite = self.path.parent / self.spec.suite
        if not suite.is_dir():
            raise RecordError(self.path, f"no such suite directory: {suite}", field="suite")
        return suite

    def judge_refs(self) -> list[str]:
        """The judges the score predicates read: judge ids or prefixes (``rules``, ``llm``)."""
        refs = {
            ref
            for predicates in self.predicates.values()
            for predicate in predicates
            if (ref := judge_ref(predicate))
        }
        return sorted(refs)


def load_variant_spec(path: Path) -> LoadedVariant:
    """Read and check a variant spec; RecordError naming the file and field otherwise."""
    spec = load_yaml_record(VariantSpec, path, what="variant spec", context=DEFER)
    text = read_text_file(path, what="variant spec")
    problem = spec.cross_check()
    if problem is not None:
        raise spec_error(path, text, *problem)
    addon_path = path.parent / spec.addon
    if addon_path.is_dir():
        raise spec_error(path, text, ("addon",), f"{addon_path} is a directory, not a text file")
    if not addon_path.is_file():
        raise spec_error(path, text, ("addon",), f"no such addon file: {addon_path}")
    # The runner appends the addon's UTF-8 text; the hash is over exactly those bytes.
    try:
        addon_text = read_text_file(addon_path, what="prompt addon")
    except RecordError as exc:
        raise spec_error(path, text, ("addon",), f"{addon_path}: {exc.problem}") from None
    predicates: dict[str, list[PredicateForm]] = {}
    for scenario in spec.scenarios:
        combined: list[PredicateForm] = [
            *spec.predicates,
            *spec.scenario_predicates.get(scenario, []),
        ]
        predicates[scenario] = combined
    return LoadedVariant(
        spec=spec,
        path=path,
        text=text,
        sha256=sha256_bytes(text.encode()),
        addon_path=addon_path,
        addon_text=addon_text,
        addon_hash=sha256_bytes(addon_text.encode()),
        predicates=predicates,
    )


# --- finding the runs -----------------------------------------------------------------------


def _same_hash(stored: str | None, wanted: str) -> bool:
    """Stored hashes may be short forms (backfilled runs): compare on the common prefix."""
    if not stored:
        return False
    return wanted.startswith(stored) or stored.startswith(wanted)


VARIANT_KINDS: tuple[str, ...] = ("agent", "variant")
"""The run kinds a variant gate counts: investigations, and the runs `variant run` made
(fixture executions and the runs a sentinel gate made are left out)."""


@dataclass
class Selection:
    """The stored runs a variant spec is about."""

    variant: list[IndexedRun] = field(default_factory=list)
    baseline: list[IndexedRun] = field(default_factory=list)
    base_hashes: list[str] = field(default_factory=list)
    """The base prompt hashes the baseline was matched on (for `baseline: base`)."""
    warnings: list[str] = field(default_factory=list)
    kinds: tuple[str, ...] = VARIANT_KINDS
    """The run kinds the gate counted."""


def select_runs(
    ledger: Ledger, loaded: LoadedVariant, *, base_hashes: Sequence[str] = ()
) -> Selection:
    """Variant runs (by addon hash) and baseline runs of the spec's scenarios and models.

    A stored run is a variant run when its `prompt_addon.hash` is the sha256 of the addon
    file. A backfilled run that records only the variant's name (no addon hash) is taken with a
    warning; a run of the same name whose addon hash differs ran other text and is left out,
    with a warning. `base_hashes` adds base prompt hashes known otherwise (the agent file's).
    """
    spec = loaded.spec
    candidates = ledger.runs(
        RunFilter(models=tuple(spec.models), scenarios=tuple(spec.scenarios), kinds=VARIANT_KINDS)
    )
    selection = Selection()
    other_text: list[str] = []
    by_name: list[str] = []
    plain: list[IndexedRun] = []
    unfinished = [run for run in candidates if is_unfinished(run)]
    if unfinished:
        candidates = [run for run in candidates if not is_unfinished(run)]
    for run in candidates:
        meta = run.metadata
        addon = meta.get("prompt_addon") or {}
        named = run.variant == spec.name or addon.get("name") == spec.name
        if addon.get("hash"):
            if _same_hash(addon["hash"], loaded.addon_hash):
                selection.variant.append(run)
            elif named:
                other_text.append(run.run_id)
        elif named:
            selection.variant.append(run)
            by_name.append(run.run_id)
        elif run.variant is None:
            plain.append(run)
    note = unfinished_note(
        run
        for run in unfinished
        if run.variant == spec.name
        or (run.metadata.get("prompt_addon") or {}).get("name") == spec.name
        or run.variant is None
    )
    if note is not None:
        selection.warnings.append(note + " (`variant run` makes new ones)")
    if by_name:
        selection.warnings.append(
            f"{len(by_name)} run(s) record the variant name {spec.name!r} but no addon hash; "
            f"taken as variant runs by name: {', '.join(by_name)}"
        )
    if other_text:
        selection.warnings.append(
            f"{len(other_text)} run(s) named {spec.name!r} ran another addon text (their addon "
            f"hash is not {short_hash(loaded.addon_hash)}); left out: {', '.join(other_text)}"
        )
    prompts = sorted({short_hash(r.system_prompt_hash) for r in selection.variant})
    if len(prompts) > 1:
        selection.warnings.append(
            f"the variant runs ran on {len(prompts)} system prompts ({', '.join(prompts)}): "
            "the same addon on different base prompts, so not one experiment"
        )
    baseline = spec.baseline
    if baseline.prompt_hash is not None:
        wanted = baseline.prompt_hash
        selection.baseline = [r for r in plain if _same_hash(r.system_prompt_hash, wanted)]
        return selection
    hashes = list(
        dict.fromkeys(
            [
                *base_hashes,
                *(
                    str(r.metadata["base_prompt_hash"])
                    for r in selection.variant
                    if r.metadata.get("base_prompt_hash")
                ),
            ]
        )
    )
    selection.base_hashes = hashes
    if not hashes:
        if selection.variant:
            selection.warnings.append(
                "the variant runs do not record their base prompt hash: no baseline runs; "
                "name the baseline with 'baseline: {prompt_hash: HEX}'"
            )
        return selection
    selection.baseline = [
        r
        for r in plain
        if any(
            _same_hash(r.system_prompt_hash, h) or _same_hash(r.metadata.get("base_prompt_hash"), h)
            for h in hashes
        )
    ]
    return selection


# --- evaluating -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunEvaluation:
    """One run and what every predicate of its scenario said about it."""

    run_id: str
    role: Role
    model: str
    scenario: str
    system_prompt_hash: str | None
    results: list[PredicateResult]
    """In the spec's order."""
    judge_ids: list[str]
    """The judges whose scores the score predicates read."""
    log_end: Evidence | None = None
    """The last command of the shell log: where the investigation stopped."""

    @property
    def status(self) -> RunStatus:
        """failed when a predicate failed, unknown when one could not be evaluated."""
        if any(r.passed is False for r in self.results):
            return "failed"
        if any(r.passed is None for r in self.results):
            return "unknown"
        return "passed"


@dataclass
class VariantEvaluation:
    """Every run of a variant spec evaluated, the cells tallied, and the rule applied."""

    loaded: LoadedVariant
    runs: list[RunEvaluation]
    variant_cells: dict[tuple[str, str], CellTally]
    baseline_cells: dict[tuple[str, str], CellTally]
    outcome: RuleOutcome
    selection: Selection

    def of(self, role: Role) -> list[RunEvaluation]:
        """The evaluated runs of one side."""
        return [run for run in self.runs if run.role == role]

    def missing(self, role: Role = "variant") -> list[str]:
        """Cells with fewer runs than the spec asks for, in words."""
        cells = self.variant_cells if role == "variant" else self.baseline_cells
        return [
            f"{c.model} on {c.scenario}: {c.runs} of {c.expected} {role} run(s)"
            for c in cells.values()
            if c.runs < c.expected
        ]


def _log_end(view: RunView) -> Evidence | None:
    if not view.events:
        return None
    from agentledger.gates.predicates.forms import log_evidence

    # quoted as every shell line is: on one line, cut at 300 characters with "..."
    return log_evidence(view.events[-1:])[0]


def _evaluate_run(
    ledger: Ledger, run: IndexedRun, role: Role, predicates: list[PredicateForm]
) -> RunEvaluation:
    view = load_run_view(ledger, run.run_id)
    results = [evaluate(predicate, view) for predicate in predicates]
    judge_ids = [str(r.detail["judge_id"]) for r in results if r.detail.get("judge_id")]
    return RunEvaluation(
        run_id=run.run_id,
        role=role,
        model=run.model,
        scenario=run.scenario,
        system_prompt_hash=run.system_prompt_hash,
        results=results,
        judge_ids=list(dict.fromkeys(judge_ids)),
        log_end=_log_end(view),
    )


def _cells(
    loaded: LoadedVariant, runs: Sequence[RunEvaluation]
) -> dict[tuple[str, str], CellTally]:
    spec = loaded.spec
    cells = {
        (model, scenario): CellTally(model, scenario, spec.repeats)
        for model in spec.models
        for scenario in spec.scenarios
    }
    for run in runs:
        cells[(run.model, run.scenario)].add(run.status)
    return cells


def _sides(selection: Selection) -> list[tuple[Role, list[IndexedRun]]]:
    return [("variant", selection.variant), ("baseline", selection.baseline)]


def evaluate_variant(
    ledger: Ledger, loaded: LoadedVariant, *, base_hashes: Sequence[str] = ()
) -> VariantEvaluation:
    """Evaluate every stored run of the spec (variant and baseline) and apply its rule."""
    selection = select_runs(ledger, loaded, base_hashes=base_hashes)
    runs = [
        _evaluate_run(ledger, run, role, loaded.predicates[run.scenario])
        for role, group in _sides(selection)
        for run in sorted(group, key=lambda r: (r.started_at or "", r.run_id))
    ]
    variant_cells = _cells(loaded, [r for r in runs if r.role == "variant"])
    baseline_cells = _cells(loaded, [r for r in runs if r.role == "baseline"])
    outcome = apply_rule(loaded.spec.acceptance, loaded.spec.models, variant_cells, baseline_cells)
    return VariantEvaluation(
        loaded=loaded,
        runs=runs,
        variant_cells=variant_cells,
        baseline_cells=baseline_cells,
        outcome=outcome,
        selection=selection,
    )
