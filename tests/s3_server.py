"""A real S3 API server for the tests: moto's standalone server, in a process of its own.

Run as ``python tests/s3_server.py``: it listens on a free port of 127.0.0.1, prints
``listening on <port>`` and serves until its standard input closes (so it never outlives the
test session that started it). Clients reach it over HTTP with the real boto3 client.
``python tests/s3_server.py FLAG`` serves a store that ignores conditional writes while the
file FLAG exists.

moto checks ``If-None-Match`` and ``If-Match`` on PUT, but reads the object and then writes it
without holding a lock, so two conditional PUTs racing in its threads can both land. S3
itself decides them atomically; so that the tests hold the backend to that guarantee, this
server hands moto one writing request at a time (connections stay open and concurrent; a PUT,
POST or DELETE runs alone, while reads run beside each other, never beside a write).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["SerialApplication", "UnconditionalWhen", "main"]


class SerialApplication:
    """A WSGI application that runs the one it wraps for one writing request at a time, and
    for reads (GET, HEAD) only while no write runs: a readers-writer lock around moto."""

    READS = frozenset({"GET", "HEAD"})

    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self.application = application
        self.changed = threading.Condition()
        self.readers = 0
        self.writing = False

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        read = environ.get("REQUEST_METHOD", "GET") in self.READS
        with self.changed:
            self.changed.wait_for(lambda: not self.writing and (read or not self.readers))
            if read:
                self.readers += 1
            else:
                self.writing = True
        try:
            # The whole body is made inside the lock: a streamed one would escape it.
            return list(self.application(environ, start_response))
        finally:
            with self.changed:
                if read:
                    self.readers -= 1
                else:
                    self.writing = False
                self.changed.notify_all()


class UnconditionalWhen:
    """A WSGI application that drops If-None-Match and If-Match from every request while the
    file `flag` exists: a store that stops honouring conditional writes after `init`, as one
    behind a proxy or gateway that strips them would."""

    def __init__(self, application: Callable[..., Iterable[bytes]], flag: Path) -> None:
        self.application = application
        self.flag = flag

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if self.flag.exists():
            environ.pop("HTTP_IF_NONE_MATCH", None)
            environ.pop("HTTP_IF_MATCH", None)
        return self.application(environ, start_response)


def main() -> None:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    application: Callable[..., Iterable[bytes]] = DomainDispatcherApplication(create_backend_app)
    if len(sys.argv) > 1:  # the file that, while it exists, makes the server ignore conditions
        application = UnconditionalWhen(application, Path(sys.argv[1]))
    application = SerialApplication(application)
    server = make_server(
        "127.0.0.1", 0, application, threaded=True, request_handler=MotoRequestHandler
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"listening on {server.server_address[1]}", flush=True)
    sys.stdin.read()  # until the test session closes our input, or ends
    server.shutdown()


if __name__ == "__main__":
    main()
