"""The exceptions agentledger raises.

Every error a user can cause is one of these; the CLI maps each branch to an exit code::

    AgentLedgerError                 base of everything below
    ├── InputError                   exit 2: bad input or usage, nothing was written
    │   ├── RecordError              a file on disk or on the way in does not match its schema
    │   ├── UnsafeNameError          a run id or artifact name that is not safe as a path
    │   ├── ArtifactTooLargeError    an artifact over the configured size limit
    │   ├── RecordExistsError        a write-once record (score, decision, ...) that exists
    │   │   └── RunExistsError       a run id that is already sealed in the ledger
    │   ├── RecordNotFoundError      a stored record that is not there
    │   ├── RunNotFoundError         a run id (or prefix) that matches no run
    │   ├── LedgerNotFoundError      no ledger at the given path
    │   ├── IndexVersionError        an index written by a newer agentledger
    │   ├── IndexUnusableError       an index file that is not a usable SQLite database
    │   ├── ReadOnlyQueryError       a query passed to `sql` that would write
    │   ├── StorageAccessError       a storage backend that cannot be used as configured: no
    │   │                            such bucket, credentials missing or refused, no endpoint
    │   ├── UnknownBackendError      a storage or index URI no backend serves or may hold
    │   └── ProviderSetupError       a provider that cannot be used: unknown, no SDK or no key
    ├── ProviderError                exit 1: a model call failed (after its retries)
    ├── WriteFailedError             exit 1: the disk refused a write (full, read-only); nothing
    │                                half-written is visible
    └── IntegrityError               exit 3: stored evidence changed, vanished or is corrupt
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "AgentLedgerError",
    "ArtifactTooLargeError",
    "IndexUnusableError",
    "IndexVersionError",
    "InputError",
    "IntegrityError",
    "LedgerNotFoundError",
    "ProviderError",
    "ProviderSetupError",
    "ReadOnlyQueryError",
    "RecordError",
    "RecordExistsError",
    "RecordNotFoundError",
    "RunExistsError",
    "RunNotFoundError",
    "StorageAccessError",
    "TamperedError",
    "UnknownBackendError",
    "UnsafeNameError",
    "WriteFailedError",
]


class AgentLedgerError(Exception):
    """Base of every agentledger error."""

    exit_code = 1


class InputError(AgentLedgerError):
    """Bad input or usage; the operation wrote nothing."""

    exit_code = 2


class RecordError(InputError):
    """A record (JSON, JSONL, YAML) that cannot be parsed or does not match its schema.

    The message always names the file, and the field or line when one is at fault.
    """

    def __init__(
        self,
        source: str | Path,
        problem: str,
        *,
        field: str | None = None,
        line: int | None = None,
    ) -> None:
        self.source = str(source)
        self.problem = problem
        self.field = field
        self.line = line
        where = self.source
        if line is not None:
            where += f", line {line}"
        if field:
            where += f", field '{field}'"
        super().__init__(f"{where}: {problem}")


class UnsafeNameError(InputError):
    """A run id or artifact name that could escape its directory or confuse a shell or terminal."""


class ArtifactTooLargeError(InputError):
    """An artifact larger than the ledger's limit."""


class RecordExistsError(InputError):
    """A write-once record that is already stored: storage creates it if absent, else fails."""


class RecordNotFoundError(InputError):
    """A stored record (a key of the storage backend) that does not exist."""


class RunExistsError(RecordExistsError):
    """A run id that is already sealed; sealed runs are never replaced."""


class RunNotFoundError(InputError):
    """No run matches the given id or prefix."""


class LedgerNotFoundError(InputError):
    """The path holds no ledger (or is not a directory)."""


class IndexVersionError(InputError):
    """The index was migrated by a newer agentledger than this one."""


class IndexUnusableError(InputError):
    """The index file cannot be opened as an index (corrupt, or not SQLite); reindex rebuilds it."""


class ReadOnlyQueryError(InputError):
    """A query given to the read-only SQL interface tried to write."""


class StorageAccessError(InputError):
    """A storage backend that cannot be used as configured: its bucket does not exist, the
    credentials are missing or refused, or its endpoint cannot be reached. Nothing was written."""


class WriteRefusedError(StorageAccessError):
    """The storage refused a write for want of permission (credentials that may only read):
    a reader goes on; a writer stops here, nothing written."""


class UnknownBackendError(InputError, ValueError):
    """A backend URI in ledger.json (or given for one) whose scheme no registered backend
    serves, or that it cannot use (a password in it, a bad bucket name)."""


class IntegrityError(AgentLedgerError):
    """Stored evidence no longer matches its manifest, or the index disagrees with the files."""

    exit_code = 3


class TamperedError(IntegrityError):
    """A sealed run's artifact (or its MANIFEST.json) read for a judge, a report or the viewer
    no longer matches what was sealed: it is not judged or shown as the run's evidence."""


class ProviderSetupError(InputError):
    """A model provider that cannot be used as configured: unknown name, SDK or API key missing."""


class ProviderError(AgentLedgerError):
    """A model call that failed, after its retries; says which provider, model and why."""

    exit_code = 1


class WriteFailedError(AgentLedgerError):
    """The disk refused a write (no space left, read-only): the operation stopped, and what it
    had not finished is not visible. The message says what was kept."""

    exit_code = 1
