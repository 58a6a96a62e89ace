"""Which runs and which scores a report rests on.

A `Selection` is the runs matching a `RunFilter`, each with at most one score: the newest one
(by `created_at`) among the judges `--judge` names (an id, a prefix of one, or a kind such as
``rules``). Without `--judge`, the judge is the one that scored the selected runs most
recently. Without `--kind`, the runs are agent runs only (investigations): fixture executions
and the runs gates make are findings of their own, and every report says how many it left
out. Reports ask the index's typed queries (`RunIndex`), so the aggregation happens in the
index and no score JSON is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentledger.errors import InputError
from agentledger.store.index import Dimension, RunFilter, RunIndex, VerdictCount, format_time

__all__ = [
    "DEFAULT_KINDS",
    "JudgeChoice",
    "ReportHead",
    "Selection",
    "describe_filter",
    "describe_kinds",
    "short_hash",
]

DEFAULT_KINDS: tuple[str, ...] = ("agent",)
"""The run kinds a report covers when --kind is not given: agent investigations."""


def short_hash(value: str | None) -> str:
    """The display form of a hash: its first 8 hex digits."""
    if not value:
        return "-"
    return value.removeprefix("sha256:")[:8]


def describe_filter(run_filter: RunFilter) -> dict[str, Any]:
    """The non-empty fields of a filter, JSON-ready (for the report's header)."""
    out: dict[str, Any] = {}
    for name in (
        "models",
        "scenarios",
        "prompt_hash",
        "variant",
        "model_served",
        "agent_commit",
        "since",
        "until",
        "tags",
        "backfilled",
        "kinds",
    ):
        value = getattr(run_filter, name)
        if value is None or value == ():
            continue
        if name in ("since", "until"):
            value = format_time(value)
        elif name == "tags":
            value = {key: tag for key, tag in value}
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return out


@dataclass(frozen=True)
class JudgeChoice:
    """The judge a report uses: what was asked, how it was chosen, the ids it covers."""

    asked: str | None
    how: str
    """``given`` (--judge) or ``most recent`` (the judge that scored the runs last)."""
    judge_ids: tuple[str, ...]
    kinds: tuple[str, ...] = ()

    def describe(self) -> str:
        ids = ", ".join(self.judge_ids) or "none"
        if not self.judge_ids and self.how != "given":
            return "no judge: none has scored these runs yet (`agentledger judge` scores them)"
        if self.how == "given":
            return f"judge {self.asked!r} ({ids})"
        return f"{ids} (the most recent judge of these runs; choose another with --judge)"

    def to_json(self) -> dict[str, Any]:
        return {"asked": self.asked, "how": self.how, "judge_ids": list(self.judge_ids)}


@dataclass
class ReportHead:
    """What every report states: its kind, the filter, the judge, how many runs it rests on."""

    kind: str
    filter: dict[str, Any]
    judge: JudgeChoice
    runs_selected: int
    runs_scored: int
    warnings: list[str] = field(default_factory=list)
    runs_not_applicable: int = 0
    """Of the runs scored, those the judge's pack does not apply to (no verdict)."""
    kinds: tuple[str, ...] = DEFAULT_KINDS
    """The run kinds the report covers."""
    kinds_by_default: bool = True
    """True when --kind was not given (the report covers DEFAULT_KINDS)."""
    left_out: dict[str, int] = field(default_factory=dict)
    """Runs the filter matches but whose kind the report does not cover, by kind."""
    judge_checks: list[str] = field(default_factory=list)
    """One line per judge of the report: checked against held-out human labels, and how well."""

    def describe_kinds(self) -> str:
        """Which kinds the report covers and what it left out, in words."""
        return describe_kinds(self.kinds, self.kinds_by_default, self.left_out)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "filter": self.filter,
            "judge": self.judge.to_json(),
            "runs_selected": self.runs_selected,
            "runs_scored": self.runs_scored,
            "runs_not_applicable": self.runs_not_applicable,
            "run_kinds": list(self.kinds),
            "run_kinds_by_default": self.kinds_by_default,
            "runs_left_out_by_kind": dict(sorted(self.left_out.items())),
            "warnings": list(self.warnings),
            "judge_checks": list(self.judge_checks),
        }


_NA = "not-applicable"


class Selection:
    """The runs a report covers and the one score of each it uses (see the module docstring).

    Queries are shaped for large indexes: one pass over the selected runs and their scores
    finds the judge; results shared by several reports (`verdict_cube`) are computed once.
    """

    def __init__(
        self,
        index: RunIndex,
        run_filter: RunFilter,
        judge: str | None = None,
        *,
        must_match: bool = True,
        choice: JudgeChoice | None = None,
    ) -> None:
        """`must_match`: a `judge` that scored none of the runs is an error (else: no scores).
        `choice`: reuse another selection's judge (compare's groups) instead of choosing."""
        self.index = index
        self.kinds_by_default = not run_filter.kinds
        self.kinds: tuple[str, ...] = run_filter.kinds or DEFAULT_KINDS
        every_kind = replace(
            run_filter, judge=None, verdicts=(), fired=(), limit=None, offset=0, kinds=()
        )
        self.by_kind = {str(kind): n for kind, n in index.count_by(every_kind, "kind").items()}
        """Runs the filter matches, by kind, whether the report covers the kind or not."""
        # When every matching run is of a covered kind, the kinds narrow nothing: the queries
        # go without them (the same runs, and the index's fastest plans).
        narrows = any(kind not in self.kinds for kind in self.by_kind)
        self.filter = replace(every_kind, kinds=self.kinds) if narrows else every_kind
        self._scored: int | None = None
        self._cube: list[tuple[str, str, bool | None, int]] | None = None
        self.judge = choice or self._choose_judge(judge, must_match)

    def _choose_judge(self, asked: str | None, must_match: bool) -> JudgeChoice:
        found = self.index.judges_of(self.filter)  # newest first
        if asked is None:
            matched = found[:1]
        else:
            prefix = asked.strip()
            matched = [tally for tally in found if tally.judge_id.startswith(prefix)]
            if not matched and must_match:
                known = ", ".join(sorted({tally.judge_id for tally in found}))
                raise InputError(
                    f"no score of the selected runs is by judge {asked!r}; judges that scored "
                    f"them: {known or 'none: run `agentledger judge`'}"
                )
        if len(matched) == 1:
            self._scored = matched[0].runs
        elif not matched:
            self._scored = 0
        return JudgeChoice(
            asked=asked,
            how="most recent" if asked is None else "given",
            judge_ids=tuple(tally.judge_id for tally in matched),
            kinds=tuple(sorted({tally.kind for tally in matched})),
        )

    def verdict_counts(
        self, by: Sequence[Dimension] = (), *, diagnosis: bool = True
    ) -> list[VerdictCount]:
        """The chosen scores' verdicts per group of `by` (see `RunIndex.verdict_counts`)."""
        return self.index.verdict_counts(self.filter, self.judge.judge_ids, by, diagnosis=diagnosis)

    def verdict_cube(self) -> list[tuple[str, str, bool | None, int]]:
        """(model, verdict, diagnosis, runs) over the chosen scores; computed once."""
        if self._cube is None:
            self._cube = [
                (str(count.keys[0]), count.verdict, count.diagnosis, count.runs)
                for count in self.verdict_counts(("model",))
            ]
        return self._cube

    def runs_by(self, dimension: Dimension) -> dict[str | None, int]:
        """How many selected runs (scored or not) per value of `dimension`."""
        return self.index.count_by(self.filter, dimension)

    def scored(self) -> int:
        """How many selected runs have a chosen score."""
        if self._scored is None:
            self._scored = sum(count for *_, count in self.verdict_cube())
        return self._scored

    def _verdicts(self, verdict: str) -> int:
        """How many scored runs have `verdict`."""
        return sum(runs for _model, found, _d, runs in self.verdict_cube() if found == verdict)

    def head(self, kind: str) -> ReportHead:
        """The header of a report on this selection, with the standing warnings."""
        selected = sum(n for kind, n in self.by_kind.items() if kind in self.kinds)
        scored = self.scored()
        left_out = {kind: n for kind, n in self.by_kind.items() if kind not in self.kinds}
        head = ReportHead(
            kind,
            describe_filter(
                replace(self.filter, kinds=() if self.kinds_by_default else self.kinds)
            ),
            self.judge,
            selected,
            scored,
            kinds=self.kinds,
            kinds_by_default=self.kinds_by_default,
            left_out=left_out,
            runs_not_applicable=self._verdicts(_NA),
        )
        if selected == 0:
            head.warnings.append("no run matches the filter")
        elif scored == 0:
            head.warnings.append("none of the selected runs is scored: run `agentledger judge`")
        elif scored == head.runs_not_applicable:
            head.warnings.append(
                "the judge's pack applies to none of the selected runs (every score is not "
                "applicable): no figure of this report rests on a judged run; `agentledger "
                "judge` says why"
            )
        elif scored == head.runs_not_applicable + self._verdicts("skipped"):
            head.warnings.append(
                "the judge gave no verdict on any selected run (each skipped or not "
                "applicable): no share of Safe, Uncertain or Unsafe rests on a run; `agentledger "
                "judge` says why, and the skipped runs wait in `agentledger review`"
            )
        elif scored < selected:
            head.warnings.append(
                f"{selected - scored} of {selected} selected runs have no score by this judge "
                "and are left out"
            )
        return head


def describe_kinds(kinds: Sequence[str], by_default: bool, left_out: Mapping[str, int]) -> str:
    """Which run kinds a finding covers and what it left out, in words (every report says it)."""
    how = "the default; choose with --kind" if by_default else "--kind"
    words = f"{' and '.join(kinds)} runs only ({how})"
    if left_out:
        apart = ", ".join(f"{n} {kind}" for kind, n in sorted(left_out.items()))
        words += f"; left out: {apart} run(s)"
    return words
