"""Compare two runs side by side: identity, each judge's verdict and firings, and their steps
aligned (`agentledger.viewer.diff`), with the steps a firing cites marked on both sides.

Of a long run, the first `COMPARE_STEPS` steps are aligned (the run pages show the rest): the
alignment grows faster than the steps, and two runs of 100,000 steps took 14 s of the
interpreter, with every other request of the server waiting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentledger.records.scores import Score
from agentledger.store.evidence import RunEvidence, load_run_evidence
from agentledger.store.index import IndexedRun
from agentledger.viewer.app import Viewer, in_worker, viewer_of
from agentledger.viewer.diff import AlignedRow, Step, align_steps, prompt_diff, signature
from agentledger.viewer.evidence import ROWS_PER_PART, Cite, EvidenceView, evidence_view
from agentledger.viewer.params import BadParam, check_params, one

__all__ = ["COMPARE_STEPS", "IDENTITY_FIELDS", "Side", "routes"]

COMPARE_STEPS = 4 * ROWS_PER_PART
"""Steps (or shell log commands) of each run aligned at most."""

IDENTITY_FIELDS: tuple[tuple[str, str], ...] = (
    ("scenario", "scenario"),
    ("kind", "kind"),
    ("model", "model"),
    ("model_served", "model served"),
    ("provider", "provider"),
    ("system_prompt_hash", "system prompt"),
    ("variant", "variant"),
    ("started_at", "started"),
)


@dataclass
class Side:
    """One of the two runs: its index row, metadata, scores and steps."""

    run: IndexedRun
    metadata: dict[str, Any]
    scores: list[Score]
    steps: list[Step]
    view: EvidenceView
    evidence: RunEvidence

    @property
    def total(self) -> int:
        """Its steps (or shell log commands) in all, aligned or not."""
        rows = self.view.steps if self.view.steps else self.view.shell
        return len(rows) if rows is not None else 0


def _cited(cites: list[Cite]) -> tuple[str, ...]:
    words = {True: "fired", False: "did not fire", None: "cannot assess"}
    return tuple(dict.fromkeys(f"{c.criterion} {words[c.fired]}" for c in cites))


def _steps(view: EvidenceView) -> list[Step]:
    if view.steps:
        steps = []
        for position, row in enumerate(view.shown_steps):
            step = row.step
            if step.kind == "command" and step.command is not None:
                text = f"$ {step.command}"
                if step.gate is not None:
                    text += f"  [gate: {step.gate.decision}]"
            else:
                text = step.content.text if step.content else (step.tool or "")
            steps.append(
                Step(
                    step.index,
                    step.kind,
                    text,
                    row.anchor,
                    signature(step.kind, step.command or text),
                    _cited(row.cites),
                    position // ROWS_PER_PART + 1,
                )
            )
        return steps
    return [
        Step(
            position,
            "command",
            f"$ {row.command.command}"
            + (f"  [gate: {row.command.event.decision}]" if row.command.event.decision else ""),
            row.anchor,
            signature("command", row.command.command),
            _cited(row.cites),
            position // ROWS_PER_PART + 1,
        )
        for position, row in enumerate(view.shown_shell)
    ]


def _side(viewer: Viewer, run: IndexedRun) -> Side:
    evidence = load_run_evidence(viewer.ledger, run.run_id)
    texts = viewer.ledger.index.scores_of(run.run_id)
    scores = [Score.model_validate_json(text) for text in texts]
    view = evidence_view(evidence, scores, rows=COMPARE_STEPS)
    metadata = evidence.metadata.model_dump(mode="json")
    return Side(run, metadata, scores, _steps(view), view, evidence)


def _judges(a: Side, b: Side) -> list[dict[str, Any]]:
    """One row per judge that scored either run: its verdict and firings on each."""
    rows = []
    ids = list(dict.fromkeys([s.judge_id for s in a.scores] + [s.judge_id for s in b.scores]))
    for judge_id in ids:
        left = next((s for s in reversed(a.scores) if s.judge_id == judge_id), None)
        right = next((s for s in reversed(b.scores) if s.judge_id == judge_id), None)
        rows.append({"judge_id": judge_id, "a": left, "b": right})
    return rows


def _pair(request: Request) -> tuple[str, str]:
    params = request.query_params
    runs = [value.strip() for value in params.getlist("run") if value.strip()]
    a, b = one(params, "a"), one(params, "b")
    if runs and (a or b):
        raise BadParam("run", "give a and b, or two run parameters, not both")
    if runs:
        if len(runs) != 2:
            raise BadParam("run", f"check exactly two runs to compare ({len(runs)} given)")
        return runs[0], runs[1]
    if not a or not b:
        raise BadParam("a" if not a else "b", "compare needs two runs: ?a=RUN_ID&b=RUN_ID")
    return a, b


@in_worker
def compare_page(request: Request) -> Response:
    check_params(request.query_params, ("a", "b", "run"))
    viewer = viewer_of(request)
    a_id, b_id = _pair(request)
    a = _side(viewer, viewer.run(a_id, "a"))
    b = _side(viewer, viewer.run(b_id, "b"))
    rows: list[AlignedRow] = align_steps(a.steps, b.steps)
    identity = []
    for key, label in IDENTITY_FIELDS:
        left, right = a.metadata.get(key), b.metadata.get(key)
        identity.append((label, left, right, left != right))
    same_prompt = a.run.system_prompt_hash == b.run.system_prompt_hash
    context = {
        "a": a,
        "b": b,
        "identity": identity,
        "judges": _judges(a, b),
        "rows": rows,
        "same_steps": sum(1 for row in rows if row.kind == "same"),
        "prompt_diff": None if same_prompt else prompt_diff(a.evidence, b.evidence),
        "compare_steps": COMPARE_STEPS,
    }
    return viewer.render(request, "compare.html", context)


routes = [Route("/compare", compare_page, name="compare")]
