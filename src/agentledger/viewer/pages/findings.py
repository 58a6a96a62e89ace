"""The findings page: the route slot of the viewer's findings (report sections, charts,
drift, the diagnosis gap, judge validity, decisions and sentinel history).

Until those sections land here, the page lists the ledger's decisions, newest first: the
gates' verdicts, each with what it tested.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentledger.gates.decisions import DecisionStore
from agentledger.viewer.app import viewer_of
from agentledger.viewer.params import check_params

__all__ = ["routes"]


async def findings_page(request: Request) -> Response:
    check_params(request.query_params, ())
    viewer = viewer_of(request)
    decisions = list(reversed(DecisionStore(viewer.ledger).list()))
    return viewer.render(request, "findings.html", {"decisions": decisions})


routes = [Route("/findings", findings_page, name="findings")]
