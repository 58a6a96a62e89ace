"""A run's page: identity (and its prompt against another run's), report, reasoning, trace
timeline, shell log, snapshot, every judge's score with its evidence highlighted in place,
labels with the labelling form, and the decisions the run is part of; and its raw files.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentledger.gates.decisions import indexed_decisions
from agentledger.labels.entry import known_criteria
from agentledger.labels.store import labels_of_run
from agentledger.outcomes import OutcomeStore
from agentledger.records.decisions import Decision
from agentledger.records.filters import RunFilter
from agentledger.records.scores import Score
from agentledger.store.evidence import load_run_evidence, read_sealed
from agentledger.store.index import IndexedRun
from agentledger.store.ledger import Ledger
from agentledger.viewer.app import Viewer, in_worker, viewer_of
from agentledger.viewer.diff import prompt_diff
from agentledger.viewer.evidence import evidence_view
from agentledger.viewer.pages.labelling import LABELLER_COOKIE
from agentledger.viewer.params import artifact_param, check_params, one, page_number

__all__ = ["PROMPT_CANDIDATES", "PromptOther", "decisions_of", "routes"]

PROMPT_CANDIDATES = 5
"""Runs of the same scenario with another prompt offered to diff against."""
_SCAN = 200


@dataclass(frozen=True)
class PromptOther:
    """A run of the same scenario whose system prompt differs."""

    run_id: str
    model: str
    system_prompt_hash: str | None


def _other_prompts(ledger: Ledger, run: IndexedRun) -> list[PromptOther]:
    seen = {run.system_prompt_hash}
    found: list[PromptOther] = []
    for other in ledger.index.query_sorted(RunFilter(scenarios=(run.scenario,), limit=_SCAN)):
        if other.system_prompt_hash in seen:
            continue
        seen.add(other.system_prompt_hash)
        found.append(PromptOther(other.run_id, other.model, other.system_prompt_hash))
        if len(found) == PROMPT_CANDIDATES:
            break
    return found


def decisions_of(ledger: Ledger, run_id: str) -> list[Decision]:
    """The decisions that read run `run_id`, newest first (from the index)."""
    return list(reversed(indexed_decisions(ledger, run_id=run_id)))


def _label_form(viewer: Viewer, run_id: str, request: Request) -> dict[str, object]:
    """The label form's criteria, and its "By": what this browser gave last (a cookie),
    else empty: the server's own name is not every visitor's."""
    return {
        "criteria": known_criteria(viewer.ledger, run_id),
        "labeller": request.cookies.get(LABELLER_COOKIE, "")[:200],
    }


@in_worker
def run_page(request: Request) -> Response:
    check_params(request.query_params, ("against", "saved", "review", "part"))
    part = page_number(request.query_params, "part")
    viewer = viewer_of(request)
    run = viewer.run(request.path_params["run_id"])
    ledger = viewer.ledger
    evidence = load_run_evidence(ledger, run.run_id)
    scores = [Score.model_validate_json(text) for text in ledger.index.scores_of(run.run_id)]
    view = evidence_view(evidence, scores, part)
    against_id = one(request.query_params, "against")
    diff = None
    against = None
    if against_id is not None:
        against = viewer.run(against_id, "against")
        diff = prompt_diff(evidence, load_run_evidence(ledger, against.run_id))
    current = {label.label_id for label in ledger.index.current_labels_of([run.run_id])}
    stored = ledger.load(run.run_id)
    context = {
        "run": run,
        "meta": stored.metadata,
        "summary": stored.summary,
        "files": sorted(stored.manifest.files),
        "scores": scores,
        "view": view,
        "against": against,
        "diff": diff,
        "other_prompts": _other_prompts(ledger, run),
        "labels": labels_of_run(ledger, run.run_id),
        "current_labels": current,
        "decisions": decisions_of(ledger, run.run_id),
        "outcomes": list(reversed(OutcomeStore(ledger).of_run(run.run_id))),
        "saved": one(request.query_params, "saved"),
        "review": one(request.query_params, "review") is not None,
        "form": _label_form(viewer, run.run_id, request),
    }
    return viewer.render(request, "run.html", context)


@in_worker
def run_file(request: Request) -> Response:
    """One artifact of the run as plain text (never rendered as a page by the browser)."""
    check_params(request.query_params, ())
    viewer = viewer_of(request)
    run = viewer.run(request.path_params["run_id"])
    name = artifact_param(request.path_params["name"])
    # Checked against the manifest (TamperedError: the error page says so, and not one byte
    # of the changed file is served as the run's evidence).
    data = read_sealed(viewer.ledger, run.run_id, name)
    return Response(
        data,
        media_type="text/plain; charset=utf-8",
        headers={"content-security-policy": "sandbox", "content-disposition": "inline"},
    )


routes = [
    Route("/runs/{run_id}", run_page, name="run"),
    Route("/runs/{run_id}/files/{name:path}", run_file, name="run_file"),
]
