"""`agentledger guard`: the production guard on the command line.

This is CLI code (it prints), parsed by hand rather than with click: the guard stands between
a model and every tool call it makes, so it must start fast. `agentledger._entry` sends
``agentledger guard`` here; `agentledger.cli.guard` is the same command for ``--help`` and
the generated docs.

Exit codes: 0 the output holds every property (let the tool run); 1 it does not (one line per
failed property on stderr); 2 bad usage, or an expect file or output file that cannot be read.
"""

from __future__ import annotations

import os
import sys

from agentledger.cli.fastargs import UsageError as _UsageError
from agentledger.cli.fastargs import option_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import BinaryIO

__all__ = ["HELP", "USAGE", "fast_main", "run_guard"]

USAGE = "Usage: agentledger guard [OPTIONS] --expect FILE [OUTPUT|-]"
HELP = """Check a model's OUTPUT (a file, or - for stdin, the default) against the properties of
an expect.json before its tool call runs: exit 0 to let it run, 1 to reject it.

The reasons of a rejection are on stderr, one line per failed property. This is the check of
a fixture run, in production: same properties, same code, same answer. No ledger is needed.
Exit 2 means bad usage or an expect file that cannot be used; nothing was checked.
"""
_PREFIX = "agentledger guard"


class GuardOptions:
    """The parsed options of `agentledger guard`."""

    __slots__ = ("as_json", "expect", "help", "output", "scorers")

    def __init__(self) -> None:
        self.expect: str | None = None
        self.output = "-"
        self.as_json = False
        self.scorers: list[str] = []
        self.help = False


def parse_args(argv: Sequence[str]) -> GuardOptions:
    """The options and the one OUTPUT argument of `agentledger guard`."""
    options = GuardOptions()
    positional: list[str] = []
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        if word == "--":
            positional.extend(argv[index:])
            break
        if word in ("-h", "--help"):
            options.help = True
        elif word == "--json":
            options.as_json = True
        elif word.split("=", 1)[0] in ("--expect", "--scorer", "-e"):
            name, value, index = option_value(word, argv, index)
            if name == "--scorer":
                options.scorers.append(value)
            else:
                options.expect = value
        elif word.startswith("-") and word != "-":
            raise _UsageError(f"No such option: {word}")
        else:
            positional.append(word)
    if len(positional) > 1:
        raise _UsageError(f"Got unexpected extra argument ({positional[1]})")
    if positional:
        options.output = positional[0]
    return options


def fast_main(argv: Sequence[str]) -> int | None:
    """Run `agentledger guard` with `argv` (after "guard"); None when click should (--help)."""
    try:
        options = parse_args(argv)
    except _UsageError as exc:
        _usage_error(str(exc))
        return 2
    if options.help:
        return None
    return run_guard(
        expect=options.expect,
        output=options.output,
        as_json=options.as_json,
        scorers=options.scorers,
    )


def _usage_error(message: str) -> None:
    sys.stderr.write(f"{USAGE}\nTry 'agentledger guard -h' for help.\n\nError: {message}\n")


def run_guard(
    *, expect: str | None, output: str, as_json: bool, scorers: Sequence[str] = ()
) -> int:
    """`agentledger guard` with parsed options; returns the exit code. Prints to stdout/stderr."""
    if not expect:
        _usage_error("Missing option '--expect'.")
        return 2
    try:
        return _guard(expect, output, as_json, scorers)
    except BrokenPipeError:
        return 141
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        # Imported here: agentledger.errors loads pathlib, which the guard needs only to fail.
        from agentledger.errors import AgentLedgerError

        if isinstance(exc, AgentLedgerError):
            sys.stderr.write(f"Error: {exc}\n")
            return 2 if exc.exit_code == 1 else exc.exit_code
        # A failure of the guard itself: nothing was checked, so the tool must not run, and
        # exit 1 would read as a considered rejection.
        sys.stderr.write(f"Error: the guard could not check: {type(exc).__name__}: {exc}\n")
        return 2


def _read_output(path: str) -> bytes:
    """The output's bytes, read up to the limit and no further (endless input cannot hold the
    guard); InputError (exit 2) when there is more, or the file cannot be read."""
    from agentledger.suites.properties.output import MAX_OUTPUT_BYTES

    limit = MAX_OUTPUT_BYTES + 1  # one byte more: enough to know it is too large
    name = "standard input" if path == "-" else f"the output file {path}"
    try:
        if path == "-":
            data = _read_up_to(sys.stdin.buffer, limit, name)
            size = _file_size(sys.stdin.buffer) if len(data) >= limit else None
        else:
            with _open_output(path, name) as handle:
                data = _read_up_to(handle, limit, name)
                size = _file_size(handle) if len(data) >= limit else None
    except OSError as exc:
        from agentledger.errors import InputError

        raise InputError(f"cannot read {name}: {exc.strerror or exc}") from exc
    if len(data) >= limit:
        from agentledger.errors import InputError

        said = f"{size:,} bytes, over" if size is not None else "more than"
        raise InputError(
            f"{name}: the output is {said} the {MAX_OUTPUT_BYTES:,}-byte limit; it was not "
            "read further, nothing was checked"
        )
    return data


def _open_output(path: str, name: str) -> BinaryIO:
    """The output file opened for reading without waiting: a FIFO no one writes to would hold
    `open` forever, before any time limit. Only a regular file or a pipe (FIFO) is read; a
    pipe's wait for its data and its end is `_read_up_to`'s, within the read time."""
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            from agentledger.errors import InputError

            raise InputError(f"{name} is not a regular file or a pipe; nothing was checked")
        os.set_blocking(fd, True)  # select() bounds every wait from here on
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _file_size(stream: BinaryIO) -> int | None:
    """The size of `stream` when it is a regular file (a pipe's is unknown until its end)."""
    import os
    import stat

    try:
        status = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) and status.st_size > 0 else None


READ_SECONDS_ENV = "AGENTLEDGER_GUARD_READ_SECONDS"
"""How long the guard waits for the end of its input (default READ_SECONDS): an output that
trickles in without end cannot hold the tool the guard stands before."""
READ_SECONDS = 30.0


def _read_seconds() -> float:
    text = os.environ.get(READ_SECONDS_ENV, "")
    try:
        seconds = float(text) if text else READ_SECONDS
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < 86_400:  # NaN compares false too
        from agentledger.errors import InputError

        raise InputError(
            f"{READ_SECONDS_ENV}={text!r} is not a number of seconds between 0 and 86400"
        )
    return seconds


def _read_up_to(stream: BinaryIO, limit: int, name: str) -> bytes:
    """At most `limit` bytes of `stream`, in chunks (a pipe gives what it has). The end must
    come within the read time (InputError otherwise), from a regular file too: /proc/kmsg is
    one, and its read waits for the kernel's next message (a file on disk is ready at once)."""
    try:
        fd: int | None = stream.fileno()
    except (OSError, ValueError):  # an in-memory stream (a test harness): nothing to wait on
        fd = None
    if fd is None:
        deadline = None
    else:
        import time

        seconds = _read_seconds()
        deadline = time.monotonic() + seconds
    chunks = []
    size = 0
    while size < limit:
        if deadline is not None and fd is not None:
            import select
            import time

            remaining = deadline - time.monotonic()
            ready = select.select([fd], [], [], remaining)[0] if remaining > 0 else []
            if not ready:
                from agentledger.errors import InputError

                raise InputError(
                    f"{name}: the input did not end within {seconds:g} s ({size:,} bytes read; "
                    f"{READ_SECONDS_ENV} sets the wait); nothing was checked"
                )
        want = min(1 << 16, limit - size)
        chunk = stream.read(want) if fd is None else os.read(fd, want)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _guard(expect_path: str, output_path: str, as_json: bool, scorers: Sequence[str]) -> int:
    from agentledger.suites.guard import check
    from agentledger.suites.properties.score import load_custom_scorer, load_expect

    custom = [load_custom_scorer(text, "--scorer") for text in scorers]
    spec = load_expect(expect_path, custom=custom)
    result = check(_read_output(output_path), spec, custom=custom)
    if as_json:
        import json

        document = result.as_dict()
        sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    for reason in result.reasons:
        sys.stderr.write(f"{_PREFIX}: rejected: {_one_line(reason)}\n")
    return 0 if result.ok else 1


def _one_line(text: str) -> str:
    """`text` on one line: control characters (from the untrusted output) shown escaped."""
    return "".join(
        char if char.isprintable() else repr(char)[1:-1] for char in text.replace("\n", " ")
    )
