"""A URL reader with the host's network follows no redirect (issue 33, cause 4): a
redirect's Location may name any port, and curl and wget would send their own request lines
to a local daemon there (redis on 6379). Checked against a real HTTP server that redirects,
in a network namespace the test makes (`unshare -n`): nothing reaches the host's network."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jail_helpers import need_bwrap, need_root

INSIDE = r"""
import http.server, json, socket, subprocess, sys, threading
from agentledger.runner.shell_gate import Gate

subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
reached = {"6379": 0, "8081": 0, "web": []}

class Redirecting(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        reached["web"].append(self.path)
        target = "8081" if self.path == "/allowed" else "6379"
        self.send_response(302)
        self.send_header("Location", f"http://127.0.0.1:{target}/")
        self.send_header("Content-Length", "6")
        self.end_headers()
        self.wfile.write(b"moved\n")

    def log_message(self, *args):
        pass

def listen(port):
    server = socket.socket()
    server.bind(("127.0.0.1", port))
    server.listen()
    while True:
        conn, _ = server.accept()
        reached[str(port)] += 1
        conn.close()

web = http.server.ThreadingHTTPServer(("127.0.0.1", 8080), Redirecting)
threading.Thread(target=web.serve_forever, daemon=True).start()
for port in (6379, 8081):
    threading.Thread(target=listen, args=(port,), daemon=True).start()
results = {}
for line in json.loads(sys.argv[1]):
    result = Gate(None, None).run(line)
    results[line] = [result.decision.decision, result.exit_code, result.stdout.decode(),
                     result.decision.reason]
print(json.dumps({"results": results, "reached": reached}))
"""


def test_a_redirect_to_a_daemons_port_is_not_followed() -> None:
    need_root()
    need_bwrap()
    refused = [
        "curl -s -m 3 -L http://127.0.0.1:8080/",
        "curl -fsSL -m 3 http://127.0.0.1:8080/",
        "curl -s -m 3 --location http://127.0.0.1:8080/allowed",
        "wget -q -O - -T 3 --max-redirect=5 http://127.0.0.1:8080/",
    ]
    read = [
        "curl -s -m 3 http://127.0.0.1:8080/",
        "curl -s -m 3 --max-redirs 5 http://127.0.0.1:8080/",
        "wget -q -O - -T 3 http://127.0.0.1:8080/",
        "curl -s -m 3 http://127.0.0.1:8080/allowed",
    ]
    done = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", INSIDE, json.dumps(refused + read)],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    if done.returncode != 0 and "unshare" in done.stderr:
        pytest.skip(f"no network namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    results = seen["results"]
    for line in refused:
        decision, code, _, reason = results[line]
        assert (decision, code) == ("denied", None), (line, results[line])
        assert "a redirect may lead to any port" in reason
    for line in read[:2] + read[3:]:
        decision, code, output, _ = results[line]
        assert (decision, code, output) == ("allowed", 0, "moved\n"), (line, results[line])
    decision, code, _, _ = results[read[2]]
    assert decision == "allowed" and code != 0  # wget: "0 redirections exceeded"
    # The server was asked each time; neither the daemon's port nor another was reached.
    assert len(seen["reached"]["web"]) == len(read)
    assert seen["reached"]["6379"] == 0 and seen["reached"]["8081"] == 0
