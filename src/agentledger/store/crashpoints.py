"""Crash points: the steps of a write where a crash must leave the ledger consistent.

The fault suite (tests/test_faults_kill.py) proves that a writer killed at any of them leaves
either nothing or complete records, which `verify`, `gc` and the next run agree on. It kills
real processes with a real SIGKILL, at a point chosen by environment variables:

- ``AGENTLEDGER_CRASH_AT=N``: the process sends itself SIGKILL when it reaches its Nth crash
  point (counted per process); ``AGENTLEDGER_CRASH_AT=NAME`` (not a number): when it first
  reaches the point called NAME (e.g. ``after-record``: a record stored, its journal entry not);
- ``AGENTLEDGER_CRASH_LOG=PATH``: every crash point reached is appended to PATH as a line
  ``<pid> <name>`` (how the suite learns how many points a command passes).

Unset (always, outside the suite), a crash point costs one attribute read.
"""

from __future__ import annotations

import os
import signal
import threading

__all__ = ["CRASH_AT", "CRASH_LOG", "arm", "crash_point"]

CRASH_AT = "AGENTLEDGER_CRASH_AT"
CRASH_LOG = "AGENTLEDGER_CRASH_LOG"


class _Schedule:
    def __init__(self, at: int | None, log: str | None, name: str | None = None) -> None:
        self.at = at
        self.name = name
        self.log = log
        self.active = at is not None or log is not None or name is not None
        self.reached = 0
        self.lock = threading.Lock()

    def reach(self, name: str) -> None:
        with self.lock:
            self.reached += 1
            if self.log is not None:
                fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                try:
                    os.write(fd, f"{os.getpid()} {name}\n".encode())
                finally:
                    os.close(fd)
            if (self.at is not None and self.reached == self.at) or name == self.name:
                os.kill(os.getpid(), signal.SIGKILL)


def _from_environment() -> _Schedule:
    at = os.environ.get(CRASH_AT, "")
    return _Schedule(
        int(at) if at.isdigit() else None,
        os.environ.get(CRASH_LOG) or None,
        None if at.isdigit() or not at else at,
    )


_schedule = _from_environment()


def arm(at: int | str | None = None, log: str | None = None) -> None:
    """Set this process's schedule as the environment variables would (a forked child of the
    fault suite): SIGKILL at the `at`-th crash point from now (or the first one named `at`),
    each point logged to `log`."""
    global _schedule
    _schedule = _Schedule(None, log, at) if isinstance(at, str) else _Schedule(at, log)


def crash_point(name: str) -> None:
    """A step of a write after which a crash must leave the ledger consistent (see above)."""
    if _schedule.active:
        _schedule.reach(name)
