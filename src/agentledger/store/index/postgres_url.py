"""Where the PostgreSQL index is: a URL in ledger.json or the environment, never a password.

``"index": "postgresql://host:5432/db"`` in ledger.json names the database; the user name may
be in it too, the password never (ledger.json is shared and often committed). ``"index":
"postgresql"`` alone takes the URL from ``AGENTLEDGER_INDEX_URL``, else libpq's own
variables (``PGHOST``, ``PGPORT``, ``PGDATABASE``, ``PGUSER``, ...). Passwords come from
``PGPASSWORD`` or the password file (``~/.pgpass``, ``PGPASSFILE``), which libpq reads
itself, or from ``AGENTLEDGER_INDEX_URL``, which is the user's environment and never written.

This module needs no database driver: `agentledger init` checks a URL with it before psycopg
is imported, or even installed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from agentledger.errors import UnknownBackendError

__all__ = [
    "ENV_URL",
    "SCHEMES",
    "BadIndexUrlError",
    "check_ledger_url",
    "connection_url",
    "shown_url",
]

ENV_URL = "AGENTLEDGER_INDEX_URL"
"""The environment variable that names the index database when ledger.json does not."""
SCHEMES = ("postgresql", "postgres")
"""The URI schemes of the PostgreSQL index (libpq accepts both)."""


class BadIndexUrlError(UnknownBackendError):
    """An index URL ledger.json cannot hold: not a URL, or one with a password."""


def _url(rest: str) -> str:
    return f"postgresql://{rest}"


def check_ledger_url(rest: str) -> None:
    """Refuse an index URL (the part after ``postgresql://``) that ledger.json must not hold:
    one with a password, or one that is not a URL at all."""
    url = _url(rest)
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number raises here
    except ValueError as exc:
        raise BadIndexUrlError(f"{url!r} is not a PostgreSQL URL ({exc})") from None
    in_query = any(key == "password" for key, _value in parse_qsl(parts.query))
    if parts.password is not None or in_query:
        raise BadIndexUrlError(
            f"the index URL {shown_url(url)} holds a password, and ledger.json is no place for "
            "one: give the URL without it, and the password in PGPASSWORD or ~/.pgpass "
            "(or the whole URL in AGENTLEDGER_INDEX_URL)"
        )


def connection_url(rest: str, environ: Mapping[str, str] | None = None) -> str:
    """What to connect with for an index URI whose part after the scheme is `rest`: the URL
    ledger.json names, else $AGENTLEDGER_INDEX_URL, else "" (libpq's PG* variables)."""
    env = os.environ if environ is None else environ
    if rest:
        check_ledger_url(rest)
        return _url(rest)
    return env.get(ENV_URL, "")


def shown_url(url: str) -> str:
    """`url` fit for a message: any password replaced by ``***``; the environment's own
    settings named as such when it is empty."""
    if not url:
        return "the PostgreSQL database of the PG* environment variables"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the PostgreSQL index URL"
    netloc = parts.netloc
    if parts.password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:***@{host}"
    query = "&".join(
        f"{key}={'***' if key == 'password' else value}"
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
