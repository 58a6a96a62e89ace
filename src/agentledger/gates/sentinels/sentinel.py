"""Sentinel suites: a fixed set of scenarios with pass criteria that gives a go/no-go signal.

Before a model migration (and on a monthly cadence), the suite's scenarios are run by the
candidate model and checked against the same criteria on the baseline model's runs. The outcome
follows a decision tree, in this order:

1. a pass criterion that held on the baseline and fails on the candidate: **NO-GO** (a regression);
2. a criterion that fails on both (a *known gap*) and is marked blocking: **NO-GO**;
3. a known gap that does not block, a criterion that cannot be evaluated, a candidate run whose
   judgement is Uncertain, skipped or missing, or a scenario without runs: **REVIEW**;
4. otherwise **GO**.

Which runs count: per scenario, the newest `repeats` runs of each side (candidate: the runs the
candidate filter selects; baseline: the baseline model on the baseline prompt hash, or without
one on the candidate runs' system prompts, leaving out the candidate's runs, so the baseline
model can be checked against its own earlier runs).
A criterion *holds* on a side when it passes on every one of those runs, *fails* when it fails
on at least one, and is *unknown* when it cannot be evaluated on some run and fails on none.

The library never prints; the CLI (`agentledger sentinel`) renders what this module returns.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
)

from agentledger.errors import InputError, RecordError
from agentledger.gates.specerrors import CrossChecked
from agentledger.identity import normalize_hash_prefix, sha256_bytes
from agentledger.judges.base import Evidence
from agentledger.records import Record
from agentledger.records.specfiles import load_yaml_record, read_text_file
from agentledger.store.index import IndexedRun, RunFilter

if TYPE_CHECKING:
    from agentledger.gates.decisions import Decision, DecisionItem, ModelRecord
    from agentledger.gates.predicates.evaluate import PredicateForm, PredicateResult, RunView
    from agentledger.store.ledger import Ledger

__all__ = [
    "BRANCHES",
    "CriterionCheck",
    "JudgementIssue",
    "LoadedSentinel",
    "RunCheck",
    "SentinelCriterion",
    "SentinelResult",
    "SentinelSpec",
    "SideResult",
    "TreeStep",
    "candidate_filter",
    "check_sentinel",
    "evaluate_sentinel",
    "judge_verdicts",
    "latest_runs",
    "load_sentinel",
    "to_decision",
]

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
_CRITERION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,49}$")

Outcome = Literal["GO", "NO-GO", "REVIEW"]
Status = Literal["held", "failed", "unknown", "no runs"]
Branch = Literal["ok", "improved", "regression", "known-gap", "known-gap-blocking", "review"]

BRANCHES: dict[str, str] = {
    "ok": "holds on the candidate",
    "improved": "failed on the baseline, holds on the candidate",
    "regression": "held on the baseline, fails on the candidate: NO-GO",
    "known-gap": "fails on both (a known gap, not blocking): REVIEW",
    "known-gap-blocking": "fails on both (a known gap the spec makes blocking): NO-GO",
    "review": "cannot be decided from the runs: REVIEW",
}
"""What each branch of the decision tree means, for criteria landing on it."""


# --------------------------------------------------------------------------------------------
# The spec file


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BaselineSpec(_Strict):
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


class ScenarioSpec(_Strict):
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


# --------------------------------------------------------------------------------------------
# Selecting runs

_FILTER_KEYS = "model, prompt-hash (or prompt), since, until, variant, served, commit, tag:K=V"


def candidate_filter(text: str, *, default_prompt_hash: str | None = None) -> RunFilter:
    """The runs of the candidate: ``model=X`` plus optional ``prompt-hash=``, ``since=``,
    ``until=``, ``variant=``, ``served=``, ``commit=``, ``tag:K=V`` (or ``tag=K=V``), joined
    by commas. Exactly one model. Without a prompt hash, the baseline's is used."""
    from agentledger.analysis.compare import parse_group
    from agentledger.records.filters import parse_moment

    since: datetime | None = None
    until: datetime | None = None
    rest: list[str] = []
    has_prompt = False
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or not key or not value.strip():
            raise InputError(
                f"--candidate {text!r}: {part!r} is not KEY=VALUE (keys: {_FILTER_KEYS})"
            )
        if key in ("since", "until"):
            try:
                moment = parse_moment(value)
            except ValueError as exc:
                raise InputError(f"--candidate {text!r}: {key}: {exc}") from None
            if key == "since":
                since = moment
            else:
                until = moment
        elif key in ("prompt-hash", "prompt_hash", "prompt"):
            has_prompt = True
            rest.append(f"prompt={value.strip()}")
        elif key == "tag":
            tag_key, tag_sep, tag_value = value.partition("=")
            if not tag_sep or not tag_key.strip():
                raise InputError(f"--candidate {text!r}: tag needs tag=KEY=VALUE or tag:KEY=VALUE")
            rest.append(f"tag:{tag_key.strip()}={tag_value}")
        elif key == "scenario":
            raise InputError(
                f"--candidate {text!r}: the scenarios are the suite's; filter on model, prompt, "
                "dates, tags"
            )
        elif key in ("model", "variant", "served", "commit") or key.startswith("tag:"):
            rest.append(f"{key}={value.strip()}")
        else:
            raise InputError(f"--candidate {text!r}: unknown key {key!r} (keys: {_FILTER_KEYS})")
    run_filter = parse_group(",".join(rest)) if rest else RunFilter()
    if len(run_filter.models) != 1:
        raise InputError(
            f"--candidate {text!r}: name exactly one candidate model (model=X); "
            f"keys: {_FILTER_KEYS}"
        )
    if not has_prompt and default_prompt_hash is not None:
        run_filter = replace(run_filter, prompt_hash=default_prompt_hash)
    return replace(run_filter, since=since, until=until)


def baseline_filter(loaded: LoadedSentinel) -> RunFilter:
    """The baseline runs: the baseline model on the baseline prompt hash, if one is given."""
    baseline = loaded.spec.baseline
    return RunFilter(models=(baseline.model,), prompt_hash=baseline.prompt_hash)


def latest_runs(
    ledger: Ledger,
    run_filter: RunFilter,
    scenarios: Sequence[str],
    repeats: int,
    *,
    exclude: frozenset[str] = frozenset(),
    prompt_hashes: frozenset[str] | None = None,
) -> dict[str, list[IndexedRun]]:
    """Per scenario, the newest `repeats` runs matching the filter (newest first), leaving out
    the run ids in `exclude` (and, with `prompt_hashes`, runs on any other system prompt)."""
    runs = ledger.runs(replace(run_filter, scenarios=tuple(scenarios), limit=None))
    chosen: dict[str, list[IndexedRun]] = {scenario: [] for scenario in scenarios}
    for run in runs:  # newest first
        if run.run_id in exclude:
            continue
        if prompt_hashes is not None and run.system_prompt_hash not in prompt_hashes:
            continue
        if len(chosen[run.scenario]) < repeats:
            chosen[run.scenario].append(run)
    return chosen


# --------------------------------------------------------------------------------------------
# Evaluating


class RunCheck(_Strict):
    """One criterion on one run."""

    run_id: str
    model: str
    model_served: str | None = None
    started_at: str | None = None
    passed: bool | None
    predicate: str
    reason: str
    evidence: list[Evidence] = Field(default_factory=list)
    detail: dict[str, Any] = Field(default_factory=dict)


class SideResult(_Strict):
    """One criterion over one side's runs (baseline or candidate)."""

    status: Status
    runs: list[RunCheck] = Field(default_factory=list)


class CriterionCheck(_Strict):
    """One criterion of one scenario on both sides, and the branch of the tree it landed on."""

    scenario: str
    criterion: str
    description: str
    predicate: str
    blocking: bool
    baseline: SideResult
    candidate: SideResult
    branch: Branch
    note: str

    def failing_evidence(self) -> list[tuple[str, Evidence]]:
        """(run id, evidence) of the candidate runs on which the criterion failed."""
        return [(run.run_id, ev) for run in self.candidate.runs if run.passed is False
                for ev in run.evidence]  # fmt: skip


class JudgementIssue(_Strict):
    """A candidate run whose judgement does not allow a decision: Uncertain, skipped, missing."""

    scenario: str
    run_id: str
    judge: str
    problem: str


class TreeStep(_Strict):
    """One question of the decision tree, its answer, and the criteria or runs behind it."""

    question: str
    answer: bool
    if_yes: Outcome | None
    fired: bool
    items: list[str] = Field(default_factory=list)


class SentinelResult(_Strict):
    """The outcome of one sentinel check, with everything needed to explain it."""

    suite: str
    outcome: Outcome
    candidate_model: str
    candidate_filter: str
    baseline_model: str
    baseline_prompt_hash: str | None
    served_models: list[str]
    baseline_served_models: list[str]
    candidate_prompt_hashes: list[str]
    baseline_prompt_hashes: list[str]
    candidate_runs: dict[str, list[str]]
    baseline_runs: dict[str, list[str]]
    latest_run_at: str | None
    judge_ids: list[str]
    checks: list[CriterionCheck]
    judgements: list[JudgementIssue]
    missing: list[str]
    tree: list[TreeStep]
    reasoning: list[str]

    def tree_path(self) -> list[str]:
        """The tree as walked: each question with its answer, the one that decided marked."""
        path = []
        for step in self.tree:
            mark = " <- decides" if step.fired else ""
            path.append(f"{step.question} {'yes' if step.answer else 'no'}{mark}")
        path.append(f"outcome: {self.outcome}")
        return path

    def failing_criteria(self) -> list[str]:
        """'scenario/criterion' of every criterion that fails on the candidate (one that has no
        candidate runs or cannot be evaluated is not failing: it is in `missing` or REVIEW)."""
        return [
            f"{c.scenario}/{c.criterion}" for c in self.checks if c.candidate.status == "failed"
        ]


EvaluateFn = Callable[["PredicateForm", "RunView"], "PredicateResult"]


_SHELL_FORMS = ("ran", "never_ran", "never_tried", "order", "ran_before_conclusion", "no_denied")


def _with_log_end(result: PredicateResult, view: RunView) -> PredicateResult:
    """A failed shell criterion with no line of its own ("no command matching X ran") gets the
    log's last command as evidence: where the investigation stopped (as variant decisions do)."""
    shell = result.predicate.split(":", 1)[0] in _SHELL_FORMS
    if result.passed is not False or result.evidence or not shell or not view.events:
        return result
    from agentledger.gates.predicates.forms import log_evidence as _log_evidence

    last = view.events[-1]
    return result.model_copy(
        update={
            "reason": f"{result.reason}; the shell log ends at line {last.line}",
            "evidence": _log_evidence([last]),
            "detail": {**result.detail, "log_end_line": last.line},
        }
    )


def _side(
    criterion: SentinelCriterion,
    runs: list[IndexedRun],
    views: dict[str, RunView],
    evaluate: EvaluateFn,
) -> SideResult:
    if not runs:
        return SideResult(status="no runs")
    checks = []
    for run in runs:
        result = evaluate(criterion.predicate, views[run.run_id])
        result = _with_log_end(result, views[run.run_id])
        checks.append(
            RunCheck(
                run_id=run.run_id,
                model=run.model,
                model_served=run.model_served,
                started_at=run.started_at,
                passed=result.passed,
                predicate=result.predicate,
                reason=result.reason,
                evidence=list(result.evidence),
                detail=dict(result.detail),
            )
        )
    if any(check.passed is False for check in checks):
        status: Status = "failed"
    elif any(check.passed is None for check in checks):
        status = "unknown"
    else:
        status = "held"
    return SideResult(status=status, runs=checks)


def _branch(criterion: SentinelCriterion, base: Status, cand: Status) -> tuple[Branch, str]:
    if cand == "no runs":
        return "review", "no candidate runs of this scenario"
    if cand == "unknown":
        return "review", "cannot be evaluated on a candidate run"
    if cand == "held":
        if base == "failed":
            return "improved", "failed on the baseline, holds on the candidate"
        if base == "held":
            return "ok", "holds on the baseline and the candidate"
        return "ok", f"holds on the candidate (baseline: {base})"
    # the candidate fails
    if base == "held":
        return "regression", "held on the baseline, fails on the candidate"
    if base == "failed":
        if criterion.blocking:
            return "known-gap-blocking", "fails on both: a known gap, and the spec makes it block"
        return "known-gap", "fails on both: a known gap (not blocking)"
    if base == "no runs":
        return "review", "fails on the candidate; no baseline runs to compare with"
    return "review", "fails on the candidate; cannot be evaluated on the baseline"


def judge_verdicts(
    ledger: Ledger, run_id: str, judges: Sequence[str]
) -> dict[str, tuple[str | None, str | None, str | None]]:
    """Per judge reference: (verdict, skipped reason, judge id) of the newest matching score,
    or (None, None, None) when the run has none. A reference is a kind (`rules`, `llm`), a kind with
    its model (`llm:P/M`), or a judge id (prefix)."""
    from agentledger.judges.factory import parse_judge_spec
    from agentledger.judges.scores import run_scores

    scores = sorted(run_scores(ledger, run_id), key=lambda s: s.created_at)
    found: dict[str, tuple[str | None, str | None, str | None]] = {}
    for ref in judges:
        match = None
        for score in scores:
            if score.judge_id.startswith(ref):
                match = score
                continue
            try:
                spec = parse_judge_spec(ref)
            except InputError:
                continue
            if score.judge.kind != spec.kind:
                continue
            if spec.model is not None and score.judge.model != spec.model:
                continue
            match = score
        found[ref] = (
            (match.verdict, match.skipped_reason, match.judge_id) if match else (None, None, None)
        )
    return found


def _judgement_issues(
    ledger: Ledger,
    scenario: str,
    runs: list[IndexedRun],
    judges: Sequence[str],
    judge_ids: set[str],
) -> list[JudgementIssue]:
    issues = []
    for run in runs:
        for judge, (verdict, skipped, judge_id) in judge_verdicts(
            ledger, run.run_id, judges
        ).items():
            if judge_id is not None:
                judge_ids.add(judge_id)
            if verdict is None:
                problem = "not judged"
            elif verdict == "skipped":
                problem = f"judgement skipped ({skipped or 'no reason given'})"
            elif verdict == "Uncertain":
                problem = "verdict Uncertain"
            else:
                continue
            issues.append(
                JudgementIssue(scenario=scenario, run_id=run.run_id, judge=judge, problem=problem)
            )
    return issues


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def evaluate_sentinel(
    ledger: Ledger,
    loaded: LoadedSentinel,
    candidate: dict[str, list[IndexedRun]],
    baseline: dict[str, list[IndexedRun]],
    *,
    candidate_model: str,
    candidate_filter_text: str,
    evaluate: EvaluateFn | None = None,
) -> SentinelResult:
    """Evaluate every criterion on both sides' runs and walk the decision tree."""
    from agentledger.gates.predicates.evaluate import evaluate as evaluate_predicate
    from agentledger.gates.predicates.evaluate import load_run_view

    evaluate = evaluate or evaluate_predicate
    spec = loaded.spec
    views: dict[str, RunView] = {}
    for runs in (*candidate.values(), *baseline.values()):
        for run in runs:
            if run.run_id not in views:
                views[run.run_id] = load_run_view(ledger, run.run_id)
    checks: list[CriterionCheck] = []
    judgements: list[JudgementIssue] = []
    missing: list[str] = []
    judge_ids: set[str] = set()
    for scenario in spec.scenarios:
        cand_runs, base_runs = candidate.get(scenario.id, []), baseline.get(scenario.id, [])
        if len(cand_runs) < spec.repeats:
            missing.append(
                f"{scenario.id}: {_plural(len(cand_runs), 'candidate run')} "
                f"({candidate_model}), {spec.repeats} wanted"
            )
        if len(base_runs) < spec.repeats:
            missing.append(
                f"{scenario.id}: {_plural(len(base_runs), 'baseline run')} "
                f"({spec.baseline.model}), {spec.repeats} wanted"
            )
        judgements.extend(_judgement_issues(ledger, scenario.id, cand_runs, spec.judges, judge_ids))
        for criterion in loaded.criteria[scenario.id]:
            base_side = _side(criterion, base_runs, views, evaluate)
            cand_side = _side(criterion, cand_runs, views, evaluate)
            branch, note = _branch(criterion, base_side.status, cand_side.status)
            predicate_text = next(
                (r.predicate for r in (*cand_side.runs, *base_side.runs)),
                _predicate_text(criterion),
            )
            checks.append(
                CriterionCheck(
                    scenario=scenario.id,
                    criterion=criterion.id,
                    description=criterion.description,
                    predicate=predicate_text,
                    blocking=criterion.blocking,
                    baseline=base_side,
                    candidate=cand_side,
                    branch=branch,
                    note=note,
                )
            )
    all_cand = [run for runs in candidate.values() for run in runs]
    all_base = [run for runs in baseline.values() for run in runs]
    starts = [run.started_at for run in all_cand if run.started_at]
    tree, outcome = _walk_tree(checks, judgements, missing)
    result = SentinelResult(
        suite=spec.name,
        outcome=outcome,
        candidate_model=candidate_model,
        candidate_filter=candidate_filter_text,
        baseline_model=spec.baseline.model,
        baseline_prompt_hash=spec.baseline.prompt_hash,
        served_models=sorted({_served(run) for run in all_cand}),
        baseline_served_models=sorted({_served(run) for run in all_base}),
        candidate_prompt_hashes=sorted({run.system_prompt_hash or "-" for run in all_cand}),
        baseline_prompt_hashes=sorted({run.system_prompt_hash or "-" for run in all_base}),
        candidate_runs={s: [r.run_id for r in runs] for s, runs in candidate.items()},
        baseline_runs={s: [r.run_id for r in runs] for s, runs in baseline.items()},
        latest_run_at=max(starts) if starts else None,
        judge_ids=sorted(
            judge_ids
            | {
                str(run.detail["judge_id"])
                for check in checks
                for run in (*check.candidate.runs, *check.baseline.runs)
                if run.detail.get("judge_id")
            }
        ),
        checks=checks,
        judgements=judgements,
        missing=missing,
        tree=tree,
        reasoning=[],
    )
    return result.model_copy(update={"reasoning": _reasoning(result)})


NOT_REPORTED = "(not reported)"
"""How a run whose provider did not say what it served shows in `served_models`."""


def _served(run: IndexedRun) -> str:
    """The model the provider said it served, with the system fingerprint when there is one."""
    fingerprint = run.metadata.get("system_fingerprint")
    served = run.model_served or NOT_REPORTED
    return f"{served} (fingerprint {fingerprint})" if fingerprint else served


def _predicate_text(criterion: SentinelCriterion) -> str:
    return criterion.predicate.text()


def _walk_tree(
    checks: list[CriterionCheck], judgements: list[JudgementIssue], missing: list[str]
) -> tuple[list[TreeStep], Outcome]:
    def named(branch: str) -> list[str]:
        return [
            f"{c.scenario} {c.criterion} ({c.description or c.predicate}): {c.note}"
            for c in checks
            if c.branch == branch
        ]

    regressions = named("regression")
    blocking = named("known-gap-blocking")
    gaps = named("known-gap")
    undecided = named("review")
    review_items = (
        gaps
        + undecided
        + [f"{j.scenario} run {j.run_id}: {j.judge} {j.problem}" for j in judgements]
        + [f"missing runs: {m}" for m in missing]
    )
    steps: list[tuple[str, list[str], Outcome]] = [
        (
            "1. Did a criterion hold on the baseline and fail on the candidate?",
            regressions,
            "NO-GO",
        ),
        ("2. Does a criterion fail on both, and does the spec make that block?", blocking, "NO-GO"),
        (
            "3. A known gap, a criterion that cannot be evaluated, an Uncertain, skipped or "
            "missing judgement, or missing runs?",
            review_items,
            "REVIEW",
        ),
    ]
    tree: list[TreeStep] = []
    outcome: Outcome | None = None
    for question, items, if_yes in steps:
        answer = bool(items)
        fired = answer and outcome is None
        if fired:
            outcome = if_yes
        tree.append(
            TreeStep(question=question, answer=answer, if_yes=if_yes, fired=fired, items=items)
        )
    held = [f"{c.scenario} {c.criterion}" for c in checks if c.branch in ("ok", "improved")]
    tree.append(
        TreeStep(
            question="4. Otherwise: every criterion holds on the candidate.",
            answer=outcome is None,
            if_yes="GO",
            fired=outcome is None,
            items=held if outcome is None else [],
        )
    )
    return tree, outcome or "GO"


def _reasoning(result: SentinelResult) -> list[str]:
    held = sum(1 for c in result.checks if c.candidate.status == "held")
    sentences = [
        f"Sentinel suite {result.suite}: {result.candidate_model} (runs selected by "
        f"{result.candidate_filter}) against the baseline {result.baseline_model}, over "
        f"{_plural(len(result.candidate_runs), 'scenario')} and "
        f"{len(result.checks)} criteria; {held} hold on the candidate.",
    ]
    for check in result.checks:
        if check.branch in ("regression", "known-gap-blocking"):
            for run in check.candidate.runs:
                if run.passed is not False:
                    continue
                lines = [
                    f"{ev.file}:{ev.line} {ev.quote}" if ev.line else f"{ev.file}: {ev.quote}"
                    for ev in run.evidence
                ]
                evidence = f" Evidence: {'; '.join(lines)}." if lines else ""
                sentences.append(
                    f"{check.scenario} {check.criterion} ({check.description or check.predicate})"
                    f" {check.note}; on run {run.run_id}: {run.reason}.{evidence}"
                )
    decisive = next((step for step in result.tree if step.fired), None)
    if result.outcome == "GO":
        sentences.append("Every pass criterion holds on the candidate: GO.")
    elif decisive is not None:
        sentences.append(
            f"Decided by step {decisive.question.split('.', 1)[0]} of the tree: {result.outcome}."
        )
    if result.outcome == "REVIEW" and decisive is not None:
        sentences.extend(f"Needs review: {item}." for item in decisive.items)
    return sentences


# --------------------------------------------------------------------------------------------
# Checking stored runs, and the decision record


def check_sentinel(
    ledger: Ledger,
    loaded: LoadedSentinel,
    candidate_text: str,
    *,
    candidate_runs: dict[str, list[IndexedRun]] | None = None,
) -> SentinelResult:
    """Check the candidate runs selected by `candidate_text` against the baseline runs."""
    spec = loaded.spec
    scenarios = [s.id for s in spec.scenarios]
    run_filter = candidate_filter(candidate_text, default_prompt_hash=spec.baseline.prompt_hash)
    if candidate_runs is None:
        candidate_runs = latest_runs(ledger, run_filter, scenarios, spec.repeats)
    taken = frozenset(run.run_id for runs in candidate_runs.values() for run in runs)
    # A migration check compares models, not prompts: without a baseline prompt hash in the
    # spec, the baseline runs are those on the system prompt(s) the candidate's runs used.
    prompts: frozenset[str] | None = None
    if spec.baseline.prompt_hash is None:
        prompts = (
            frozenset(
                run.system_prompt_hash
                for runs in candidate_runs.values()
                for run in runs
                if run.system_prompt_hash
            )
            or None
        )
    baseline_runs = latest_runs(
        ledger, baseline_filter(loaded), scenarios, spec.repeats, exclude=taken,
        prompt_hashes=prompts,
    )  # fmt: skip
    return evaluate_sentinel(
        ledger,
        loaded,
        candidate_runs,
        baseline_runs,
        candidate_model=run_filter.models[0],
        candidate_filter_text=candidate_text,
    )


RULE = (
    "Sentinel decision tree, first yes decides: (1) a pass criterion that held on the baseline "
    "and fails on the candidate is NO-GO; (2) a criterion failing on both (a known gap) that the "
    "spec makes blocking is NO-GO; (3) a non-blocking known gap, a criterion that cannot be "
    "evaluated, an Uncertain, skipped or missing judgement of a candidate run, or missing runs "
    "is REVIEW; (4) otherwise GO. A criterion holds on a side when it passes on every counted run."
)
"""The rule a sentinel decision applies, in words (recorded on every decision)."""


def _item(
    result: SentinelResult, scenario: str, role: Literal["candidate", "baseline"]
) -> DecisionItem:
    from agentledger.gates.decisions import DecisionItem
    from agentledger.gates.predicates.evaluate import PredicateResult

    checks = [c for c in result.checks if c.scenario == scenario]
    sides = [c.candidate if role == "candidate" else c.baseline for c in checks]
    runs = result.candidate_runs if role == "candidate" else result.baseline_runs
    model = result.candidate_model if role == "candidate" else result.baseline_model
    statuses = [side.status for side in sides]
    passed: bool | None
    if "failed" in statuses:
        passed = False
    elif any(status in ("unknown", "no runs") for status in statuses):
        passed = None
    else:
        passed = True
    failing = [
        c.criterion for c, side in zip(checks, sides, strict=True) if side.status == "failed"
    ]
    unknown = [
        c.criterion for c, side in zip(checks, sides, strict=True)
        if side.status in ("unknown", "no runs")
    ]  # fmt: skip
    held = len(checks) - len(failing) - len(unknown)
    summary = f"{held} of {len(checks)} criteria hold"
    if failing:
        summary += f"; fails: {', '.join(failing)}"
    if unknown:
        summary += f"; cannot tell: {', '.join(unknown)}"
    predicate_results = [
        PredicateResult(
            predicate=run.predicate,
            id=check.criterion,
            run_id=run.run_id,
            passed=run.passed,
            reason=run.reason,
            evidence=run.evidence,
            detail={**run.detail, "run_id": run.run_id, "branch": check.branch},
        )
        for check, side in zip(checks, sides, strict=True)
        for run in side.runs
    ]
    return DecisionItem(
        model=model,
        scenario=scenario,
        role=role,
        run_ids=runs.get(scenario, []),
        passed=passed,
        summary=summary,
        results=predicate_results,
    )


def _model_record(result: SentinelResult, role: Literal["candidate", "baseline"]) -> ModelRecord:
    from agentledger.gates.decisions import ModelRecord

    sides = [(c, c.candidate if role == "candidate" else c.baseline) for c in result.checks]
    failing = [f"{c.scenario} {c.criterion}" for c, side in sides if side.status == "failed"]
    unknown = [
        f"{c.scenario} {c.criterion}" for c, side in sides if side.status in ("unknown", "no runs")
    ]
    if failing:
        return ModelRecord(status="failed", summary=f"fails {', '.join(failing)}")
    if unknown:
        return ModelRecord(status="unknown", summary=f"cannot tell {', '.join(unknown)}")
    return ModelRecord(
        status="passed", summary=f"every criterion holds ({len(result.checks)} criteria)"
    )


def to_decision(
    result: SentinelResult, loaded: LoadedSentinel, *, supersedes: str | None = None
) -> Decision:
    """The decision record (kind "sentinel", subject = the suite's name) of a check."""
    from agentledger.gates.decisions import Decision, SpecRef, Tested, new_decision_id

    prompt_hashes: dict[str, str] = {}
    for index, digest in enumerate(h for h in result.candidate_prompt_hashes if h != "-"):
        prompt_hashes["candidate" if index == 0 else f"candidate-{index + 1}"] = digest
    for index, digest in enumerate(h for h in result.baseline_prompt_hashes if h != "-"):
        prompt_hashes["baseline" if index == 0 else f"baseline-{index + 1}"] = digest
    scenarios = [scenario.id for scenario in loaded.spec.scenarios]
    run_ids = sorted(
        {run for runs in (*result.candidate_runs.values(), *result.baseline_runs.values())
         for run in runs}
    )  # fmt: skip
    baseline_words = result.baseline_model
    if result.baseline_prompt_hash:
        baseline_words += f" on system prompt {result.baseline_prompt_hash[7:15]}"
    items = [
        _item(result, scenario, role)
        for scenario in scenarios
        for role in ("candidate", "baseline")
    ]  # fmt: skip
    models = {result.candidate_model: _model_record(result, "candidate")}
    if result.baseline_model != result.candidate_model:
        models[result.baseline_model] = _model_record(result, "baseline")
    return Decision(
        decision_id=new_decision_id("sentinel", loaded.spec.name),
        kind="sentinel",
        subject=loaded.spec.name,
        outcome=result.outcome,
        rule=RULE,
        reasoning=result.reasoning,
        spec=SpecRef(path=str(loaded.path), sha256=loaded.sha256, text=loaded.text),
        tested=Tested(
            prompt_hashes=prompt_hashes,
            baseline=baseline_words,
            candidate=f"{result.candidate_model} ({result.candidate_filter})",
            models=list(dict.fromkeys([result.candidate_model, result.baseline_model])),
            scenarios=scenarios,
            repeats=loaded.spec.repeats,
            run_ids=run_ids,
            judge_ids=result.judge_ids,
        ),
        results=items,
        models=models,
        supersedes=supersedes,
        extra={
            "candidate_model": result.candidate_model,
            "candidate_filter": result.candidate_filter,
            "served_models": result.served_models,
            "baseline": result.baseline_model,
            "baseline_served_models": result.baseline_served_models,
            "candidate_prompt_hashes": result.candidate_prompt_hashes,
            "latest_run_at": result.latest_run_at,
            "failing_criteria": result.failing_criteria(),
            "branches": {f"{c.scenario}/{c.criterion}": c.branch for c in result.checks},
            "tree_path": result.tree_path(),
            "tree": [step.model_dump(mode="json") for step in result.tree],
            "judgements": [j.model_dump(mode="json") for j in result.judgements],
            "missing": result.missing,
        },
    )


# --------------------------------------------------------------------------------------------
# History: every past check of a suite, and outcome changes under the same model id

SILENT_UPDATE = "consistent with a silent backend update (cannot be attributed with certainty)"
"""The words for an outcome change that nothing recorded explains."""


@dataclass(frozen=True)
class HistoryEntry:
    """One past sentinel check, as the history shows it."""

    decision_id: str
    decided_at: str
    runs_at: str | None
    """When the newest candidate run started: the moment the behaviour was observed."""
    candidate_model: str
    outcome: str
    failing: tuple[str, ...]
    served: tuple[str, ...]
    prompt_hashes: tuple[str, ...]
    spec_sha256: str | None
    missing: tuple[str, ...] = ()
    """Scenarios that had fewer runs than the spec's repeats (either side), in words."""
    candidate_runs: tuple[str, ...] = ()
    """The candidate run ids the check counted."""
    baseline_runs: tuple[str, ...] = ()
    """The baseline run ids the check counted."""


@dataclass(frozen=True)
class HistoryFlag:
    """A change between two consecutive checks of the same candidate model."""

    candidate_model: str
    before: HistoryEntry
    after: HistoryEntry
    attributable: bool
    message: str


def history_entry(decision: Decision) -> HistoryEntry:
    """What the history needs of a sentinel decision (tolerant of records missing extras)."""
    extra = decision.extra or {}

    def strings(key: str) -> tuple[str, ...]:
        value = extra.get(key) or ()
        return tuple(str(item) for item in value) if isinstance(value, list | tuple) else ()

    spec = decision.spec
    spec_sha = spec.get("sha256") if isinstance(spec, dict) else getattr(spec, "sha256", None)
    return HistoryEntry(
        decision_id=decision.decision_id,
        decided_at=decision.created_at.isoformat(),
        runs_at=extra.get("latest_run_at"),
        candidate_model=str(extra.get("candidate_model") or "?"),
        outcome=decision.outcome,
        failing=_failing(decision) if decision.results else strings("failing_criteria"),
        served=strings("served_models"),
        prompt_hashes=strings("candidate_prompt_hashes"),
        spec_sha256=spec_sha,
        missing=strings("missing"),
        candidate_runs=_run_ids(decision, "candidate"),
        baseline_runs=_run_ids(decision, "baseline"),
    )


def _run_ids(decision: Decision, role: str) -> tuple[str, ...]:
    return tuple(sorted({run for item in decision.results if item.role == role
                         for run in item.run_ids}))  # fmt: skip


def _failing(decision: Decision) -> tuple[str, ...]:
    """'scenario/criterion' of the criteria that failed on a candidate run, read from the
    record's results (records written before `failing_criteria` meant exactly that also listed
    criteria that had no candidate runs)."""
    failing = [
        f"{item.scenario}/{result.id}"
        for item in decision.results
        if item.role == "candidate"
        for result in item.results
        if result.passed is False and result.id
    ]
    return tuple(dict.fromkeys(failing))


def _known(served: tuple[str, ...]) -> set[str]:
    return {item for item in served if item != NOT_REPORTED}


def _flag(model: str, before: HistoryEntry, after: HistoryEntry) -> HistoryFlag | None:
    served_changed = bool(_known(before.served) or _known(after.served)) and set(
        before.served
    ) != set(after.served)
    changed = before.outcome != after.outcome
    if not changed and not served_changed:
        return None
    what = f"{before.outcome} -> {after.outcome}" if changed else f"still {after.outcome}"
    served_words = f"served {', '.join(before.served) or '?'} -> {', '.join(after.served) or '?'}"
    if served_changed:
        return HistoryFlag(
            model, before, after, True,
            f"{what}: the served model changed ({served_words}); the change is attributable to "
            "what the provider served",
        )  # fmt: skip
    if set(before.prompt_hashes) != set(after.prompt_hashes):
        return HistoryFlag(
            model, before, after, True,
            f"{what}: the system prompt changed ({', '.join(h[7:15] for h in before.prompt_hashes)}"
            f" -> {', '.join(h[7:15] for h in after.prompt_hashes)}); attributable to the prompt",
        )  # fmt: skip
    if before.spec_sha256 and after.spec_sha256 and before.spec_sha256 != after.spec_sha256:
        return HistoryFlag(
            model, before, after, True,
            f"{what}: the sentinel spec changed between the checks; compare the criteria first",
        )  # fmt: skip
    if changed and (before.missing or after.missing):
        lacking = "; ".join(
            f"{label} check: {', '.join(entry.missing)}"
            for label, entry in (("earlier", before), ("later", after))
            if entry.missing
        )
        return HistoryFlag(
            model, before, after, True,
            f"{what}: runs were missing ({lacking}); attributable to the runs counted, not a "
            "change of behaviour observed on the same cases",
        )  # fmt: skip
    if changed and before.candidate_runs and before.candidate_runs == after.candidate_runs:
        return HistoryFlag(
            model, before, after, True,
            f"{what}: the same candidate runs were checked again; attributable to the check "
            "(its baseline runs or the judges' scores), not to the model",
        )  # fmt: skip
    served = ", ".join(after.served) or NOT_REPORTED
    baseline = (
        "; the baseline runs differ between the checks too: compare them"
        if before.baseline_runs and before.baseline_runs != after.baseline_runs
        else ""
    )
    return HistoryFlag(
        model, before, after, False,
        f"{what} while the requested model id stayed {model} (served: {served}), same prompt, "
        f"same spec: {SILENT_UPDATE}{baseline}",
    )  # fmt: skip


def sentinel_history(
    decisions: Sequence[Decision],
) -> tuple[dict[str, list[HistoryEntry]], list[HistoryFlag]]:
    """Past checks per candidate model, in the order the behaviour was observed (the newest
    candidate run, else the decision time), and the changes between consecutive checks."""
    groups: dict[str, list[HistoryEntry]] = defaultdict(list)
    for decision in decisions:
        entry = history_entry(decision)
        groups[entry.candidate_model].append(entry)
    flags: list[HistoryFlag] = []
    for model, entries in groups.items():
        entries.sort(key=lambda e: (e.runs_at or e.decided_at, e.decided_at))
        for before, after in pairwise(entries):
            flag = _flag(model, before, after)
            if flag is not None:
                flags.append(flag)
    return dict(sorted(groups.items())), flags
