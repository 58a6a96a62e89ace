"""The viewer as one Starlette app: `create_app(ledger)` and what every page shares.

Each page is a module of `agentledger.viewer.pages` with its `routes`; templates live in
``viewer/templates`` (Jinja2, autoescaped: every agent text is escaped where it is shown) and
the CSS and JavaScript in ``viewer/static``, served by the app itself (no CDN, no inline
script). The app reads the ledger through the library only and writes nothing but labels
(`agentledger.labels.LabelStore`).

Pages are read and rendered in a worker thread (`in_worker`), one page at a time, so the
ledger's one SQLite connection is never used by two threads at once and the event loop keeps
answering static files meanwhile; a long trace is read a part at a time (`viewer.paged`), so
no page holds the interpreter for long.
"""

from __future__ import annotations

import functools
import gc
import secrets
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from agentledger.errors import (
    AgentLedgerError,
    InputError,
    IntegrityError,
    RecordError,
    RecordNotFoundError,
    RunNotFoundError,
    TamperedError,
)
from agentledger.identity import short_hash
from agentledger.store.index import IndexedRun
from agentledger.store.ledger import Ledger
from agentledger.viewer.security import (
    CSRF_FIELD,
    LOOPBACK_HOSTS,
    ViewerGuard,
    csrf_token,
    session_of,
)

__all__ = ["STATIC_DIR", "Viewer", "create_app", "in_worker", "settle_for_serving", "viewer_of"]

STATIC_DIR = Path(__file__).parent / "static"


def _when(value: Any) -> str:
    """A stored UTC time as ``2026-03-12 10:15`` (minutes are enough in a list)."""
    text = str(value or "")
    return text[:16].replace("T", " ") if text else "-"


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("agentledger.viewer", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["short_hash"] = short_hash
    env.filters["short_judge"] = short_judge
    env.filters["when"] = _when
    return env


def short_judge(judge_id: str) -> str:
    """A judge id short enough for a column and still telling two judges of one kind apart:
    ``rules-4668cb5b16c9`` -> ``rules-4668cb``."""
    kind, _, digest = judge_id.rpartition("-")
    return f"{kind}-{digest[:6]}" if kind else judge_id[:12]


class Viewer:
    """What every page reads: the ledger, the templates, and this server's CSRF secret."""

    def __init__(self, ledger: Ledger, *, labeller: str | None = None) -> None:
        self.ledger = ledger
        self.labeller = labeller
        """Who labels, as the labelling form first says (the person can change it)."""
        self.secret = secrets.token_bytes(32)
        self.env = _environment()
        self.lock = threading.Lock()
        """Held while a page reads the ledger and renders (`in_worker`)."""

    def one_at_a_time(self, work: Callable[[Request], Response], request: Request) -> Response:
        """`work(request)` under `lock`."""
        with self.lock:
            return work(request)

    def run(self, run_id: str, name: str = "run") -> IndexedRun:
        """The indexed run of an id from the URL: checked as a name first (BadParam), then
        looked up by exact id, or by a prefix of one as the CLI takes it (RunNotFoundError:
        404, naming the runs an ambiguous prefix matches)."""
        from agentledger.viewer.params import run_id_param

        checked = run_id_param(run_id, name)
        found = self.ledger.index.get(checked)
        if found is None:
            matches = self.ledger.index.ids_with_prefix(checked, limit=6)
            if len(matches) == 1:
                return self.run(matches[0], name)
            if matches:
                shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
                raise RunNotFoundError(f"{checked!r} matches several runs: {shown}")
            if self.ledger.storage.has_run(checked):
                raise RunNotFoundError(
                    f"run {checked} is sealed but not indexed yet: index it with `agentledger gc`"
                )
            raise RunNotFoundError(f"no run {checked!r} in {self.ledger.root}")
        return found

    def csrf(self, request: Request) -> str:
        """The CSRF value this request's forms carry."""
        return csrf_token(self.secret, session_of(request.scope))

    def check_csrf(self, request: Request, given: str | None) -> None:
        """Refuse (403) a form whose CSRF value is not this session's."""
        expected = self.csrf(request).encode()
        if not given or not secrets.compare_digest(given.encode(), expected):
            raise HTTPException(
                403,
                "the form's CSRF token is missing or stale: reload the page and send it again",
            )

    def render(
        self,
        request: Request,
        template: str,
        context: Mapping[str, Any],
        *,
        status: int = 200,
    ) -> HTMLResponse:
        """`template` filled with `context` and what every page needs (the CSRF value, the
        page's own address)."""
        page = self.env.get_template(template).render(
            request=request,
            csrf_field=CSRF_FIELD,
            csrf=self.csrf(request),
            ledger_root=str(self.ledger.root),
            **context,
        )
        return HTMLResponse(page, status_code=status)


def in_worker(handler: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint doing `handler`'s work in a worker thread, so that the event loop keeps
    answering other requests (static files, small pages) while a heavy page is read and
    rendered. Pages take turns (`Viewer.lock`): the ledger and its index are not made for use
    from several threads at once, and the work is CPU-bound under the GIL anyway."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        return await run_in_threadpool(viewer_of(request).one_at_a_time, handler, request)

    return endpoint


def viewer_of(request: Request) -> Viewer:
    """The Viewer of the app serving `request`."""
    viewer = request.app.state.viewer
    assert isinstance(viewer, Viewer)
    return viewer


def _error_page(request: Request, status: int, title: str, message: str) -> Response:
    viewer = viewer_of(request)
    return viewer.render(request, "error.html", {"title": title, "message": message}, status=status)


async def _input_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, RunNotFoundError | RecordNotFoundError):
        return _error_page(request, 404, "Not found", str(exc))
    if isinstance(exc, RecordError):
        # A stored record that cannot be read is the ledger's fault, not the request's.
        return _error_page(
            request,
            500,
            "Unreadable record",
            f"{exc} (`agentledger verify` checks every record of the ledger)",
        )
    return _error_page(request, 400, "Bad request", str(exc))


async def _integrity_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, TamperedError):
        # Nothing of the run is shown as if sealed: the page is this warning alone.
        return _error_page(
            request, 409, "Tampered evidence", f"{exc} (run `agentledger verify` to see all)"
        )
    return _error_page(
        request, 500, "Integrity failure", f"{exc} (run `agentledger verify` to see all)"
    )


async def _other_error(request: Request, exc: Exception) -> Response:
    return _error_page(request, 500, "Error", str(exc))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    titles = {403: "Refused", 404: "Not found", 405: "Method not allowed"}
    return _error_page(
        request, exc.status_code, titles.get(exc.status_code, "Error"), str(exc.detail)
    )


async def _home(request: Request) -> Response:
    return RedirectResponse("/runs", status_code=303)


def _routes() -> list[BaseRoute]:
    from agentledger.viewer.pages import compare, findings, labelling, review, run, runs

    return [
        Route("/", _home),
        *runs.routes,
        *run.routes,
        *compare.routes,
        *review.routes,
        *labelling.routes,
        *findings.routes,
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]


def create_app(
    ledger: Ledger,
    *,
    token: str | None = None,
    allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS,
    labeller: str | None = None,
    close_ledger: bool = False,
) -> ViewerGuard:
    """The viewer of `ledger` as an ASGI app.

    `token`: every request must carry it (see `agentledger.viewer.security`); required by
    `agentledger serve` off loopback. `allowed_hosts`: the Host names answered (loopback names
    by default; None for any, when a token guards the app). `labeller`: the name of the
    person who started the server (the labelling form does not start with it: every visitor
    gives their own, which their browser remembers). `close_ledger`: close the ledger when the
    app shuts down.
    """

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if close_ledger:
                ledger.close()

    app = Starlette(
        routes=_routes(),
        exception_handlers={
            InputError: _input_error,
            IntegrityError: _integrity_error,
            AgentLedgerError: _other_error,
            HTTPException: _http_error,
        },
        lifespan=lifespan,
    )
    app.state.viewer = Viewer(ledger, labeller=labeller)
    return ViewerGuard(app, token=token, allowed_hosts=allowed_hosts)


def settle_for_serving(app: ViewerGuard) -> None:
    """Ready a viewer for a long-lived server: every template compiled now, then everything
    start-up made (modules, compiled templates, the ledger's handles) moved out of the garbage
    collector's sight (`gc.freeze`).

    A page makes many short-lived objects, so full collections come every few requests; each
    walked the ~100,000 objects of start-up again, adding 30-40 ms to whichever request it fell
    in (bench/viewer.py's p95 was three times its median on the run and compare pages).
    """
    starlette = app.app
    assert isinstance(starlette, Starlette)
    viewer = starlette.state.viewer
    assert isinstance(viewer, Viewer)
    for name in viewer.env.list_templates(extensions=["html"]):
        viewer.env.get_template(name)
    gc.collect()
    gc.freeze()
