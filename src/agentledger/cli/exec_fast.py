"""`agentledger exec`: the gated shell on the command line.

This is CLI code (it prints), parsed by hand rather than with click: every command an agent
runs goes through it, so it must start fast. `agentledger._entry` sends ``agentledger exec``
here; `agentledger.cli.shell` is the same command for ``--help`` and the generated docs.

Exit codes: the command's own; 126 when the gate refuses it (the reason is on stderr); 124
when it timed out; 2 for bad usage or a bad policy; 130 (or 128 + the signal) when interrupted.
"""

from __future__ import annotations

import os
import sys

from agentledger.cli.fastargs import UsageError as _UsageError
from agentledger.cli.fastargs import option_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import IO

    from agentledger.runner.shell_gate.decision import CommandDecision
    from agentledger.runner.shell_gate.gate import Gate

__all__ = ["HELP", "USAGE", "fast_main", "join_argv", "run_exec"]

USAGE = "Usage: agentledger exec [OPTIONS] [--] COMMAND..."
HELP = """Run COMMAND through the gated shell: classify it, decide by the policy, run it or not,
and log it to the run's shell_audit.jsonl either way.

One argument is a shell command line ('ls -l | grep x'); several are a command and its
arguments, quoted as given. The exit code is the command's; 126 means the gate refused it
(the reason is on stderr), 124 that it timed out, 2 bad usage or a bad policy.
"""
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-")
_signal_received: list[int] = []


class ExecOptions:
    """The parsed options of `agentledger exec`."""

    __slots__ = ("batch", "command", "dry_run", "help", "policy", "run_dir", "timeout")

    def __init__(self) -> None:
        self.run_dir: str | None = None
        self.policy: str | None = None
        self.dry_run = False
        self.batch = False
        self.timeout: float | None = None
        self.command: list[str] = []
        self.help = False


def parse_args(argv: Sequence[str]) -> ExecOptions:
    """Options up to `--` or the first word that is not an option; the rest is the command."""
    options = ExecOptions()
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        if word == "--":
            options.command = list(argv[index:])
            break
        if word in ("-h", "--help"):
            options.help = True
        elif word in ("--dry-run", "--batch"):
            setattr(options, word[2:].replace("-", "_"), True)
        elif word.split("=", 1)[0] in ("--run-dir", "--policy", "--timeout"):
            name, value, index = option_value(word, argv, index)
            if name == "--timeout":
                options.timeout = parse_timeout(value)
            elif name == "--run-dir":
                options.run_dir = value
            else:
                options.policy = value
        elif word.startswith("-") and word != "-":
            raise _UsageError(f"No such option: {word}")
        else:
            options.command = list(argv[index - 1 :])
            break
    return options


def parse_timeout(value: str) -> float:
    """Seconds from the --timeout option: a positive number."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise _UsageError(f"Invalid value for '--timeout': {value!r} is not a positive number.")
    return seconds


def fast_main(argv: Sequence[str]) -> int | None:
    """Run `agentledger exec` with `argv` (after "exec"); None when click should (--help)."""
    try:
        options = parse_args(argv)
    except _UsageError as exc:
        sys.stderr.write(f"{USAGE}\nTry 'agentledger exec -h' for help.\n\nError: {exc}\n")
        return 2
    if options.help:
        return None
    return run_exec(
        run_dir=options.run_dir,
        policy=options.policy,
        dry_run=options.dry_run,
        batch=options.batch,
        timeout=options.timeout,
        command=options.command,
    )


def join_argv(words: Sequence[str]) -> str:
    """Several words as one shell command line, each quoted where it needs it."""
    return " ".join(word if word and _PLAIN.issuperset(word) else _quote(word) for word in words)


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\"'\"'") + "'"


def run_exec(
    *,
    run_dir: str | None,
    policy: str | None,
    dry_run: bool,
    batch: bool,
    timeout: float | None,
    command: Sequence[str],
) -> int:
    """`agentledger exec` with parsed options; returns the exit code. Prints to stdout/stderr."""
    try:
        return _exec(run_dir, policy, dry_run, batch, timeout, command)
    except _UsageError as exc:
        sys.stderr.write(f"{USAGE}\nTry 'agentledger exec -h' for help.\n\nError: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 128 + (_signal_received[0] if _signal_received else 2)
    except BrokenPipeError:
        return 141
    except Exception as exc:
        from agentledger.errors import AgentLedgerError

        if not isinstance(exc, AgentLedgerError):
            raise
        sys.stderr.write(f"Error: {exc}\n")
        return exc.exit_code


def _exec(
    run_dir: str | None,
    policy: str | None,
    dry_run: bool,
    batch: bool,
    timeout: float | None,
    command: Sequence[str],
) -> int:
    from agentledger.runner.shell_gate.gate import DENIED_EXIT, Gate
    from agentledger.runner.shell_gate.rules import load_policy

    run_dir = run_dir or os.environ.get("AGENTLEDGER_RUN_DIR") or None
    policy = policy or os.environ.get("AGENTLEDGER_POLICY") or None
    if batch:
        if command:
            raise _UsageError("--batch reads the commands from stdin; give no COMMAND.")
        return _batch(Gate(load_policy(policy), None, timeout=timeout), sys.stdin, sys.stdout)
    if not command:
        raise _UsageError("Missing COMMAND (after --).")
    line = command[0] if len(command) == 1 else join_argv(command)
    if dry_run:
        decision = Gate(load_policy(policy), None, timeout=timeout).decide(line)
        sys.stdout.write(_describe(decision))
        return 0 if decision.decision != "denied" else DENIED_EXIT
    if not run_dir:
        raise _UsageError(
            "No run directory: pass --run-dir DIR or set AGENTLEDGER_RUN_DIR "
            "(--dry-run needs none)."
        )
    _warn_unisolated()
    tee = _output_descriptors()
    gate = Gate.for_run_dir(run_dir, policy, timeout=timeout, stdin=_stdin_for_command(), tee=tee)
    if gate.rules.sandbox == "off":
        sys.stderr.write(
            "agentledger exec: WARNING: the policy says `sandbox: off`: this command runs "
            "outside the sandbox, held by the classifier alone\n"
        )
    previous = _handle_signals()
    try:
        result = gate.run(line)
    finally:
        _restore_signals(previous)
    decision = result.decision
    if not result.ran:
        sys.stderr.write(
            f"agentledger exec: denied by {decision.decided_by} "
            f"[{decision.classification.kind}]: {decision.reason}\n"
        )
        return DENIED_EXIT
    if tee is None:
        _write(sys.stdout, result.stdout)
        _write(sys.stderr, result.stderr)
    if result.timed_out:
        sys.stderr.write(f"agentledger exec: timed out after {gate.timeout:g} s and was killed\n")
    return result.exit_code if result.exit_code is not None else 1


PYTHON_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE")
"""Variables that make an interpreter not started with ``-I`` run code they name."""


def _warn_unisolated() -> None:
    """Say so when this interpreter obeyed the caller's PYTHON* variables: code they name
    may have run in the gate before any of its own (isolated: ``python3 -I -m agentledger
    exec``, as the gated shell of `agentledger run` starts it)."""
    if sys.flags.isolated:
        return
    named = [name for name in PYTHON_VARIABLES if os.environ.get(name)]
    if named:
        sys.stderr.write(
            f"agentledger exec: WARNING: {', '.join(named)} set and Python not isolated: "
            "code they name may have run in the gate; start it as "
            "`python3 -I -m agentledger exec`\n"
        )


def _batch(gate: Gate, source: IO[str], out: IO[str]) -> int:
    import json

    for raw in source:
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            record = gate.decide(line).as_dict()
        except Exception as exc:
            from agentledger.errors import InputError

            if not isinstance(exc, InputError):
                raise
            record = {"command": line, "error": str(exc)}
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return 0


def _describe(decision: CommandDecision) -> str:
    from agentledger.runner.shell_gate.ask import printable

    lines = [
        f"command:         {printable(decision.command)}",
        f"classification:  {decision.classification.kind}",
    ]
    for part in decision.classification.parts:
        via = f"  (via {' '.join(part.via)})" if part.via else ""
        lines.append(f"  {part.kind:<14} {printable(part.command)}{via}")
        lines.append(f"  {'':<14} {printable(part.reason)}")
    lines.append(f"decision:        {decision.decision} (by {decision.decided_by})")
    lines.append(f"reason:          {printable(decision.reason)}")
    return "\n".join(lines) + "\n"


def _output_descriptors() -> tuple[int, int] | None:
    """Our stdout and stderr descriptors, for the command's output to go on to as it comes
    (the gate keeps only a bounded copy); None when they are not real files."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        return sys.stdout.fileno(), sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):
        return None


def _stdin_for_command() -> int | None:
    """Our stdin for the command when it is a pipe or file, open for reading only; a
    terminal is not passed on."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return None
    return None if os.isatty(fd) else read_only(fd)


def read_only(fd: int) -> int:
    """`fd`, or when it is open for writing too (the agent's ``0<>FILE``), the same file
    opened again for reading only, at the same offset (a FIFO too); /dev/null for anything
    else (a device, a socket): a command that writes to its fd 0 changes nothing."""
    import fcntl
    import stat

    if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
        return fd
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        try:
            again = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY)
        except OSError:
            pass
        else:
            if stat.S_ISREG(mode):
                os.lseek(again, os.lseek(fd, 0, os.SEEK_CUR), os.SEEK_SET)
            return again
    return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)


def _handle_signals() -> dict[int, object]:
    """SIGTERM and SIGHUP stop the command (and log it) like Ctrl-C does; returns the handlers
    they had."""
    import importlib

    # The C module under `signal`: the same functions, without importing enum.
    signals = importlib.import_module("_signal")

    def stop(signum: int, frame: object) -> None:
        _signal_received.append(signum)
        raise KeyboardInterrupt

    previous: dict[int, object] = {}
    for number in (signals.SIGTERM, signals.SIGHUP):
        try:
            previous[number] = signals.signal(number, stop)
        except (ValueError, OSError):
            # Not the main thread: leave signals be.
            break
    return previous


def _restore_signals(previous: dict[int, object]) -> None:
    import importlib

    signals = importlib.import_module("_signal")
    for number, handler in previous.items():
        if handler is not None:
            signals.signal(number, handler)


def _write(stream: IO[str], data: bytes) -> None:
    if not data:
        return
    stream.flush()
    binary = getattr(stream, "buffer", None)
    if binary is not None:
        binary.write(data)
        binary.flush()
    else:
        stream.write(data.decode("utf-8", "replace"))
