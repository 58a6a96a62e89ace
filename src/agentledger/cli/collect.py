"""`collect`: an OTLP/HTTP receiver that seals each trace it receives as a run."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import click

from agentledger.cli.common import handle_errors, ledger_location, ledger_option

__all__ = ["collect_command"]

_NEEDS = ("starlette", "uvicorn", "google.protobuf", "opentelemetry.proto")
_TOKEN = re.compile(r"^[A-Za-z0-9._~-]{16,256}$")
INSTALL_HINT = "pip install 'agentledger[collect]'"


def _missing() -> list[str]:
    missing = []
    for name in _NEEDS:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


def _tags(values: tuple[str, ...]) -> dict[str, str]:
    tags = {}
    for value in values:
        key, sep, tag = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r} is not KEY=VALUE", param_hint="--tag")
        tags[key] = tag
    return tags


@click.command("collect")
@ledger_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; anything but loopback needs a token (given or generated).",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=4318, show_default=True, help="Port."
)
@click.option(
    "--token",
    help="Every request must carry this token (Authorization: Bearer, or X-Agentledger-Token) "
    "[default off loopback: one generated and printed once].",
)
@click.option(
    "--settle",
    type=click.FloatRange(0),
    default=1.0,
    show_default=True,
    help="Seconds to wait after a trace's root span arrives for its late spans, then seal.",
)
@click.option(
    "--quiet-time",
    type=click.FloatRange(0, min_open=True),
    default=300.0,
    show_default=True,
    help="Seal a trace whose root span never came after this many seconds without new spans "
    "(said in the run's notes).",
)
@click.option("--scenario", help="The scenario of every run [default: the trace's service name].")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="A tag on every run.")
@handle_errors
def collect_command(
    ledger_path: Path | None,
    host: str,
    port: int,
    token: str | None,
    settle: float,
    quiet_time: float,
    scenario: str | None,
    tags: tuple[str, ...],
) -> None:
    """Receive OpenTelemetry traces over OTLP/HTTP (POST /v1/traces, protobuf or JSON, gzip)
    and seal each trace as a run, as `import --format otel` would.

    A trace is sealed when its root span has arrived (and --settle seconds passed without
    more of its spans), or after --quiet-time without new spans. Spans are on disk before
    a request is answered 200, and a receiver started again seals what it had accepted.
    GenAI, OpenInference and OpenLLMetry spans are read alike. The ledger is created if
    absent.
    """
    missing = _missing()
    if missing:
        raise click.UsageError(
            f"collect needs {', '.join(missing)}, which are not installed: {INSTALL_HINT}"
        )
    if token is not None and not _TOKEN.match(token):
        raise click.BadParameter(
            "a token is 16 to 256 of the characters A-Z a-z 0-9 . _ ~ -", param_hint="--token"
        )
    import uvicorn

    from agentledger.collector.receiver import Collector, CollectSettings, create_app
    from agentledger.store import Ledger
    from agentledger.viewer.security import is_loopback, new_token

    generated = token is None and not is_loopback(host)
    if generated:
        token = new_token()
    root = ledger_location(ledger_path)
    Ledger.open_or_init(root).ledger.close()
    settings = CollectSettings(settle=settle, quiet=quiet_time, scenario=scenario, tags=_tags(tags))
    collector = Collector(root, settings, on_event=lambda text: click.echo(text, err=True))
    waiting = len(collector.spool.pending)
    shown_host = f"[{host}]" if ":" in host else host
    click.echo(
        f"agentledger collect into {root} at http://{shown_host}:{port}/v1/traces"
        + (f" ({waiting} traces from before waiting)" if waiting else ""),
        err=True,
    )
    if token:
        click.echo(
            f"  {'generated token (shown once)' if generated else 'token'}: {token}", err=True
        )
    collector.start()
    try:
        uvicorn.run(
            create_app(collector, token=token),
            host=host,
            port=port,
            log_level="warning",
            server_header=False,
        )
    finally:
        collector.stop()
