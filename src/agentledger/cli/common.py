"""What every command shares: the --ledger option, error handling, progress, output formats."""

from __future__ import annotations

import errno
import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from agentledger.cli.opening import ledger_location, open_ledger
from agentledger.errors import AgentLedgerError

if TYPE_CHECKING:
    from agentledger.store import Ledger
    from agentledger.store.ledger import Progress

# The store is imported where it is used: a command can do work (start import workers) before
# loading it.

__all__ = [
    "INTERRUPTED",
    "announce_journal",
    "announce_journal_start",
    "fail",
    "handle_errors",
    "ledger_location",
    "ledger_option",
    "model_call_options",
    "open_ledger",
    "parse_size",
    "progress_bar",
    "stacked",
]

F = TypeVar("F", bound=Callable[..., Any])

# The system refusing a write: a full disk, a quota, a read-only mount, a file or folder that
# may not be changed (permissions, or immutable: chattr +i). A clear message, never a traceback.
_REFUSED_WRITES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EPERM, errno.EACCES})

INTERRUPTED = 130
"""The exit code after Ctrl-C (128 + SIGINT), as a shell reports it."""


def ledger_option(func: F) -> F:
    """Add ``--ledger PATH`` (env AGENTLEDGER_DIR, default ./.agentledger) to a command."""
    return click.option(
        "--ledger",
        "ledger_path",
        type=click.Path(path_type=Path),
        default=None,
        help="Ledger directory [env AGENTLEDGER_DIR; default ./.agentledger].",
    )(func)


def stacked(*options: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator adding several click options, in the order given (as --help lists them)."""

    def add(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return add


def concurrency_option(help: str, default: int = 1) -> Callable[[F], F]:
    """Add ``--concurrency N`` (at least 1; `help` says what runs at the same time)."""
    return click.option(
        "--concurrency", type=click.IntRange(min=1), default=default, show_default=True, help=help
    )


def model_call_options(func: F) -> F:
    """Add ``--request-timeout SECONDS`` and ``--retries N`` for the command's model calls."""
    func = click.option(
        "--retries",
        type=click.IntRange(min=0, max=20),
        metavar="N",
        default=None,
        help="Retries of a failed model call (rate limit, server error, timeout) [default: 4, "
        "or the agent file's].",
    )(func)
    return click.option(
        "--request-timeout",
        type=click.FloatRange(min=0, min_open=True, max=3600),
        metavar="SECONDS",
        default=None,
        help="Seconds one model request may take before it is retried [default: 600, or the "
        "agent file's].",
    )(func)


def fail(message: str, code: int = 2) -> None:
    """Print an error to stderr and exit with `code` (2 = bad input, 3 = integrity)."""
    click.echo(f"Error: {message}", err=True)
    sys.exit(code)


def handle_errors(func: F) -> F:
    """Turn agentledger errors into a one-line message and their exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except AgentLedgerError as exc:
            fail(str(exc), exc.exit_code)
        except OSError as exc:
            if exc.errno not in _REFUSED_WRITES:
                raise
            where = f" ({exc.filename})" if exc.filename else ""
            fail(
                f"{exc.strerror}{where}: the command stopped. What it finished is complete and "
                "nothing half-written is visible; make room (or make the ledger writable), "
                "then run it again (`agentledger gc` indexes whatever was sealed but not yet "
                "indexed)",
                1,
            )
        except BrokenPipeError:
            # `agentledger runs | head`: the reader went away; that is not an error.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(0)

    return wrapper  # type: ignore[return-value]


def announce_journal(ledger: Ledger) -> None:
    """Say, once, that opening an old ledger gave it a journal (and what that anchors); and,
    on every command, that the ledger went back from a head this machine saw it show."""
    if ledger.journal_started_now is not None:
        announce_journal_start(ledger.root, ledger.journal_started_now)
    from agentledger.cli.output import terminal_safe

    if ledger.head_problem is not None:
        click.echo(f"Warning: {terminal_safe(str(ledger.head_problem))}", err=True)
    if ledger.replaced_head is not None:
        seen = ledger.replaced_head
        click.echo(
            f"Note: another ledger was at {terminal_safe(str(ledger.root))} (journal head "
            f"{seen.head}, seen {seen.seen_at}); this machine now follows the new one.",
            err=True,
        )


def announce_journal_start(root: Path, anchored: int) -> None:
    """The message of `announce_journal`, for commands that open the ledger themselves."""
    click.echo(
        f"{root} predates the journal: started one now, anchoring the {anchored} record(s) "
        "it holds as they are at this moment (the journal cannot vouch for them before now).",
        err=True,
    )


def _interactive() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")


@contextmanager
def progress_bar(description: str) -> Iterator[Progress | None]:
    """A progress callback drawing a bar on a terminal; None when piped or in CI."""
    if not _interactive():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        f"[bold]{description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        transient=True,
        console=Console(stderr=True),
    ) as bar:
        task = bar.add_task(description, total=None)

        def advance(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        yield advance


def step_counter(progress: Progress | None, total: int) -> Callable[[], None]:
    """For work reported one item at a time: a function to call after each item (0 is drawn
    now). Does nothing without a progress callback."""
    done = 0
    if progress is not None:
        progress(0, total)

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    return step


def parse_size(text: str, option: str) -> int:
    """Bytes from ``100MB``, ``1.5GB``, ``4096``; a usage error naming `option` otherwise."""
    from agentledger.store.sizes import parse_size as storage_parse_size

    try:
        return storage_parse_size(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


def parse_tags(values: tuple[str, ...]) -> dict[str, str]:
    """--tag KEY=VALUE values as the tags of a run; a usage error (exit 2) naming the bad one
    before anything is read, the same for every format and command."""
    from agentledger.records import check_tags

    tags = dict(parse_pairs("--tag", values))
    try:
        return check_tags(tags)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--tag") from None


def parse_pairs(option: str, values: tuple[str, ...]) -> list[tuple[str, str]]:
    """KEY=VALUE option values as pairs; a usage error naming `option` otherwise."""
    pairs = []
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key.strip() or not rest:
            raise click.BadParameter(f"{value!r}: expected KEY=VALUE", param_hint=option)
        pairs.append((key.strip(), rest))
    return pairs
