"""`serve`: the local web viewer over a ledger (agentledger.viewer, the ``serve`` extra)."""

from __future__ import annotations

import errno
import importlib.util
import re
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from agentledger.cli.common import announce_journal, handle_errors, ledger_location, ledger_option

if TYPE_CHECKING:
    from starlette.types import ASGIApp

__all__ = ["serve_command"]

_NEEDS = ("starlette", "uvicorn", "multipart")
TOKEN_ENV = "AGENTLEDGER_VIEWER_TOKEN"  # noqa: S105 (the name of a variable, no secret)
_TOKEN = re.compile(r"^[A-Za-z0-9._~-]{16,256}$")
INSTALL_HINT = "pip install 'agentledger[serve]'"


def _missing() -> list[str]:
    return [name for name in _NEEDS if importlib.util.find_spec(name) is None]


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port` for the server to listen on; a port in use or one that
    may not be bound is bad input (exit 2), named with what to do, before anything starts."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise click.BadParameter(
            f"{host} is not an address of this machine ({exc.strerror})", param_hint="--host"
        ) from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise click.BadParameter(
                f"port {port} on {host} is in use (another viewer, or another program, listens "
                f"there): choose another with --port, e.g. --port {port + 1 if port < 65535 else 0}"
                " (--port 0 takes any free one)",
                param_hint="--port",
            ) from None
        if exc.errno == errno.EACCES:
            raise click.BadParameter(
                f"port {port} on {host} may not be bound by this user (ports below 1024 need "
                "privileges): choose another with --port",
                param_hint="--port",
            ) from None
        raise click.BadParameter(
            f"cannot bind {host}:{port}: {exc.strerror}", param_hint="--host/--port"
        ) from None
    return sock


def _run(app: ASGIApp, sock: socket.socket, host: str, port: int) -> None:
    """Serve `app` on the bound `sock` until stopped (Ctrl-C)."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", server_header=False)
    uvicorn.Server(config).run(sockets=[sock])


@click.command("serve")
@ledger_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; anything but loopback needs a token (given or generated).",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in a browser.")
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    show_envvar=True,
    help="Every request must carry this token (16 or more of A-Z a-z 0-9 . _ ~ -) [default off "
    "loopback: one generated and printed once]. Better from the environment or --token-file: "
    "on the command line, other users of the machine see it in `ps`.",
)
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read the token from this file (its first line).",
)
@click.pass_context
@handle_errors
def serve_command(
    ctx: click.Context,
    ledger_path: Path | None,
    host: str,
    port: int,
    open_browser: bool,
    token: str | None,
    token_file: Path | None,
) -> None:
    """Browse the ledger's runs and evidence in a browser; compare runs; label them.

    Binds to loopback by default. On any other address every request must carry a token:
    the one given with --token, or one generated now and printed once as a link. The viewer
    writes nothing but the labels people enter.
    """
    missing = _missing()
    if missing:
        raise click.UsageError(
            f"the viewer needs {', '.join(missing)}, which are not installed: {INSTALL_HINT}"
        )
    on_command_line = ctx.get_parameter_source("token") is ParameterSource.COMMANDLINE
    if token_file is not None:
        if token is not None:
            raise click.UsageError(f"give the token once: --token-file or {TOKEN_ENV}/--token")
        lines = token_file.read_text(encoding="utf-8", errors="replace").splitlines()
        token = lines[0].strip() if lines else ""
    if token is not None and not _TOKEN.match(token):
        raise click.BadParameter(
            "a token is 16 to 256 of the characters A-Z a-z 0-9 . _ ~ - (it travels in a link "
            "and a cookie)",
            param_hint="--token",
        )
    from agentledger.labels.entry import default_labeller
    from agentledger.store import Ledger
    from agentledger.viewer import create_app
    from agentledger.viewer.app import settle_for_serving
    from agentledger.viewer.security import is_loopback, new_token

    loopback = is_loopback(host)
    generated = token is None and not loopback
    if generated:
        token = new_token()
    sock = _listen(host, port)  # a busy port is told before the ledger is opened
    port = sock.getsockname()[1]  # --port 0: the one the system chose
    try:
        ledger = Ledger.open(ledger_location(ledger_path))
    except BaseException:
        sock.close()
        raise
    announce_journal(ledger)
    app = create_app(
        ledger,
        token=token,
        allowed_hosts=None if not loopback else ("127.0.0.1", "localhost", "::1", host),
        labeller=default_labeller(),
        close_ledger=True,
    )
    shown_host = f"[{host}]" if ":" in host else host
    address = f"http://{shown_host}:{port}/"
    link = f"{address}?token={token}" if token else address
    click.echo(f"agentledger viewer of {ledger.root} at {address}", err=True)
    if token:
        shown = "generated token (shown once)" if generated else "token"
        click.echo(f"  {shown}: open {link}", err=True)
    if on_command_line:
        click.echo(
            f"Warning: a --token given on the command line is visible to every user of this "
            f"machine (`ps`); give it with {TOKEN_ENV} or --token-file",
            err=True,
        )
    if open_browser:
        import webbrowser

        webbrowser.open(link)
    settle_for_serving(app)
    _run(app, sock, host, port)
