"""The probe helper's HTTP check (what a lab's agent runs for http and throughput probes),
against real servers on this machine's loopback: no lab needed."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentledger.labs import probe_helper


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/")
            self.end_headers()
            return
        body = b"x" * (200_000 if self.path.startswith("/big") else 6)
        self.send_response(200 if self.path in ("/", "/big?n=1") else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = probe_helper.main(list(argv))
    return code, capsys.readouterr().out.strip()


def test_http_probe_reads_status_and_size_without_following_redirects(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _server() as port:
        url = f"http://127.0.0.1:{port}"
        assert _check(capsys, "http", "5", url, "200") == (0, f"{url}: HTTP 200, 6 bytes")
        assert _check(capsys, "http", "5", f"{url}/nope", "200") == (
            1,
            f"{url}/nope: HTTP 404, 6 bytes",
        )
        assert _check(capsys, "http", "5", f"{url}/nope#frag", "404")[0] == 0
        assert _check(capsys, "http", "5", f"{url}/moved", "302")[0] == 0  # as curl without -L
        code, detail = _check(capsys, "throughput", "5", f"{url}/big?n=1", "1")
        assert code == 0 and detail.startswith(f"{url}/big?n=1: HTTP 200, 200000 bytes at ")


def test_http_probe_fails_on_refusal_and_truncation_other_schemes_go_to_urllib(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # bound, not listening: connections are refused
        for scheme in ("http", "https"):  # https: urllib's (where curl is missing)
            code, detail = _check(capsys, "http", "5", f"{scheme}://127.0.0.1:{port}/", "200")
            assert code == 1 and "Connection refused" in detail, detail

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def short_answer() -> None:
            conn, _ = listener.accept()
            conn.recv(4096)
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
            conn.close()

        threading.Thread(target=short_answer, daemon=True).start()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        code, detail = _check(capsys, "http", "5", url, "200")
        assert (code, detail) == (1, f"{url}: transfer closed with 90 bytes remaining")
