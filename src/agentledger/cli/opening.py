"""Opening the ledger a command chose (--ledger, $AGENTLEDGER_DIR or ./.agentledger), without
click: `agentledger label`, parsed by hand (cli/label_fast.py), opens it here as every click
command does (`agentledger.cli.common.open_ledger` is this one). What opening has to say
(a journal started now, a ledger that went back) is said through click, imported then.
"""

from __future__ import annotations

from contextlib import contextmanager

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from agentledger.store import Ledger

__all__ = ["ledger_location", "open_ledger"]


def ledger_location(path: Path | None) -> Path:
    """The ledger chosen by --ledger, else $AGENTLEDGER_DIR, else ./.agentledger."""
    from agentledger.store import default_ledger_path

    return path or default_ledger_path()


@contextmanager
def open_ledger(ledger_path: Path | None) -> Iterator[Ledger]:
    """Open the chosen ledger for the duration of a command."""
    from agentledger.records.plugin_search import skip_empty_plugin_search
    from agentledger.store import Ledger

    skip_empty_plugin_search()  # opening builds the first validator (the ledger's config)

    ledger = Ledger.open(ledger_location(ledger_path))
    if (
        ledger.journal_started_now is not None
        or ledger.head_problem is not None
        or ledger.replaced_head is not None
    ):
        from agentledger.cli.common import announce_journal

        announce_journal(ledger)
    try:
        yield ledger
    finally:
        ledger.close()
