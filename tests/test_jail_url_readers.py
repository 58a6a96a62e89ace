"""curl and wget (issue 33, cause 4): one check of their words, the one a network reader gets,
wherever the classifier sees them (over ssh too), and no redirect that carries the agent's
own header lines to another port."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.netreaders import network_grant
from agentledger.shell.classifier import classify

SCRIPT = Path(sys.executable).parent / "agentledger"

PLAIN_READS = [
    "curl -s https://host/health",
    "curl -sI https://host/",
    "curl -fsS https://example.com/health",
    "curl -s --max-redirs 3 http://10.0.0.5:8080/",
    "wget -qO- http://host:8080/metrics",
    "wget -qO- --max-redirect=0 --header 'Accept: text/plain' http://host:8080/metrics",
    'curl -s -H "Authorization: Bearer abc" https://10.0.0.5/api',
]
REMOTE_WRITES = {
    "ssh h \"curl -H 'Host:' -H 'SET k: v' http://127.0.0.1:6379/\"": "'Host:'",
    "ssh h 'curl -s http://127.0.0.1:6379/'": "port 6379",
    "ssh h 'curl -s -H \"SET k: v\" http://10.0.0.5/'": "SET k: v",
    "ssh h 'curl -s gopher://127.0.0.1:6379/_FLUSHALL'": "only http",
    "ssh h 'curl -s --unix-socket /run/docker.sock http://x/containers/json'": "--unix-socket",
    "ssh h 'wget -qO- --header \"Host;\" http://10.0.0.5/'": "Host;",
    "ssh h 'wget -qO- http://10.0.0.5:11211/'": "port 11211",
    "sudo ssh h \"sudo curl -sL -H 'X-A: b' http://10.0.0.5/\"": "-L (in -sL)",
}
REDIRECTS = {
    "curl -sL -H 'X-A: b' http://10.0.0.5/": "-L (in -sL): a redirect may lead to any port",
    "curl -s --location --header 'X-A: b' http://10.0.0.5/": "--location: a redirect",
    "curl -fsSL -u user:pw http://10.0.0.5/": "-L (in -fsSL)",
    "curl -fsSL https://example.com/health": "-L (in -fsSL)",
    "curl -L http://10.0.0.5:8080/": "-L: a redirect may lead to any port",
    "curl -s -m 5 -L https://10.0.0.5/": "-L: a redirect",
    "curl -sL --max-redirs 50 http://10.0.0.5/": "-L (in -sL)",
    "wget -qO- --max-redirect=1 --header 'X-A: b' http://10.0.0.5/": "--max-redirect '1'",
    "wget -qO- --max-redirect=20 http://10.0.0.5/": "wget cannot limit",
    "wget -qO- --max-redirect 3 http://10.0.0.5/": "it follows none (--max-redirect=0)",
}


@pytest.mark.parametrize("line", PLAIN_READS)
def test_plain_reads_stay_read_only_here_and_over_ssh(line: str) -> None:
    assert classify(line).kind == "read-only", classify(line).parts
    remote = classify(f'ssh h "{line}"' if "'" in line else f"ssh h '{line}'")
    assert remote.kind == "read-only", remote.parts
    grant = network_grant(line, 0)
    assert grant is not None and not isinstance(grant, str), grant


@pytest.mark.parametrize(("line", "why"), REMOTE_WRITES.items())
def test_a_remote_url_reader_is_judged_by_the_readers_check(line: str, why: str) -> None:
    classification = classify(line)
    assert classification.kind != "read-only"
    reasons = " ".join(part.reason for part in classification.parts)
    assert why in reasons, reasons


@pytest.mark.parametrize(("line", "why"), REDIRECTS.items())
def test_no_redirect_is_followed_to_any_port(line: str, why: str) -> None:
    refused = network_grant(line, 0)
    assert isinstance(refused, str) and why in refused, refused
    assert classify(f'ssh h "{line}"').kind != "read-only"


def test_no_redirect_is_followed_whatever_the_agents_words() -> None:
    curl = network_grant("curl -s http://10.0.0.5/", 0)
    wget = network_grant("wget -qO- http://10.0.0.5/", 0)
    assert curl is not None and not isinstance(curl, str)
    assert wget is not None and not isinstance(wget, str)
    assert curl.argv[curl.argv.index("--max-redirs") + 1] == "0"
    assert curl.argv.index("--max-redirs") < curl.argv.index("-s")
    assert "--max-redirect=0" in wget.argv[: wget.argv.index("-qO-")]


def _dry_run(line: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "exec", "--dry-run", "--", line], capture_output=True, text=True, timeout=60
    )


def test_the_gate_refuses_a_remote_write_and_allows_a_remote_read() -> None:
    refused = _dry_run("ssh h \"curl -H 'Host:' -H 'SET k: v' http://127.0.0.1:6379/\"")
    assert refused.returncode == 126, refused.stdout
    assert "classification:  unknown" in refused.stdout
    allowed = _dry_run("ssh h 'curl -s https://host/health'")
    assert allowed.returncode == 0 and "decision:        allowed" in allowed.stdout, allowed.stdout
